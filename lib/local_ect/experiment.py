"""The chapter's experiments: node classification on generated graphs and the rotation
demo."""

from __future__ import annotations

import math
import statistics

import torch

from lib.common import (
    check_int,
    check_numbers,
    check_probability,
    device as pick_device,
    make_generator,
)
from .data import Graph, csbm, edge_homophily, moment_graph, split
from .ect import (
    circle_directions,
    ect,
    random_directions,
    rotation_distance_2d,
    thresholds,
)
from .local import ego_mean, ego_moments, ego_pairs, local_ect_features
from .models import GNN_KINDS, gbdt_accuracy, train_gnn

__all__ = [
    "METHODS",
    "evaluate_graph",
    "BASELINES",
    "HAND_MADE",
    "PAPER_GNNS",
    "shape_seed",
    "csbm_seed",
    "run_shape",
    "run_csbm",
    "rotation_trials",
    "run_rotation",
    "run_experiment",
    "summarize",
]

#: method key -> label used in tables and figures (the paper's method first)
METHODS = {
    "lect": "ℓ-ECT₁,₂ + x (GBDT)",
    "gbdt_x": "x only (GBDT)",
    "gbdt_mean": "x + 1/2-hop means (GBDT)",
    "gbdt_m2": "x + 1/2-hop mean, std (GBDT)",
    "gbdt_m4": "x + 1/2-hop moments ≤ 4 (GBDT)",
    "gbdt_hist": "x + 1-hop distance histogram (GBDT)",
    "gcn": "GCN",
    "gat": "GAT",
    "gin": "GIN",
    "h2gcn": "H2GCN",
}
#: the hand-made feature for the shape task: a histogram of the 1-hop neighbours'
#: distances to their mean (it knows that the classes are rings about a common centre)
HAND_MADE = "gbdt_hist"
#: the moment aggregators and GNNs of the ``shape`` and heterophily claims
BASELINES = tuple(m for m in METHODS if m not in ("lect", HAND_MADE))
#: the paper's message-passing baselines
PAPER_GNNS = ("gcn", "gat", "gin", "h2gcn")


def _check_cfg(cfg):
    from . import Config

    if not isinstance(cfg, Config):
        raise TypeError(
            f"cfg: expected a lib.local_ect.Config (e.g. SMOKE or FULL), got "
            f"{type(cfg).__name__}"
        )
    return cfg


def _check_methods(methods) -> None:
    if isinstance(methods, (str, bytes)) or not isinstance(methods, (list, tuple)):
        raise TypeError(
            f"methods: expected a tuple of method keys from {tuple(METHODS)}, got "
            f"{type(methods).__name__}"
        )
    if not methods:
        raise ValueError(
            f"methods: expected at least one of {tuple(METHODS)}, got none"
        )
    unknown = [m for m in methods if m not in METHODS]
    if unknown:
        raise ValueError(
            f"methods: expected keys from {tuple(METHODS)}, got unknown {unknown}"
        )


def summarize(values: list[float]) -> dict:
    """Mean, (sample) standard deviation and the runs, rounded for stable display."""
    check_numbers("values", values)
    mean = statistics.fmean(values)
    std = statistics.stdev(values) if len(values) > 1 else 0.0
    return {
        "mean": round(mean, 4),
        "std": round(std, 4),
        "runs": [round(v, 4) for v in values],
    }


def _distance_histogram(graph: Graph, nodes: torch.Tensor, bins: int = 16):
    """(m, bins) share of each node's 1-hop ego graph (itself included) whose feature
    lies at a distance in [j/bins, (j+1)/bins) of the ego graph's mean feature (the
    last bin takes every distance ≥ 1)."""
    pos, mem = ego_pairs(graph.edge_index, graph.num_nodes, 1, nodes=nodes)
    m, d = nodes.numel(), graph.x.shape[1]
    x = graph.x[mem]  # (P, d)
    size = torch.bincount(pos, minlength=m).to(x.dtype).unsqueeze(1)  # (m, 1)
    mean = torch.zeros(m, d, dtype=x.dtype, device=x.device).index_add_(0, pos, x)
    r = (x - (mean / size)[pos]).norm(dim=1)  # (P,)
    b = (r * bins).long().clamp(max=bins - 1)
    hist = torch.zeros(m, bins, dtype=x.dtype, device=x.device)
    hist.index_put_((pos, b), torch.ones_like(r), accumulate=True)
    return hist / size


def evaluate_graph(
    graph: Graph, cfg, device, seed: int, methods=tuple(METHODS)
) -> dict:
    """Accuracy of every method on one graph and one random split (labelled nodes are
    0..m-1)."""
    if not isinstance(graph, Graph):
        raise TypeError(f"graph: expected a Graph, got {type(graph).__name__}")
    _check_cfg(cfg)
    check_int("seed", seed, 0)
    _check_methods(methods)
    g = make_generator(seed)
    graph = graph.to(device)
    train, test = split(graph.labelled.cpu(), cfg.train_fraction, generator=g)
    train, test = train.to(device), test.to(device)
    v = random_directions(
        graph.x.shape[1], cfg.num_directions, generator=g, device=device
    )  # (d, K)
    t = thresholds(cfg.num_thresholds, cfg.radius, device=device)  # (T,)
    nodes, y = graph.labelled, graph.y
    out = {}
    if "lect" in methods:
        feats = local_ect_features(
            graph.x, graph.edge_index, v, t, hops=(1, 2), nodes=nodes, scale=cfg.scale
        )
        out["lect"] = gbdt_accuracy(
            feats,
            y,
            train,
            test,
            seed=seed,
            max_iter=cfg.gbdt_iter,
            max_bins=cfg.gbdt_bins,
        )
    if "gbdt_x" in methods:
        out["gbdt_x"] = gbdt_accuracy(
            graph.x[nodes],
            y,
            train,
            test,
            seed=seed,
            max_iter=cfg.gbdt_iter,
            max_bins=cfg.gbdt_bins,
        )
    if "gbdt_mean" in methods:
        means = [ego_mean(graph.x, graph.edge_index, k, nodes=nodes) for k in (1, 2)]
        feats = torch.cat([graph.x[nodes]] + means, dim=1)  # (m, 3d)
        out["gbdt_mean"] = gbdt_accuracy(
            feats,
            y,
            train,
            test,
            seed=seed,
            max_iter=cfg.gbdt_iter,
            max_bins=cfg.gbdt_bins,
        )
    for key, order in (("gbdt_m2", 2), ("gbdt_m4", cfg.moment_order)):
        if key in methods:  # moments of the projections on the ℓ-ECT's directions
            mom = [
                ego_moments(graph.x, graph.edge_index, k, v, order, nodes=nodes)
                for k in (1, 2)
            ]
            feats = torch.cat([graph.x[nodes]] + mom, dim=1)  # (m, d + 2·order·K)
            out[key] = gbdt_accuracy(
                feats,
                y,
                train,
                test,
                seed=seed,
                max_iter=cfg.gbdt_iter,
                max_bins=cfg.gbdt_bins,
            )
    if HAND_MADE in methods:
        feats = torch.cat([graph.x[nodes], _distance_histogram(graph, nodes)], dim=1)
        out[HAND_MADE] = gbdt_accuracy(
            feats,
            y,
            train,
            test,
            seed=seed,
            max_iter=cfg.gbdt_iter,
            max_bins=cfg.gbdt_bins,
        )
    for kind in GNN_KINDS:
        if kind in methods:
            torch.manual_seed(seed)
            out[kind] = train_gnn(
                kind,
                graph.x,
                graph.edge_index,
                y.clamp(min=0),
                train,
                test,
                hidden=cfg.gnn_hidden,
                epochs=cfg.gnn_epochs,
                lr=cfg.gnn_lr,
            )
    return out


def _collect(per_seed: list[dict]) -> dict:
    return {m: summarize([r[m] for r in per_seed]) for m in per_seed[0]}


def shape_graph_of(cfg, seed: int) -> Graph:
    """The moment-matched shape graph of one seed (:func:`moment_graph`)."""
    _check_cfg(cfg)
    check_int("seed", seed, 0)
    return moment_graph(
        cfg.num_centres,
        cfg.noise_degree,
        shift=cfg.shift,
        generator=make_generator(seed),
    )


def shape_seed(cfg, seed: int, device, methods=tuple(METHODS)) -> dict:
    """Accuracy of every method on the moment-matched shape graph of one seed."""
    _check_cfg(cfg)
    check_int("seed", seed, 0)
    return evaluate_graph(shape_graph_of(cfg, seed), cfg, device, seed, methods)


def csbm_seed(cfg, h: float, seed: int, device, methods=tuple(METHODS)) -> dict:
    """Accuracy of every method on the cSBM of homophily ``h`` and one seed, with the
    measured edge homophily under ``"edge_homophily"``."""
    _check_cfg(cfg)
    check_probability("h", h)
    check_int("seed", seed, 0)
    graph = csbm(
        cfg.csbm_nodes,
        h,
        cfg.csbm_degree,
        cfg.csbm_dim,
        cfg.csbm_signal,
        generator=make_generator(seed),
    )
    out = evaluate_graph(graph, cfg, device, seed, methods)
    out["edge_homophily"] = edge_homophily(graph.edge_index, graph.y)
    return out


def _seeds(cfg, seeds):
    if seeds is None:
        return [cfg.seed + i for i in range(cfg.num_seeds)]
    from lib.common.claims import seed_list

    return list(seed_list(seeds))


def run_shape(cfg, device, methods=tuple(METHODS), seeds=None) -> dict:
    """Moment-matched shape classes (:func:`moment_graph`) on ``seeds`` (default:
    ``cfg.num_seeds`` seeds from ``cfg.seed``): mean ± std per method."""
    _check_cfg(cfg)
    _check_methods(methods)
    return _collect([shape_seed(cfg, s, device, methods) for s in _seeds(cfg, seeds)])


def run_csbm(cfg, device, methods=tuple(METHODS), seeds=None) -> dict:
    """Contextual SBMs over ``cfg.homophily``; keys are the homophily levels as
    strings."""
    _check_cfg(cfg)
    _check_methods(methods)
    out = {}
    for h in cfg.homophily:
        runs = [csbm_seed(cfg, h, s, device, methods) for s in _seeds(cfg, seeds)]
        measured = [r.pop("edge_homophily") for r in runs]
        out[f"{h:g}"] = {
            "edge_homophily": round(statistics.fmean(measured), 3),
            **_collect(runs),
        }
    return out


def rotation_trials(
    cfg,
    device,
    seed: int | None = None,
    scale: float | None = -1.0,
    *,
    directions: str = "circle",
    chunk: int = 50,
) -> dict:
    """Rotate one planar point cloud (drawn from ``seed``) by ``cfg.rot_trials`` random
    angles α and recover α as the best cyclic shift of the ECT's direction axis, eq.
    (2). ``scale``: the ECT's sigmoid scale (default ``cfg.rot_scale``; ``None``: the
    exact ECT). ``directions="random"`` is the negative control: K random unit
    directions instead of K evenly spaced ones, so that a cyclic shift of the direction
    axis is no rotation. The rotated copies are computed ``chunk`` at a time. Returns
    the cloud, the true and recovered angles, the errors and the bound π/K."""
    _check_cfg(cfg)
    if seed is not None:
        check_int("seed", seed, 0)
    if scale is not None and scale != -1.0:
        from .ect import _check_scale

        _check_scale(scale)
    if directions not in ("circle", "random"):
        raise ValueError(
            f"directions: expected 'circle' or 'random', got {directions!r}"
        )
    chunk = check_int("chunk", chunk, 1)
    scale = cfg.rot_scale if scale == -1.0 else scale
    g = make_generator(cfg.seed if seed is None else seed)
    n = cfg.rot_points
    # an asymmetric cloud: three anisotropic blobs of different sizes, centred, inside
    # the unit disc
    centres = torch.tensor([[0.5, 0.1], [-0.3, 0.4], [-0.2, -0.45]])
    sizes = torch.tensor([0.5, 0.3, 0.2])
    which = torch.multinomial(sizes, n, replacement=True, generator=g)
    pts = centres[which] + torch.randn(n, 2, generator=g) * torch.tensor([0.18, 0.07])
    pts = pts - pts.mean(dim=0)
    pts = pts / pts.norm(dim=1).max()  # (n, 2)
    R = cfg.rot_trials
    alpha = 2 * math.pi * torch.rand(R, generator=g, dtype=torch.float64)  # (R,)
    rot = torch.stack(
        [
            torch.stack([alpha.cos(), -alpha.sin()], -1),
            torch.stack([alpha.sin(), alpha.cos()], -1),
        ],
        -2,
    ).float()  # (R, 2, 2)
    K, T = cfg.rot_directions, cfg.rot_thresholds
    if directions == "circle":
        v = circle_directions(K, device=device)  # (2, K) evenly spaced
    else:
        v = random_directions(2, K, generator=g, device=device)
    t = thresholds(T, cfg.radius, device=device)
    e_orig = ect(pts.to(device), v, t, scale=scale)  # (1, T, K)
    est = []
    for lo in range(0, R, chunk):
        r = rot[lo : lo + chunk]
        b = r.shape[0]
        moved = torch.einsum("rij,nj->rni", r, pts).reshape(-1, 2)  # (b·n, 2)
        batch = torch.arange(b, device=device).repeat_interleave(n)
        e_moved = ect(
            moved.to(device), v, t, batch=batch, num_graphs=b, scale=scale
        )  # (b, T, K)
        est.append(rotation_distance_2d(e_moved, e_orig.expand_as(e_moved))[1])
    est = torch.cat(est).double().cpu()
    err = (est - alpha + math.pi) % (2 * math.pi) - math.pi  # wrapped to [-π, π)
    return {
        "points": pts,
        "alpha": alpha,
        "estimate": est,
        "error": err.abs(),
        "bound": math.pi / K,
    }


def run_rotation(cfg, device) -> dict:
    """Summary of :func:`rotation_trials` for the results table."""
    _check_cfg(cfg)
    r = rotation_trials(cfg, device)
    exact = rotation_trials(cfg, device, scale=None)
    return {
        "directions": cfg.rot_directions,
        "trials": cfg.rot_trials,
        "bound": round(r["bound"], 5),
        "max_error": round(float(r["error"].max()), 5),
        "mean_error": round(float(r["error"].mean()), 5),
        "within_bound": round(float((r["error"] <= r["bound"]).double().mean()), 4),
        "max_error_exact": round(float(exact["error"].max()), 5),
        "within_bound_exact": round(
            float((exact["error"] <= exact["bound"]).double().mean()), 4
        ),
    }


def run_experiment(cfg, device=None) -> dict:
    """The chapter's main results (same keys at every preset): accuracies (mean ± std
    over seeds) on shape-defined classes and on cSBMs over homophily, and the
    rotation-recovery error. ``device`` defaults to :func:`lib.common.device`."""
    _check_cfg(cfg)
    device = pick_device() if device is None else torch.device(device)
    return {
        "shape": run_shape(cfg, device),
        "csbm": run_csbm(cfg, device),
        "rotation": run_rotation(cfg, device),
    }
