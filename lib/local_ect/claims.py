"""The paper's claims as rules that can fail, measured on several seeds with a negative
control each.

One seed draws one moment-matched shape graph (:func:`.data.moment_graph`), one cSBM
per homophily level and one planar point cloud with ``cfg.rot_trials`` random
rotations; every method runs on the same graphs and splits, so comparisons are paired.

Claims and their controls:

- ``shape``: on the moment-matched shape classes, GBDT on the ℓ-ECT beats the best of
  eight baselines (GBDT on x, on x + means, on x + mean/std, on x + moments up to order
  4, GCN, GAT, GIN, H2GCN) by ≥ 0.10 accuracy. Control: the same ℓ-ECT pipeline on the
  graph with the satellites' features permuted across all satellites, so that a
  centre's neighbourhood no longer carries its class.
- ``heterophily``, ``heterophily-gnn``: on the two-class cSBM at edge homophily 0.1 the
  ℓ-ECT is at least as accurate as the best baseline (all eight; only the paper's four
  GNNs). Control: GBDT on x alone in place of the ℓ-ECT features.
- ``rotation``, ``rotation-exact``: over ``cfg.rot_trials`` random angles the recovered
  angle is within π/K of the true one (statistic: max error / (π/K) ≤ 1), for the
  smoothed (scale 20) and the exact ECT. Control: K random directions instead of K
  evenly spaced ones (a cyclic shift of the direction axis is then no rotation).

How the settings were chosen. The rules were written before any run on the notebook or
held-out seeds: a 0.10 margin (a gain the paper's theory predicts to be large; its
tables' gains over GNNs are 0.05–0.3 on the heterophilous sets), "at least as accurate"
for heterophily (the paper's wording: better than the GNNs there), and the π/K bound of
a nearest-grid-angle estimate. The shape task's parameters (18 satellites on 2 or 3
rings, shift 0.1, leaf satellites) and the GNN width (64, the official code's) were set
on :data:`TUNING_SEEDS` 0–1; at shift 0.01 the ℓ-ECT reached 1.0 there and every
baseline stayed at chance, so the harder shift 0.1 was kept. GNN epochs (100) and the
sizes are fixed by the CPU budget, not by results.

One expectation changed after the first ``make claims``: ``rotation`` was recorded as
reproduced (tuning seeds: 0.999 and 0.996); on the notebook seeds every value held
(0.999, 1.000, 0.998) but the 95 % interval crossed the bound, which the book's rule
calls partly reproduced, so it is recorded as such (held-out: 8/8 seeds within).
"""

from __future__ import annotations

import torch

from lib.common import check_int, make_generator
from lib.common.claims import Claim, Rule, judge_all, mean_values, seed_list

from .data import Graph
from .ect import random_directions, thresholds
from .experiment import (
    BASELINES,
    METHODS,
    PAPER_GNNS,
    _check_cfg,
    csbm_seed,
    rotation_trials,
    shape_graph_of,
    summarize,
)
from .local import local_ect_features
from .models import gbdt_accuracy

__all__ = [
    "CLAIMS",
    "TUNING_SEEDS",
    "NOTEBOOK_SEEDS",
    "HETEROPHILY",
    "run_seeds",
    "claims_from_runs",
    "measure_claims",
    "judge",
    "full_values",
    "shuffled_satellites",
]

#: seeds on which the shape task and the GNN width were looked at
TUNING_SEEDS = (0, 1)
#: seeds the notebook evaluates (held-out: lib.common.claims.HELDOUT_SEEDS)
NOTEBOOK_SEEDS = (10, 11, 12)
#: the homophily level of the heterophily claims
HETEROPHILY = "0.1"

CLAIMS = (
    Claim(
        "shape",
        "the ℓ-ECT keeps neighbourhood shape that aggregators and GNNs lose",
        paper="ℓ-ECT lossless (ECT invertible); mean aggregation is not",
        where="abstract; §3 (theory)",
        statistic="accuracy: ℓ-ECT − best of 8 baselines, shape classes with equal "
        "moments ≤ 5",
        rule=Rule.at_least(0.10),
        control="satellites' features permuted across centres",
        fmt=".3f",
    ),
    Claim(
        "heterophily",
        "under heterophily the ℓ-ECT is at least as accurate as the strongest baseline",
        paper="ℓ-ECT ≥ GNNs, gains largest under high heterophily",
        where="abstract; node-classification tables",
        statistic="accuracy: ℓ-ECT − best of 8 baselines (moment aggregators, GNNs), "
        "cSBM h = 0.1",
        rule=Rule.at_least(0.0),
        control="GBDT on x alone in place of the ℓ-ECT",
        expect="not reproduced",
        fmt=".3f",
    ),
    Claim(
        "heterophily-gnn",
        "under heterophily the ℓ-ECT is at least as accurate as the paper's GNNs",
        paper="better than GCN, GAT, GIN, H2GCN on heterophilous sets",
        where="abstract; node-classification tables",
        statistic="accuracy: ℓ-ECT − best of GCN, GAT, GIN, H2GCN, cSBM h = 0.1",
        rule=Rule.at_least(0.0),
        control="GBDT on x alone in place of the ℓ-ECT",
        expect="not reproduced",
        fmt=".3f",
    ),
    Claim(
        "rotation",
        "the best cyclic shift of the smoothed ECT recovers a rotation within π/K",
        paper="d(G, H) = min_R ‖ECT(G) − ECT(RH)‖ aligns embedded data",
        where="§ rotation-invariant metric",
        statistic="max |α̂ − α| / (π/K) over 500 angles, K = 64, scale 20",
        rule=Rule.at_most(1.0),
        control="K random directions instead of evenly spaced ones",
        expect="partly reproduced",
        fmt=".3f",
    ),
    Claim(
        "rotation-exact",
        "the same with the exact (integer) ECT",
        paper="d(G, H) = min_R ‖ECT(G) − ECT(RH)‖ aligns embedded data",
        where="§ rotation-invariant metric",
        statistic="max |α̂ − α| / (π/K) over 500 angles, K = 64, exact ECT",
        rule=Rule.at_most(1.0),
        control="K random directions instead of evenly spaced ones",
        expect="not reproduced",
        fmt=".3f",
    ),
    Claim(
        "benchmarks",
        "ℓ-ECT + XGBoost beats GCN/GAT/GIN/H2GCN on the real heterophilous sets",
        paper="e.g. Tolokers ROC-AUC 0.654 ± 0.010 (ℓ-ECT₁)",
        where="node-classification tables; repo results.json",
        expect="not tested here",
    ),
)


def shuffled_satellites(graph: Graph, seed: int) -> Graph:
    """The negative control's graph: the unlabelled nodes' (satellites') features
    permuted at random among themselves, edges and labels unchanged."""
    if not isinstance(graph, Graph):
        raise TypeError(f"graph: expected a Graph, got {type(graph).__name__}")
    check_int("seed", seed, 0)
    sat = torch.nonzero(graph.y < 0).squeeze(1)
    perm = torch.randperm(sat.numel(), generator=make_generator(seed + 7919))
    x = graph.x.clone()
    x[sat] = graph.x[sat[perm.to(sat.device)]]
    return Graph(x, graph.edge_index, graph.y, graph.labelled)


def _lect_accuracy(graph: Graph, cfg, device, seed: int) -> float:
    """The ℓ-ECT pipeline of :func:`~lib.local_ect.experiment.evaluate_graph` (same
    split and directions for the same seed)."""
    from .data import split

    g = make_generator(seed)
    graph = graph.to(device)
    train, test = split(graph.labelled.cpu(), cfg.train_fraction, generator=g)
    v = random_directions(
        graph.x.shape[1], cfg.num_directions, generator=g, device=device
    )
    t = thresholds(cfg.num_thresholds, cfg.radius, device=device)
    feats = local_ect_features(
        graph.x,
        graph.edge_index,
        v,
        t,
        hops=(1, 2),
        nodes=graph.labelled,
        scale=cfg.scale,
    )
    return gbdt_accuracy(
        feats,
        graph.y,
        train.to(device),
        test.to(device),
        seed=seed,
        max_iter=cfg.gbdt_iter,
        max_bins=cfg.gbdt_bins,
    )


def run_seeds(cfg, seeds, device="cpu", homophily=None) -> dict:
    """Everything the claims and the chapter's tables need, seed by seed: ``{seed:
    {"shape": {method: acc}, "shape_control": acc, "csbm": {h: {method: acc,
    "edge_homophily": h_measured}}, "rotation": {form: max error / (π/K), ...}}}``.
    ``homophily``: the cSBM levels (default ``cfg.homophily``; the claims need only
    :data:`HETEROPHILY`)."""
    from lib.common import check_numbers, check_probability

    from .experiment import evaluate_graph

    _check_cfg(cfg)
    levels = cfg.homophily if homophily is None else homophily
    check_numbers("homophily", levels, check_probability)
    if HETEROPHILY not in {f"{h:g}" for h in levels}:
        raise ValueError(
            f"homophily: expected the levels to include {HETEROPHILY}, got {levels}"
        )
    out = {}
    for s in seed_list(seeds):
        graph = shape_graph_of(cfg, s)
        shape = evaluate_graph(graph, cfg, device, s)
        ctrl = _lect_accuracy(shuffled_satellites(graph, s), cfg, device, s)
        csbm = {f"{h:g}": csbm_seed(cfg, h, s, device) for h in levels}
        rot = {}
        for form, scale in (("smooth", -1.0), ("exact", None)):
            for dirs in ("circle", "random"):
                r = rotation_trials(cfg, device, s, scale, directions=dirs)
                key = form if dirs == "circle" else f"{form}_control"
                rot[key] = float(r["error"].max() / r["bound"])
                if dirs == "circle":
                    within = (r["error"] <= r["bound"]).double().mean()
                    rot[f"{form}_within"] = float(within)
        out[s] = {"shape": shape, "shape_control": ctrl, "csbm": csbm, "rotation": rot}
    return out


def _gap(acc: dict, against, key: str = "lect") -> float:
    return acc[key] - max(acc[m] for m in against)


def claims_from_runs(runs: dict) -> dict:
    """Per-seed values of each tested claim's statistic and of its negative control,
    ``{claim id: {"values": {seed: v}, "control": {seed: v}}}``, from
    :func:`run_seeds`."""
    if not isinstance(runs, dict) or not runs:
        raise TypeError("runs: expected the non-empty dict of run_seeds")
    out = {c.id: {"values": {}, "control": {}} for c in CLAIMS if c.rule is not None}
    for s, r in runs.items():
        sh = r["shape"]
        out["shape"]["values"][s] = _gap(sh, BASELINES)
        out["shape"]["control"][s] = r["shape_control"] - max(sh[m] for m in BASELINES)
        low = r["csbm"][HETEROPHILY]
        for cid, against in (
            ("heterophily", BASELINES),
            ("heterophily-gnn", PAPER_GNNS),
        ):
            out[cid]["values"][s] = _gap(low, against)
            out[cid]["control"][s] = _gap(low, against, key="gbdt_x")
        for cid, form in (("rotation", "smooth"), ("rotation-exact", "exact")):
            out[cid]["values"][s] = r["rotation"][form]
            out[cid]["control"][s] = r["rotation"][f"{form}_control"]
    return out


def measure_claims(cfg, seeds, device="cpu") -> dict:
    """:func:`claims_from_runs` of :func:`run_seeds` (the ledger's entry point)."""
    return claims_from_runs(
        run_seeds(cfg, seeds, device, homophily=(float(HETEROPHILY),))
    )


def judge(measured: dict) -> list:
    """:func:`lib.common.claims.evaluate` for every claim of the chapter (untested ones
    included)."""
    return judge_all(CLAIMS, measured)


def full_values(measured: dict | None) -> dict | None:
    """Mean over seeds of each claim's statistic (the "ours FULL" column), or None."""
    return mean_values(measured)


def accuracy_tables(runs: dict) -> dict:
    """Mean ± std over seeds of every method: ``{"shape": {method: summary}, "csbm":
    {h: {"edge_homophily": mean, method: summary}}}`` (see
    :func:`~lib.local_ect.experiment.summarize`)."""
    if not isinstance(runs, dict) or not runs:
        raise TypeError("runs: expected the non-empty dict of run_seeds")
    rs = list(runs.values())
    shape = {m: summarize([r["shape"][m] for r in rs]) for m in METHODS}
    csbm = {}
    for h in rs[0]["csbm"]:
        per = [r["csbm"][h] for r in rs]
        csbm[h] = {
            "edge_homophily": round(
                sum(p["edge_homophily"] for p in per) / len(per), 3
            ),
            **{m: summarize([p[m] for p in per]) for m in METHODS},
        }
    return {"shape": shape, "csbm": csbm}
