"""Browser checks of the built book (run by `make test` after `make book`).

Headless Debian Chromium loads every chapter page from _build/html and we check, in the DOM it
produced after running the page's JavaScript, that math is typeset (MathJax, vendored), figures are
present, widgets rendered (controls plus a figure in their output area), and that no page of the
book has a broken internal link. A screenshot of each chapter goes to _build/screenshots/.
Without chromium the checks skip with the reason; in CI (CI=true) they fail instead.
"""
from __future__ import annotations

import os
import pathlib
import re
import shutil
import subprocess
import tempfile
import urllib.parse

import pytest

bs4 = pytest.importorskip("bs4")

ROOT = pathlib.Path(__file__).resolve().parents[1]
HTML = ROOT / "_build" / "html"
SHOTS = ROOT / "_build" / "screenshots"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--no-first-run", "--hide-scrollbars", "--virtual-time-budget=15000"]
CONTROL = re.compile(r"widget-(hslider|vslider|slider|dropdown|toggle-button|checkbox|text|select|"
                     r"radio|play|button|inttext|floattext)")


def _chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


CHROMIUM = _chromium()


def _chapters():
    toc = (ROOT / "_toc.yml").read_text()
    files = re.findall(r"file:\s*([^\s#]+)", toc)
    return [f for f in files if (ROOT / f"{f}.ipynb").exists()]


@pytest.fixture(scope="module")
def chromium():
    if CHROMIUM is None:
        msg = ("chromium not found: run `make chromium` as root (apt-get install chromium); "
               "browser checks need it")
        if os.environ.get("CI") == "true":
            pytest.fail(msg + " — in CI they must run")
        pytest.skip(msg)
    if not (HTML / "index.html").exists():
        pytest.fail("_build/html is missing: run `make book` first")
    return CHROMIUM


def _run(chromium, extra, url):
    with tempfile.TemporaryDirectory() as ud:
        proc = subprocess.run([chromium, *FLAGS, f"--user-data-dir={ud}", *extra, url],
                              capture_output=True, text=True, timeout=120)
    return proc


def _render(chromium, page: pathlib.Path) -> str:
    proc = _run(chromium, ["--dump-dom"], page.as_uri())
    assert proc.returncode == 0 and "<html" in proc.stdout, f"chromium failed on {page}: {proc.stderr[-500:]}"
    return proc.stdout


@pytest.mark.parametrize("chapter", _chapters())
def test_chapter_renders(chromium, chapter):
    page = HTML / f"{chapter}.html"
    assert page.exists(), f"{page} was not built"
    static = bs4.BeautifulSoup(page.read_text(), "html.parser")
    dom = bs4.BeautifulSoup(_render(chromium, page), "html.parser")
    article = dom.select_one("article") or dom

    # math is typeset: one MathJax container per math node, and no TeX errors
    n_math = len(static.select(".math"))
    n_typeset = len(dom.find_all("mjx-container"))
    assert n_math > 0, f"{chapter}: no math on the page"
    assert n_typeset >= n_math, f"{chapter}: {n_typeset} of {n_math} math nodes typeset (MathJax failed?)"
    assert not dom.find_all("mjx-merror"), f"{chapter}: MathJax reported a TeX error"

    # figures are present and their files exist
    imgs = [i for i in article.find_all("img") if ".png" in i.get("src", "") or "image/png" in i.get("src", "")]
    assert imgs, f"{chapter}: no PNG figure on the page"
    for img in imgs:
        src = img["src"]
        if not src.startswith("data:"):
            assert (page.parent / urllib.parse.unquote(src)).exists(), f"{chapter}: missing image {src}"

    # widgets rendered, not blank: controls drawn and a figure inside a widget output area
    views = static.find_all("script", type="application/vnd.jupyter.widget-view+json")
    assert views, f"{chapter}: no widget on the page"
    rendered = [e for e in dom.find_all(class_="jupyter-widgets")]
    assert len(rendered) >= len(views), f"{chapter}: {len(rendered)} widgets rendered for {len(views)} views"
    controls = dom.find_all(class_=lambda c: bool(c) and bool(CONTROL.search(c)))
    assert controls, f"{chapter}: no control (slider, dropdown, …) rendered"
    outputs = dom.find_all(class_="widget-output")
    assert any(o.find("img") for o in outputs), f"{chapter}: widget output areas are blank (no figure)"

    SHOTS.mkdir(parents=True, exist_ok=True)
    shot = SHOTS / f"{pathlib.Path(chapter).name}.png"
    proc = _run(chromium, [f"--screenshot={shot}", "--window-size=1280,2000"], page.as_uri())
    assert shot.exists() and shot.stat().st_size > 10_000, f"{chapter}: screenshot failed {proc.stderr[-300:]}"


def _ids(path: pathlib.Path, cache={}):  # noqa: B006 - a per-process cache of ids per page
    if path not in cache:
        soup = bs4.BeautifulSoup(path.read_text(errors="replace"), "html.parser")
        cache[path] = {e["id"] for e in soup.find_all(id=True)} | {a["name"] for a in soup.find_all("a", attrs={"name": True})}
    return cache[path]


def test_no_broken_internal_links(chromium):
    broken = []
    pages = [p for p in HTML.rglob("*.html") if "_static" not in p.parts]
    assert pages, "no HTML pages built"
    for page in pages:
        soup = bs4.BeautifulSoup(page.read_text(errors="replace"), "html.parser")
        for a in soup.find_all("a", href=True):
            href = a["href"]
            parsed = urllib.parse.urlparse(href)
            if parsed.scheme or href.startswith(("mailto:", "javascript:", "//")):
                continue
            target = page if not parsed.path else (page.parent / urllib.parse.unquote(parsed.path)).resolve()
            if target.is_dir():
                target = target / "index.html"
            if not target.exists():
                broken.append(f"{page.relative_to(HTML)} -> {href}")
            elif parsed.fragment and target.suffix == ".html" and parsed.fragment not in _ids(target):
                broken.append(f"{page.relative_to(HTML)} -> {href} (no such anchor)")
    assert not broken, "broken internal links:\n" + "\n".join(broken[:40])
