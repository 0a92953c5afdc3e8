"""Figure defaults: PNG output (nbval compares SVG), one consistent style."""
from __future__ import annotations

import matplotlib as mpl

#: colours used consistently across chapters: the paper's method first, then baselines.
PALETTE = ["#1f6feb", "#d9480f", "#2f9e44", "#862e9c", "#e8590c", "#495057", "#c2255c", "#0b7285"]


def setup_plots(dpi: int = 100) -> None:
    """Set matplotlib defaults for the book and make inline figures PNG."""
    mpl.rcParams.update({
        "figure.dpi": dpi,
        "savefig.dpi": dpi,
        "figure.figsize": (6.4, 3.6),
        "figure.constrained_layout.use": True,
        "axes.prop_cycle": mpl.cycler(color=PALETTE),
        "axes.spines.top": False,
        "axes.spines.right": False,
        "axes.grid": True,
        "grid.alpha": 0.3,
        "lines.linewidth": 2,
        "font.size": 10,
        "legend.frameon": False,
    })
    try:  # inside IPython: PNG figures only
        from IPython import get_ipython
        if get_ipython() is not None:
            from matplotlib_inline.backend_inline import set_matplotlib_formats
            set_matplotlib_formats("png")
    except ImportError:  # plain Python (e.g. the FULL entry point on a GPU box)
        pass
