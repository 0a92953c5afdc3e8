"""Showing code and numbers in chapters."""
from __future__ import annotations

import ast
import inspect
import os
import sys
import textwrap
import tokenize


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
        src = textwrap.dedent(_source(obj))
        if not include_docstring and obj.__doc__:
            src = _strip_docstring(src)
        module = inspect.getmodule(obj)
        where = f"# {module.__name__}.{obj.__qualname__}" if module else ""
        blocks.append(f"```python\n{where}\n{src.rstrip()}\n```")
    return Markdown("\n\n".join(blocks))


def _source(obj) -> str:
    """The current source of ``obj``: its ``def``/``class`` found by qualified name in its module's file.

    ``inspect.getsource`` trusts the line number recorded when the code was compiled, which is wrong
    once the file has changed under a running kernel (IPython's autoreload can even leave a function
    that claims to start on line 1), so it prints whatever now sits at that line. Here the file is
    read afresh and parsed, and the definition is looked up by ``__qualname__`` (``f``, ``Class.method``,
    ``outer.<locals>.inner``); ``inspect.getsource`` is the fallback when that fails (a lambda, a
    function typed into a notebook cell, a file that no longer parses or defines the name).
    """
    try:
        found = _source_by_name(obj)
    except (OSError, SyntaxError, ValueError, TypeError, UnicodeDecodeError):
        found = None
    return found if found is not None else inspect.getsource(obj)


def _source_by_name(obj) -> str | None:
    """The source of ``obj`` located with ``ast`` by qualified name, or None where it cannot be."""
    obj = inspect.unwrap(getattr(obj, "__func__", obj))  # bound method -> function; undo functools.wraps
    qualname = getattr(obj, "__qualname__", None)
    if not qualname or "<lambda>" in qualname:
        return None
    if inspect.isfunction(obj) and os.path.isfile(obj.__code__.co_filename):
        path = obj.__code__.co_filename  # the same file after a reload; its lines may have moved
    else:  # a class: its module's file, as the module is now
        module = sys.modules.get(getattr(obj, "__module__", None) or "")
        path = getattr(module, "__file__", None)
    if not path:
        return None
    if path.endswith((".pyc", ".pyo")):
        path = path[:-1]
    with tokenize.open(path) as f:  # honours a coding cookie
        text = f.read()
    line = obj.__code__.co_firstlineno if inspect.isfunction(obj) else None
    node = _find_definition(ast.parse(text), qualname.split("."), inspect.isclass(obj), line)
    if node is None:
        return None
    first = min([node.lineno] + [d.lineno for d in node.decorator_list])
    lines = text.splitlines(keepends=True)
    return "".join(lines[first - 1:node.end_lineno])


_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def _definitions(body):
    """The ``def``/``class`` statements of a block, including those under ``if``/``try``/``with``."""
    for stmt in body:
        if isinstance(stmt, _DEFS):
            yield stmt
        else:
            for field in ("body", "orelse", "finalbody", "handlers"):
                sub = getattr(stmt, field, None)
                if isinstance(sub, list):
                    yield from _definitions(s for s in sub if isinstance(s, ast.AST))


def _find_definition(tree, parts: list, want_class: bool, line: int | None = None):
    """Follow a ``__qualname__`` split on dots through the tree. Where a name is defined more than once
    in a block (``if``/``else`` variants), the one starting at ``line`` (the recorded first line, right
    when the file has not changed) wins, else the last one, as when the module runs."""
    node, i = tree, 0
    while i < len(parts):
        name = parts[i]
        if name == "<locals>":  # the next name is defined somewhere in the function's body
            i += 1
            continue
        matches = [d for d in _definitions(node.body) if d.name == name]
        if not matches:
            return None
        at_line = [d for d in matches if line in [d.lineno] + [x.lineno for x in d.decorator_list]]
        node, i = (at_line or matches)[-1], i + 1
    if node is tree or isinstance(node, ast.ClassDef) != want_class:
        return None
    return node


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
