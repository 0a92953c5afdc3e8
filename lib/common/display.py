"""Showing code and numbers in chapters."""
from __future__ import annotations

import inspect
import textwrap


def show_source(*objs, include_docstring: bool = True):
    """Display the source of the functions/classes that really run, as a highlighted code block.

    Returns an ``IPython.display.Markdown`` object (rendered by Jupyter and the book); its
    ``text/plain`` form is a fixed placeholder, so nbval compares nothing fragile.
    """
    from IPython.display import Markdown

    if not objs:
        raise ValueError("objs: expected at least one function or class, got none")
    blocks = []
    for obj in objs:
        if not (inspect.isfunction(obj) or inspect.isclass(obj) or inspect.ismethod(obj)):
            raise TypeError(f"objs: expected functions or classes, got {type(obj).__name__}")
        src = textwrap.dedent(inspect.getsource(obj))
        if not include_docstring and obj.__doc__:
            src = _strip_docstring(src)
        module = inspect.getmodule(obj)
        where = f"# {module.__name__}.{obj.__qualname__}" if module else ""
        blocks.append(f"```python\n{where}\n{src.rstrip()}\n```")
    return Markdown("\n\n".join(blocks))


def _strip_docstring(src: str) -> str:
    """Remove the first triple-quoted string (the docstring) from a function's source."""
    for q in ('"""', "'''"):
        start = src.find(q)
        if start != -1:
            end = src.find(q, start + 3)
            if end != -1:
                line_start = src.rfind("\n", 0, start) + 1
                line_end = src.find("\n", end)
                return src[:line_start] + src[line_end + 1:]
    return src


def fmt(x, digits: int = 3) -> str:
    """Format a number (or a 0-d tensor/array) with ``digits`` significant digits, stably."""
    try:
        x = float(x)
    except (TypeError, ValueError):
        raise TypeError(f"x: expected a real number, got {type(x).__name__}") from None
    if not isinstance(digits, int) or digits < 1:
        raise ValueError(f"digits: expected a positive int, got {digits!r}")
    if x == 0:
        return "0"
    out = f"{x:.{digits}g}"
    return "0" if out in ("-0", "-0.0") else out
