"""Showing code and numbers in chapters."""

from __future__ import annotations

import ast
import inspect
import io
import os
import re
import sys
import textwrap
import tokenize


def show_source(*objs, include_docstring: bool = True):
    """Display the source of the functions/classes that really run, as highlighted code.

    In the book each listing is collapsed (an HTML ``<details>`` block, opened with a
    click); the lines that compute one of the paper's equations (a ``# eq. …`` comment,
    the library's convention) stay visible above it, dedented, with a comment placed
    above a line it would push past :data:`CODE_COLUMNS`. Returns an
    ``IPython.display.Markdown`` object (rendered by Jupyter and the book); its
    ``text/plain`` form is a fixed placeholder, so nbval compares nothing fragile.
    """
    from IPython.display import Markdown

    if not objs:
        raise ValueError("objs: expected at least one function or class, got none")
    blocks = []
    for obj in objs:
        if not (
            inspect.isfunction(obj) or inspect.isclass(obj) or inspect.ismethod(obj)
        ):
            raise TypeError(
                f"objs: expected functions or classes, got {type(obj).__name__}"
            )
        src = textwrap.dedent(_source(obj))
        if not include_docstring and obj.__doc__:
            src = _strip_docstring(src)
        module = inspect.getmodule(obj)
        name = f"{module.__name__}.{obj.__qualname__}" if module else obj.__qualname__
        src = src.rstrip()
        excerpt = equation_lines(src)
        n = src.count("\n") + 1
        if excerpt:
            blocks.append(
                f"```python\n# {name}: the lines that compute the equations\n"
                f"{excerpt}\n```"
            )
        blocks.append(
            f'<details class="source-listing">\n<summary>source of <code>{name}</code> '
            f"({n} lines)</summary>\n\n```python\n# {name}\n{src}\n```\n\n</details>"
        )
    return Markdown("\n\n".join(blocks))


#: the width code is wrapped at (ruff's line-length in pyproject.toml)
CODE_COLUMNS = 88
_EQ_COMMENT = re.compile(r"#.*\beq(?:s|uations?)?\.?\s*[(\w]")


def equation_lines(src: str, width: int = CODE_COLUMNS) -> str:
    """The lines of ``src`` whose comment names an equation (``# eq. (3)``), as an
    excerpt.

    The lines are dedented together, gaps between them are marked ``...``, and a line
    longer than
    ``width`` has its comment moved onto the line above it. Lines inside strings
    (docstrings) are skipped. Returns "" when no line names an equation.
    """
    lines = src.splitlines()
    code_lines = _lines_outside_strings(src)
    picked = [
        i
        for i, line in enumerate(lines)
        if i in code_lines and _EQ_COMMENT.search(_comment(line))
    ]
    if not picked:
        return ""
    indent = min(len(lines[i]) - len(lines[i].lstrip()) for i in picked)
    out, last = [], None
    for i in picked:
        if last is not None and i != last + 1:
            out.append(" " * (len(lines[i]) - len(lines[i].lstrip()) - indent) + "...")
        line = lines[i][indent:]
        if len(line) > width:
            comment = _comment(line)
            code = line[: len(line) - len(comment)].rstrip()
            pad = " " * (len(code) - len(code.lstrip()))
            out += [pad + comment, code]
        else:
            out.append(line)
        last = i
    return "\n".join(out)


def _comment(line: str) -> str:
    """The trailing ``# comment`` of one line of Python ("" if none)."""
    try:
        toks = list(tokenize.generate_tokens(io.StringIO(line.lstrip()).readline))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        toks = []
    for tok in toks:
        if tok.type == tokenize.COMMENT:
            return tok.string
    return ""


def _lines_outside_strings(src: str) -> set:
    """Indices of the lines of ``src`` that do not start inside a multi-line string."""
    inside = set()
    try:
        for tok in tokenize.generate_tokens(io.StringIO(src).readline):
            if tok.type == tokenize.STRING and tok.end[0] > tok.start[0]:
                inside.update(
                    range(tok.start[0], tok.end[0])
                )  # 0-based: lines after the first
    except (tokenize.TokenError, IndentationError, SyntaxError):
        pass
    return set(range(len(src.splitlines()))) - inside


class MarkdownTable:
    """A table the book renders as Markdown (MyST: ``$…$`` math typesets) and nbval
    compares.

    Jupyter and the book show ``text/markdown``; ``text/plain`` is the same cells,
    space-aligned, so a strict nbval run compares every number of the table in both
    forms.
    """

    def __init__(self, header, rows, align=None):
        self.header = [str(h) for h in header]
        self.rows = [[str(c) for c in row] for row in rows]
        if not self.header:
            raise ValueError("header: expected at least one column, got none")
        for i, row in enumerate(self.rows):
            if len(row) != len(self.header):
                raise ValueError(
                    f"rows[{i}]: expected {len(self.header)} cells (one per header "
                    f"column), "
                    f"got {len(row)}"
                )
        align = align or ["l"] + ["r"] * (len(self.header) - 1)
        if len(align) != len(self.header) or any(a not in "lcr" for a in align):
            raise ValueError(
                f"align: expected one of 'l', 'c', 'r' per column "
                f"({len(self.header)}), "
                f"got {align!r}"
            )
        self.align = list(align)

    def _repr_markdown_(self) -> str:
        rule = {"l": ":--", "c": ":-:", "r": "--:"}

        def cells(row):
            return "| " + " | ".join(c.replace("|", "\\|") for c in row) + " |"

        lines = [cells(self.header), "|" + "|".join(rule[a] for a in self.align) + "|"]
        return "\n".join(lines + [cells(r) for r in self.rows])

    def __repr__(self) -> str:
        table = [self.header] + self.rows
        widths = [max(len(r[j]) for r in table) for j in range(len(self.header))]

        def line(row):
            return "  ".join(
                c.ljust(w) if a == "l" else c.rjust(w)
                for c, w, a in zip(row, widths, self.align)
            ).rstrip()

        return "\n".join(line(r) for r in table)

    def _repr_pretty_(self, p, cycle) -> None:
        p.text(repr(self))


def markdown_table(header, rows, align=None) -> MarkdownTable:
    """A Markdown table of ``rows`` under ``header`` (cells are formatted by the
    caller).

    ``align`` is one of ``"l"``, ``"c"``, ``"r"`` per column (default: the first left,
    the rest right). Display it (the last expression of a cell, or ``display(...)``);
    cells may hold Markdown and ``$…$`` math, and a ``|`` inside a cell is escaped.
    """
    return MarkdownTable(header, rows, align)


def _source(obj) -> str:
    """The current source of ``obj``: its ``def``/``class`` found by qualified name in
    its module's file.

    ``inspect.getsource`` trusts the line number recorded when the code was compiled,
    which is wrong once the file has changed under a running kernel (IPython's
    autoreload can even leave a function that claims to start on line 1), so it prints
    whatever now sits at that line. Here the file is read afresh and parsed, and the
    definition is looked up by ``__qualname__`` (``f``, ``Class.method``,
    ``outer.<locals>.inner``); ``inspect.getsource`` is the fallback when that fails (a
    lambda, a function typed into a notebook cell, a file that no longer parses or
    defines the name).
    """
    try:
        found = _source_by_name(obj)
    except (OSError, SyntaxError, ValueError, TypeError, UnicodeDecodeError):
        found = None
    return found if found is not None else inspect.getsource(obj)


def _source_by_name(obj) -> str | None:
    """The source of ``obj`` located with ``ast`` by qualified name, or None where it
    cannot be."""
    obj = inspect.unwrap(
        getattr(obj, "__func__", obj)
    )  # bound method -> function; undo functools.wraps
    qualname = getattr(obj, "__qualname__", None)
    if not qualname or "<lambda>" in qualname:
        return None
    if inspect.isfunction(obj) and os.path.isfile(obj.__code__.co_filename):
        path = (
            obj.__code__.co_filename
        )  # the same file after a reload; its lines may have moved
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
    node = _find_definition(
        ast.parse(text), qualname.split("."), inspect.isclass(obj), line
    )
    if node is None:
        return None
    first = min([node.lineno] + [d.lineno for d in node.decorator_list])
    lines = text.splitlines(keepends=True)
    return "".join(lines[first - 1 : node.end_lineno])


_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def _definitions(body):
    """The ``def``/``class`` statements of a block, including those under
    ``if``/``try``/``with``."""
    for stmt in body:
        if isinstance(stmt, _DEFS):
            yield stmt
        else:
            for field in ("body", "orelse", "finalbody", "handlers"):
                sub = getattr(stmt, field, None)
                if isinstance(sub, list):
                    yield from _definitions(s for s in sub if isinstance(s, ast.AST))


def _find_definition(tree, parts: list, want_class: bool, line: int | None = None):
    """Follow a ``__qualname__`` split on dots through the tree. Where a name is defined
    more than once in a block (``if``/``else`` variants), the one starting at ``line``
    (the recorded first line, right when the file has not changed) wins, else the last
    one, as when the module runs."""
    node, i = tree, 0
    while i < len(parts):
        name = parts[i]
        if (
            name == "<locals>"
        ):  # the next name is defined somewhere in the function's body
            i += 1
            continue
        matches = [d for d in _definitions(node.body) if d.name == name]
        if not matches:
            return None
        at_line = [
            d
            for d in matches
            if line in [d.lineno] + [x.lineno for x in d.decorator_list]
        ]
        node, i = (at_line or matches)[-1], i + 1
    if node is tree or isinstance(node, ast.ClassDef) != want_class:
        return None
    return node


def _strip_docstring(src: str) -> str:
    """Remove the first triple-quoted string (the docstring) from a function's
    source."""
    for q in ('"""', "'''"):
        start = src.find(q)
        if start != -1:
            end = src.find(q, start + 3)
            if end != -1:
                line_start = src.rfind("\n", 0, start) + 1
                line_end = src.find("\n", end)
                return src[:line_start] + src[line_end + 1 :]
    return src


def fmt(x, digits: int = 3) -> str:
    """Format a number (or a 0-d tensor/array) with ``digits`` significant digits,
    stably."""
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


def fmt_gap(x, below: float = 1e-12) -> str:
    """Format the gap between two computations of the same quantity: ``"< 1e-12"`` when
    it is under ``below``, else one decimal in scientific notation. Round-off-sized gaps
    have digits that change with the CPU's vector unit (AVX2 or AVX-512 kernels sum in
    different orders), so printing them would tie a stored notebook output to one
    machine; the bound is what the check means."""
    try:
        x = float(x)
    except (TypeError, ValueError):
        raise TypeError(f"x: expected a real number, got {type(x).__name__}") from None
    if isinstance(below, bool) or not isinstance(below, (int, float)) or not below > 0:
        raise ValueError(f"below: expected a positive number, got {below!r}")
    if x != x:
        return "nan"
    if abs(x) < below:
        return f"< {below:.0e}"
    return f"{x:.1e}"
