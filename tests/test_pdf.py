"""The PDF of the book (`make pdf`, run by `make test` after the HTML checks): it was
built from the current HTML book, has one outline section per part and chapter in the
order of _toc.yml, and embeds every chapter's figures.

Without the PDF the checks skip with the reason (a plain `pytest tests` run); in CI
(CI=true) they fail instead.
"""

import importlib.util
import json
import os
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location(
    "make_pdf", ROOT / "scripts" / "make_pdf.py"
)
mp = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mp)


@pytest.fixture(scope="module")
def pdf():
    if not mp.OUT.exists():
        msg = f"{mp.OUT.relative_to(ROOT)} missing: run `make pdf`"
        if os.environ.get("CI") == "true":
            pytest.fail(msg + " — in CI it must be built")
        pytest.skip(msg)
    from pypdf import PdfReader

    if mp.OUT.stat().st_mtime < (mp.HTML / "index.html").stat().st_mtime:
        pytest.fail("the PDF is older than the HTML book: run `make pdf`")
    return PdfReader(mp.OUT)


def _outline(reader):
    """[(level, title, first page)] of the PDF's outline."""
    out = []

    def walk(items, level):
        for it in items:
            if isinstance(it, list):
                walk(it, level + 1)
            else:
                out.append((level, it.title, reader.get_destination_page_number(it)))

    walk(reader.outline, 0)
    return out


def test_one_section_per_part_and_page_in_toc_order(pdf):
    outline = _outline(pdf)
    pages = mp.toc_pages()
    titles = [t for level, t, _ in outline if level == 1 or t == outline[0][1]]
    want = [mp.page_title(mp.HTML / f"{p}.html") for _, p in pages]
    assert titles == want
    parts = [t for level, t, _ in outline if level == 0][1:]
    assert parts == list(dict.fromkeys(c for c, _ in pages if c))
    starts = [p for _, _, p in outline]
    assert starts == sorted(starts) and len(pdf.pages) > len(pages)


def test_every_chapter_embeds_its_figures(pdf):
    outline = [(t, p) for level, t, p in _outline(pdf) if level == 1 or p == 0]
    bounds = {t: (p, q) for (t, p), (_, q) in zip(outline, outline[1:] + [("", None)])}
    for _, page in mp.toc_pages():
        nb = ROOT / f"{page}.ipynb"
        if not nb.exists():
            continue
        cells = json.loads(nb.read_text())["cells"]
        figures = sum(
            "image/png" in o.get("data", {})
            for c in cells
            if c["cell_type"] == "code"
            for o in c.get("outputs", [])
        )
        first, last = bounds[mp.page_title(mp.HTML / f"{page}.html")]
        last = len(pdf.pages) if last is None else last
        images = sum(len(pdf.pages[k].images) for k in range(first, last))
        assert images >= figures >= 1, (page, images, figures)


def test_code_is_not_cut_at_the_right_margin(pdf):
    # the print stylesheet wraps code to the column: no text is drawn past the page
    width = float(pdf.pages[0].mediabox.width)
    for k in range(0, len(pdf.pages), 7):
        xs = []
        pdf.pages[k].extract_text(
            visitor_text=lambda text, cm, tm, font, size: (
                xs.append(tm[4] * cm[0]) if text.strip() else None
            )
        )
        assert all(x < width for x in xs), k
