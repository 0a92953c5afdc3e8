"""`make student`: the student edition, ``student/<slug>.ipynb`` for every chapter.

Each chapter is copied with every ``{solution}`` block removed from its Markdown (a
short note takes its place), the outputs of code cells that belong to a solution
cleared, and everything else (exercises, self-checks, figures) kept. Code cells tagged
``solution`` are removed. The edition is a build product (git-ignored).
"""

from __future__ import annotations

import copy
import json
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
OPEN = re.compile(r"^(?P<fence>`{3,}|:{3,})\{solution\}")
NOTE = "*Student edition: the solution is left out (the book has it).*\n"


def strip_solutions(markdown: str) -> tuple[str, int]:
    """``markdown`` without its ``{solution}`` blocks, and how many were removed.

    A block opens with a fence of three or more backticks (or colons) followed by
    ``{solution}`` and closes at the first later line that is exactly that fence.
    Raises ValueError for a block that never closes.
    """
    if not isinstance(markdown, str):
        raise TypeError(f"markdown: expected str, got {type(markdown).__name__}")
    out, lines, i, n = [], markdown.splitlines(keepends=True), 0, 0
    while i < len(lines):
        m = OPEN.match(lines[i])
        if m is None:
            out.append(lines[i])
            i += 1
            continue
        fence, j = m["fence"], i + 1
        while j < len(lines) and lines[j].rstrip("\n").rstrip() != fence:
            j += 1
        if j == len(lines):
            raise ValueError(
                f"markdown: expected a closing {fence!r} for the solution opened on "
                f"line {i + 1}, got the end of the cell"
            )
        out.append(NOTE)
        n, i = n + 1, j + 1
    return "".join(out), n


def student_notebook(nb: dict) -> tuple[dict, int]:
    """A copy of notebook ``nb`` (nbformat 4 JSON) without solutions; returns it and
    the number of solution blocks removed."""
    if not isinstance(nb, dict) or "cells" not in nb:
        raise TypeError("nb: expected a notebook's JSON dict with 'cells'")
    out, removed = copy.deepcopy(nb), 0
    cells = []
    for cell in out["cells"]:
        tags = cell.get("metadata", {}).get("tags", [])
        if cell["cell_type"] == "code" and "solution" in tags:
            removed += 1
            continue
        if cell["cell_type"] == "markdown":
            text, n = strip_solutions("".join(cell["source"]))
            removed += n
            cell["source"] = text.splitlines(keepends=True)
        cells.append(cell)
    out["cells"] = cells
    out.setdefault("metadata", {})["edition"] = "student"
    return out, removed


def chapters() -> list[pathlib.Path]:
    return sorted(
        p for p in (ROOT / "book").glob("*.ipynb") if not p.name.startswith("_")
    )


def main(argv: list[str]) -> int:
    dest = pathlib.Path(argv[0]) if argv else ROOT / "student"
    dest.mkdir(parents=True, exist_ok=True)
    for path in chapters():
        nb, n = student_notebook(json.loads(path.read_text()))
        (dest / path.name).write_text(
            json.dumps(nb, indent=1, ensure_ascii=False) + "\n"
        )
        print(f"{path.stem}: {n} solutions removed -> {dest.name}/{path.name}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
