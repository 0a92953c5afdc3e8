"""Interactive controls that redraw a figure: explicit widgets with ``observe`` (not ``interact``).

The figure is rendered to display data and put into an ``Output`` widget by setting its ``outputs``
directly, instead of the usual ``with out:`` capture. The capture routes messages through the
kernel's parent-header bookkeeping, which makes nbclient (``make execute``, the book build) stall
now and then waiting for a reply it already had (jupyter/nbclient#312); setting ``outputs`` avoids
that path entirely, works the same in JupyterLab, and is saved in the widget state, so the built
book shows the first figure.

Two things a reader would otherwise not see are made visible:

- an exception raised by ``draw`` on a redraw (a control moved in JupyterLab) replaces the figure
  with its traceback in the output area; without this, the old figure stays next to the new value
  and the traceback goes only to JupyterLab's log console;
- a control whose first value is not the value ``draw`` declares as its default, or that its own
  range cannot hold (a stepped slider that can never come back to it), is refused up front.
"""
from __future__ import annotations

import inspect
import math
import traceback


def _figure_output(draw, values: dict) -> tuple:
    """Run ``draw(**values)`` on a fresh figure and return it as an Output widget ``outputs`` tuple."""
    import matplotlib.pyplot as plt
    from IPython import get_ipython

    plt.close("all")
    show = plt.show
    plt.show = lambda *args, **kwargs: None  # a draw() that ends with plt.show() must not display
    try:
        draw(**values)
    except BaseException:
        plt.close("all")  # a half-drawn figure must not leak into the next draw
        raise
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


def _error_output(draw, values: dict, exc: BaseException) -> tuple:
    """The traceback of a failed redraw as an Output widget ``outputs`` tuple (stderr text).

    The frames of this module are dropped, so the traceback starts in ``draw``.
    """
    tb = exc.__traceback__
    while tb is not None and tb.tb_frame.f_code.co_filename == __file__:
        tb = tb.tb_next
    lines = traceback.format_exception(type(exc), exc, tb)
    name = getattr(draw, "__name__", "draw")
    args = ", ".join(f"{k}={v!r}" for k, v in values.items())
    text = f"{name}({args}) failed; no figure until a redraw succeeds.\n"
    return ({"output_type": "stream", "name": "stderr", "text": text + "".join(lines)},)


def _close(a, b) -> bool:
    """``a == b``, with floats compared to 1e-9 relative (0.1 + 0.2 is 0.3 here)."""
    if isinstance(a, float) or isinstance(b, float):
        try:
            return math.isclose(float(a), float(b), rel_tol=1e-9, abs_tol=1e-12)
        except (TypeError, ValueError):
            return False
    try:
        return bool(a == b)
    except Exception:  # e.g. arrays, whose == is elementwise
        return a is b


def _on_grid(x: float, start: float, step) -> bool:
    """Whether ``x`` is ``start + k * step`` for an integer ``k`` (to 1e-6 of a step)."""
    if step is None or step <= 0:
        return True
    k = (x - start) / step
    return abs(k - round(k)) <= 1e-6


def _range_problem(c) -> str | None:
    """Why the control ``c`` cannot take its own current value again, or None if it can."""
    import ipywidgets as w

    value = c.value
    if isinstance(c, w.widgets.widget_selection._Selection):  # Dropdown, SelectionSlider, ToggleButtons…
        values = [v for _, v in c._options_full]  # (label, value) pairs
        if not any(_close(value, v) for v in values):
            return f"its options {values!r} do not contain it"
        return None
    if isinstance(c, w.FloatLogSlider):
        if not value > 0:
            return "a log slider cannot show a value <= 0"
        exponent = math.log(value, c.base)
        if not c.min - 1e-9 <= exponent <= c.max + 1e-9:
            return f"it lies outside {c.base}**[{c.min}, {c.max}]"
        if not _on_grid(exponent, c.min, c.step):
            k = round((exponent - c.min) / c.step)
            near = sorted({c.base ** (c.min + j * c.step) for j in (k - 1, k, k + 1)
                           if c.min - 1e-9 <= c.min + j * c.step <= c.max + 1e-9})
            return (f"the slider moves in steps of {c.step} in log{c.base:g}(value) from {c.min}, and "
                    f"log{c.base:g}({value!r}) = {exponent:.4g} is not on that grid "
                    f"(nearest positions: {', '.join(f'{v:.4g}' for v in near)})")
        return None
    if isinstance(value, (int, float)) and not isinstance(value, bool) and hasattr(c, "min") \
            and hasattr(c, "max"):  # IntSlider, FloatSlider, BoundedIntText, …
        if not c.min <= value <= c.max:
            return f"it lies outside [{c.min}, {c.max}]"
        if not _on_grid(value, c.min, getattr(c, "step", None)):
            return f"the slider moves in steps of {c.step} from {c.min}, and {value!r} is not on that grid"
    return None


def _check_controls(draw, controls: dict) -> None:
    """Refuse controls that ``draw`` does not accept, that start away from ``draw``'s default, or that
    cannot hold their own starting value (ValueError naming the control)."""
    try:
        params = inspect.signature(draw).parameters
    except (TypeError, ValueError):  # a builtin or C callable: nothing to compare against
        params = None
    if params is not None:
        takes_kwargs = any(p.kind is p.VAR_KEYWORD for p in params.values())
        for name in controls:
            p = params.get(name)
            ok = takes_kwargs if p is None else p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
            if not ok:
                raise ValueError(f"controls[{name!r}]: draw{inspect.signature(draw)} has no keyword "
                                 f"parameter {name!r}")
        missing = [n for n, p in params.items() if n not in controls and p.default is p.empty
                   and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
        if missing:
            raise ValueError(f"controls: draw needs {missing} but no control of that name is given")
    problems = []  # all of them at once, so one edit fixes a chapter
    for name, c in controls.items():
        p = params.get(name) if params is not None else None
        if p is not None and p.default is not p.empty and not _close(c.value, p.default):
            why = (f"controls[{name!r}]: starts at {c.value!r}, but draw declares {name}={p.default!r}, "
                   f"so the first figure is not the default one")
            try:
                if not c.min <= p.default <= c.max:
                    why += f" ({p.default!r} lies outside the control's range [{c.min}, {c.max}])"
            except (AttributeError, TypeError):
                pass
            problems.append(why)
            continue
        why = _range_problem(c)
        if why is not None:
            problems.append(f"controls[{name!r}]: cannot return to its value {c.value!r}: {why}")
    if problems:
        raise ValueError("\n".join(problems))


def live_controls(draw, controls: dict) -> None:
    """Display ``controls`` (name -> ipywidget) above an output area showing ``draw(**values)``.

    ``draw`` makes a matplotlib figure (the current one when it returns; a ``plt.show()`` in it is
    ignored); it is called once now and again on every change of a control. An error in that first
    call is raised here; an error in a later call is shown in the output area in place of the figure.

    Each control's name must be a keyword parameter of ``draw``; where ``draw`` declares a default,
    the control must start at it, and every control must be able to hold its starting value (in its
    options, inside its range, on its step grid — a ``FloatLogSlider`` steps in the exponent).
    Otherwise ``ValueError`` names the control.
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
    _check_controls(draw, controls)
    out = w.Output()

    def values() -> dict:
        return {k: c.value for k, c in controls.items()}

    def redraw(_change=None):
        vals = values()
        try:
            out.outputs = _figure_output(draw, vals)
        except Exception as exc:  # shown where the reader looks, not only in the log console
            out.outputs = _error_output(draw, vals, exc)

    out.outputs = _figure_output(draw, values())  # the first figure: an error here is raised
    for c in controls.values():
        c.observe(redraw, names="value")
    display(w.VBox([w.HBox(list(controls.values()), layout=w.Layout(flex_flow="row wrap")), out]))
