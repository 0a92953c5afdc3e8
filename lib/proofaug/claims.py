"""The paper's claims as rules that can fail, measured on several sampling seeds with a
negative control each.

**What a seed is.** The problem pool, the split and the proposer are fixed by
``cfg.seed`` (one training run); a claim seed draws fresh proposals (and ERP's
re-queries) from the proposer and a fresh corruption of the gold proofs for the noisy
oracle. A fresh split is a different ``cfg.seed`` (see the chapter).

**Why the test theorems are hammer-hard.** Every ProofAug run ends, when nothing finer
works, with callATP on the whole theorem: the very call the hammer-only baseline makes.
On theorems the hammer proves, "ProofAug ≥ hammer" therefore holds by construction, and
an earlier version of this chapter found every ProofAug success to be that root call.
The test theorems are now ones the hammer fails on within its limit, so the root call
never succeeds on them (ProofAug and ProofAug-without-root coincide there) and every
success counted below comes from the structure analysis.

**Controls.** Where the claim is "ProofAug beats a baseline", the control puts the
baseline in ProofAug's place (the rule then compares the baseline with itself, and
fails). ERP's control keeps the re-queries but makes them useless (``sorry``), so it
pays ERP's queries without its proposals.

How the settings were chosen: the rules' margins (5 points over DSP and the hammer,
2 points for ERP, 10 points on the noisy oracle at ρ = 0.3), the budget (k ≤ 4), the
split and the proposer were fixed before any run of this version on
:data:`NOTEBOOK_SEEDS` or the held-out seeds; nothing was tuned. The recorded
expectations (``expect``) were also written before any run, all at the pessimistic
"not reproduced": the assert then guards nothing, and the verdicts on the ledger are
computed from the runs. Raising an expectation to the observed verdict (and re-running
``make claims``) is what turns a claim into a regression check.
"""

from __future__ import annotations

from lib.common.claims import Claim, Rule, judge_all, mean_values, seed_list

#: sampling seeds looked at while the chapter was being written (timing, margins)
TUNING_SEEDS = (0, 1)
#: sampling seeds the notebook evaluates (held-out seeds: HELDOUT_SEEDS via make claims)
NOTEBOOK_SEEDS = (10, 11, 12)

CLAIMS = (
    Claim(
        "beats-dsp",
        "on theorems the hammer cannot prove, ProofAug below the root (no call on the "
        "whole theorem) solves more than DSP on the same proposals, at the largest "
        "budget",
        paper="ProofAug > DSP at every sample budget (1, 10, 100)",
        where="Table 2; §5",
        statistic="pass rate of ProofAug-without-root − DSP at k = max, hard set",
        rule=Rule.at_least(0.05),
        control="DSP in ProofAug's place (no structure analysis)",
        expect="not reproduced",
    ),
    Claim(
        "beats-hammer",
        "ProofAug solves theorems the hammer alone cannot (hammer-hard test set)",
        paper="52.5% vs Sledgehammer-only far below (miniF2F-test)",
        where="Table 2",
        statistic="pass rate of ProofAug − hammer alone at k = max, hard set",
        rule=Rule.at_least(0.05),
        control="the hammer (ProofAug's own root call) in ProofAug's place",
        expect="not reproduced",
    ),
    Claim(
        "erp",
        "ERP (re-querying the proposer on a hole callATP cannot close) adds solved "
        "theorems at equal query budget",
        paper="ProofAug+ERP above ProofAug",
        where="Table 2 / §4.3",
        statistic="pass rate of ProofAug + ERP − ProofAug at k = max, hard set "
        "(re-queries count in the budget)",
        rule=Rule.at_least(0.02),
        control="ERP whose re-queries return sorry (queries paid, no proposals)",
        expect="not reproduced",
    ),
    Claim(
        "oracle-subroot",
        "with a noisy-oracle proposer (gold proofs, each line corrupted with "
        "probability 0.3), structure analysis below the root repairs proofs DSP "
        "rejects",
        paper="most of a failed proof's structure is right (the paper's premise)",
        where="§1, §3",
        statistic="pass@1 of ProofAug-without-root − DSP, noisy oracle ρ = 0.3, "
        "hard set",
        rule=Rule.at_least(0.10),
        control="DSP in ProofAug's place",
        expect="not reproduced",
    ),
    Claim(
        "minif2f",
        "52.5% of miniF2F-test with ≤ 100 queries (66.0% mixed strategy)",
        paper="52.5% / 66.0%",
        where="abstract, Table 2",
        expect="not tested here",
    ),
)


def _last(block: dict, m: str) -> float:
    return float(block[m]["curve"][-1])


def claims_from_runs(runs: list) -> dict:
    """The ledger's per-seed values from :func:`lib.proofaug.seed_run` results (the
    same runs the notebook shows)."""
    if not isinstance(runs, list) or not runs:
        raise ValueError("runs: expected a non-empty list of seed_run results")
    out = {c.id: {"values": {}, "control": {}} for c in CLAIMS if c.rule is not None}
    for r in runs:
        if not isinstance(r, dict) or "hard" not in r or "seed" not in r:
            raise TypeError(
                f"runs: expected seed_run results (dicts with 'seed' and 'hard'), "
                f"got {type(r).__name__}"
            )
        s, h, o = r["seed"], r["hard"], r["oracle"]
        out["beats-dsp"]["values"][s] = _last(h, "proofaug_noroot") - _last(h, "dsp")
        out["beats-dsp"]["control"][s] = 0.0
        out["beats-hammer"]["values"][s] = _last(h, "proofaug") - h["hammer"]
        out["beats-hammer"]["control"][s] = 0.0
        out["erp"]["values"][s] = _last(h, "proofaug_erp") - _last(h, "proofaug")
        out["erp"]["control"][s] = _last(h, "erp_control") - _last(h, "proofaug")
        out["oracle-subroot"]["values"][s] = o["proofaug"] - o["dsp"]
        out["oracle-subroot"]["control"][s] = 0.0
    return out


def measure_claims(cfg, seeds, device="cpu") -> dict:
    """Per-seed values of each tested claim's statistic and of its negative control
    (one proposer trained with ``cfg.seed``; one :func:`seed_run` per seed)."""
    from .experiment import _check_cfg, seed_run, setup

    _check_cfg(cfg)
    seeds = seed_list(seeds)
    env = setup(cfg, device)
    return claims_from_runs([seed_run(cfg, env, s) for s in seeds])


def judge(measured: dict) -> list:
    """:func:`lib.common.claims.evaluate` for every claim (untested ones included)."""
    return judge_all(CLAIMS, measured)


def full_values(measured: dict | None) -> dict | None:
    """Mean over seeds of each claim's statistic (the "ours FULL" column)."""
    return mean_values(measured)
