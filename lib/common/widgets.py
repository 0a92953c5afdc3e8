"""Interactive controls that redraw a figure: explicit widgets with ``observe`` (not ``interact``,
which can stall nbclient), drawing into an ``Output`` so the built book shows the first figure."""
from __future__ import annotations


def live_controls(draw, controls: dict) -> None:
    """Display ``controls`` (name -> ipywidget) above an output area where ``draw(**values)`` runs.

    ``draw`` makes a matplotlib figure; it is called once now and again on every change.
    """
    import ipywidgets as w
    import matplotlib.pyplot as plt
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
        with out:
            out.clear_output(wait=True)
            draw(**{k: c.value for k, c in controls.items()})
            plt.show()

    for c in controls.values():
        c.observe(redraw, names="value")
    redraw()
    display(w.VBox([w.HBox(list(controls.values()), layout=w.Layout(flex_flow="row wrap")), out]))
