"""Write book/claims.md, the book-wide claims ledger, from results/claims/<slug>.json.

One row per claim across the book; chapters not yet on the ledger are listed below the
table. Run by `make claims` (after the claims files are refreshed) and by `make status`.
"""

import json
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from lib.common.claims import VERDICTS, lib_hash  # noqa: E402


def _esc(s):
    return str(s).replace("|", "\\|").replace("\n", " ")


def _val(summary, fmt):
    if not summary:
        return "—"
    return f"{summary['mean']:{fmt}}" + (
        f" ({summary['holding']}/{len(summary['values'])} seeds)"
    )


def page() -> str:
    papers = json.loads((ROOT / "book/_data/papers.json").read_text())
    rows, counts, missing = [], {v: 0 for v in VERDICTS}, []
    for p in papers:
        slug = p["slug"]
        path = ROOT / "results" / "claims" / f"{slug}.json"
        if not path.exists():
            missing.append(p)
            continue
        data = json.loads(path.read_text())
        stale = data.get("lib_hash") != lib_hash(slug)
        for cid, c in data["claims"].items():
            counts[c["verdict"]] += 1
            held = c["heldout"]["method"]
            held_txt = "—" if not held else f"{held['holding']}/{len(held['values'])}"
            crit = (
                "—" if c["criterion"] is None else f"{c['statistic']} {c['criterion']}"
            )
            kind = (
                "—"
                if c["criterion"] is None
                else "modelled"
                if c["modelled"]
                else "measured"
            )
            rows.append(
                f"| [{slug}]({slug}.ipynb) | **{_esc(cid)}**: {_esc(c['statement'])} | "
                f"{_esc(c['paper'])} ({_esc(c['where'])}) | {_esc(crit)} | "
                f"{_val(c['notebook']['method'], c['fmt'])} | "
                f"{held_txt}{' (stale)' if stale else ''} | "
                f"{kind} | "
                f"**{c['verdict']}** |"
            )
    lines = [
        "# Claims ledger",
        "",
        "Every claim the book checks, in one table. Each row is a paper's claim in "
        "our words, the paper's",
        "own evidence and where it stands, the rule that decides it (written once, in "
        "the chapter's",
        "library), our value on the notebook's seeds, and how many **held-out seeds** "
        "(never used to",
        "choose a setting) satisfy the rule. The verdict is the weaker of the "
        "notebook seeds' and the",
        "held-out seeds' verdicts, by one rule for the whole book "
        "({doc}`how-to-read`, `lib/common/claims.py`):",
        "*reproduced* needs at least three seeds, the rule holding on the mean, on "
        "the whole 95 % interval",
        "and on at least 80 % of the seeds, a negative control (the method's key "
        "ingredient removed) that",
        "fails the same rule, and measured rather than modelled evidence. `make "
        "claims` regenerates this",
        "page; a row marked *stale* was computed from an older version of the "
        "chapter's library.",
        "",
        "**Counts:** " + " · ".join(f"{v}: {counts[v]}" for v in VERDICTS),
        "",
        "| chapter | claim | paper (where) | criterion | ours (notebook seeds) | "
        "held-out seeds holding | evidence | verdict |",
        "|---|---|---|---|---|---|---|---|",
        *rows,
        "",
        "## Not yet on the ledger",
        "",
        "Chapters whose claims are not yet judged by the shared rules, and papers "
        "without a chapter yet:",
        "",
        *[
            f"- {p['title']} (`{p['slug']}`): "
            + (
                "[chapter](" + p['slug'] + ".ipynb), claims not yet on the ledger"
                if (ROOT / "book" / f"{p['slug']}.ipynb").exists()
                else "no chapter yet"
            )
            for p in missing
        ],
        "",
    ]
    return "\n".join(lines)


def main():
    (ROOT / "book" / "claims.md").write_text(page())
    return 0


if __name__ == "__main__":
    sys.exit(main())
