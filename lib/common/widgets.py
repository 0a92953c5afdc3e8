"""Interactive controls that redraw a figure: explicit widgets with ``observe`` (not ``interact``).

The figure is rendered to display data and put into an ``Output`` widget by setting its ``outputs``
directly, instead of the usual ``with out:`` capture. The capture routes messages through the
kernel's parent-header bookkeeping, which makes nbclient (``make execute``, the book build) stall
now and then waiting for a reply it already had (jupyter/nbclient#312); setting ``outputs`` avoids
that path entirely, works the same in JupyterLab, and is saved in the widget state, so the built
book shows the first figure.
"""
from __future__ import annotations


def _figure_output(draw, values: dict) -> tuple:
    """Run ``draw(**values)`` on a fresh figure and return it as an Output widget ``outputs`` tuple."""
    import matplotlib.pyplot as plt
    from IPython import get_ipython

    plt.close("all")
    show = plt.show
    plt.show = lambda *args, **kwargs: None  # a draw() that ends with plt.show() must not display
    try:
        draw(**values)
    finally:
        plt.show = show
    fig = plt.gcf()
    shell = get_ipython()
    if shell is None:  # plain Python: nothing to display into
        plt.close(fig)
        return ()
    data, metadata = shell.display_formatter.format(fig)
    plt.close(fig)
    data.pop("text/plain", None)  # '<Figure size …>' adds nothing next to the picture
    return ({"output_type": "display_data", "data": data, "metadata": metadata},)


def live_controls(draw, controls: dict) -> None:
    """Display ``controls`` (name -> ipywidget) above an output area showing ``draw(**values)``.

    ``draw`` makes a matplotlib figure (the current one when it returns; a ``plt.show()`` in it is
    ignored); it is
    called once now and again on every change of a control.
    """
    import ipywidgets as w
    from IPython.display import display

    if not callable(draw):
        raise TypeError(f"draw: expected a callable, got {type(draw).__name__}")
    if not isinstance(controls, dict) or not controls:
        raise ValueError(f"controls: expected a non-empty dict of name -> widget, got {controls!r}")
    for name, c in controls.items():
        if not isinstance(c, w.ValueWidget):
            raise TypeError(f"controls[{name!r}]: expected an ipywidgets value widget, got {type(c).__name__}")
    out = w.Output()

    def redraw(_change=None):
        out.outputs = _figure_output(draw, {k: c.value for k, c in controls.items()})

    for c in controls.values():
        c.observe(redraw, names="value")
    redraw()
    display(w.VBox([w.HBox(list(controls.values()), layout=w.Layout(flex_flow="row wrap")), out]))
