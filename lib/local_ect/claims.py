"""The paper's claims as rules that can fail, measured on several seeds with a negative
control each.

One seed draws one moment-matched shape graph (:func:`.data.moment_graph`), one cSBM
per homophily level and one planar point cloud with ``cfg.rot_trials`` random
rotations; every method runs on the same graphs and splits, so comparisons are paired.

Claims and their controls:

- ``shape``: on the moment-matched shape classes, GBDT on the ℓ-ECT beats the best of
  the four moment aggregators and the paper's four GNNs (GBDT on x, on x + means, on x +
  mean/std, on x + moments up to order 4, GCN, GAT, GIN, H2GCN) by ≥ 0.10 accuracy.
  The moment aggregators see inputs that are equal in the two classes by design, so
  this is a test of the paper's argument against aggregation, not of the ℓ-ECT against
  every feature one could hand-make. Control: the same ℓ-ECT pipeline on the graph with
  the satellites' features permuted across all satellites, so that a centre's
  neighbourhood no longer carries its class.
- ``shape-hist``: the ℓ-ECT is at least as accurate as GBDT on x and a 16-bin histogram
  of the 1-hop neighbours' distances to their mean, a feature made for this task (it
  knows the classes are rings about a common point). Added after an outside referee
  measured 0.99–1.00 with it against 0.76–0.86 for the ℓ-ECT; on the tuning seeds 0 and
  1 it reached 0.96 and 0.99 against the ℓ-ECT's 0.71 and 0.78, so it is expected not
  reproduced.
  Control: as for ``shape``.
- ``heterophily``, ``heterophily-gnn``: on the two-class cSBM at edge homophily 0.1 the
  ℓ-ECT is at least as accurate as the best baseline (all eight; only the paper's four
  GNNs). Control: GBDT on x alone in place of the ℓ-ECT features. The two rows coincide
  whenever a GNN is the strongest baseline (H2GCN, on every seed so far).
- ``rotation``, ``rotation-500``, ``rotation-exact``: over ``cfg.rot_trials`` random
  angles the best cyclic shift is the grid shift nearest to the true angle (so the
  error is within π/K) on every angle: statistic, the share of angles where the
  nearest shift wins; rule, share ≥ 1 (all angles). Forms: the sigmoid ECT at scale 20,
  at the paper's scale 500, and the exact ECT. Control: K random directions instead of
  K evenly spaced ones (a cyclic shift of the direction axis is then no rotation); it
  is a sanity check of the pipeline rather than a test of the method's key ingredient.

How the settings were chosen. The rules were written before any run on the notebook or
held-out seeds: a 0.10 margin (a gain the paper's theory predicts to be large; its
tables' gains over GNNs are 0.05–0.3 on the heterophilous sets), "at least as accurate"
for heterophily and for the hand-made feature (the paper's wording: better than the
GNNs there), and the π/K bound of a nearest-grid-angle estimate, on every angle. The
shape task's parameters (18 satellites on 2 or 3 rings, shift 0.1, leaf satellites)
and the GNN width (64, the official code's) were set on :data:`TUNING_SEEDS` 0–1; at
shift 0.01 the ℓ-ECT reached 1.0 there and every baseline stayed at chance, so the
harder shift 0.1 was kept. GNN epochs (100) and the sizes are fixed by the CPU budget,
not by results.

The rotation scale 20 is not the paper's: the chapter's first commit set it without a
record of why, after the exact form had exceeded the bound, so it is a choice made
after seeing a failure. ``rotation-500`` therefore tests the paper's scale with the
same rule. The first version judged the maximum error over the angles, in units of
π/K, against ≤ 1; that statistic sits on the bound by construction (the largest
sawtooth error over 500 angles is 1 − O(1/500)), so its interval crossed 1 whatever the
method did. After the referee's report it was replaced by the share of angles where
the nearest shift wins, with the same strictness (every angle), and the expectations
were set from the tuning seeds before re-running: shares 1.000 and 1.000 at scale 20
(reproduced), 1.000 and 0.988 at scale 500, 1.000 and 0.984 exact (the rule fails on
the mean: not reproduced).
"""

from __future__ import annotations

import math

import torch

from lib.common import check_int, make_generator
from lib.common.claims import Claim, Rule, judge_all, mean_values, seed_list

from .data import Graph
from .ect import random_directions, thresholds
from .experiment import (
    BASELINES,
    HAND_MADE,
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
        "the ℓ-ECT keeps neighbourhood shape that moment aggregators and the paper's "
        "GNNs lose",
        paper="ℓ-ECT lossless (ECT invertible); mean aggregation is not",
        where="abstract; §3 (theory)",
        statistic="accuracy: ℓ-ECT − best of GBDT on x, 3 moment aggregators and 4 "
        "GNNs, shape classes with equal moments ≤ 5",
        rule=Rule.at_least(0.10),
        control="satellites' features permuted across centres",
        fmt=".3f",
    ),
    Claim(
        "shape-hist",
        "the ℓ-ECT is at least as accurate as a hand-made feature for the same task",
        paper="ℓ-ECT lossless (ECT invertible)",
        where="abstract; §3 (theory)",
        statistic="accuracy: ℓ-ECT − GBDT on x + 16-bin histogram of 1-hop distances "
        "to their mean, shape classes",
        rule=Rule.at_least(0.0),
        control="satellites' features permuted across centres",
        expect="not reproduced",
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
        statistic="share of 500 angles where the nearest grid shift wins, K = 64, "
        "scale 20 (the chapter's choice, not the paper's)",
        rule=Rule.at_least(1.0),
        control="K random directions instead of evenly spaced ones (a sanity check)",
        fmt=".3f",
    ),
    Claim(
        "rotation-500",
        "the same at the paper's sigmoid scale 500",
        paper="d(G, H) = min_R ‖ECT(G) − ECT(RH)‖ aligns embedded data",
        where="§ rotation-invariant metric; scale 500 in the official code",
        statistic="share of 500 angles where the nearest grid shift wins, K = 64, "
        "scale 500",
        rule=Rule.at_least(1.0),
        control="K random directions instead of evenly spaced ones (a sanity check)",
        expect="not reproduced",
        fmt=".3f",
    ),
    Claim(
        "rotation-exact",
        "the same with the exact (integer) ECT",
        paper="d(G, H) = min_R ‖ECT(G) − ECT(RH)‖ aligns embedded data",
        where="§ rotation-invariant metric",
        statistic="share of 500 angles where the nearest grid shift wins, K = 64, "
        "exact ECT",
        rule=Rule.at_least(1.0),
        control="K random directions instead of evenly spaced ones (a sanity check)",
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

#: the rotation claims' ECT forms: (key, sigmoid scale; -1: cfg.rot_scale, "paper":
#: cfg.scale, None: exact)
_ROT_FORMS = (("smooth", -1.0), ("paper", "paper"), ("exact", None))


def _nearest_share(r: dict, K: int) -> float:
    """Share of the angles of :func:`rotation_trials` whose recovered grid shift is the
    nearest one to the true angle (then, and only then, the error is at most π/K)."""
    step = 2 * math.pi / K
    near = torch.round(r["alpha"] / step).long() % K
    chosen = torch.round(r["estimate"] / step).long() % K
    return float((near == chosen).double().mean())


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
    "edge_homophily": h_measured}}, "rotation": {form: share of angles where the nearest
    shift wins, form_max: max error / (π/K), form_within: share within π/K,
    form_control: the share with random directions}}}`` for the forms ``smooth``
    (``cfg.rot_scale``), ``paper`` (``cfg.scale``) and ``exact``.
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
        for form, scale in _ROT_FORMS:
            scale = cfg.scale if scale == "paper" else scale
            for dirs in ("circle", "random"):
                r = rotation_trials(cfg, device, s, scale, directions=dirs)
                share = _nearest_share(r, cfg.rot_directions)
                if dirs == "random":
                    rot[f"{form}_control"] = share
                    continue
                rot[form] = share
                rot[f"{form}_max"] = float(r["error"].max() / r["bound"])
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
        out["shape-hist"]["values"][s] = sh["lect"] - sh[HAND_MADE]
        out["shape-hist"]["control"][s] = r["shape_control"] - sh[HAND_MADE]
        low = r["csbm"][HETEROPHILY]
        for cid, against in (
            ("heterophily", BASELINES),
            ("heterophily-gnn", PAPER_GNNS),
        ):
            out[cid]["values"][s] = _gap(low, against)
            out[cid]["control"][s] = _gap(low, against, key="gbdt_x")
        for cid, form in (
            ("rotation", "smooth"),
            ("rotation-500", "paper"),
            ("rotation-exact", "exact"),
        ):
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
