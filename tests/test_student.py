"""The student edition (`make student`): every solution gone, every exercise kept."""

import importlib.util
import json
import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location(
    "make_student", ROOT / "scripts" / "make_student.py"
)
ms = importlib.util.module_from_spec(spec)
spec.loader.exec_module(ms)

CHAPTERS = ms.chapters()


def _solution_bodies(markdown: str) -> list[str]:
    """The lines inside each solution block (the reference for what must vanish)."""
    out, lines, i = [], markdown.splitlines(), 0
    while i < len(lines):
        m = ms.OPEN.match(lines[i])
        if m:
            j = i + 1
            while lines[j].rstrip() != m["fence"]:
                out.append(lines[j])
                j += 1
            i = j
        i += 1
    return out


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_no_solution_survives_and_every_exercise_stays(path):
    nb = json.loads(path.read_text())
    md = ["".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown"]
    want = sum(len(re.findall(r"(?m)^(`{3,}|:{3,})\{solution\}", m)) for m in md)
    assert want >= 1, f"{path.stem}: no solutions found"
    student, removed = ms.student_notebook(nb)
    assert removed == want
    text = "\n".join("".join(c["source"]) for c in student["cells"])
    assert "{solution}" not in text
    # every substantial line of every solution is gone (short lines such as fences or
    # ":class: dropdown" may legitimately occur elsewhere)
    body = [
        ln.strip() for m in md for ln in _solution_bodies(m) if len(ln.strip()) > 40
    ]
    left = [ln for ln in body if ln in text]
    assert not left, f"{path.stem}: solution text survives: {left[:2]}"
    assert text.count("{exercise}") == sum(m.count("{exercise}") for m in md)
    assert student["metadata"]["edition"] == "student"
    assert len(nb["cells"]) == len(student["cells"])  # the book itself is untouched


def test_tagged_solution_code_cells_are_dropped():
    nb = {
        "cells": [
            {"cell_type": "code", "metadata": {"tags": ["solution"]}, "source": ["1"]},
            {"cell_type": "code", "metadata": {}, "source": ["2"]},
            {
                "cell_type": "markdown",
                "metadata": {},
                "source": ["```{solution} x\n", "a\n", "```\n"],
            },
        ],
        "metadata": {},
    }
    out, n = ms.student_notebook(nb)
    assert n == 2 and [c["source"] for c in out["cells"][:1]] == [["2"]]
    assert "a\n" not in out["cells"][1]["source"]


def test_nested_fences_inside_a_solution():
    md = "x\n````{solution} ex1\n:class: dropdown\n```python\ncode()\n```\n````\ny\n"
    out, n = ms.strip_solutions(md)
    assert (
        n == 1 and "code()" not in out and out.startswith("x\n") and out.endswith("y\n")
    )


def test_bad_inputs():
    with pytest.raises(ValueError, match="closing"):
        ms.strip_solutions("```{solution} ex1\nnever closed\n")
    with pytest.raises(TypeError, match="markdown"):
        ms.strip_solutions(3)
    with pytest.raises(TypeError, match="nb"):
        ms.student_notebook([])


def test_make_student_writes_every_chapter(tmp_path):
    assert ms.main([str(tmp_path)]) == 0
    assert sorted(p.name for p in tmp_path.glob("*.ipynb")) == [
        p.name for p in CHAPTERS
    ]
