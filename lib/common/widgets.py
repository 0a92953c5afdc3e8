"""Interactive controls that redraw a figure: explicit widgets with ``observe`` (not
``interact``).

The figure is rendered to display data and put into an ``Output`` widget by setting its
``outputs`` directly, instead of the usual ``with out:`` capture. The capture routes
messages through the kernel's parent-header bookkeeping, which makes nbclient (``make
execute``, the book build) stall now and then waiting for a reply it already had
(jupyter/nbclient#312); setting ``outputs`` avoids that path entirely, works the same in
JupyterLab, and is saved in the widget state, so the built book shows the first figure.

Two things a reader would otherwise not see are made visible:

- an exception raised by ``draw`` on a redraw (a control moved in JupyterLab) replaces
  the figure
  with its traceback in the output area; without this, the old figure stays next to the
  new value and the traceback goes only to JupyterLab's log console;
- a control whose first value is not the value ``draw`` declares as its default, or that
  its own
  range cannot hold (a stepped slider that can never come back to it), is refused up
  front.
"""

from __future__ import annotations

import inspect
import math
import traceback


def _figure_output(draw, values: dict) -> tuple:
    """Run ``draw(**values)`` on a fresh figure and return what it shows as Output
    ``outputs``.

    That is the figure ``draw`` drew (if it drew one) and, before it, the object
    ``draw`` returned if that is something IPython displays richly
    (``IPython.display.HTML``, a
    ``MarkdownTable``…): text such as a proof trace or a ranking is shown as text, not
    drawn.
    """
    import matplotlib.pyplot as plt
    from IPython import get_ipython

    plt.close("all")
    show = plt.show
    plt.show = lambda *args, **kwargs: (
        None
    )  # a draw() that ends with plt.show() must not display
    try:
        result = draw(**values)
    except BaseException:
        plt.close("all")  # a half-drawn figure must not leak into the next draw
        raise
    finally:
        plt.show = show
    shell = get_ipython()
    figs = [plt.figure(n) for n in plt.get_fignums()]
    if shell is None:  # plain Python: nothing to display into
        plt.close("all")
        return ()
    outputs = []
    if _is_rich(result):
        data, metadata = shell.display_formatter.format(result)
        if len(data) > 1:
            data.pop("text/plain", None)
        outputs.append(
            {"output_type": "display_data", "data": data, "metadata": metadata}
        )
    if (
        not figs and not outputs
    ):  # nothing drawn and nothing returned: an empty figure, as before
        figs = [plt.gcf()]
    for fig in figs:
        data, metadata = shell.display_formatter.format(fig)
        data.pop(
            "text/plain", None
        )  # '<Figure size …>' adds nothing next to the picture
        if data:
            outputs.append(
                {"output_type": "display_data", "data": data, "metadata": metadata}
            )
    plt.close("all")
    return tuple(outputs)


def _is_rich(obj) -> bool:
    """Whether ``obj`` (returned by ``draw``) is something to display: HTML, Markdown,
    an image."""
    if obj is None:
        return False
    module = type(obj).__module__ or ""
    if module.startswith(
        "matplotlib"
    ):  # a Figure or Axes returned for convenience, not for display
        return False
    return any(
        hasattr(obj, f"_repr_{k}_") for k in ("html", "markdown", "png", "latex")
    )


def _error_output(draw, values: dict, exc: BaseException) -> tuple:
    """The traceback of a failed redraw as an Output widget ``outputs`` tuple (stderr
    text).

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
    """Whether ``x`` is ``start + k * step`` for an integer ``k`` (to 1e-6 of a
    step)."""
    if step is None or step <= 0:
        return True
    k = (x - start) / step
    return abs(k - round(k)) <= 1e-6


def _range_problem(c) -> str | None:
    """Why the control ``c`` cannot take its own current value again, or None if it
    can."""
    import ipywidgets as w

    value = c.value
    if isinstance(
        c, w.widgets.widget_selection._Selection
    ):  # Dropdown, SelectionSlider, ToggleButtons…
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
            near = sorted(
                {
                    c.base ** (c.min + j * c.step)
                    for j in (k - 1, k, k + 1)
                    if c.min - 1e-9 <= c.min + j * c.step <= c.max + 1e-9
                }
            )
            return (
                f"the slider moves in steps of {c.step} in log{c.base:g}(value) from "
                f"{c.min}, and "
                f"log{c.base:g}({value!r}) = {exponent:.4g} is not on that grid "
                f"(nearest positions: {', '.join(f'{v:.4g}' for v in near)})"
            )
        return None
    if (
        isinstance(value, (int, float))
        and not isinstance(value, bool)
        and hasattr(c, "min")
        and hasattr(c, "max")
    ):  # IntSlider, FloatSlider, BoundedIntText, …
        if not c.min <= value <= c.max:
            return f"it lies outside [{c.min}, {c.max}]"
        if not _on_grid(value, c.min, getattr(c, "step", None)):
            return (
                f"the slider moves in steps of {c.step} from {c.min}, "
                f"and {value!r} is not on that grid"
            )
    return None


def _check_controls(draw, controls: dict) -> None:
    """Refuse controls that ``draw`` does not accept, that start away from ``draw``'s
    default, or that cannot hold their own starting value (ValueError naming the
    control)."""
    try:
        params = inspect.signature(draw).parameters
    except (
        TypeError,
        ValueError,
    ):  # a builtin or C callable: nothing to compare against
        params = None
    if params is not None:
        takes_kwargs = any(p.kind is p.VAR_KEYWORD for p in params.values())
        for name in controls:
            p = params.get(name)
            ok = (
                takes_kwargs
                if p is None
                else p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
            )
            if not ok:
                raise ValueError(
                    f"controls[{name!r}]: draw{inspect.signature(draw)} has no keyword "
                    f"parameter {name!r}"
                )
        missing = [
            n
            for n, p in params.items()
            if n not in controls
            and p.default is p.empty
            and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
        ]
        if missing:
            raise ValueError(
                f"controls: draw needs {missing} but no control of that name is given"
            )
    problems = []  # all of them at once, so one edit fixes a chapter
    for name, c in controls.items():
        p = params.get(name) if params is not None else None
        if (
            p is not None
            and p.default is not p.empty
            and not _close(c.value, p.default)
        ):
            why = (
                f"controls[{name!r}]: starts at {c.value!r}, but draw declares "
                f"{name}={p.default!r}, "
                f"so the first figure is not the default one"
            )
            try:
                if not c.min <= p.default <= c.max:
                    why += (
                        f" ({p.default!r} lies outside the control's range "
                        f"[{c.min}, {c.max}])"
                    )
            except (AttributeError, TypeError):
                pass
            problems.append(why)
            continue
        why = _range_problem(c)
        if why is not None:
            problems.append(
                f"controls[{name!r}]: cannot return to its value {c.value!r}: {why}"
            )
    if problems:
        raise ValueError("\n".join(problems))


def live_controls(
    draw, controls: dict, *, prerender=None, caption: str | None = None
) -> None:
    """Display ``controls`` (name -> ipywidget) above an output area showing
    ``draw(**values)``.

    ``draw`` makes a matplotlib figure (the current one when it returns; a
    ``plt.show()`` in it is ignored) and/or returns an object to display
    (``IPython.display.HTML``, …); it is called once now and again on every change of a
    control. An error in that first call is raised here; an error in a later call is
    shown in the output area in place of the figure.

    Each control's name must be a keyword parameter of ``draw``; where ``draw`` declares
    a default, the control must start at it, and every control must be able to hold its
    starting value (in its options, inside its range, on its step grid — a
    ``FloatLogSlider`` steps in the exponent). Otherwise ``ValueError`` names the
    control.

    ``prerender`` names the key control(s) whose states are drawn now, for the built
    book: a name, a list of names, or a dict name -> values (a grid of values the
    control can hold). A name alone takes the control's options, or about eight
    positions along its range (always with its starting value). The other controls stay
    at their starting values; at most :data:`MAX_STATES` states (the product of the
    grids). The output then carries, next to the live widget, an HTML version: the same
    controls over the pre-rendered states, which switch in the browser without a kernel
    (Jupyter shows the live widget; the book renders the HTML). ``caption`` is that
    figure's caption.
    """
    import ipywidgets as w
    from IPython.display import display

    if not callable(draw):
        raise TypeError(f"draw: expected a callable, got {type(draw).__name__}")
    if not isinstance(controls, dict) or not controls:
        raise ValueError(
            f"controls: expected a non-empty dict of name -> widget, got {controls!r}"
        )
    for name, c in controls.items():
        if not isinstance(c, w.ValueWidget):
            raise TypeError(
                f"controls[{name!r}]: expected an ipywidgets value widget, "
                f"got {type(c).__name__}"
            )
    _check_controls(draw, controls)
    grids = _prerender_grids(controls, prerender) if prerender is not None else None
    if caption is not None and not isinstance(caption, str):
        raise TypeError(f"caption: expected a str, got {type(caption).__name__}")
    out = w.Output()

    def values() -> dict:
        return {k: c.value for k, c in controls.items()}

    def redraw(_change=None):
        vals = values()
        try:
            out.outputs = _figure_output(draw, vals)
        except (
            Exception
        ) as exc:  # shown where the reader looks, not only in the log console
            out.outputs = _error_output(draw, vals, exc)

    out.outputs = _figure_output(
        draw, values()
    )  # the first figure: an error here is raised
    for c in controls.values():
        c.observe(redraw, names="value")
    box = w.VBox(
        [w.HBox(list(controls.values()), layout=w.Layout(flex_flow="row wrap")), out]
    )
    if grids is None:
        display(box)
        return
    html = static_html(draw, controls, grids, values(), caption, first=out.outputs)
    bundle = dict(box._repr_mimebundle_())
    bundle["text/html"] = html
    display(bundle, raw=True)


#: the most pre-rendered states one Explore cell may embed (page weight)
MAX_STATES = 24
_SLIDER_POSITIONS = 8


def _prerender_grids(controls: dict, prerender) -> dict:
    """name -> list of values to pre-render, checked (ValueError naming the control)."""
    if isinstance(prerender, str):
        prerender = [prerender]
    if isinstance(prerender, (list, tuple)):
        prerender = {name: None for name in prerender}
    if not isinstance(prerender, dict) or not prerender:
        raise ValueError(
            "prerender: expected a control name, a list of names or a dict name -> "
            "values, "
            f"got {prerender!r}"
        )
    grids = {}
    for name, grid in prerender.items():
        if name not in controls:
            raise ValueError(
                f"prerender: {name!r} is not a control (controls: {list(controls)})"
            )
        c = controls[name]
        grid = _default_grid(c) if grid is None else list(grid)
        if len(grid) < 2:
            raise ValueError(
                f"prerender[{name!r}]: expected at least 2 values, got {grid!r}"
            )
        bad = [v for v in grid if not _holds(c, v)]
        if bad:
            raise ValueError(
                f"prerender[{name!r}]: the control cannot take the values {bad!r}"
            )
        if not any(_close(v, c.value) for v in grid):
            raise ValueError(
                f"prerender[{name!r}]: the grid {grid!r} lacks the starting value "
                f"{c.value!r}, "
                "so the page could not show the first figure"
            )
        grids[name] = grid
    n = math.prod(len(g) for g in grids.values())
    if n > MAX_STATES:
        raise ValueError(
            f"prerender: {n} states (the product of the grids) exceed "
            f"MAX_STATES={MAX_STATES}"
        )
    return grids


def _options(c) -> list:
    """(label, value) pairs of a selection control."""
    return [(str(label), v) for label, v in c._options_full]


def _is_selection(c) -> bool:
    import ipywidgets as w

    return isinstance(c, w.widgets.widget_selection._Selection)


def _default_grid(c) -> list:
    """The control's options (at most MAX_STATES), or positions along its range with its
    value."""
    import ipywidgets as w

    if _is_selection(c):
        values = [v for _, v in _options(c)]
        if len(values) > MAX_STATES:
            raise ValueError(
                f"{c.description or 'control'}: {len(values)} options; pass prerender "
                f"as a "
                "dict name -> values to choose a few"
            )
        return values
    if isinstance(c, w.Checkbox) or isinstance(c, w.ToggleButton):
        return [False, True]
    if isinstance(c, w.FloatLogSlider):
        lo, hi, step = c.min, c.max, c.step
        exps = _positions(lo, hi, step, math.log(c.value, c.base))
        return [c.base**e for e in exps]
    if hasattr(c, "min") and hasattr(c, "max"):
        vals = _positions(c.min, c.max, getattr(c, "step", None), c.value)
        if isinstance(c.value, int) and not isinstance(c.value, bool):
            vals = sorted({int(round(v)) for v in vals})
        return vals
    raise ValueError(
        f"{type(c).__name__}: no default grid; pass prerender as a dict name -> values"
    )


def _positions(lo, hi, step, value) -> list:
    """About eight points from ``lo`` to ``hi`` on the step grid, with ``value`` among
    them."""
    k_max = round((hi - lo) / step) if step else _SLIDER_POSITIONS - 1
    step = step or (hi - lo) / k_max
    ks = {round(j * k_max / (_SLIDER_POSITIONS - 1)) for j in range(_SLIDER_POSITIONS)}
    pts = sorted({lo + k * step for k in ks} | {value}, key=float)
    out = []
    for v in pts:  # 0.1 + 3 * 0.1 and 0.4 are one position
        if not out or not _close(v, out[-1]):
            out.append(v)
    return [value if _close(v, value) else v for v in out]


def _holds(c, v) -> bool:
    """Whether the control ``c`` can show the value ``v`` (an option, on its range and
    grid)."""
    import ipywidgets as w

    if _is_selection(c):
        return any(_close(v, o) for _, o in _options(c))
    if isinstance(c, (w.Checkbox, w.ToggleButton)):
        return isinstance(v, bool)
    if isinstance(c, w.FloatLogSlider):
        if not v > 0:
            return False
        e = math.log(v, c.base)
        return c.min - 1e-9 <= e <= c.max + 1e-9 and _on_grid(e, c.min, c.step)
    if hasattr(c, "min") and hasattr(c, "max"):
        try:
            inside = c.min - 1e-9 <= v <= c.max + 1e-9
        except TypeError:
            return False
        return inside and _on_grid(v, c.min, getattr(c, "step", None))
    return True


def _label(c, v) -> str:
    """How the page names value ``v`` of control ``c``."""
    if _is_selection(c):
        for label, o in _options(c):
            if _close(v, o):
                return label
    if isinstance(v, float):
        return f"{v:.4g}"
    return str(v)


def static_html(
    draw, controls: dict, grids: dict, start: dict, caption=None, first=None
) -> str:
    """The Explore cell for a page without a kernel: controls over pre-rendered states.

    Every combination of the ``grids`` values (others at ``start``) is drawn now and
    embedded (PNG as data URIs, quantised to 256 colours; HTML as it is); the controls
    (a ``<select>`` for options, a range slider for numbers) switch which state is
    visible with a few lines of inline JavaScript. ``first`` reuses the outputs already
    drawn for ``start``.
    """
    import html as H
    import itertools
    import json

    names = list(grids)
    start_key = tuple(
        next(i for i, v in enumerate(grids[n]) if _close(v, start[n])) for n in names
    )
    states = []
    for combo in itertools.product(*(range(len(grids[n])) for n in names)):
        vals = dict(start, **{n: grids[n][i] for n, i in zip(names, combo)})
        outs = first if combo == start_key and first else _figure_output(draw, vals)
        hidden = "" if combo == start_key else ' style="display:none"'
        desc = ", ".join(f"{n}={_label(controls[n], vals[n])}" for n in names)
        states.append(
            f'<div class="explore-state" data-state="{H.escape(desc)}"{hidden}>'
            + "".join(_output_html(o, desc) for o in outs)
            + "</div>"
        )
    widgets = []
    for n, k in zip(names, start_key):
        c, grid = controls[n], grids[n]
        label = H.escape(c.description or n)
        radix = f'data-explore-radix="{len(grid)}"'
        if _is_selection(c):
            opts = "".join(
                f'<option value="{i}"{" selected" if i == k else ""}>'
                f"{H.escape(_label(c, v))}</option>"
                for i, v in enumerate(grid)
            )
            widgets.append(f"<label>{label} <select {radix}>{opts}</select></label>")
        else:
            labels = H.escape(json.dumps([_label(c, v) for v in grid]))
            widgets.append(
                f'<label>{label} <input type="range" min="0" max="{len(grid) - 1}" '
                f'step="1" '
                f'value="{k}" {radix} data-explore-labels="{labels}"> '
                f"<output>{H.escape(_label(c, grid[k]))}</output></label>"
            )
    fixed = [
        f"{H.escape(c.description or n)} = {H.escape(_label(c, start[n]))}"
        for n, c in controls.items()
        if n not in grids
    ]
    note = (
        f"{len(states)} pre-rendered states; "
        + (f"other controls fixed at {', '.join(fixed)}; " if fixed else "")
        + "run the notebook for every control live."
    )
    cap = (H.escape(caption) + " " if caption else "") + note
    return (
        f'<figure class="explore-static" oninput="{H.escape(_SWITCH_JS)}" '
        f'onchange="{H.escape(_SWITCH_JS)}">'
        f'<div class="explore-controls">{"".join(widgets)}</div>'
        + "".join(states)
        + f"<figcaption>{cap}</figcaption></figure>"
    )


# Inline handler of the static Explore figure (``this`` is the <figure>): the state
# index is the
# mixed-radix number of the controls' positions; a slider's label follows its position.
_SWITCH_JS = (
    "var i=0;this.querySelectorAll('[data-explore-radix]').forEach(function(e){"
    "var "
    "k=e.tagName==='SELECT'?e.selectedIndex:+e.value;i=i*(+e.dataset.exploreRadix)+k;"
    "var o=e.parentNode.querySelector('output');"
    "if(o){o.textContent=JSON.parse(e.dataset.exploreLabels)[k];}});"
    "this.querySelectorAll('.explore-state').forEach(function(s,j){"
    "s.style.display=j===i?'':'none';});"
)


def _output_html(output: dict, desc: str) -> str:
    """One Output-widget output (display data or a stream) as HTML for the static
    page."""
    import html as H

    data = output.get("data", {})
    if "image/png" in data:
        png = _quantise_png(data["image/png"])
        md = output.get("metadata", {}).get("image/png", {})
        size = "".join(f' {k}="{int(md[k])}"' for k in ("width", "height") if k in md)
        return f'<img src="data:image/png;base64,{png}"{size} alt="{H.escape(desc)}">'
    if "text/html" in data:
        return data["text/html"]
    if "text/markdown" in data:
        return f'<pre class="explore-text">{H.escape(data["text/markdown"])}</pre>'
    text = output.get("text") or data.get("text/plain", "")
    return f'<pre class="explore-text">{H.escape(text)}</pre>'


def _quantise_png(b64: str) -> str:
    """A base64 PNG re-encoded with a 256-colour palette (about a third of the bytes for
    a plot), keeping its dpi and text chunks; the input unchanged if Pillow is missing
    or it is no smaller."""
    import base64
    import io

    try:
        from PIL import Image, PngImagePlugin
    except ImportError:
        return b64
    raw = base64.b64decode(b64)
    img = Image.open(io.BytesIO(raw))
    info = PngImagePlugin.PngInfo()
    for k, v in getattr(img, "text", {}).items():
        info.add_text(k, v)
    out = io.BytesIO()
    q = img.convert("RGB").quantize(colors=256, method=Image.Quantize.MEDIANCUT)
    kw = {"dpi": img.info["dpi"]} if "dpi" in img.info else {}
    q.save(out, format="png", optimize=True, pnginfo=info, **kw)
    small = out.getvalue()
    return base64.b64encode(small).decode("ascii") if len(small) < len(raw) else b64
