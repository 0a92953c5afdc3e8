"""`make goals`: each chapter's goals box and the course-planning page, from one file.

``book/_data/goals.yml`` holds, per chapter, two or three learning goals, the
prerequisites and the time to read, run and do the exercises. This script writes them
as a box in the chapter's second cell (a Markdown cell that starts with :data:`MARK`,
inserted after the title cell or replaced in place; outputs are untouched) and as the
table of ``book/course.md``. ``tests/test_goals.py`` checks that both are up to date.
"""

from __future__ import annotations

import json
import pathlib
import sys

import yaml

ROOT = pathlib.Path(__file__).resolve().parents[1]
GOALS = ROOT / "book" / "_data" / "goals.yml"
COURSE = ROOT / "book" / "course.md"
MARK = "% goals box: generated from book/_data/goals.yml by `make goals`\n"


def load() -> dict:
    data = yaml.safe_load(GOALS.read_text())
    for slug, g in data.items():
        if not (2 <= len(g.get("goals", [])) <= 4):
            raise ValueError(f"{slug}: expected 2-4 goals, got {g.get('goals')!r}")
        if set(g.get("time", {})) != {"read", "run", "exercises"}:
            raise ValueError(f"{slug}: expected time with read, run, exercises")
        if not str(g.get("prerequisites", "")).strip():
            raise ValueError(f"{slug}: expected prerequisites")
    return data


def hours(t: dict) -> str:
    total = t["read"] + t["run"] + t["exercises"]
    return f"about {round(total / 30) / 2:g} h"


def box(g: dict) -> str:
    """The chapter's goals box (MyST)."""
    t = g["time"]
    lines = [
        MARK,
        "```{admonition} Learning goals, prerequisites and time\n",
        ":class: tip\n",
        "\n",
        "After this chapter you can:\n",
        "\n",
        *(f"- {x}\n" for x in g["goals"]),
        "\n",
        f"**Before you start:** {g['prerequisites']}.\n",
        "\n",
        f"**Time:** {hours(t)} (reading {t['read']} min, running the chapter "
        f"{t['run']} min on a laptop CPU, exercises {t['exercises']} min).\n",
        "```\n",
    ]
    return "".join(lines)


def chapters() -> list[str]:
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    files = [c["file"] for p in toc.get("parts", []) for c in p.get("chapters", [])]
    return [f.split("/")[-1] for f in files if (ROOT / f"{f}.ipynb").exists()]


def update_notebook(path: pathlib.Path, text: str) -> bool:
    """Put the goals box in the notebook's second cell; True if the file changed."""
    raw = path.read_text()
    nb = json.loads(raw)
    cell = {"cell_type": "markdown", "metadata": {}, "source": []}
    cell["source"] = text.splitlines(keepends=True)
    cells = nb["cells"]
    if len(cells) > 1 and "".join(cells[1]["source"]).startswith(MARK):
        cells[1]["source"] = cell["source"]  # in place: the cell's other keys stay
    else:
        cells.insert(1, cell)
    new = json.dumps(nb, indent=1, ensure_ascii=False) + "\n"
    if new != raw:
        path.write_text(new)
        return True
    return False


def course_page(data: dict, slugs: list[str]) -> str:
    papers = {
        p["slug"]: p for p in json.loads((ROOT / "book/_data/papers.json").read_text())
    }
    out = [
        "# Planning a course\n",
        "\n",
        "Every chapter opens with its learning goals, what to know first and how "
        "long it takes; this page lists them together (they come from "
        "`book/_data/goals.yml`). Chapters are independent, so a course can take any "
        "subset in any order. The times assume a reader who knows the prerequisites: "
        "reading with the derivations, running the chapter once on a laptop CPU, and "
        "doing the exercises. `make student` writes a copy of every chapter without "
        "the solutions, and `make pdf` the whole book as one PDF.\n",
        "\n",
        "| chapter | part | you will be able to | before you start | time |\n",
        "|---|---|---|---|---|\n",
    ]
    for slug in slugs:
        g, p = data[slug], papers.get(slug, {})
        goals = "; ".join(g["goals"])
        out.append(
            f"| {{doc}}`{slug}` | {p.get('part', '—')} | {goals} | "
            f"{g['prerequisites']} | {hours(g['time'])} |\n"
        )
    return "".join(out)


def main(argv: list[str]) -> int:
    data, slugs = load(), chapters()
    missing = [s for s in slugs if s not in data]
    if missing:
        print(f"no goals in {GOALS.name} for: {missing}", file=sys.stderr)
        return 1
    for slug in slugs:
        if update_notebook(ROOT / "book" / f"{slug}.ipynb", box(data[slug])):
            print(f"{slug}: goals box written")
    COURSE.write_text(course_page(data, slugs))
    print(f"{COURSE.relative_to(ROOT)}: {len(slugs)} chapters")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
