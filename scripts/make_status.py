"""Write book/status.md and the README's chapter table from the last nbval run.

Sources: book/_data/papers.json (the 19 papers), book/_data/nbval_status.json (written
by the root conftest.py during `make nbval`), results/<slug>.json (FULL-preset runs with
provenance).
"""

import json
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
BUDGET_S = 180


def load(path, default):
    return json.loads(path.read_text()) if path.exists() else default


def rows():
    papers = load(ROOT / "book/_data/papers.json", [])
    nbval = load(ROOT / "book/_data/nbval_status.json", {})
    for p in papers:
        slug = p["slug"]
        exists = (ROOT / "book" / f"{slug}.ipynb").exists()
        run = nbval.get(slug) if exists else None
        full = load(ROOT / "results" / f"{slug}.json", None)
        yield p, exists, run, full


def runtime(run):
    if not run:
        return "not run"
    return f"{run['seconds']:.0f} s" + (
        "" if run["seconds"] <= BUDGET_S else " (over budget)"
    )


def full_cell(full):
    if not full:
        return "not yet run"
    prov = full["provenance"]
    return f"{prov['device']} ({prov['device_type']}), {prov['wall_time_s']:.0f} s"


def claims_cell(slug):
    data = load(ROOT / "results" / "claims" / f"{slug}.json", None)
    if not data:
        return "not on the ledger yet"
    counts = {}
    for c in data["claims"].values():
        counts[c["verdict"]] = counts.get(c["verdict"], 0) + 1
    return ", ".join(f"{n} {v}" for v, n in counts.items())


def status_md():
    lines = [
        "# Status",
        "",
        "One row per paper. *CPU runtime* is the chapter's wall time under strict "
        "nbval (`make nbval`) on",
        f"the machine named in the table; the budget is {BUDGET_S} s a chapter. *FULL "
        f"results* says whether",
        "`results/<slug>.json` exists and where it was computed. *Claims* counts the "
        "chapter's rows on the",
        "{doc}`claims ledger <claims>` by verdict. This page is regenerated on request "
        "by `make status`",
        "(`scripts/make_status.py`) from the last nbval run (`make test` leaves "
        "tracked files alone).",
        "",
        "| part | chapter | nbval | CPU runtime | measured on | FULL results | claims "
        "|",
        "|---|---|---|---|---|---|---|",
    ]
    for p, exists, run, full in rows():
        if exists:
            chapter = f"[{p['title']}]({p['slug']}.ipynb)"
            verdict = (
                "pass" if run and run["passed"] else ("fail" if run else "not run")
            )
            where = f"{run['machine']}, {run['date'][:10]}" if run else ""
            lines.append(
                f"| {p['part']} | {chapter} | {verdict} | {runtime(run)} | {where} | "
                f"{full_cell(full)} | {claims_cell(p['slug'])} |"
            )
        else:
            lines.append(
                f"| {p['part']} | {p['title']} ({p['authors']}) | planned | | | | |"
            )
    return "\n".join(lines) + "\n"


def readme_table():
    lines = ["| paper | chapter | status | CPU runtime |", "|---|---|---|---|"]
    for p, exists, run, full in rows():
        chapter = (
            f"[`book/{p['slug']}.ipynb`](book/{p['slug']}.ipynb)"
            if exists
            else f"`{p['slug']}`"
        )
        status = (
            (
                "nbval pass"
                if run and run["passed"]
                else "nbval fail"
                if run
                else "written"
            )
            if exists
            else "planned"
        )
        if full:
            status += f", FULL on {full['provenance']['device']}"
        lines.append(
            f"| {p['title']} ({p['authors']}) | {chapter} | {status} | "
            f"{runtime(run) if exists else ''} |"
        )
    return "\n".join(lines)


def merge_last_run():
    """Copy the runtimes of the last nbval run (_build/nbval_status.json) into
    book/_data/. Runs made with several pytest-xdist workers (``"jobs" > 1``) shared
    the CPU with another notebook: their times are not a chapter's runtime and are
    skipped."""
    last = load(ROOT / "_build/nbval_status.json", {})
    last = {k: v for k, v in last.items() if v.get("jobs", 1) == 1}
    if last:
        path = ROOT / "book/_data/nbval_status.json"
        data = load(path, {}) | last
        path.write_text(json.dumps(dict(sorted(data.items())), indent=1) + "\n")


def main():
    merge_last_run()
    (ROOT / "book/status.md").write_text(status_md())
    readme = ROOT / "README.md"
    text = readme.read_text()
    new, n = re.subn(
        r"(<!-- chapters:start -->\n)(?:.*?\n)?(<!-- chapters:end -->)",
        lambda m: m.group(1) + readme_table() + "\n" + m.group(2),
        text,
        flags=re.S,
    )
    if n != 1:
        print(
            "make_status: README.md lacks the <!-- chapters:start/end --> markers",
            file=sys.stderr,
        )
        return 1
    if new != text:
        readme.write_text(new)
    return 0


if __name__ == "__main__":
    sys.exit(main())
