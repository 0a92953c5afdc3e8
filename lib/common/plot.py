"""Figure defaults: sharp PNG figures that fit the book's column, one consistent style.

Figures are PNG (nbval compares SVG, not PNG) saved at twice their size for high-DPI
screens and shown at their nominal size: a figure ``w`` inches wide takes ``100 * w``
CSS pixels, so at the book's column (:data:`COLUMN_INCHES`) nothing is shrunk and a 10
pt font shows as 10 pt. Each PNG records the smallest font drawn in it (``min_font_pt``,
a PNG text chunk) so that the browser checks (``tests/test_html.py``) can compute the
size at which it is displayed.

Colours are the Okabe–Ito palette (distinguishable with the common colour-vision
deficiencies); each line of the default cycle also gets its own marker, spaced along the
line, so that lines stay apart in grey print and where colours are hard to tell apart.
"""

from __future__ import annotations

import io

import matplotlib as mpl

#: colours used consistently across chapters: the paper's method first, then baselines
# : (Okabe & Ito's colour-blind-safe palette; its yellow is replaced by grey, which
# reads on white).
PALETTE = [
    "#0072B2",  # blue
    "#D55E00",  # vermillion
    "#009E73",  # bluish green
    "#CC79A7",  # reddish purple
    "#E69F00",  # orange
    "#56B4E9",  # sky blue
    "#000000",  # black
    "#999999",  # grey
]
#: one marker per colour of the cycle
MARKERS = ["o", "s", "^", "D", "v", "P", "X", "*"]
# : the width of the book's text column at a 1280 px window, in inches at the display
# scale
#: (100 CSS px per inch): wider figures are shrunk, and their fonts with them
COLUMN_INCHES = 7.0
#: the smallest font a figure may use, in points, as displayed at :data:`COLUMN_INCHES`
MIN_FONT_PT = 9.0
#: CSS pixels per figure inch (``figure.dpi``); PNGs are saved at ``RETINA`` times this
DISPLAY_DPI = 100
RETINA = 2


def setup_plots(dpi: int = DISPLAY_DPI) -> None:
    """Set matplotlib defaults for the book and make inline figures 2x PNG."""
    from cycler import cycler

    mpl.rcParams.update(
        {
            "figure.dpi": dpi,
            "savefig.dpi": dpi,
            "figure.figsize": (6.4, 3.6),
            "figure.constrained_layout.use": True,
            "axes.prop_cycle": cycler(color=PALETTE)
            + cycler(marker=MARKERS)
            + cycler(markevery=[0.08] * len(MARKERS)),
            "axes.spines.top": False,
            "axes.spines.right": False,
            "axes.grid": True,
            "grid.alpha": 0.3,
            "lines.linewidth": 2,
            "lines.markersize": 5,
            "image.cmap": "viridis",
            "font.size": 10,
            "legend.fontsize": 10,
            "legend.frameon": False,
        }
    )
    try:  # inside IPython: figures are shown by figure_png
        from IPython import get_ipython
    except ImportError:  # plain Python (e.g. the FULL entry point on a GPU box)
        return
    shell = get_ipython()
    if shell is None:
        return
    import matplotlib.pyplot as plt

    # resolve the (lazily loaded) inline backend now: loading it resets the formatters
    try:
        plt._get_backend_mod()
    # a private helper: if it moves, the pre_run_cell hook still applies
    except Exception:
        pass
    _use_figure_png(shell)
    if not getattr(shell, "_book_figure_png_hook", False):  # once per kernel
        shell.events.register("pre_run_cell", lambda *args: _use_figure_png(shell))
        shell._book_figure_png_hook = True


def _use_figure_png(shell) -> None:
    """Make ``figure_png`` the only formatter of matplotlib figures (PNG; no SVG, JPEG,
    PDF).

    Called by ``setup_plots`` and again before every cell: ``%config InlineBackend...``
    and the inline backend's first use reset the figure formatters to matplotlib's 1x
    PNG.
    """
    from matplotlib.figure import Figure

    formatters = shell.display_formatter.formatters
    for mime in ("image/svg+xml", "image/jpeg", "application/pdf"):
        if mime in formatters:
            formatters[mime].pop(Figure, None)
    formatters["image/png"].for_type(Figure, figure_png)


def min_font_pt(fig) -> float | None:
    """The smallest font size (pt) among the non-empty visible texts of ``fig`` (None if
    none)."""
    from matplotlib.text import Text

    sizes = [
        t.get_fontsize()
        for t in fig.findobj(Text)
        if t.get_visible() and t.get_text().strip()
    ]
    return min(sizes) if sizes else None


def figure_png(fig, scale: int = RETINA):
    """``fig`` as (base64 PNG at ``scale`` x its dpi, {"width", "height"} at 1x) for
    IPython.

    The PNG carries its dpi (pHYs) and the smallest font drawn in it (text chunk
    ``min_font_pt``). Returns None for an empty figure, as IPython's own formatter does.
    """
    from base64 import b64encode

    if not fig.axes and not fig.lines and not fig.texts:
        return None
    fig.canvas.draw()  # lay out first: which tick labels are drawn depends on it
    smallest = min_font_pt(fig)
    meta = {"Software": None}
    if smallest is not None:
        meta["min_font_pt"] = f"{smallest:.2f}"
    buf = io.BytesIO()
    fig.savefig(
        buf,
        format="png",
        dpi=fig.dpi * scale,
        bbox_inches="tight",
        facecolor=fig.get_facecolor(),
        edgecolor=fig.get_edgecolor(),
        metadata=meta,
    )
    data = buf.getvalue()
    width, height = _png_size(data)
    md = {"width": width // scale, "height": height // scale}
    return b64encode(data).decode("ascii"), md


def _png_size(data: bytes) -> tuple[int, int]:
    """(width, height) in pixels from a PNG's IHDR chunk."""
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("data: expected PNG bytes")
    return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")


def png_info(data: bytes) -> dict:
    """Pixel size, dpi (from pHYs) and text chunks of a PNG, read without decoding the
    image."""
    width, height = _png_size(data)
    info = {"width": width, "height": height, "dpi": None, "text": {}}
    i = 8
    while i + 8 <= len(data):
        n = int.from_bytes(data[i : i + 4], "big")
        kind = data[i + 4 : i + 8]
        body = data[i + 8 : i + 8 + n]
        if kind == b"pHYs" and body[8:9] == b"\x01":  # unit: metre
            info["dpi"] = round(int.from_bytes(body[:4], "big") * 0.0254, 1)
        elif kind == b"tEXt" and b"\x00" in body:
            key, value = body.split(b"\x00", 1)
            info["text"][key.decode("latin-1")] = value.decode("latin-1")
        elif kind == b"IEND":
            break
        i += 12 + n
    return info
