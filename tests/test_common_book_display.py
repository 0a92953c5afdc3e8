"""The page-facing helpers of lib.common: Markdown tables, show_source's collapsed
listings and equation excerpts, 2x PNG figures that record their smallest font, and the
pre-rendered (static) Explore states of live_controls."""

import base64
import re

import pytest

from lib.common import display as D
from lib.common import widgets as Wd
from lib.common.plot import figure_png, min_font_pt, png_info, setup_plots


# --- markdown_table -------------------------------------------------------------------
def test_markdown_table_renders_both_forms():
    t = D.markdown_table(["a", "b $x$"], [["1", "2|3"], ["long cell", "5"]])
    md = t._repr_markdown_()
    assert md.splitlines()[:2] == ["| a | b $x$ |", "|:--|--:|"]
    assert "2\\|3" in md  # a pipe inside a cell is escaped
    plain = repr(t).splitlines()
    assert plain[0].startswith("a") and plain[2] == "long cell      5"


@pytest.mark.parametrize(
    "header, rows, align, match",
    [
        ([], [], None, "header"),
        (["a", "b"], [["1"]], None, r"rows\[0\]: expected 2 cells"),
        (["a"], [["1"]], ["x"], "align"),
    ],
)
def test_markdown_table_bad_input(header, rows, align, match):
    with pytest.raises(ValueError, match=match):
        D.markdown_table(header, rows, align)


# --- show_source: collapsed listing, equation lines visible ---------------------------
_SRC = '''def f(x):
    """Doc mentions eq. (9) but is not code."""
    y = x + 1
    z = y * 2  # eq. (3): z = 2 (x + 1)
    w = z - 1
    return z + w  # the result, eq. (4)
'''


def test_equation_lines_are_excerpted_outside_docstrings():
    out = D.equation_lines(_SRC)
    assert out.splitlines() == [
        "z = y * 2  # eq. (3): z = 2 (x + 1)",
        "...",
        "return z + w  # the result, eq. (4)",
    ]
    assert D.equation_lines("def g():\n    return 1\n") == ""


def test_equation_lines_move_a_long_comment_above():
    src = "def f():\n    q = 1" + " " * 80 + "# eq. (1): q\n"
    out = D.equation_lines(src).splitlines()
    assert out == ["# eq. (1): q", "q = 1"]


def test_show_source_collapses_the_listing():
    md = D.show_source(D.fmt).data
    assert '<details class="source-listing">' in md and "</details>" in md
    assert "<summary>source of <code>lib.common.display.fmt</code>" in md
    assert "```python\n# lib.common.display.fmt\ndef fmt(" in md


# --- figures: 2x PNG with dpi and smallest font recorded ------------------------------
def test_figure_png_is_retina_and_records_its_smallest_font():
    import matplotlib

    matplotlib.use("agg")
    import matplotlib.pyplot as plt

    setup_plots()
    fig, ax = plt.subplots(figsize=(4, 2))
    ax.plot([0, 1], [0, 1], label="line")
    ax.legend(fontsize=9)
    ax.set_xlabel("x", fontsize=12)
    assert min_font_pt(fig) == 9
    b64, md = figure_png(fig)
    info = png_info(base64.b64decode(b64))
    plt.close(fig)
    assert info["dpi"] == 200 and info["text"]["min_font_pt"] == "9.00"
    assert (
        abs(info["width"] / 2 - md["width"]) <= 1
        and abs(info["height"] / 2 - md["height"]) <= 1
    )


def test_png_info_rejects_other_bytes():
    with pytest.raises(ValueError, match="data"):
        png_info(b"GIF89a....")


# --- live_controls: pre-rendered states for the static page ---------------------------
class _Shell:
    class display_formatter:  # noqa: N801 — mirrors the attribute name IPython uses
        @staticmethod
        def format(obj):
            from matplotlib.figure import Figure

            if isinstance(obj, Figure):
                k = obj.axes[0].lines[0].get_ydata()[-1]
                png = figure_png(obj)[0]
                return {"image/png": png, "text/plain": f"fig {k}"}, {
                    "image/png": {"width": 320, "height": 160}
                }
            return {"text/html": obj._repr_html_(), "text/plain": "html"}, {}


def _show(monkeypatch, draw, controls, **kw):
    import IPython
    import IPython.display
    import matplotlib

    matplotlib.use("agg")
    monkeypatch.setattr(IPython, "get_ipython", lambda: _Shell())
    shown = []
    monkeypatch.setattr(
        IPython.display, "display", lambda *o, **k: shown.append((o, k))
    )
    Wd.live_controls(draw, controls, **kw)
    return shown


def test_prerender_embeds_every_state_with_a_switch(monkeypatch):
    w = pytest.importorskip("ipywidgets")
    import matplotlib.pyplot as plt

    def draw(k=2, kind="a"):
        fig, ax = plt.subplots(figsize=(3.2, 1.6))
        ax.plot([0, 1], [0, k if kind == "a" else -k])

    controls = {
        "k": w.IntSlider(value=2, min=0, max=4, description="k"),
        "kind": w.Dropdown(options=["a", "b"], value="a", description="kind"),
    }
    shown = _show(
        monkeypatch,
        draw,
        controls,
        prerender={"k": [0, 2, 4], "kind": None},
        caption="A test figure.",
    )
    ((objs, kw),) = shown
    bundle = objs[0]
    assert kw == {"raw": True}
    # Jupyter: the live widget
    assert "application/vnd.jupyter.widget-view+json" in bundle
    html = bundle["text/html"]
    assert html.count('class="explore-state"') == 6  # 3 values of k x 2 kinds
    assert html.count('style="display:none"') == 5  # only the starting state is shown
    assert html.count("data:image/png;base64,") == 6
    assert 'type="range"' in html and "<select" in html and "oninput=" in html
    assert "A test figure." in html and "6 pre-rendered states" in html
    first = re.search(
        r'<div class="explore-state" data-state="([^"]*)"(?! style)', html
    )
    assert first.group(1) == "k=2, kind=a"


def test_prerender_checks_the_grid(monkeypatch):
    w = pytest.importorskip("ipywidgets")

    def draw(k=2):
        pass

    with pytest.raises(ValueError, match="lacks the starting value 2"):
        _show(
            monkeypatch,
            draw,
            {"k": w.IntSlider(value=2, max=4)},
            prerender={"k": [0, 4]},
        )
    with pytest.raises(ValueError, match="cannot take the values"):
        _show(
            monkeypatch,
            draw,
            {"k": w.IntSlider(value=2, max=4)},
            prerender={"k": [2, 7]},
        )
    with pytest.raises(ValueError, match="not a control"):
        _show(monkeypatch, draw, {"k": w.IntSlider(value=2, max=4)}, prerender="m")
    with pytest.raises(ValueError, match="exceed MAX_STATES"):
        _show(
            monkeypatch,
            draw,
            {"k": w.IntSlider(value=2, max=100)},
            prerender={"k": list(range(30))},
        )


def test_default_grid_of_a_slider_holds_its_value():
    w = pytest.importorskip("ipywidgets")
    grid = Wd._default_grid(w.FloatSlider(value=0.3, min=0.1, max=0.8, step=0.05))
    assert len(grid) == 8 and any(abs(v - 0.3) < 1e-9 for v in grid)
    grid = Wd._default_grid(
        w.FloatLogSlider(value=10.0, base=10, min=-2, max=2, step=0.5)
    )
    assert 10.0 in grid and len(grid) <= 9
    assert Wd._default_grid(w.Dropdown(options=[1, 2, 3], value=2)) == [1, 2, 3]


def test_a_draw_returning_html_shows_text(monkeypatch):
    w = pytest.importorskip("ipywidgets")
    from IPython.display import HTML

    def draw(n=1):
        return HTML(f"<pre>trace {n}</pre>")

    shown = _show(
        monkeypatch, draw, {"n": w.Dropdown(options=[1, 2], value=1)}, prerender="n"
    )
    html = shown[0][0][0]["text/html"]
    assert "<pre>trace 1</pre>" in html and "<pre>trace 2</pre>" in html
    assert "<img" not in html


# --- fmt_gap: round-off gaps print as their bound -------------------------------------
def test_fmt_gap_prints_the_bound_below_it_and_digits_above():
    assert D.fmt_gap(9.7e-16) == "< 1e-12"
    assert D.fmt_gap(-3e-14) == "< 1e-12"
    assert D.fmt_gap(0.0) == "< 1e-12"
    assert D.fmt_gap(2.5e-7, below=1e-5) == "< 1e-05"
    assert D.fmt_gap(0.36) == "3.6e-01"
    assert D.fmt_gap(float("nan")) == "nan"


@pytest.mark.parametrize(
    "kwargs, exc, words",
    [
        ({"x": "a"}, TypeError, "x: expected a real number"),
        ({"x": 1.0, "below": 0.0}, ValueError, "below: expected a positive number"),
        ({"x": 1.0, "below": True}, ValueError, "below: expected a positive number"),
        ({"x": 1.0, "below": "1e-9"}, ValueError, "below: expected a positive number"),
    ],
)
def test_fmt_gap_rejects_bad_input(kwargs, exc, words):
    with pytest.raises(exc, match=words):
        D.fmt_gap(**kwargs)
