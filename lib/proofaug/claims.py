"""The paper's claims as rules that can fail, measured on several seeds with a negative
control each.

A seed is a fresh draw of everything the chapter does not train: ``cfg.n_test`` test
theorems drawn from the pool of about 50 unseen ones (never a training theorem;
:func:`lib.proofaug.experiment.fresh_problems`; the seeds' draws overlap) and the
proposer's sampling seed. The proposer itself is trained once per run, on the
training split of ``cfg.seed``. Every statistic is measured at the largest budget
k = ``cfg.n_samples`` on the same proposals for every method.

How the settings were chosen: the proposer (size, steps, temperature 0.6 from the
paper), the resource limits of the tactics and the hammer and k were fixed in the first
version of the chapter, on its seed-0 split. The rules' margins (0.05 in pass rate, 0.02
for ERP) were written after that split's results were known (ProofAug 57.5 %, DSP 35 %,
hammer 45 % at k = 8) and before any of the seeds below ran; no setting was changed
after they ran.

The controls remove the ingredient the claim credits: for ProofAug against DSP, the
structure analysis (what is left is DSP plus the final whole-theorem hammer call); for
theorems beyond the hammer, ProofAug itself (DSP in its place); below the root and on
the noisy oracle, the coarsening (holes filled at their own level only); for ERP, the
re-queries' content (each returns ``sorry``: it costs a query and closes nothing).
"""

from __future__ import annotations

from lib.common.claims import Claim, Rule, judge_all, seed_list

#: nothing is tuned on seeds in this chapter (see the module docstring)
TUNING_SEEDS = ()
#: seeds the notebook evaluates (held-out seeds: lib.common.claims.HELDOUT_SEEDS)
NOTEBOOK_SEEDS = (10, 11, 12)

_K = "at the largest budget k"

CLAIMS = (
    Claim(
        "beats-dsp",
        "on the same proposals ProofAug proves more theorems than DSP",
        paper="ProofAug 52.5 % at ≤ 100 queries, DSP (Codex) 39.3 % at 100; above the "
        "authors' own DSP at budgets 1, 10 and 100",
        where="abstract; Table 2 (miniF2F-test, Isabelle)",
        statistic=f"pass rate of ProofAug − DSP, {_K}",
        rule=Rule.at_least(0.05),
        control="DSP or the hammer alone, − DSP: the final whole-theorem call with no "
        "structure analysis",
        expect="partly reproduced",
    ),
    Claim(
        "beyond-hammer",
        "ProofAug proves theorems that the hammer alone does not",
        paper="(qualitative) the gain comes from analysing the proposal's structure, "
        "not from the hammer that ends the search",
        where="Sec. 3 (method) and the stage breakdown of the experiments",
        statistic="share of test theorems ProofAug proves and the hammer does not, "
        + _K,
        rule=Rule.at_least(0.05),
        control="the same share for DSP (the proposals as written)",
        expect="partly reproduced",
    ),
    Claim(
        "below-root",
        "without its final whole-theorem call, ProofAug still beats DSP",
        paper="successes at the finer levels (init_atp, coarse_atp) are a large part "
        "of ProofAug's (the official code logs the stage of every success)",
        where="repo: main.py (proof_aug_1dp stages)",
        statistic=f"pass rate of ProofAug without its root call − DSP, {_K}",
        rule=Rule.at_least(0.05),
        control="ProofAug without coarsening (holes filled at their own level), − DSP",
        expect="not reproduced",
    ),
    Claim(
        "oracle-below-root",
        "on mostly right proofs (a noisy oracle), structure analysis below the root "
        "repairs what DSP rejects",
        paper="(the mechanism the method rests on: most of a proposal's structure is "
        "right)",
        where="Sec. 1 and 3 (motivation)",
        statistic="pass@1 of ProofAug without its root call − DSP, gold proofs with "
        "each line corrupted with probability 0.3",
        rule=Rule.at_least(0.05),
        control="ProofAug without coarsening, − DSP, on the same corrupted proofs",
        expect="partly reproduced",
    ),
    Claim(
        "erp",
        "ERP adds theorems on top of ProofAug at the same query budget",
        paper="mixed strategy with ERP, cumulative: 66.0 % (curated) at ≤ 2100 queries",
        where="abstract; Sec. 4",
        statistic=f"pass rate of ProofAug + ERP − ProofAug, {_K} (re-queries counted)",
        rule=Rule.at_least(0.02),
        control="ERP whose re-queries return sorry (they cost budget and close "
        "nothing), − ProofAug",
        expect="not reproduced",
    ),
    Claim(
        "minif2f",
        "52.5 % on miniF2F-test with at most 100 queries",
        paper="52.5 % (deepseek-math-7b-base, Isabelle)",
        where="abstract; Table 1",
        expect="not tested here",
    ),
)


def measure_claims(cfg, seeds, device="cpu", main: dict | None = None) -> dict:
    """Per-seed values of each tested claim's statistic and of its negative control.

    Returns ``{claim id: {"values": {seed: v}, "control": {seed: v}}}`` (plain floats).
    ``main`` (from :func:`lib.proofaug.main_experiment` on these seeds) skips the
    runs; otherwise the proposer is trained (``setup``) and every seed is run."""
    from .experiment import _check_cfg, main_experiment, setup

    _check_cfg(cfg)
    seeds = seed_list(seeds)
    if main is None:  # the seeds in parallel: the records are the same
        main = main_experiment(cfg, setup(cfg, device), seeds, processes=2)
    runs = {r["seed"]: r for r in main["runs"]}
    if set(runs) != set(seeds):
        raise ValueError(
            f"main: expected runs for the seeds {list(seeds)}, got {sorted(runs)}"
        )
    ids = ("beats-dsp", "beyond-hammer", "below-root", "oracle-below-root", "erp")
    out = {c: {"values": {}, "control": {}} for c in ids}
    for s, r in runs.items():
        last = {m: c[-1] for m, c in r["curves"].items()}
        dsp = last["dsp"]
        out["beats-dsp"]["values"][s] = last["proofaug"] - dsp
        out["beats-dsp"]["control"][s] = r["dsp_or_hammer"] - dsp
        out["beyond-hammer"]["values"][s] = r["beyond_hammer"]["proofaug"]
        out["beyond-hammer"]["control"][s] = r["beyond_hammer"]["dsp"]
        out["below-root"]["values"][s] = last["proofaug_noroot"] - dsp
        out["below-root"]["control"][s] = last["proofaug_nocoarse"] - dsp
        o = r["oracle"]
        out["oracle-below-root"]["values"][s] = o["proofaug_noroot"] - o["dsp"]
        out["oracle-below-root"]["control"][s] = o["proofaug_nocoarse"] - o["dsp"]
        out["erp"]["values"][s] = last["proofaug_erp"] - last["proofaug"]
        # the control: ERP whose re-queries return sorry (they cost and close nothing)
        out["erp"]["control"][s] = last["erp_control"] - last["proofaug"]
    return out


def judge(measured: dict) -> list:
    """Verdicts for every claim (untested ones come back as ``not tested here``)."""
    return judge_all(CLAIMS, measured)
