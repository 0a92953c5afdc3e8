"""Self-checks for the local_ect chapter's exercises: ``exercises.ex1(answer)`` says
right, close or wrong (with a hint) without giving the answer away. Every answer is
computed here from the chapter's own functions, on the graphs, seeds and settings the
solutions use (each check takes a few seconds on a CPU; a result is computed once per
session). The checks leave the global random state as they found it."""

from __future__ import annotations

import dataclasses
import functools

import torch

from lib.common import make_generator
from lib.common.exercises import Feedback, check_numbers

from . import NOTEBOOK_SEEDS, SMOKE
from .data import shape_graph, split
from .ect import heights, random_directions, thresholds
from .experiment import evaluate_graph, rotation_trials, shape_graph_of
from .local import ego_masks, local_ect, local_ect_features
from .models import gbdt_accuracy, train_gnn

EX1_METHODS = ("lect", "gbdt_mean", "gbdt_m2", "gin")
EX2_SCALES = (5.0, 50.0, 500.0, None)
EX4_DIRECTIONS = (8, 16, 32)


def _values(name: str, answer, keys: tuple) -> list:
    """``answer`` as a list in the order of ``keys``: a dict with those keys, or a
    sequence already in that order."""
    if isinstance(answer, dict):
        missing = [k for k in keys if k not in answer]
        if missing:
            raise ValueError(f"{name}: expected keys {list(keys)}, missing {missing}")
        return [answer[k] for k in keys]
    if isinstance(answer, (str, bytes)) or not hasattr(answer, "__iter__"):
        raise TypeError(
            f"{name}: expected {len(keys)} numbers in the order {list(keys)} (or a "
            f"dict), got {type(answer).__name__}"
        )
    return list(answer)


def _notebook_graph():
    """The chapter's moment-matched shape graph, directions and thresholds."""
    cfg, s0 = SMOKE, NOTEBOOK_SEEDS[0]
    graph = shape_graph_of(cfg, s0)
    v = random_directions(2, cfg.num_directions, generator=make_generator(s0))
    return graph, v, thresholds(cfg.num_thresholds, cfg.radius)


@functools.lru_cache(maxsize=None)
def _ex1_truth() -> tuple:
    with torch.random.fork_rng():
        g1 = shape_graph(SMOKE.num_centres, 8, 0, generator=make_generator(0))
        acc = evaluate_graph(g1, SMOKE, "cpu", 0, methods=EX1_METHODS)
    return tuple(float(acc[m]) for m in EX1_METHODS)


def ex1(answer) -> Feedback:
    """Exercise local-ect-stars: the accuracies on the leaf-satellite shape graph, as
    the dict ``evaluate_graph`` returns or four numbers in the order ℓ-ECT, mean
    aggregator, mean/std aggregator, GIN (right within 0.02 each)."""
    return check_numbers(
        "local_ect ex1",
        _values("answer", answer, EX1_METHODS),
        _ex1_truth(),
        atol=0.02,
        rtol=0.0,
        close=0.1,
        hint="le.shape_graph(cfg.num_centres, 8, 0, generator=make_generator(0)), "
        "then evaluate_graph with seed 0",
    )


@functools.lru_cache(maxsize=None)
def _ex2_truth() -> tuple:
    graph, v, t = _notebook_graph()
    train, test = split(graph.labelled, generator=make_generator(0))
    out = []
    for et in ("points", "edges"):
        for s in EX2_SCALES:
            f = local_ect_features(
                graph.x,
                graph.edge_index,
                v,
                t,
                nodes=graph.labelled,
                scale=s,
                ect_type=et,
            )
            out.append(gbdt_accuracy(f, graph.y, train, test, seed=0, max_bins=64))
    return tuple(out)


def ex2(points, edges) -> Feedback:
    """Exercise local-ect-edges: the GBDT accuracies of the ``points`` and ``edges``
    ℓ-ECT at scales 5, 50, 500 and exact (four numbers each, in that order; right within
    0.02 each)."""
    got = _values("points", points, EX2_SCALES) + _values("edges", edges, EX2_SCALES)
    return check_numbers(
        "local_ect ex2",
        got,
        _ex2_truth(),
        atol=0.02,
        rtol=0.0,
        close=0.2,
        hint="entries 0-3 are points, 4-7 edges; one split (seed 0) and the notebook's "
        "directions for all eight",
    )


def _as_vector(x, n: int) -> torch.Tensor | None:
    try:
        out = torch.as_tensor(x, dtype=torch.float64).flatten()
    except (TypeError, ValueError, RuntimeError):
        return None
    return out if out.numel() == n else None


def ex3(ecdf, centres: int = 6) -> Feedback:
    """Exercise local-ect-cdf, as a function: ``ecdf(h, t)`` returns the empirical
    distribution function of the heights ``h`` (1-D tensor) at the thresholds ``t``
    (1-D tensor). It is compared with the max-normalised ``points`` ℓ-ECT columns of
    ``centres`` nodes of the chapter's shape graph (1 and 2 hops, every direction)."""
    if not callable(ecdf):
        raise TypeError(
            f"ecdf: expected a function ecdf(h, t), got {type(ecdf).__name__}"
        )
    graph, v, t = _notebook_graph()
    nodes = graph.labelled[:centres]
    h = heights(graph.x.double(), v.double())  # (n, K)
    bad = 0
    for k in (1, 2):
        img = local_ect(graph.x, graph.edge_index, k, v, t, nodes=nodes)  # (B, T, K)
        masks = ego_masks(graph.edge_index, graph.num_nodes, k, nodes=nodes).to_dense()
        for b in range(len(nodes)):
            members = masks[b] > 0
            for j in range(v.shape[1]):
                try:
                    got = _as_vector(ecdf(h[members, j], t.double()), t.numel())
                except Exception as err:  # the reader's function: report it
                    return Feedback(
                        "local_ect ex3",
                        "wrong",
                        f"your function raised {type(err).__name__}: {err}",
                    )
                if got is None:
                    return Feedback(
                        "local_ect ex3",
                        "wrong",
                        f"expected {t.numel()} values, one per threshold",
                    )
                bad += int(not torch.allclose(got, img[b, :, j].double(), atol=1e-5))
    if bad == 0:
        return Feedback("local_ect ex3", "right")
    return Feedback(
        "local_ect ex3",
        "wrong",
        f"{bad} of {2 * len(nodes) * v.shape[1]} columns differ; the share of heights "
        "<= t, not a count",
    )


@functools.lru_cache(maxsize=None)
def _ex4_truth() -> tuple:
    out = {"smooth": [], "exact": []}
    for K in EX4_DIRECTIONS:
        c = dataclasses.replace(SMOKE, rot_directions=K)
        for form, s in (("smooth", -1.0), ("exact", None)):
            r = rotation_trials(c, "cpu", scale=s)
            out[form].append(float((r["error"] / r["bound"]).max()))
    return tuple(out["smooth"] + out["exact"])


def ex4(smooth, exact) -> Feedback:
    """Exercise local-ect-rotation: the maximum error in units of π/K for K = 8, 16, 32
    (three numbers each) with the preset's smooth scale and with the exact ECT (right
    within 0.006 each)."""
    got = _values("smooth", smooth, EX4_DIRECTIONS) + _values(
        "exact", exact, EX4_DIRECTIONS
    )
    return check_numbers(
        "local_ect ex4",
        got,
        _ex4_truth(),
        atol=0.006,
        rtol=0.0,
        close=0.1,
        hint="entries 0-2 smooth, 3-5 exact; divide the maximum error by the bound π/K",
    )


@functools.lru_cache(maxsize=None)
def _ex5_truth() -> tuple:
    graph, _, _ = _notebook_graph()
    train, test = split(graph.labelled, generator=make_generator(0))
    y = graph.y.clamp(min=0)
    out = []
    with torch.random.fork_rng():
        for nodes in (train, test):
            torch.manual_seed(0)
            out.append(
                train_gnn(
                    "gin",
                    graph.x,
                    graph.edge_index,
                    y,
                    train,
                    nodes,
                    epochs=400,
                    dropout=0.0,
                )
            )
    return tuple(out)


def ex5(train_acc, test_acc) -> Feedback:
    """Exercise local-ect-gin: GIN's accuracy on the training and on the test centres
    after 400 epochs without dropout (right within 0.02 each)."""
    return check_numbers(
        "local_ect ex5",
        [train_acc, test_acc],
        _ex5_truth(),
        atol=0.02,
        rtol=0.0,
        close=0.2,
        hint="seed torch with 0 before each run; the same 100 training centres",
    )


__all__ = ["ex1", "ex2", "ex3", "ex4", "ex5"]
