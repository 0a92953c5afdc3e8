"""Book-wide checks: the table of contents, the house-style skeleton of every chapter,
committed outputs that strict nbval can compare, provenance of FULL results, and the
library's conventions."""

import json
import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
BOOK = ROOT / "book"
HEADINGS = [
    "The claim",
    "The method",
    "Implementation",
    "Experiment",
    "Results against the paper",
    "Explore",
    "Scale it up",
    "Exercises",
    "References",
]
PAPERS = {
    p["slug"]: p for p in json.loads((BOOK / "_data" / "papers.json").read_text())
}
PROVENANCE = (
    "device",
    "device_type",
    "torch",
    "python",
    "git_sha",
    "wall_time_s",
    "created",
)
BUDGET_S = 180


def _toc():
    return (ROOT / "_toc.yml").read_text()


def _toc_files():
    return re.findall(r"file:\s*([^\s#]+)", _toc())


CHAPTERS = sorted(p.stem for p in BOOK.glob("*.ipynb") if not p.stem.startswith("_"))


def _nb(slug):
    return json.loads((BOOK / f"{slug}.ipynb").read_text())


def _code(nb):
    return [c for c in nb["cells"] if c["cell_type"] == "code"]


def _markdown(nb):
    return "\n".join(
        "".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown"
    )


def test_papers_registry_has_19_papers():
    assert len(PAPERS) == 19


def test_toc_lists_exactly_the_pages_that_exist():
    files = _toc_files()
    assert len(files) == len(set(files)), "a page is listed twice in _toc.yml"
    for f in files + [re.search(r"root:\s*(\S+)", _toc()).group(1)]:
        assert any((ROOT / f"{f}{ext}").exists() for ext in (".md", ".ipynb")), (
            f"_toc.yml lists missing {f}"
        )
    for slug in CHAPTERS:
        assert f"book/{slug}" in files, f"book/{slug}.ipynb is not listed in _toc.yml"


def test_chapters_sit_in_their_part():
    parts = re.split(r"\n\s*- caption:\s*", _toc())
    for slug in CHAPTERS:
        assert slug in PAPERS, (
            f"book/{slug}.ipynb: unknown slug (not in book/_data/papers.json)"
        )
        part = next((p for p in parts if re.search(rf"file:\s*book/{slug}\b", p)), "")
        assert part.startswith(PAPERS[slug]["part"]), (
            f"{slug} belongs under '{PAPERS[slug]['part']}'"
        )


@pytest.mark.parametrize("slug", CHAPTERS)
def test_chapter_has_its_library_tests_and_entry_point(slug):
    init = ROOT / "lib" / slug / "__init__.py"
    assert init.exists(), f"lib/{slug}/__init__.py missing"
    doc = re.match(r'\s*(?:#.*\n)*\s*[rR]?"""(.*?)"""', init.read_text(), flags=re.S)
    assert doc and len(doc.group(1)) > 200, (
        f"lib/{slug}: the module docstring must be the paper card"
    )
    assert (ROOT / "lib" / slug / "__main__.py").exists(), (
        f"lib/{slug}/__main__.py (FULL entry point) missing"
    )
    assert (ROOT / "tests" / f"test_{slug}.py").exists(), (
        f"tests/test_{slug}.py missing"
    )


@pytest.mark.parametrize("slug", CHAPTERS)
def test_chapter_has_house_style_headings_in_order(slug):
    h2 = [
        h.strip() for h in re.findall(r"^##\s+(.+)$", _markdown(_nb(slug)), flags=re.M)
    ]
    positions = []
    for head in HEADINGS:
        assert head in h2, f"{slug}: missing the '## {head}' section (has {h2})"
        positions.append(h2.index(head))
    assert positions == sorted(positions), f"{slug}: sections out of order: {h2}"
    assert re.search(r"^#\s+\S", _markdown(_nb(slug)), flags=re.M), (
        f"{slug}: no H1 title"
    )


@pytest.mark.parametrize("slug", CHAPTERS)
def test_chapter_was_executed_top_to_bottom_with_clean_outputs(slug):
    code = _code(_nb(slug))
    counts = [c.get("execution_count") for c in code]
    assert counts == list(range(1, len(code) + 1)), (
        f"{slug}: execution counts {counts} are not 1..n"
    )
    assert sum(len(c.get("outputs", [])) for c in code) > 0, (
        f"{slug}: committed without outputs"
    )
    for i, cell in enumerate(code, 1):
        src = "".join(cell["source"])
        assert not re.search(r"#\s*NBVAL_", src), (
            f"{slug} cell {i}: use nbval cell tags, not comments"
        )
        for out in cell.get("outputs", []):
            assert out["output_type"] != "error", f"{slug} cell {i}: a stored error"
            assert not (out["output_type"] == "stream" and out["name"] == "stderr"), (
                f"{slug} cell {i}: stderr in stored outputs: "
                f"{''.join(out['text'])[:200]}"
            )
            text = "".join(out.get("text", "")) + "".join(
                out.get("data", {}).get("text/plain", "")
            )
            assert "Warning" not in text, (
                f"{slug} cell {i}: a warning in stored outputs"
            )
            assert "image/svg+xml" not in out.get("data", {}), (
                f"{slug} cell {i}: SVG figure (use PNG)"
            )


@pytest.mark.parametrize("slug", CHAPTERS)
def test_chapter_has_the_parts_a_reader_expects(slug):
    nb = _nb(slug)
    code, md = _code(nb), _markdown(nb)
    src = "\n".join("".join(c["source"]) for c in code)
    tags = [set(c.get("metadata", {}).get("tags", [])) for c in code]
    assert "hide-input" in tags[0], (
        f"{slug}: the setup cell should carry the hide-input tag"
    )
    assert any("nbval-ignore-output" in t for t in tags), (
        f"{slug}: versions/device cell not tagged"
    )
    assert re.search(r"^\s*assert\s", src, flags=re.M), (
        f"{slug}: no assert on the paper's claim"
    )
    assert "show_source(" in src, f"{slug}: show the library code with show_source"
    assert "live_controls(" in src or "ipywidgets" in src, f"{slug}: no widget"
    assert "plt.show()" in src or "savefig" in src, f"{slug}: no figure"
    n_ex = len(re.findall(r"```\{exercise\}", md))
    n_sol = len(re.findall(r"```\{solution\}[^\n]*\n:class: dropdown", md))
    assert 3 <= n_ex <= 5, f"{slug}: {n_ex} exercises (want 3–5)"
    assert n_sol == n_ex, f"{slug}: {n_sol} dropdown solutions for {n_ex} exercises"
    assert "{cite" in md and "{bibliography}" in md, f"{slug}: cite and list references"
    keys = [
        k.strip()
        for m in re.findall(r"\{cite(?::[a-z]+)?\}`([^`]+)`", md)
        for k in m.split(",")
    ]
    assert all(k.startswith(f"{slug}-") for k in keys), (
        f"{slug}: prefix citation keys with '{slug}-' (scripts/prefix_citations.py): "
        f"{keys}"
    )
    assert f":keyprefix: {slug}-" in md, (
        f"{slug}: the bibliography needs ':keyprefix: {slug}-'"
    )


@pytest.mark.parametrize("slug", CHAPTERS)
def test_ignore_output_tag_only_for_versions_timings_widgets(slug):
    allowed = re.compile(
        r"__version__|platform|perf_counter|time\.time|timeit|live_controls|ipywidgets"
    )
    for i, cell in enumerate(_code(_nb(slug)), 1):
        if "nbval-ignore-output" in cell.get("metadata", {}).get("tags", []):
            assert allowed.search("".join(cell["source"])), (
                f"{slug} cell {i}: nbval-ignore-output is only for versions, timings "
                f"and widgets"
            )


@pytest.mark.parametrize("slug", CHAPTERS)
def test_chapter_runtime_recorded_within_budget(slug):
    status = json.loads((BOOK / "_data" / "nbval_status.json").read_text())
    assert slug in status, (
        f"{slug}: no nbval runtime recorded (run `make nbval SLUG={slug}`)"
    )
    assert status[slug]["seconds"] <= BUDGET_S, (
        f"{slug}: {status[slug]['seconds']} s > {BUDGET_S} s budget"
    )


def test_results_have_provenance():
    for path in sorted((ROOT / "results").glob("*.json")):
        if "." in path.stem:  # <slug>.<preset>.json: a non-FULL preset, not committed
            continue
        data = json.loads(path.read_text())
        if path.stem.endswith("_bench"):  # <slug>_bench.json: a benchmark's record
            assert {"what", "machine", "torch", "rows"} <= set(data), (
                f"{path.name}: expected what, machine, torch and rows"
            )
            continue
        assert (
            data.get("slug") == path.stem
            and data.get("preset")
            and "config" in data
            and "results" in data
        ), f"{path.name}: expected slug, preset, config and results"
        missing = [f for f in PROVENANCE if f not in data.get("provenance", {})]
        assert not missing, f"{path.name}: provenance lacks {missing}"
        assert path.stem in PAPERS, f"{path.name}: not a chapter's slug"


def test_library_conventions():
    for py in sorted((ROOT / "lib").rglob("*.py")):
        src = py.read_text()
        assert ".cuda()" not in src, f"{py}: use device=, not .cuda()"
        if "common" not in py.parts and py.name != "__main__.py":
            assert not re.search(r"^\s*print\(", src, flags=re.M), (
                f"{py}: no prints in library code"
            )
        assert not re.search(
            r"(urlretrieve|requests\.get|hf_hub_download|snapshot_download|download=True)",
            src,
        ), f"{py}: downloads at run time"


@pytest.mark.parametrize("slug", CHAPTERS)
def test_chapter_config_presets_and_run_experiment_signature(slug):
    """CONTRIBUTING: ``Config`` (with a ``seed``), ``SMOKE`` and ``FULL`` live in
    lib/<slug>/__init__.py, and the entry point is ``run_experiment(cfg,
    device=None)``."""
    import dataclasses
    import importlib
    import inspect

    pkg = importlib.import_module(f"lib.{slug}")
    assert pkg.Config.__module__ == f"lib.{slug}", (
        f"lib/{slug}: Config is defined in {pkg.Config.__module__}, not in the "
        f"package's __init__.py"
    )
    assert "seed" in {f.name for f in dataclasses.fields(pkg.Config)}, (
        f"lib/{slug}: Config lacks a seed"
    )
    assert isinstance(pkg.SMOKE, pkg.Config) and isinstance(pkg.FULL, pkg.Config)
    params = [
        (p.name, p.default)
        for p in inspect.signature(pkg.run_experiment).parameters.values()
    ]
    assert params == [("cfg", inspect.Parameter.empty), ("device", None)], (
        f"lib/{slug}: run_experiment{inspect.signature(pkg.run_experiment)}, expected "
        f"(cfg, device=None)"
    )


def test_readme_and_environment():
    readme = (ROOT / "README.md").read_text()
    assert "make book" in readme and "make test" in readme
    for slug in CHAPTERS:
        assert f"book/{slug}.ipynb" in readme, f"README's chapter table lacks {slug}"
    assert "-e .[dev]" in (ROOT / "environment.yml").read_text()
    assert "make test" in (ROOT / ".ci" / "run").read_text()


# --- code fits the page: 88 columns (ruff's line-length in pyproject.toml) ------------
CODE_COLUMNS = 88


def _code_files():
    files = [
        p
        for d in ("lib", "tests", "benchmarks", "scripts")
        for p in sorted((ROOT / d).rglob("*.py"))
    ]
    files += sorted(BOOK.glob("*.ipynb"))
    return [str(p.relative_to(ROOT)) for p in files if "__pycache__" not in p.parts]


def _long_lines(rel):
    path = ROOT / rel
    if path.suffix == ".ipynb":
        lines = [
            (f"cell {i}", line)
            for i, c in enumerate(json.loads(path.read_text())["cells"])
            if c["cell_type"] == "code"
            for line in "".join(c["source"]).splitlines()
        ]
    else:
        lines = [
            (f"line {i}", line)
            for i, line in enumerate(path.read_text().splitlines(), 1)
        ]
    return [
        f"{where}: {len(line)} > {CODE_COLUMNS}"
        for where, line in lines
        if len(line) > CODE_COLUMNS and not re.fullmatch(r"\s*#?\s*\S+", line)
    ]


@pytest.mark.parametrize(
    "rel",
    [f for f in _code_files()],
)
def test_code_fits_88_columns(rel):
    """Library, test, benchmark and notebook code is wrapped at 88 columns (`ruff
    format`), so a listing or a code cell fits the book's column without scrolling
    sideways."""
    long = _long_lines(rel)
    assert not long, f"{rel}: {len(long)} line(s) too long, e.g. " + "; ".join(long[:3])


@pytest.mark.parametrize("slug", CHAPTERS)
def test_captioned_figure_cell_displays_one_thing(slug):
    # myst-nb gives every display output of a captioned cell the caption's name, so a
    # second display (a table, another figure) makes a duplicate target and `make book`
    # fails under -W
    for i, cell in enumerate(_code(_nb(slug)), 1):
        if "figure" not in cell.get("metadata", {}).get("mystnb", {}):
            continue
        shown = [
            o for o in cell.get("outputs", []) if o["output_type"] == "display_data"
        ]
        assert len(shown) == 1, (
            f"{slug} cell {i}: a captioned figure cell has {len(shown)} display "
            "outputs; put tables and other figures in their own cells"
        )
