"""Contextual stochastic block models with informative heterophily, and the three
distribution shifts of the chapter.

A :class:`Graph` holds node features ``x`` (n, d), labels ``y`` (n,) and an
undirected ``edge_index`` (2, E) with both directions stored. Class ``c``'s feature
mean is a random Gaussian vector; an edge leaves a random node ``u`` and lands, with
probability ``homophily``, on a node of ``u``'s class, else on a node of class
``y_u + 1 (mod C)`` (informative heterophily: the neighbours' classes still say which
class ``u`` is), or, with probability ``1 − informative`` among the heterophilous
edges, on a node of any other class.
"""

from __future__ import annotations

import dataclasses
import math

import torch

from lib.common import (
    check_generator,
    check_int,
    check_positive,
    check_probability,
    check_tensor,
)


@dataclasses.dataclass
class Graph:
    """Node features ``x`` (n, d), labels ``y`` (n,), edges ``edge_index`` (2, E)."""

    x: torch.Tensor
    y: torch.Tensor
    edge_index: torch.Tensor

    def __post_init__(self):
        check_tensor("x", self.x, ndim=2, floating=True, nonempty=True, finite=True)
        n = self.x.shape[0]
        check_tensor("y", self.y, shape=(n,), integer=True)
        check_tensor("edge_index", self.edge_index, ndim=2, integer=True)
        if self.edge_index.shape[0] != 2:
            raise ValueError(
                f"edge_index: expected shape (2, E), got {tuple(self.edge_index.shape)}"
            )
        if self.edge_index.numel() and (
            int(self.edge_index.min()) < 0 or int(self.edge_index.max()) >= n
        ):
            raise ValueError(f"edge_index: expected node ids in [0, {n}), got others")
        if bool((self.y < 0).any()):
            raise ValueError("y: expected labels >= 0, got a negative one")

    @property
    def num_nodes(self) -> int:
        return self.x.shape[0]

    def to(self, device) -> "Graph":
        return Graph(self.x.to(device), self.y.to(device), self.edge_index.to(device))


def _coalesce(e: torch.Tensor, n: int) -> torch.Tensor:
    key = torch.unique(e[0] * n + e[1])  # sorted, duplicates removed
    return torch.stack([key // n, key % n])


def csbm(
    num_nodes: int,
    num_classes: int = 5,
    dim: int = 16,
    degree: float = 10.0,
    homophily: float = 0.5,
    informative: float = 1.0,
    signal: float = 1.0,
    *,
    generator: torch.Generator | None = None,
    device=None,
) -> Graph:
    """A C-class contextual SBM with expected degree ``degree`` and edge homophily
    ``homophily``.

    Features x_u = μ_{y_u} + ε_u with μ_c ~ N(0, ``signal``² I_d / d) (so ‖μ_c‖ ≈
    ``signal``) and ε_u ~ N(0, I_d / d) (noise of norm ≈ 1). The number of nodes is
    rounded down to a multiple of C (balanced classes). A
    heterophilous edge goes to class y_u + 1 (mod C) with probability ``informative``,
    else to a uniformly drawn other class.
    """
    n = check_int("num_nodes", num_nodes, minimum=4)
    C = check_int("num_classes", num_classes, minimum=2)
    if n < 2 * C:
        raise ValueError(
            f"num_nodes: expected at least 2·num_classes = {2 * C}, got {n}"
        )
    d = check_int("dim", dim, minimum=1)
    degree = check_positive("degree", degree)
    h = check_probability("homophily", homophily)
    inf = check_probability("informative", informative)
    signal = check_positive("signal", signal)
    g = check_generator("generator", generator)
    per = n // C
    n = per * C  # balanced classes
    y = torch.arange(n) % C  # (n,)
    mu = torch.randn(C, d, generator=g) * signal / math.sqrt(d)  # (C, d)
    x = mu[y] + torch.randn(n, d, generator=g) / math.sqrt(d)  # (n, d)
    nodes_of = torch.arange(n).view(per, C).T  # (C, per): nodes of class c
    m = int(round(n * degree / 2))
    src = torch.randint(0, n, (m,), generator=g)
    same = torch.rand(m, generator=g) < h
    nxt = torch.rand(m, generator=g) < inf
    other = (y[src] + torch.randint(1, C, (m,), generator=g)) % C  # any other class
    want = torch.where(same, y[src], torch.where(nxt, (y[src] + 1) % C, other))
    dst = nodes_of[want, torch.randint(0, per, (m,), generator=g)]  # (m,)
    ok = src != dst  # no self-loops; both directions, duplicates merged
    edge_index = _coalesce(
        torch.stack([torch.cat([src[ok], dst[ok]]), torch.cat([dst[ok], src[ok]])]), n
    )
    return Graph(x, y, edge_index).to(device)


def edge_homophily(edge_index: torch.Tensor, y: torch.Tensor) -> float:
    """Share of edges joining two nodes of the same class."""
    check_tensor("y", y, ndim=1, integer=True, nonempty=True)
    check_tensor("edge_index", edge_index, ndim=2, integer=True, nonempty=True)
    if edge_index.shape[0] != 2:
        raise ValueError(
            f"edge_index: expected shape (2, E), got {tuple(edge_index.shape)}"
        )
    if int(edge_index.min()) < 0 or int(edge_index.max()) >= y.numel():
        raise ValueError(
            f"edge_index: expected node ids in [0, {y.numel()}), got others"
        )
    return float((y[edge_index[0]] == y[edge_index[1]]).double().mean())


SHIFTS = ("leave_out_class", "feature_noise", "structure")

#: cell types of the larval Drosophila mushroom-body connectome (graspologic's files)
CELL_TYPES = ("I", "K", "O", "P")


def connectome(side: str = "left", left_out: str = "O") -> Graph:
    """The larval Drosophila mushroom-body connectome (Eichler et al., 2017), as in
    the graspologic wheel: neurons of four cell types (I: modulatory input, K: Kenyon
    cells, O: output, P: projection), edges where there is a synapse either way.

    The graph has no node features; each node's feature vector is its connectivity
    profile, log(1 + synapse count) to and from every neuron (n, 2n). Labels are
    renumbered so that ``left_out`` is the last class (``shift_graph``'s
    ``leave_out_class`` makes it OOD). The data files are read from the installed
    package without importing it (it needs dependencies we do not install).
    """
    import importlib.util
    import os

    import numpy as np

    from lib.common import check_choice

    check_choice("side", side, ("left", "right"))
    check_choice("left_out", left_out, CELL_TYPES)
    spec = importlib.util.find_spec("graspologic")
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError(
            "graspologic: not installed (requirements-nodeps.txt installs it; `make`)"
        )
    root = os.path.join(spec.submodule_search_locations[0], "datasets", "drosophila")
    A = np.loadtxt(os.path.join(root, f"{side}_adjacency.csv"))  # (n, n) synapses
    names = np.loadtxt(os.path.join(root, f"{side}_cell_labels.csv"), dtype=str)
    order = [c for c in CELL_TYPES if c != left_out] + [left_out]
    y = torch.as_tensor([order.index(c) for c in names])  # (n,)
    W = torch.as_tensor(np.log1p(A), dtype=torch.float32)  # (n, n)
    x = torch.cat([W, W.T], 1)  # (n, 2n): out- and in-profile
    B = (W + W.T) > 0
    B.fill_diagonal_(False)
    return Graph(x, y, B.nonzero().T.contiguous())


def class_homophily(edge_index: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Per class c, the share of edge ends at class-c nodes whose other end is also of
    class c: (C,), NaN for a class without edges."""
    check_tensor("edge_index", edge_index, ndim=2, integer=True)
    check_tensor("y", y, ndim=1, integer=True, nonempty=True)
    if edge_index.shape[0] != 2:
        raise ValueError(
            f"edge_index: expected shape (2, E), got {tuple(edge_index.shape)}"
        )
    C = int(y.max()) + 1
    src, same = y[edge_index[0]], (y[edge_index[0]] == y[edge_index[1]]).double()
    hits = torch.zeros(C, dtype=torch.float64).index_add_(0, src, same)  # (C,)
    ends = torch.bincount(src, minlength=C).double()  # (C,)
    return hits / ends


def split_nodes(
    n: int, train: float = 0.2, val: float = 0.1, *, generator=None
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Random disjoint boolean masks (train, val, test) over ``n`` nodes."""
    n = check_int("n", n, minimum=3)
    tr, va = check_probability("train", train), check_probability("val", val)
    if tr <= 0 or va <= 0 or tr + va >= 1:
        raise ValueError(
            f"train, val: expected both > 0 with train + val < 1, got {train}, {val}"
        )
    g = check_generator("generator", generator)
    perm = torch.randperm(n, generator=g)
    a, b = int(round(tr * n)), int(round((tr + va) * n))
    masks = [torch.zeros(n, dtype=torch.bool) for _ in range(3)]
    for mask, idx in zip(masks, (perm[:a], perm[a:b], perm[b:])):
        mask[idx] = True
    return tuple(masks)


def shift_graph(
    graph: Graph, shift: str, fraction: float = 0.1, *, generator=None
) -> tuple[Graph, torch.Tensor]:
    """Apply a distribution shift; return the shifted graph and the OOD mask (n,).

    - ``leave_out_class``: the last class is OOD (its labels are never trained on; the
      graph is unchanged);
    - ``feature_noise``: the features of a random ``fraction`` of the nodes are replaced
      by Gaussian noise of the same per-dimension scale as the features;
    - ``structure``: a random ``fraction`` of the nodes keep their (in-distribution)
      features, but every edge at them is rewired to a node of class y + 2 (mod C), a
      neighbourhood never seen in training.
    """
    if not isinstance(graph, Graph):
        raise TypeError(f"graph: expected a Graph, got {type(graph).__name__}")
    from lib.common import check_choice

    check_choice("shift", shift, SHIFTS)
    p = check_probability("fraction", fraction)
    if not 0 < p < 1:
        raise ValueError(f"fraction: expected a number in (0, 1), got {fraction}")
    g = check_generator("generator", generator)
    dev = graph.x.device
    x, y, e = graph.x.cpu(), graph.y.cpu(), graph.edge_index.cpu()
    n, C = x.shape[0], int(y.max()) + 1
    if shift == "leave_out_class":
        return graph, (y == C - 1).to(dev)
    ood = torch.zeros(n, dtype=torch.bool)
    ood[torch.randperm(n, generator=g)[: max(1, int(round(p * n)))]] = True
    if shift == "feature_noise":
        x = x.clone()
        scale = x.std(0, keepdim=True)  # (1, d)
        x[ood] = torch.randn(int(ood.sum()), x.shape[1], generator=g) * scale
        return Graph(x, y, e).to(dev), ood.to(dev)
    # structure: drop every edge at an OOD node and give it new ones to class y + 2
    keep = ~(ood[e[0]] | ood[e[1]])
    src_ood = e[0][ood[e[0]]]  # one new edge per old edge end at an OOD node
    want = (y[src_ood] + 2) % C
    per = n // C
    nodes_of = torch.arange(per * C).view(per, C).T
    dst = nodes_of[want, torch.randint(0, per, want.shape, generator=g)]
    s = torch.cat([e[0][keep], src_ood, dst])
    t = torch.cat([e[1][keep], dst, src_ood])
    ok = s != t
    return Graph(x, y, _coalesce(torch.stack([s[ok], t[ok]]), n)).to(dev), ood.to(dev)
