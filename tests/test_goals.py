"""Learning goals (#35): every chapter opens with its goals box, generated from
book/_data/goals.yml, and the course-planning page lists every chapter."""

import importlib.util
import json
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location(
    "make_goals", ROOT / "scripts" / "make_goals.py"
)
mg = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mg)
DATA = mg.load()
SLUGS = mg.chapters()


def test_every_chapter_has_goals():
    assert SLUGS and not [s for s in SLUGS if s not in DATA]


@pytest.mark.parametrize("slug", SLUGS)
def test_goals_box_is_the_second_cell_and_up_to_date(slug):
    cells = json.loads((ROOT / "book" / f"{slug}.ipynb").read_text())["cells"]
    assert cells[0]["cell_type"] == "markdown" and "".join(
        cells[0]["source"]
    ).startswith("# "), "the title cell comes first"
    assert cells[1]["cell_type"] == "markdown"
    assert "".join(cells[1]["source"]) == mg.box(DATA[slug]), (
        f"{slug}: goals box missing or stale: run `make goals`"
    )


def test_course_page_is_up_to_date_and_in_the_toc():
    assert (ROOT / "book" / "course.md").read_text() == mg.course_page(DATA, SLUGS), (
        "book/course.md is stale: run `make goals`"
    )
    assert "file: book/course" in (ROOT / "_toc.yml").read_text()


def test_bad_goals_are_refused(tmp_path, monkeypatch):
    bad = tmp_path / "goals.yml"
    bad.write_text("x:\n  goals: [one]\n  prerequisites: p\n  time: {read: 1}\n")
    monkeypatch.setattr(mg, "GOALS", bad)
    with pytest.raises(ValueError, match="goals"):
        mg.load()
