"""Datasets and training: every (task, tokenisation, seed) of one encoder and token
level is one member of a stacked :class:`~lib.gsm.models.GSM`, trained at once."""

from __future__ import annotations

import functools
import time

import numpy as np
import torch
from torch.nn import functional as F

from lib.common import check_choice, check_instance, check_int
from lib.common.claims import seed_list

from .graphs import (
    DEGREE_CLASSES,
    FEAT,
    LOCAL_TOKENS,
    NODE_TOKENS,
    TASKS,
    TOKENS,
    make_graph,
    tokenize,
)
from .models import ENCODERS, GSM

#: the local tasks, each run with the same five tokenisations on the hybrid
LOCAL_TASKS = ("degree", "cycle", "triangles")
#: the chapter's grid: (task, encoder, tokenisation)
SPECS = (
    *(
        ("connectivity", e, k)
        for e in ENCODERS
        for k in ("node", "hac_dfs", "node_dfs")
    ),
    ("connectivity", "hybrid", "khop"),
    ("connectivity", "hybrid", "khop_hpe"),
    ("connectivity", "hybrid", "node_nope"),
    ("connectivity", "hybrid", "hac_dfs_nope"),
    ("connectivity", "ssm", "node_cc"),
    *(
        (t, "hybrid", k)
        for t in LOCAL_TASKS
        for k in ("node", "node_gcn", "khop", "hac_bfs", "khop_rewired")
    ),
    ("cycle", "hybrid", "hac_bfs_rewired"),  # cycle check's control rewires both arms
)


def _check_cfg(cfg):
    from . import Config

    check_instance("cfg", cfg, Config, "a lib.gsm.Config")


def _check_specs(name, specs, n_fields=3):
    """A non-empty list of (task, encoder or kind, ...) tuples with known names."""
    if not isinstance(specs, (list, tuple)):
        raise TypeError(
            f"{name}: expected a list of tuples, got {type(specs).__name__}"
        )
    if not specs:
        raise ValueError(f"{name}: expected at least one entry, got {specs!r}")
    for i, sp in enumerate(specs):
        if not isinstance(sp, (list, tuple)) or len(sp) != n_fields:
            raise TypeError(f"{name}[{i}]: expected a tuple of {n_fields}, got {sp!r}")


def make_dataset(task: str, kind: str, cfg, seed: int, n_graphs: int) -> dict:
    """``n_graphs`` graphs of ``task`` (data seed 10 000 + seed; the same graphs for
    every tokenisation) tokenised by ``kind`` and padded to ``cfg.n_max`` nodes.

    Cached: the encoders of the grid that share a tokenisation share its dataset (the
    caller must not modify the tensors)."""
    task, kind = check_choice("task", task, TASKS), check_choice("kind", kind, TOKENS)
    _check_cfg(cfg)
    seed = check_int("seed", seed, 0)
    check_int("n_graphs", n_graphs, 1)
    return _dataset(task, kind, cfg.n_min, cfg.n_max, seed, n_graphs)


@functools.lru_cache(maxsize=256)
def _dataset(task, kind, n_min, n_max, seed, n_graphs) -> dict:
    graphs = _graphs(task, n_min, n_max, seed, n_graphs)
    toks = [  # one stream per graph, the same for every kind (shared PE signs)
        tokenize(g, kind, np.random.default_rng([20_000 + seed, TASKS.index(task), i]))
        for i, g in enumerate(graphs)
    ]
    N = n_max
    sub = kind not in NODE_TOKENS
    L = max(t["x"].shape[1] for t in toks) if sub else 0
    x = np.zeros((n_graphs, N, L, FEAT) if sub else (n_graphs, N, FEAT), np.float32)
    mask = np.zeros(x.shape[:-1], bool)
    node_mask = np.zeros((n_graphs, N), bool)
    # the local encoder's adjacency (token order); all zero: no local encoder
    adj = np.zeros((0 if sub else n_graphs, N, N), np.float32)
    for i, t in enumerate(toks):
        n = len(t["order"])
        if sub:
            x[i, :n, : t["x"].shape[1]] = t["x"]
            mask[i, :n, : t["x"].shape[1]] = t["mask"]
        else:
            x[i, :n], mask[i, :n] = t["x"], True
            if kind in LOCAL_TOKENS:
                adj[i, :n, :n] = t["adj"]
        node_mask[i, :n] = True
    flags = x[:, :, 0, :2] if sub else x[:, :, :2]
    return {
        "x": torch.from_numpy(x),
        "mask": torch.from_numpy(mask),
        "query": torch.from_numpy(flags > 0),
        "node_mask": torch.from_numpy(node_mask),
        "adj": None if sub else torch.from_numpy(adj),
        "y": torch.tensor([g["y"] for g in graphs]),
        "graphs": graphs,
        "orders": [t["order"] for t in toks],
    }


@functools.lru_cache(maxsize=64)
def _graphs(task, n_min, n_max, seed, n_graphs) -> tuple:
    rng = np.random.default_rng([10_000 + seed, TASKS.index(task)])
    return tuple(
        make_graph(task, int(rng.integers(n_min, n_max + 1)), rng)
        for _ in range(n_graphs)
    )


def _stack(sets, key):
    return torch.stack([s[key] for s in sets])


def train_group(encoder, members, cfg, device="cpu", lr=None, parallel=True) -> dict:
    """Train one stacked model: ``members`` is a list of (task, kind, seed) sharing
    the token level. Returns ``{"acc": [test accuracy per member], "pred", "model",
    "seconds"}``."""
    _check_cfg(cfg)
    _check_specs("members", members)
    for i, (t, k, s) in enumerate(members):
        check_choice(f"members[{i}]", t, TASKS)
        check_choice(f"members[{i}]", k, TOKENS)
        check_int(f"members[{i}]", s, 0)
    lr = cfg.lr if lr is None else lr
    M = len(members)
    train = [make_dataset(t, k, cfg, s, cfg.n_train) for t, k, s in members]
    test = [make_dataset(t, k, cfg, s + 500_000, cfg.n_test) for t, k, s in members]
    model = GSM(M, encoder, FEAT, cfg.d, DEGREE_CLASSES, parallel=parallel)
    with torch.no_grad(), torch.random.fork_rng(devices=[]):
        for i, (_, _, s) in enumerate(members):  # member i: initialised from its seed
            torch.manual_seed(s)
            one = GSM(1, encoder, FEAT, cfg.d, DEGREE_CLASSES)
            for p, q in zip(model.parameters(), one.parameters()):
                p[i] = q[0]
    model.to(device)
    xs, ms, qs, nms, ys = (
        _stack(train, k).to(device) for k in ("x", "mask", "query", "node_mask", "y")
    )
    local = any(k in LOCAL_TOKENS for _, k, _ in members)
    adjs = _stack(train, "adj").to(device) if local else None  # (M, n, N, N)
    idx = torch.stack(  # minibatches drawn from each member's seed: paired runs
        [
            torch.randint(
                0,
                cfg.n_train,
                (cfg.steps, cfg.batch),
                generator=torch.Generator().manual_seed(7919 + s),
            )
            for _, _, s in members
        ],
        1,
    )  # (steps, M, batch)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, cfg.steps)
    ar = torch.arange(M)[:, None]
    t0 = time.perf_counter()
    for step in range(cfg.steps):
        i = idx[step].to(device)
        adj = None if adjs is None else adjs[ar, i]
        logits = model(xs[ar, i], ms[ar, i], qs[ar, i], nms[ar, i], adj)  # (M, B, C)
        loss = F.cross_entropy(
            logits.flatten(0, 1), ys[ar, i].flatten(), reduction="sum"
        )
        opt.zero_grad()
        (loss / cfg.batch).backward()
        opt.step()
        sched.step()
    seconds = time.perf_counter() - t0
    pred = predict(model, test, device)
    ty = _stack(test, "y")
    acc = (pred == ty).float().mean(1)
    return {"acc": acc.tolist(), "pred": pred, "model": model, "seconds": seconds}


@torch.no_grad()
def predict(model, sets, device="cpu") -> torch.Tensor:
    """Class predictions of every member on its own dataset, (M, n)."""
    check_instance("model", model, GSM)
    if not isinstance(sets, (list, tuple)) or not all(
        isinstance(s, dict) for s in sets
    ):
        raise TypeError(
            f"sets: expected a list of make_dataset dicts, got {sets!r}"[:200]
        )
    if len(sets) != model.m:
        raise ValueError(
            f"sets: expected {model.m} datasets (one per member), got {len(sets)}"
        )
    model.eval()
    args = [_stack(sets, k).to(device) for k in ("x", "mask", "query", "node_mask")]
    if all(s.get("adj") is not None for s in sets):  # node-level: the local encoder
        args.append(_stack(sets, "adj").to(device))  # (all-zero adj: none, exactly)
    out = model(*args).argmax(-1).cpu()
    model.train()
    return out


def run_grid(cfg, seeds, specs=SPECS, device="cpu", lr=None) -> dict:
    """Test accuracy of every (task, encoder, tokenisation) in ``specs`` on each seed:
    ``{"acc": {"task/encoder/kind": {seed: acc}}, "pred": {... : {seed: [class per
    test graph]}}, "seconds": {group: training time}}``; one stacked training per
    encoder and token level."""
    _check_cfg(cfg)
    seeds = list(seed_list(seeds))
    _check_specs("specs", specs)
    for i, (task, enc, kind) in enumerate(specs):
        check_choice(f"specs[{i}]", task, TASKS)
        check_choice(f"specs[{i}]", enc, ENCODERS)
        check_choice(f"specs[{i}]", kind, TOKENS)
    groups = {}
    for task, enc, kind in specs:
        level = "node" if kind in NODE_TOKENS else "subgraph"
        # the later tasks train in stacks of their own: the stacked matmuls' rounding
        # depends on the stack, so the first two tasks' models stay bit-identical
        stack = "" if task in ("connectivity", "degree") else "/later"
        groups.setdefault((enc, level + stack), []).extend(
            (task, kind, s) for s in seeds
        )
    out, pred, seconds = {}, {}, {}
    for (enc, level), members in groups.items():
        res = train_group(enc, members, cfg, device, lr=lr)
        seconds[f"{enc}/{level}"] = res["seconds"]
        for i, ((task, kind, s), a) in enumerate(zip(members, res["acc"])):
            out.setdefault(f"{task}/{enc}/{kind}", {})[s] = a
            pred.setdefault(f"{task}/{enc}/{kind}", {})[s] = res["pred"][i].tolist()
    return {"acc": out, "pred": pred, "seconds": seconds}


def run_experiment(cfg, device=None) -> dict:
    """The chapter's grid and the MNIST models on ``cfg.claim_seeds`` and the claims'
    per-seed values (the FULL entry point's payload); ``device`` None means the CPU."""
    from .claims import measure_from_grid, measure_images
    from .images import run_images

    _check_cfg(cfg)
    device = "cpu" if device is None else device
    t0 = time.perf_counter()
    grid = run_grid(cfg, cfg.claim_seeds, device=device)
    images = run_images(cfg, cfg.claim_seeds, device=device)
    measured = measure_from_grid(grid["acc"]) | measure_images(images["acc"])
    return {
        "acc": {k: {str(s): v for s, v in d.items()} for k, d in grid["acc"].items()},
        "mnist_acc": {
            k: {str(s): v for s, v in d.items()} for k, d in images["acc"].items()
        },
        "claims": {
            cid: {part: {str(s): v for s, v in d.items()} for part, d in m.items()}
            for cid, m in measured.items()
        },
        "seconds": time.perf_counter() - t0,
    }
