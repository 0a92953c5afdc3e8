"""The paper's claims as rules that can fail, measured on several seeds with a negative
control each.

Each seed draws its own CSBMs (at the heterophilic ``cfg.low_h`` and the homophilic
``cfg.high_h``), applies each shift, trains a GCN per graph and scores every node.

How the settings were chosen: the JLDE settings are the official package's defaults
(95 % PCA variance per layer, k = 5, Euclidean distances, −(mean distance)²), and every
KNN score uses the same k. The CSBM (5 classes, 16 features, degree 10, class-mean norm
0.5) was fixed so that neither the features nor the graph alone classify perfectly.
The network (two GCN layers of width 32, 100 epochs) was fixed from exploratory runs on
:data:`TUNING_SEEDS` before the notebook and held-out seeds were run, and the rules'
margins were written then too. A validation-accuracy sweep on the tuning seeds
(:func:`lib.jlde.experiment.tune`, no uncertainty score involved) then gave 0.92 / 0.95
(50 epochs, width 32 / 64), 0.95 / 0.97 (100 epochs) and 0.98 / 0.98 (200 epochs):
larger is slightly better, and the CPU budget keeps the smaller network for the book;
the FULL preset uses 200 epochs and width 64.

Verdicts recorded: the homophilic-parity rule, |gap| ≤ 0.02, failed on one notebook seed
(−0.033) and its interval crosses the window, so it is recorded as partly reproduced
(the rule is left as written).
"""

from __future__ import annotations

from lib.common.claims import Claim, Rule, judge_all, mean_values, seed_list

from .graph import SHIFTS

#: seeds on which the network's epochs and width were chosen (validation accuracy)
TUNING_SEEDS = (0, 1, 2)
#: seeds the notebook evaluates (held-out seeds: lib.common.claims.HELDOUT_SEEDS)
NOTEBOOK_SEEDS = (10, 11, 12, 13, 14)

BASELINES = ("msp", "entropy", "energy", "knn_input", "knn_last")

CLAIMS = (
    Claim(
        "heterophily-gain",
        "under heterophily JLDE detects a left-out class better than a KNN density on "
        "the last layer alone",
        paper="joint > last-layer density on heterophilic graphs (ablation)",
        where="abstract; Sec. 5 (JLDE) and its ablations",
        statistic="AUROC(JLDE) − AUROC(last-layer KNN), left-out class, h = 0.1",
        rule=Rule.at_least(0.05),
        control="the same gap on a homophilic graph (h = 0.9)",
    ),
    Claim(
        "homophily-parity",
        "under homophily the last layer already holds what JLDE uses",
        paper="last-layer information suffices when neighbours agree",
        where="abstract; Sec. 4 (homophilic case)",
        statistic="AUROC(JLDE) − AUROC(last-layer KNN), left-out class, h = 0.9",
        rule=Rule.between(-0.02, 0.02),
        control="the same gap on a heterophilic graph (h = 0.1)",
        expect="partly reproduced",
    ),
    Claim(
        "joint-vs-sum",
        "a density on the joint space beats the sum of per-layer densities",
        paper="joint ≥ independent per-layer estimates (ablation)",
        where="Sec. 5 (joint vs independent); repo: independent_states",
        statistic="AUROC(JLDE) − AUROC(summed per-layer KNN), mean of 3 shifts, "
        "h = 0.1",
        rule=Rule.at_least(0.02),
        control="last-layer KNN in JLDE's place",
    ),
    Claim(
        "best-score",
        "JLDE beats every baseline score under heterophily",
        paper="state-of-the-art epistemic uncertainty on heterophilic graphs",
        where="abstract; Sec. 6 (OOD detection tables)",
        statistic="AUROC(JLDE) − best baseline's AUROC (MSP, entropy, energy, "
        "input / last-layer KNN), mean of 3 shifts, h = 0.1",
        rule=Rule.at_least(0.02),
        control="last-layer KNN in JLDE's place",
    ),
    Claim(
        "info-rises",
        "information about the label grows with depth under heterophily",
        paper="I(Y; H^(l)) can increase with l (data processing equality)",
        where="abstract; Sec. 4",
        statistic="max_l≥1 Î(Y; H^(l)) − Î(Y; X) in nats (linear probe), h = 0.1",
        rule=Rule.at_least(0.1),
        control="an MLP (no message passing), where the data processing inequality "
        "holds",
    ),
    Claim(
        "sota-real",
        "JLDE is state of the art on real heterophilic benchmarks and matches "
        "diffusion-based methods (GPN, GEBM) on homophilic ones",
        paper="best average OOD AUROC over heterophilic datasets",
        where="Sec. 6 tables",
        expect="not tested here",
    ),
)


def _gap(run: dict, a: str, b: str) -> float:
    return run[a] - run[b]


def run_seed(cfg, seed: int, device="cpu") -> dict:
    """Everything the claims read for one seed: ``{"ood": {h: {shift: {score: auroc}}},
    "info": {h: [...]}, "info_mlp": [...]}``."""
    from .experiment import run_setting

    out = {"ood": {}, "info": {}}
    for h in (cfg.low_h, cfg.high_h):
        out["ood"][h] = {
            s: run_setting(cfg, h, s, seed, device=device)["ood"] for s in SHIFTS
        }
        out["info"][h] = run_setting(
            cfg, h, None, seed, device=device, information=True
        )["info"]
    out["info_mlp"] = run_setting(
        cfg, cfg.low_h, None, seed, kind="mlp", device=device, information=True
    )["info"]
    return out


def _mean_over_shifts(by_shift: dict, score: str) -> float:
    return sum(by_shift[s][score] for s in SHIFTS) / len(SHIFTS)


def claims_from_runs(cfg, runs: dict) -> dict:
    """Per-seed statistics of each tested claim and of its control from
    :func:`run_seed` outputs ``{seed: run}``."""
    out = {c.id: {"values": {}, "control": {}} for c in CLAIMS if c.rule is not None}
    lo, hi = cfg.low_h, cfg.high_h
    for s, r in runs.items():
        loc_lo, loc_hi = (
            r["ood"][lo]["leave_out_class"],
            r["ood"][hi]["leave_out_class"],
        )
        out["heterophily-gain"]["values"][s] = _gap(loc_lo, "jlde", "knn_last")
        out["heterophily-gain"]["control"][s] = _gap(loc_hi, "jlde", "knn_last")
        out["homophily-parity"]["values"][s] = _gap(loc_hi, "jlde", "knn_last")
        out["homophily-parity"]["control"][s] = _gap(loc_lo, "jlde", "knn_last")
        m = {sc: _mean_over_shifts(r["ood"][lo], sc) for sc in r["ood"][lo][SHIFTS[0]]}
        out["joint-vs-sum"]["values"][s] = m["jlde"] - m["independent"]
        out["joint-vs-sum"]["control"][s] = m["knn_last"] - m["independent"]
        best = max(m[b] for b in BASELINES)
        best_other = max(m[b] for b in BASELINES if b != "knn_last")
        out["best-score"]["values"][s] = m["jlde"] - best
        out["best-score"]["control"][s] = m["knn_last"] - best_other
        info, mlp = r["info"][lo], r["info_mlp"]
        out["info-rises"]["values"][s] = max(info[1:]) - info[0]
        out["info-rises"]["control"][s] = max(mlp[1:]) - mlp[0]
    return out


def measure_claims(cfg, seeds, device="cpu", runs: dict | None = None) -> dict:
    """Per-seed values of each tested claim's statistic and of its negative control.

    Returns ``{claim id: {"values": {seed: v}, "control": {seed: v}}}`` (plain floats).
    Pass ``runs`` (from :func:`run_seed`) to reuse runs already made.
    """
    from .experiment import _check_cfg

    _check_cfg(cfg)
    seeds = seed_list(seeds)
    runs = dict(runs or {})
    for s in seeds:
        if s not in runs:
            runs[s] = run_seed(cfg, s, device)
    return claims_from_runs(cfg, {s: runs[s] for s in seeds})


def judge(measured: dict) -> list:
    """:func:`lib.common.claims.evaluate` for every claim (untested ones included)."""
    return judge_all(CLAIMS, measured)


def full_values(measured: dict | None) -> dict | None:
    """Mean over seeds of each claim's statistic (the "ours FULL" column)."""
    return mean_values(measured)
