"""`make pdf`: the whole book as one PDF, built offline from the HTML book.

Debian's Chromium (the browser the HTML checks already use) prints every page of
``_build/html`` in the order of ``_toc.yml``, with the book's print stylesheet (A4, no
navigation, code wrapped to the column; ``book/_static/book.css``). pypdf joins the
pages into ``_build/pdf/icml2025-in-code.pdf`` with an outline: one entry per part and
one per chapter. Solutions stay folded, as in the book. Run ``make book`` first.
"""

from __future__ import annotations

import concurrent.futures
import html
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile
import time

import yaml

ROOT = pathlib.Path(__file__).resolve().parents[1]
HTML = ROOT / "_build" / "html"
OUT = ROOT / "_build" / "pdf" / "icml2025-in-code.pdf"


def chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    raise FileNotFoundError(
        "chromium not found: run `make chromium` (Debian's chromium)"
    )


def toc_pages(toc_path: pathlib.Path = ROOT / "_toc.yml") -> list[tuple[str, str]]:
    """``[(part caption, page path without suffix), ...]`` in reading order, the root
    page first (caption "")."""
    toc = yaml.safe_load(toc_path.read_text())
    pages = [("", toc["root"])]
    for part in toc.get("parts", []):
        for ch in part.get("chapters", []):
            pages.append((part.get("caption", ""), ch["file"]))
    return pages


def page_title(path: pathlib.Path) -> str:
    """The page's title, without the book's name that Sphinx appends."""
    m = re.search(r"<title>(.*?)</title>", path.read_text(errors="replace"), re.S)
    title = html.unescape(m.group(1)).strip() if m else path.stem
    return re.sub(r"\s+[—–-]\s+ICML 2025 in Code\s*$", "", title)


def print_page(browser: str, src: pathlib.Path, dest: pathlib.Path) -> None:
    """One HTML page -> one PDF (MathJax given time to typeset)."""
    with tempfile.TemporaryDirectory() as profile:
        subprocess.run(
            [
                browser,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--no-first-run",
                f"--user-data-dir={profile}",
                "--no-pdf-header-footer",
                "--run-all-compositor-stages-before-draw",
                "--virtual-time-budget=8000",
                f"--print-to-pdf={dest}",
                src.as_uri(),
            ],
            check=True,
            capture_output=True,
            timeout=180,
        )
    if not dest.exists() or dest.stat().st_size == 0:
        raise RuntimeError(f"chromium wrote no PDF for {src}")


def main(argv: list[str]) -> int:
    from pypdf import PdfReader, PdfWriter

    if not (HTML / "index.html").exists():
        print("no HTML book: run `make book` first", file=sys.stderr)
        return 2
    t0 = time.perf_counter()
    browser = chromium()
    pages = toc_pages()
    tmp = OUT.parent / "pages"
    tmp.mkdir(parents=True, exist_ok=True)
    jobs = {}
    with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as ex:
        for k, (_, page) in enumerate(pages):
            src = HTML / f"{page}.html"
            if not src.exists():
                raise FileNotFoundError(f"{src} missing: run `make book`")
            dest = tmp / f"{k:02d}-{pathlib.Path(page).name}.pdf"
            jobs[ex.submit(print_page, browser, src, dest)] = dest
        for f in concurrent.futures.as_completed(jobs):
            f.result()
    writer, parents = PdfWriter(), {}
    for k, (caption, page) in enumerate(pages):
        dest = tmp / f"{k:02d}-{pathlib.Path(page).name}.pdf"
        start = len(writer.pages)
        writer.append(PdfReader(dest))
        parent = None
        if caption:
            if caption not in parents:
                parents[caption] = writer.add_outline_item(
                    title=caption, page_number=start
                )
            parent = parents[caption]
        writer.add_outline_item(
            title=page_title(HTML / f"{page}.html"), page_number=start, parent=parent
        )
    writer.add_metadata({"/Title": "ICML 2025 in Code", "/Creator": "make pdf"})
    with open(OUT, "wb") as fh:
        writer.write(fh)
    print(
        f"{OUT.relative_to(ROOT)}: {len(writer.pages)} pages, {len(pages)} sections, "
        f"{time.perf_counter() - t0:.0f} s"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
