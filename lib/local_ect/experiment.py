"""The chapter's experiments: node classification on generated graphs and the rotation
demo."""

from __future__ import annotations

import math
import statistics

import torch

from lib.common import check_int, check_numbers, device as pick_device, make_generator
from .data import Graph, csbm, edge_homophily, shape_graph, split
from .ect import (
    circle_directions,
    ect,
    random_directions,
    rotation_distance_2d,
    thresholds,
)
from .local import ego_mean, local_ect_features
from .models import gbdt_accuracy, train_gnn

__all__ = [
    "METHODS",
    "evaluate_graph",
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
    "gcn": "GCN (2 layers)",
    "gat": "GAT (2 layers)",
}


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
            feats, y, train, test, seed=seed, max_iter=cfg.gbdt_iter
        )
    if "gbdt_x" in methods:
        out["gbdt_x"] = gbdt_accuracy(
            graph.x[nodes], y, train, test, seed=seed, max_iter=cfg.gbdt_iter
        )
    if "gbdt_mean" in methods:
        means = [ego_mean(graph.x, graph.edge_index, k, nodes=nodes) for k in (1, 2)]
        feats = torch.cat([graph.x[nodes]] + means, dim=1)  # (m, 3d)
        out["gbdt_mean"] = gbdt_accuracy(
            feats, y, train, test, seed=seed, max_iter=cfg.gbdt_iter
        )
    for kind in ("gcn", "gat"):
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


def run_shape(cfg, device, methods=tuple(METHODS)) -> dict:
    """Shape-defined classes (ring vs cluster, equal means), ``cfg.num_seeds`` seeds."""
    _check_cfg(cfg)
    _check_methods(methods)
    runs = []
    for i in range(cfg.num_seeds):
        seed = cfg.seed + i
        graph = shape_graph(
            cfg.num_centres,
            cfg.num_satellites,
            cfg.noise_degree,
            generator=make_generator(seed),
        )
        runs.append(evaluate_graph(graph, cfg, device, seed, methods))
    return _collect(runs)


def run_csbm(cfg, device, methods=tuple(METHODS)) -> dict:
    """Contextual SBMs over ``cfg.homophily``; keys are the homophily levels as
    strings."""
    _check_cfg(cfg)
    _check_methods(methods)
    out = {}
    for h in cfg.homophily:
        runs, measured = [], []
        for i in range(cfg.num_seeds):
            seed = cfg.seed + i
            graph = csbm(
                cfg.csbm_nodes,
                h,
                cfg.csbm_degree,
                cfg.csbm_dim,
                cfg.csbm_signal,
                generator=make_generator(seed),
            )
            measured.append(edge_homophily(graph.edge_index, graph.y))
            runs.append(evaluate_graph(graph, cfg, device, seed, methods))
        out[f"{h:g}"] = {
            "edge_homophily": round(statistics.fmean(measured), 3),
            **_collect(runs),
        }
    return out


def rotation_trials(
    cfg, device, seed: int | None = None, scale: float | None = -1.0
) -> dict:
    """Rotate one planar point cloud by random angles α and recover α as the best cyclic
    shift of the ECT's direction axis, eq. (2). ``scale``: the ECT's sigmoid scale
    (default ``cfg.rot_scale``; ``None``: the exact ECT). Returns the true and recovered
    angles and the errors."""
    _check_cfg(cfg)
    if seed is not None:
        check_int("seed", seed, 0)
    if scale is not None and scale != -1.0:
        from .ect import _check_scale

        _check_scale(scale)
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
    alpha = (
        2 * math.pi * torch.rand(cfg.rot_trials, generator=g, dtype=torch.float64)
    )  # (R,)
    rot = torch.stack(
        [
            torch.stack([alpha.cos(), -alpha.sin()], -1),
            torch.stack([alpha.sin(), alpha.cos()], -1),
        ],
        -2,
    ).float()  # (R, 2, 2)
    moved = torch.einsum("rij,nj->rni", rot, pts).reshape(-1, 2)  # (R·n, 2)
    K, T = cfg.rot_directions, cfg.rot_thresholds
    v = circle_directions(K, device=device)  # (2, K) evenly spaced
    t = thresholds(T, cfg.radius, device=device)
    batch = torch.arange(cfg.rot_trials, device=device).repeat_interleave(n)
    e_moved = ect(
        moved.to(device), v, t, batch=batch, num_graphs=cfg.rot_trials, scale=scale
    )  # (R, T, K)
    e_orig = ect(pts.to(device), v, t, scale=scale)  # (1, T, K)
    _, est = rotation_distance_2d(e_moved, e_orig.expand_as(e_moved))
    est = est.double().cpu()
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
