"""The claims ledger's files: every chapter whose library declares CLAIMS has a
committed, fresh results/claims/<slug>.json (from `make claims`), and its notebook
renders and asserts through lib.common.claims."""

import importlib
import json
import pathlib

import pytest

from lib.common.claims import HELDOUT_SEEDS, VERDICTS, check_seeds, lib_hash

ROOT = pathlib.Path(__file__).resolve().parents[1]
ON_LEDGER = sorted(
    p.parent.name
    for p in (ROOT / "lib").glob("*/__init__.py")
    if p.parent.name != "common" and "CLAIMS" in p.read_text()
)


def test_the_exemplar_is_on_the_ledger():
    assert "brokerage" in ON_LEDGER


@pytest.mark.parametrize("slug", ON_LEDGER)
def test_claims_file_is_committed_and_fresh(slug):
    path = ROOT / "results" / "claims" / f"{slug}.json"
    assert path.exists(), (
        f"{path.relative_to(ROOT)} missing: run `make claims SLUG={slug}` and commit it"
    )
    data = json.loads(path.read_text())
    assert data["lib_hash"] == lib_hash(slug), (
        f"{path.relative_to(ROOT)} was computed from an older lib/{slug}/: run `make "
        f"claims SLUG={slug}`"
    )
    mod = importlib.import_module(f"lib.{slug}")
    assert set(data["claims"]) == {c.id for c in mod.CLAIMS}
    assert data["heldout_seeds"] == list(HELDOUT_SEEDS) and len(HELDOUT_SEEDS) >= 5
    check_seeds(data["notebook_seeds"])
    for cid, c in data["claims"].items():
        assert c["verdict"] in VERDICTS
        if c["criterion"] is not None and c.get("modelled"):
            # a modelled claim is a deterministic computation: one value, no seeds (it
            # cannot earn "reproduced" whatever its value)
            assert len(c["heldout"]["method"]["values"]) >= 1, cid
            assert c["verdict"] != "reproduced", cid
        elif c["criterion"] is not None:
            assert len(c["heldout"]["method"]["values"]) == len(HELDOUT_SEEDS), cid
    for field in ("device", "torch", "git_sha", "wall_time_s", "created"):
        assert field in data["provenance"]


@pytest.mark.parametrize("slug", ON_LEDGER)
def test_notebook_renders_and_asserts_through_the_ledger(slug):
    nb = json.loads((ROOT / "book" / f"{slug}.ipynb").read_text())
    code = "\n".join(
        "".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code"
    )
    assert "claims_table(" in code and "assert_claims(" in code, (
        f"{slug}: results not rendered/asserted via lib.common.claims"
    )


def test_ledger_page_lists_every_chapter_on_the_ledger():
    page = (ROOT / "book" / "claims.md").read_text()
    for slug in ON_LEDGER:
        assert f"]({slug}.ipynb)" in page, (
            f"book/claims.md lacks {slug}: run `make claims`"
        )
