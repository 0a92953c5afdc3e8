"""Browser checks of the built book (run by `make html` / `make test` after `make
book`).

Headless Debian Chromium loads each page of _build/html at a 1280 px window, runs its
JavaScript (MathJax, the pre-rendered Explore controls) and a measuring script injected
into a copy of the page (``_probe``); the checks then read what the reader would see:

- math is typeset (one MathJax node per math node, no TeX errors);
- no raw Markdown table (``|---|``) and no raw ``$`` in the rendered text (outside code
  and math);
- no display equation, table or visible code/output block wider than the text column
  (element
  widths measured in the page; a code block that scrolls sideways counts as too wide);
- no console error, uncaught exception or failed load (the page's own ``console.error``
  calls,
  ``error`` events, rejected promises, and Chromium's log of failed resource loads);
- every figure has a caption, and its smallest font, as displayed, is at least 9 pt: the
  PNG
  records its dpi and smallest font (``lib.common.plot.figure_png``), and the page gives
  its rendered width, so ``pt = font * dpi * (rendered px / PNG px) / 96``;
- every Explore cell shows pre-rendered states, and moving each of its controls changes
  what is
  displayed (a different image or text).

Screenshots of every chapter (the full page, 1280 px wide, in tiles of 8000 px) go to
_build/screenshots/<chapter>-<n>.png.
Without chromium the checks skip with the reason; in CI (CI=true) they fail instead.
"""

from __future__ import annotations

import base64
import html as html_lib
import json
import os
import pathlib
import re
import shutil
import subprocess
import tempfile
import urllib.parse

import pytest

bs4 = pytest.importorskip("bs4")

from lib.common.plot import MIN_FONT_PT, png_info  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[1]
HTML = ROOT / "_build" / "html"
SHOTS = ROOT / "_build" / "screenshots"
WIDTH = 1280
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--hide-scrollbars",
    "--virtual-time-budget=20000",
]
TILE_PX = (
    8000  # screenshot tiles: Chromium cannot capture a whole 20,000 px page at once
)
SLACK_PX = 1.0  # sub-pixel rounding


def _chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


CHROMIUM = _chromium()


def _toc_files():
    toc = (ROOT / "_toc.yml").read_text()
    return re.findall(r"file:\s*([^\s#]+)", toc) + re.findall(r"root:\s*(\S+)", toc)


def _chapters():
    return [f for f in _toc_files() if (ROOT / f"{f}.ipynb").exists()]


def _pages():
    return [
        f
        for f in _toc_files()
        if (ROOT / f"{f}.ipynb").exists() or (ROOT / f"{f}.md").exists()
    ]


@pytest.fixture(scope="module")
def chromium():
    if CHROMIUM is None:
        msg = (
            "chromium not found: run `make chromium` as root (apt-get install "
            "chromium); "
            "browser checks need it"
        )
        if os.environ.get("CI") == "true":
            pytest.fail(msg + " — in CI they must run")
        pytest.skip(msg)
    if not (HTML / "index.html").exists():
        pytest.fail("_build/html is missing: run `make book` first")
    return CHROMIUM


def _run(chromium, extra, url, size=(WIDTH, 900)):
    with tempfile.TemporaryDirectory() as ud:
        return subprocess.run(
            [
                chromium,
                *FLAGS,
                f"--window-size={size[0]},{size[1]}",
                f"--user-data-dir={ud}",
                *extra,
                url,
            ],
            capture_output=True,
            text=True,
            timeout=180,
        )


# Installed first in <head>: records errors before any page script runs.
_ERRORS_JS = r"""
window.__probeErrors = [];
window.addEventListener("error", function (e) {
  var t = e.target;
  if (t && t !== window && (t.src || t.href)) {
    window.__probeErrors.push("failed load: " + (t.src || t.href));
  } else {
    window.__probeErrors.push("error: " + e.message + " @ " + (e.filename || "") + ":" +
                              (e.lineno || ""));
  }
}, true);
window.addEventListener("unhandledrejection", function (e) {
  window.__probeErrors.push("unhandled rejection: " + e.reason);
});
(function () {
  var ce = console.error;
  console.error = function () {
    var text = Array.from(arguments).map(String).join(" ");
    window.__probeErrors.push("console.error: " + text);
    ce.apply(console, arguments);
  };
})();
"""

# Run after MathJax has typeset the page; writes its findings into <body
# data-probe="...">.
_PROBE_JS = r"""
(function () {
  function visible(el) {  // laid out and not inside a closed <details>
    var shown = !el.checkVisibility || el.checkVisibility();
    return el.getClientRects().length > 0 && shown;
  }
  function box(el, inner) {
    var r = (inner || el).getBoundingClientRect();
    return {width: r.width, left: r.left, right: r.right, scroll: el.scrollWidth,
            client: el.clientWidth, text: (el.textContent || "").trim().slice(0, 100)};
  }
  function signature(fig) {
    var shown = Array.from(fig.querySelectorAll(".explore-state"))
      .filter(function (s) { return s.style.display !== "none"; });
    return shown.map(function (s) {
      var img = s.querySelector("img");
      var what = img ? img.src.length + ":" + img.src.slice(-40) : s.textContent.length;
      return (s.dataset.state || "") + "|" + what;
    }).join(";");
  }
  function move(el, k) {
    if (el.tagName === "SELECT") el.selectedIndex = k; else el.value = String(k);
    el.dispatchEvent(new Event("input", {bubbles: true}));
    el.dispatchEvent(new Event("change", {bubbles: true}));
  }
  function measure() {
    var out = {errors: window.__probeErrors, equations: [], tables: [], code: [],
               listings: [], imgs: [], explore: []};
    var article = document.querySelector("article.bd-article") ||
                  document.querySelector("article") || document.body;
    var cs = getComputedStyle(article), a = article.getBoundingClientRect();
    var left = a.left + parseFloat(cs.paddingLeft);
    var right = a.right - parseFloat(cs.paddingRight);
    out.column = {left: left, right: right, width: right - left};
    article.querySelectorAll('mjx-container[display="true"]').forEach(function (m) {
      var inner = m.querySelector("mjx-math") || m;
      if (visible(inner)) out.equations.push(box(m, inner));
    });
    article.querySelectorAll("table").forEach(function (t) {
      if (visible(t)) out.tables.push(box(t));
    });
    article.querySelectorAll("pre").forEach(function (p) {
      if (visible(p) && !p.closest(".explore-static")) out.code.push(box(p));
    });
    var clone = article.cloneNode(true);
    clone.querySelectorAll("pre, code, mjx-container, script, style, .math, .MathJax")
      .forEach(function (e) { e.remove(); });
    out.text = clone.textContent;
    article.querySelectorAll("img").forEach(function (img, i) {
      img.setAttribute("data-probe-index", String(i));
      var fig = img.closest("figure"), cap = fig && fig.querySelector("figcaption");
      var r = img.getBoundingClientRect();
      var src = img.src.indexOf("data:") === 0 ? "data" : img.getAttribute("src");
      out.imgs.push({i: i, src: src, rendered: r.width, natural: img.naturalWidth,
                     visible: visible(img),
                     explore: !!img.closest(".explore-static"),
                     caption: cap ? cap.textContent.trim().slice(0, 200) : ""});
    });
    article.querySelectorAll("figure.explore-static").forEach(function (fig, f) {
      var rec = {controls: [], states: fig.querySelectorAll(".explore-state").length,
                 caption: (fig.querySelector("figcaption") || {}).textContent || "",
                 start: signature(fig), widths: []};
      fig.querySelectorAll("[data-explore-radix]").forEach(function (el) {
        var n = +el.dataset.exploreRadix;
        var k0 = el.tagName === "SELECT" ? el.selectedIndex : +el.value;
        var k1 = k0 === n - 1 ? 0 : n - 1;
        move(el, k1);
        var after = signature(fig);
        var label = (el.closest("label") || el).textContent.trim().slice(0, 40);
        rec.controls.push({name: label,
                           positions: n, changed: after !== rec.start && after !== ""});
        move(el, k0);
      });
      rec.back = signature(fig) === rec.start;
      // each state's images, shown one at a time to measure them
      fig.querySelectorAll(".explore-state").forEach(function (s) {
        var d = s.style.display; s.style.display = "";
        s.querySelectorAll("img").forEach(function (img) {
          out.imgs.push({i: +img.getAttribute("data-probe-index"), src: "data",
                         rendered: img.getBoundingClientRect().width,
                         natural: img.naturalWidth, visible: true, explore: true,
                         caption: rec.caption.slice(0, 200)});
        });
        s.style.display = d;
      });
      out.explore.push(rec);
    });
    article.querySelectorAll("details").forEach(function (d) { d.open = true; });
    article.querySelectorAll("details.source-listing pre").forEach(function (p) {
      if (visible(p)) out.listings.push(box(p));
    });
    article.querySelectorAll("details").forEach(function (d) { d.open = false; });
    out.height = document.documentElement.scrollHeight;
    document.body.setAttribute("data-probe", JSON.stringify(out));
  }
  var waited = 0;
  function whenTypeset() {
    var mj = window.MathJax;
    if (mj && mj.startup && mj.startup.promise) {
      mj.startup.promise.then(function () { setTimeout(measure, 300); });
    } else if (!document.querySelector('script[src*="mathjax"]') || waited > 8000) {
      measure();  // a page without math loads no MathJax
    } else {
      waited += 100;
      setTimeout(whenTypeset, 100);
    }
  }
  window.addEventListener("load", function () { setTimeout(whenTypeset, 100); });
})();
"""

_PROBES: dict = {}


def _probe(chromium, page_name: str) -> dict:
    """What the browser shows on ``page_name`` (``book/wctm``): see _PROBE_JS; cached
    per page.

    The page is copied next to itself with a ``<base>`` pointing at its folder (so every
    relative link resolves as on the real page) and the two scripts added; Chromium
    dumps the DOM after running it.
    """
    if page_name in _PROBES:
        return _PROBES[page_name]
    page = HTML / f"{page_name}.html"
    assert page.exists(), f"{page} was not built"
    text = page.read_text()
    head = f'<head><base href="{page.parent.as_uri()}/"><script>{_ERRORS_JS}</script>'
    text = text.replace("<head>", head, 1).replace(
        "</body>", f"<script>{_PROBE_JS}</script></body>", 1
    )
    with tempfile.TemporaryDirectory() as d:
        copy = pathlib.Path(d) / "page.html"
        copy.write_text(text)
        proc = _run(
            chromium, ["--enable-logging=stderr", "--v=0", "--dump-dom"], copy.as_uri()
        )
    m = re.search(r'<body[^>]*\bdata-probe="([^"]*)"', proc.stdout)
    assert proc.returncode == 0 and m, (
        f"{page_name}: the page did not finish (MathJax never ready?): "
        f"{proc.stderr[-800:]}"
    )
    res = json.loads(html_lib.unescape(m.group(1)))
    res["dom"] = proc.stdout
    res["log"] = [
        line
        for line in proc.stderr.splitlines()
        if "CONSOLE" in line
        and ("Failed to load resource" in line or "Uncaught" in line)
    ]
    _PROBES[page_name] = res
    return res


def _too_wide(items, column, kind):
    bad = []
    for b in items:
        over = b["width"] - column["width"]
        scrolls = b["scroll"] - b["client"]
        if (
            over > SLACK_PX
            or b["right"] > column["right"] + SLACK_PX
            or scrolls > SLACK_PX
        ):
            bad.append(
                f"{kind} {b['width']:.0f} px (scrolls {max(scrolls, 0):.0f} px) in a "
                f"{column['width']:.0f} px column: {b['text'][:70]!r}"
            )
    return bad


@pytest.mark.parametrize("chapter", _chapters())
def test_chapter_renders(chromium, chapter):
    """Math typeset, PNG figures present and on disk; a full-page screenshot kept."""
    page = HTML / f"{chapter}.html"
    static = bs4.BeautifulSoup(page.read_text(), "html.parser")
    res = _probe(chromium, chapter)
    dom = bs4.BeautifulSoup(res["dom"], "html.parser")

    n_math = len(static.select(".math"))
    n_typeset = len(dom.find_all("mjx-container"))
    assert n_math > 0, f"{chapter}: no math on the page"
    assert n_typeset >= n_math, (
        f"{chapter}: {n_typeset} of {n_math} math nodes typeset (MathJax failed?)"
    )
    assert not dom.find_all("mjx-merror"), f"{chapter}: MathJax reported a TeX error"

    imgs = [i for i in res["imgs"] if not i["explore"]]
    assert imgs, f"{chapter}: no figure on the page"
    for img in imgs:
        src = img["src"]
        if src != "data":
            assert (page.parent / urllib.parse.unquote(src)).exists(), (
                f"{chapter}: missing image {src}"
            )

    shots = screenshot(
        chromium, page, int(res["height"]), SHOTS / pathlib.Path(chapter).name
    )
    assert shots and all(p.stat().st_size > 10_000 for p in shots), (
        f"{chapter}: screenshot failed"
    )


def screenshot(chromium, page: pathlib.Path, height: int, stem: pathlib.Path) -> list:
    """The whole page at WIDTH px, in tiles of TILE_PX (<stem>-1.png, <stem>-2.png, …).

    Chromium cannot capture a page taller than its largest texture, so each tile is the
    page shifted up by a negative top margin (the fixed sidebars show on every tile).
    """
    stem.parent.mkdir(parents=True, exist_ok=True)
    for old in stem.parent.glob(f"{stem.name}-*.png"):
        old.unlink()
    text = page.read_text()
    shots = []
    for k in range(max(1, -(-height // TILE_PX))):
        shift = f"<style>body{{margin-top:-{k * TILE_PX}px !important}}</style>"
        html = text.replace(
            "<head>", f'<head><base href="{page.parent.as_uri()}/">{shift}', 1
        )
        tile = min(TILE_PX, height - k * TILE_PX) if height > k * TILE_PX else TILE_PX
        out = stem.parent / f"{stem.name}-{k + 1}.png"
        with tempfile.TemporaryDirectory() as d:
            copy = pathlib.Path(d) / "page.html"
            copy.write_text(html)
            _run(
                chromium,
                [f"--screenshot={out}"],
                copy.as_uri(),
                size=(WIDTH, max(tile, 900)),
            )
        if out.exists():
            shots.append(out)
    return shots


@pytest.mark.parametrize("page", _pages())
def test_no_raw_markdown_or_dollar_signs(chromium, page):
    """Markdown a cell displayed is rendered: no `|---|` table rows, no `$` left
    untypeset."""
    text = _probe(chromium, page)["text"]
    rows = re.findall(r"\|\s*:?-{3,}:?\s*\|", text)
    assert not rows, (
        f"{page}: {len(rows)} raw Markdown table rule(s) in the text, e.g. {rows[0]!r}"
    )
    dollars = [m.start() for m in re.finditer(r"\$", text)]
    assert not dollars, f"{page}: raw '$' in the rendered text: " + "; ".join(
        repr(text[max(0, i - 40) : i + 40]) for i in dollars[:3]
    )


@pytest.mark.parametrize("page", _pages())
def test_equations_tables_and_code_fit_the_column(chromium, page):
    """Display equations, tables and visible code/output blocks fit the text column at
    1280 px."""
    res = _probe(chromium, page)
    col = res["column"]
    bad = (
        _too_wide(res["equations"], col, "equation")
        + _too_wide(res["tables"], col, "table")
        + _too_wide(res["code"], col, "code block")
    )
    assert not bad, f"{page}: {len(bad)} block(s) wider than the column:\n" + "\n".join(
        bad
    )


@pytest.mark.parametrize("chapter", _chapters())
def test_opened_source_listings_fit_the_column(chromium, chapter):
    res = _probe(chromium, chapter)
    bad = _too_wide(res["listings"], res["column"], "listing")
    assert not bad, (
        f"{chapter}: {len(bad)} listing(s) wider than the column:\n" + "\n".join(bad)
    )


@pytest.mark.parametrize("page", _pages())
def test_no_console_errors(chromium, page):
    """No uncaught error, console.error or failed load while the page loads and
    typesets."""
    res = _probe(chromium, page)
    problems = list(res["errors"]) + res["log"]
    assert not problems, f"{page}: console errors:\n" + "\n".join(problems[:10])


def _image_bytes(page: pathlib.Path, dom, img) -> bytes:
    if img["src"] != "data":
        return (page.parent / urllib.parse.unquote(img["src"])).read_bytes()
    el = dom.find("img", attrs={"data-probe-index": str(img["i"])})
    src = el["src"]
    return base64.b64decode(src.split(",", 1)[1])


@pytest.mark.parametrize("chapter", _chapters())
def test_figures_have_captions_and_legible_fonts(chromium, chapter):
    """Each figure is captioned; its smallest font is at least MIN_FONT_PT as
    displayed."""
    page = HTML / f"{chapter}.html"
    res = _probe(chromium, chapter)
    dom = bs4.BeautifulSoup(res["dom"], "html.parser")
    problems = []
    for img in res["imgs"]:
        if not img["visible"] or not img["rendered"]:
            continue
        where = f"image {img['i']}" + (" (Explore)" if img["explore"] else "")
        if not img["caption"]:
            problems.append(f"{where}: no caption")
        info = png_info(_image_bytes(page, dom, img))
        font = info["text"].get("min_font_pt")
        if font is None or not info["dpi"]:
            problems.append(
                f"{where}: the PNG records no dpi/min_font_pt (not drawn by "
                f"figure_png?)"
            )
            continue
        shown = float(font) * info["dpi"] * (img["rendered"] / info["width"]) / 96
        if shown < MIN_FONT_PT - 0.05:
            problems.append(
                f"{where}: smallest font {float(font):.1f} pt drawn, {shown:.1f} pt as "
                f"displayed ({img['rendered']:.0f} px wide for {info['width']} px at "
                f"{info['dpi']:.0f} dpi)"
            )
    assert not problems, f"{chapter}:\n" + "\n".join(problems)


@pytest.mark.parametrize("chapter", _chapters())
def test_explore_is_prerendered_and_responds(chromium, chapter):
    """The Explore cell shows pre-rendered states; moving each control changes the
    display."""
    res = _probe(chromium, chapter)
    assert res["explore"], (
        f"{chapter}: no pre-rendered Explore figure (live_controls(..., prerender=...))"
    )
    for k, rec in enumerate(res["explore"]):
        assert rec["states"] >= 2 and rec["start"], (
            f"{chapter} Explore {k}: no states shown"
        )
        assert rec["caption"].strip(), f"{chapter} Explore {k}: no caption"
        dead = [c["name"] for c in rec["controls"] if not c["changed"]]
        assert rec["controls"] and not dead, (
            f"{chapter} Explore {k}: moving {dead or 'a control'} does not change the "
            f"display"
        )
        assert rec["back"], (
            f"{chapter} Explore {k}: moving a control back does not restore it"
        )


# noqa: B006 - a per-process cache of ids per page
def _ids(path: pathlib.Path, cache={}):
    if path not in cache:
        soup = bs4.BeautifulSoup(path.read_text(errors="replace"), "html.parser")
        cache[path] = {e["id"] for e in soup.find_all(id=True)} | {
            a["name"] for a in soup.find_all("a", attrs={"name": True})
        }
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
            target = (
                page
                if not parsed.path
                else (page.parent / urllib.parse.unquote(parsed.path)).resolve()
            )
            if target.is_dir():
                target = target / "index.html"
            if not target.exists():
                broken.append(f"{page.relative_to(HTML)} -> {href}")
            elif (
                parsed.fragment
                and target.suffix == ".html"
                and parsed.fragment not in _ids(target)
            ):
                broken.append(f"{page.relative_to(HTML)} -> {href} (no such anchor)")
    assert not broken, "broken internal links:\n" + "\n".join(broken[:40])
