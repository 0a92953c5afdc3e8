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

How the controls were chosen: on the left-out class at h = 0.9 every score is near an
AUROC of 1, so a gap measured there cannot differ from 0 whatever the method does. The
homophilic-parity claim is therefore judged on the mean of the three shifts, and the
heterophily gain's control is the h = 0.9 gap on the two shifts where the last layer is
well below the ceiling (feature noise and structure). The information claim's control
is the same heterophilic graph with uninformative heterophily (``informative = 0``:
neighbours from uniformly drawn other classes), which removes what message passing can
add; the MLP on the informative graph is kept as a second check.

Verdicts recorded: see ``expect`` on each claim (a claim whose rule fails, or whose
control also holds, is recorded as such; the rules are left as written).
"""

from __future__ import annotations

from lib.common.claims import Claim, Rule, judge_all, mean_values, seed_list

from .graph import SHIFTS

#: seeds on which the network's epochs and width were chosen (validation accuracy)
TUNING_SEEDS = (0, 1, 2)
#: seeds the notebook evaluates (held-out seeds: lib.common.claims.HELDOUT_SEEDS)
NOTEBOOK_SEEDS = (10, 11, 12, 13, 14)

BASELINES = (
    "msp",
    "entropy",
    "energy",
    "knn_input",
    "knn_layer1",
    "knn_last",
    "knn_input_layer1",
    "knn_input_last",
)
#: the network :func:`lib.jlde.experiment.tune` picks on TUNING_SEEDS (validation
#: accuracy 0.983, against 0.951 for the book's 100 epochs at width 32); best-score is
#: judged on both networks, because better-trained softmax scores are harder to beat
VALIDATION_NET = {"epochs": 200, "hidden": 64}

CLAIMS = (
    Claim(
        "heterophily-gain",
        "under heterophily JLDE detects a left-out class better than a KNN density on "
        "the last layer alone",
        paper="joint > last-layer density on heterophilic graphs (ablation)",
        where="abstract; Sec. 5 (JLDE) and its ablations",
        statistic="AUROC(JLDE) − AUROC(last-layer KNN), left-out class, h = 0.1",
        rule=Rule.at_least(0.05),
        control="the same gap at h = 0.9, mean of the two shifts where the last layer "
        "is not at the ceiling (feature noise, structure)",
        expect="partly reproduced",
    ),
    Claim(
        "homophily-parity",
        "under homophily the last layer already holds what JLDE uses",
        paper="last-layer information suffices when neighbours agree",
        where="abstract; Sec. 4 (homophilic case)",
        statistic="AUROC(JLDE) − AUROC(last-layer KNN), mean of 3 shifts, h = 0.9",
        rule=Rule.between(-0.02, 0.02),
        control="the same gap on a heterophilic graph (h = 0.1)",
        expect="not reproduced",
    ),
    Claim(
        "joint-vs-sum",
        "a density on the joint space beats the sum of per-layer densities",
        paper="joint ≥ independent per-layer estimates (ablation)",
        where="Sec. 5 (joint vs independent); repo: independent_states",
        statistic="AUROC(JLDE) − AUROC of the better per-layer sum (of the KNN "
        "confidences, or of their ranks), mean of 3 shifts, h = 0.1",
        rule=Rule.at_least(0.02),
        control="last-layer KNN in JLDE's place",
    ),
    Claim(
        "best-score",
        "JLDE beats every baseline score under heterophily",
        paper="state-of-the-art epistemic uncertainty on heterophilic graphs",
        where="abstract; Sec. 6 (OOD detection tables)",
        statistic="AUROC(JLDE) − best baseline's AUROC (MSP, entropy, energy, "
        "KNN on the input / layer 1 / last layer / [input, layer 1] / [input, last "
        "layer]), mean of 3 shifts, h = 0.1; the smaller of the values with the "
        "book's network and with the validation-chosen one (200 epochs, width 64)",
        rule=Rule.at_least(0.02),
        control="last-layer KNN in JLDE's place",
        expect="partly reproduced",
    ),
    Claim(
        "info-rises",
        "information about the label grows with depth when neighbours are "
        "label-informative (tested at h = 0.1; it rises at h = 0.9 too)",
        paper="I(Y; H^(l)) can increase with l (data processing equality)",
        where="abstract; Sec. 4",
        statistic="max_l≥1 Î(Y; H^(l)) − Î(Y; X) in nats (linear probe), h = 0.1",
        rule=Rule.at_least(0.1),
        control="the same graph with uninformative heterophily (informative = 0)",
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
    "ood_validation_net": {shift: {score: auroc}} (h = low_h, VALIDATION_NET),
    "info": {h: [...]}, "info_mlp": [...], "info_uninformative": [...]}``."""
    import dataclasses

    from .experiment import run_setting

    out = {"ood": {}, "info": {}}
    for h in (cfg.low_h, cfg.high_h):
        out["ood"][h] = {
            s: run_setting(cfg, h, s, seed, device=device)["ood"] for s in SHIFTS
        }
        out["info"][h] = run_setting(
            cfg, h, None, seed, device=device, information=True
        )["info"]
    big = dataclasses.replace(cfg, **VALIDATION_NET)
    out["ood_validation_net"] = (
        out["ood"][cfg.low_h]
        if big == cfg
        else {
            s: run_setting(big, cfg.low_h, s, seed, device=device)["ood"]
            for s in SHIFTS
        }
    )
    out["info_mlp"] = run_setting(
        cfg, cfg.low_h, None, seed, kind="mlp", device=device, information=True
    )["info"]
    flat = dataclasses.replace(cfg, informative=0.0)
    out["info_uninformative"] = run_setting(
        flat, cfg.low_h, None, seed, device=device, information=True
    )["info"]
    return out


def _mean_over_shifts(by_shift: dict, score: str) -> float:
    return sum(by_shift[s][score] for s in SHIFTS) / len(SHIFTS)


def best_score_leads(by_shift: dict) -> tuple:
    """(JLDE − best baseline, last-layer KNN − best other baseline), 3-shift means."""
    m = {sc: _mean_over_shifts(by_shift, sc) for sc in ("jlde",) + BASELINES}
    best = max(m[b] for b in BASELINES)
    best_other = max(m[b] for b in BASELINES if b != "knn_last")
    return m["jlde"] - best, m["knn_last"] - best_other


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
        m = {sc: _mean_over_shifts(r["ood"][lo], sc) for sc in r["ood"][lo][SHIFTS[0]]}
        mh = {sc: _mean_over_shifts(r["ood"][hi], sc) for sc in ("jlde", "knn_last")}
        unsat = [r["ood"][hi][sh] for sh in ("feature_noise", "structure")]
        out["heterophily-gain"]["values"][s] = _gap(loc_lo, "jlde", "knn_last")
        out["heterophily-gain"]["control"][s] = sum(
            _gap(u, "jlde", "knn_last") for u in unsat
        ) / len(unsat)
        out["homophily-parity"]["values"][s] = mh["jlde"] - mh["knn_last"]
        out["homophily-parity"]["control"][s] = m["jlde"] - m["knn_last"]
        best_sum = max(m["independent"], m["rank_sum"])
        out["joint-vs-sum"]["values"][s] = m["jlde"] - best_sum
        out["joint-vs-sum"]["control"][s] = m["knn_last"] - best_sum
        leads = [
            best_score_leads(r["ood"][lo]),
            best_score_leads(r["ood_validation_net"]),
        ]
        out["best-score"]["values"][s] = min(a for a, _ in leads)
        out["best-score"]["control"][s] = min(b for _, b in leads)
        info, flat = r["info"][lo], r["info_uninformative"]
        out["info-rises"]["values"][s] = max(info[1:]) - info[0]
        out["info-rises"]["control"][s] = max(flat[1:]) - flat[0]
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
