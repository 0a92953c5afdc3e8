"""Generated featured graphs (nothing downloads): classes defined by the *shape* of the
neighbours' features, and contextual stochastic block models swept over homophily.

Every generator draws on the CPU with the given ``torch.Generator`` (so CPU and GPU runs
see the same graph), then moves the result to ``device``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from lib.common import (
    check_generator,
    check_int,
    check_positive,
    check_probability,
    check_tensor,
)

__all__ = [
    "Graph",
    "shape_graph",
    "moment_graph",
    "MOMENT_RINGS",
    "csbm",
    "split",
    "edge_homophily",
]


@dataclass
class Graph:
    """A featured graph: ``x`` (n, d), ``edge_index`` (2, E) with both directions, ``y``
    (n,) labels (−1 for unlabelled nodes) and ``labelled`` (m,) the nodes that are
    classified. The generators here number the labelled nodes first (``labelled =
    arange(m)``), so a node's id is also its row in any per-labelled-node feature
    matrix."""

    x: torch.Tensor
    edge_index: torch.Tensor
    y: torch.Tensor
    labelled: torch.Tensor

    def __post_init__(self):
        check_tensor("x", self.x, ndim=2, floating=True)
        n = self.x.shape[0]
        if n < 1 or self.x.shape[1] < 1:
            raise ValueError(
                f"x: expected at least one node with at least one feature, got shape "
                f"{tuple(self.x.shape)}"
            )
        check_tensor("x", self.x, finite=True)
        _check_index("edge_index", self.edge_index, n, ndim=2)
        if self.edge_index.shape[0] != 2:
            raise ValueError(
                f"edge_index: expected shape (2, E), got {tuple(self.edge_index.shape)}"
            )
        check_tensor("y", self.y, shape=(n,), integer=True)
        _check_index("labelled", self.labelled, n, ndim=1)
        if self.labelled.numel() == 0:
            raise ValueError("labelled: expected at least one labelled node, got none")

    @property
    def num_nodes(self) -> int:
        return self.x.shape[0]

    def to(self, device) -> "Graph":
        if device is None:
            return self
        return Graph(
            self.x.to(device),
            self.edge_index.to(device),
            self.y.to(device),
            self.labelled.to(device),
        )


def _check_index(name: str, idx, n: int, ndim: int = 1) -> None:
    """An integer tensor of node ids in [0, n)."""
    check_tensor(name, idx, ndim=ndim, integer=True)
    if idx.numel() and not bool(((idx >= 0) & (idx < n)).all()):
        raise ValueError(
            f"{name}: expected node ids in [0, {n}), got values in "
            f"[{int(idx.min())}, {int(idx.max())}]"
        )


def _both_directions(src: torch.Tensor, dst: torch.Tensor) -> torch.Tensor:
    return torch.stack([torch.cat([src, dst]), torch.cat([dst, src])])  # (2, 2E)


def shape_graph(
    num_centres: int,
    num_satellites: int = 8,
    noise_degree: int = 4,
    centre_degree: int = 2,
    radius: float = 0.6,
    spread: float = 0.12,
    shift: float = 0.15,
    *,
    generator: torch.Generator | None = None,
    device=None,
) -> Graph:
    """Classes defined by the shape of the neighbours' features, with equal means.

    Each labelled *centre* c has ``num_satellites`` private neighbours. For class 0
    their 2-D features lie on a ring (radius ``radius``, evenly spaced, random phase);
    for class 1 they form a cluster (Gaussian, std ``spread``) recentred to mean zero.
    Both sets are then moved by one common random offset (std ``shift``), so the
    satellites' mean has the same distribution in both classes. Centres' own features
    are N(0, shift²) whatever the class. Satellites also get ``noise_degree`` random
    satellite-satellite edges each, and centres ``centre_degree`` random centre-centre
    edges, so that a neighbour's feature reaches a message-passing network only averaged
    with its own (unrelated) neighbourhood.
    """
    C = check_int("num_centres", num_centres, minimum=2)
    m = check_int("num_satellites", num_satellites, minimum=3)
    q = check_int("noise_degree", noise_degree, minimum=0)
    cd = check_int("centre_degree", centre_degree, minimum=0)
    for name, val in (("radius", radius), ("spread", spread), ("shift", shift)):
        check_positive(name, val)
    g = check_generator("generator", generator)
    y_c = torch.arange(C) % 2  # (C,) balanced classes
    y_c = y_c[torch.randperm(C, generator=g)]
    phase = 2 * math.pi * torch.rand(C, 1, generator=g)  # (C, 1)
    ang = phase + 2 * math.pi * torch.arange(m) / m  # (C, m)
    ring = radius * torch.stack(
        [ang.cos(), ang.sin()], dim=-1
    )  # (C, m, 2) mean exactly 0
    blob = spread * torch.randn(C, m, 2, generator=g)
    blob = blob - blob.mean(dim=1, keepdim=True)  # (C, m, 2) mean exactly 0
    offset = shift * torch.randn(
        C, 1, 2, generator=g
    )  # common shift, same law in both classes
    sat = torch.where(y_c.view(C, 1, 1) == 0, ring, blob) + offset  # (C, m, 2)
    x = torch.cat(
        [shift * torch.randn(C, 2, generator=g), sat.reshape(C * m, 2)]
    )  # (C + C·m, 2)
    owner = torch.arange(C).repeat_interleave(m)  # (C·m,) centre of every satellite
    sat_id = C + torch.arange(C * m)
    src = [owner, torch.randint(0, C, (C * cd,), generator=g), sat_id.repeat(q)]
    dst = [
        sat_id,
        torch.randint(0, C, (C * cd,), generator=g),
        C + torch.randint(0, C * m, (C * m * q,), generator=g),
    ]
    src, dst = torch.cat(src), torch.cat(dst)
    keep = src != dst
    y = torch.cat([y_c, torch.full((C * m,), -1)])
    return Graph(
        x.float(), _both_directions(src[keep], dst[keep]), y, torch.arange(C)
    ).to(device)


def csbm(
    num_nodes: int,
    homophily: float,
    degree: float = 6.0,
    dim: int = 2,
    signal: float = 0.5,
    *,
    generator: torch.Generator | None = None,
    device=None,
) -> Graph:
    """A two-class contextual SBM with expected degree ``degree`` and edge homophily
    ``homophily`` (the expected share of edges that join two nodes of the same class).

    Features: x_u = (s_u · ``signal`` · e + ε_u) / 3, with s_u = ±1 the class sign, e a
    random unit vector and ε_u ~ N(0, I_d / d); the factor 1/3 keeps the heights inside
    the thresholds' range [-1.1, 1.1]. Each edge picks a random first end, then a second
    end of the same class with probability ``homophily``, else of the other class.
    """
    n = check_int("num_nodes", num_nodes, minimum=4)
    h = check_probability("homophily", homophily)
    degree = check_positive("degree", degree)
    d = check_int("dim", dim, minimum=1)
    signal = check_positive("signal", signal)
    g = check_generator("generator", generator)
    y = (torch.arange(n) % 2)[torch.randperm(n, generator=g)]  # (n,)
    e = torch.randn(d, generator=g)
    e = e / e.norm()
    x = (
        (2 * y - 1).float().unsqueeze(1) * signal * e
        + torch.randn(n, d, generator=g) / math.sqrt(d)
    ) / 3
    num_edges = int(round(n * degree / 2))
    same = torch.rand(num_edges, generator=g) < h  # (E,) edge joins the same class?
    by_class = [torch.nonzero(y == c).squeeze(1) for c in (0, 1)]
    src = torch.randint(0, n, (num_edges,), generator=g)
    want = torch.where(same, y[src], 1 - y[src])  # class of the other end
    pick = torch.randint(0, 1 << 30, (num_edges,), generator=g)
    dst = torch.where(
        want == 0,
        by_class[0][pick % len(by_class[0])],
        by_class[1][pick % len(by_class[1])],
    )
    keep = src != dst
    return Graph(
        x.float(), _both_directions(src[keep], dst[keep]), y, torch.arange(n)
    ).to(device)


def split(
    labelled: torch.Tensor,
    train_fraction: float = 0.5,
    *,
    generator: torch.Generator | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """A random train/test split of the labelled nodes."""
    check_tensor("labelled", labelled, ndim=1, integer=True)
    if labelled.numel() < 2:
        raise ValueError(
            f"labelled: expected at least 2 nodes to split, got {labelled.numel()}"
        )
    if bool((labelled < 0).any()):
        raise ValueError("labelled: expected node ids >= 0, got a negative one")
    check_generator("generator", generator)
    p = check_probability("train_fraction", train_fraction)
    perm = labelled[torch.randperm(labelled.numel(), generator=generator)]
    cut = int(round(p * labelled.numel()))
    if cut < 1 or cut >= labelled.numel():
        raise ValueError(
            f"train_fraction: expected a value leaving both parts non-empty for "
            f"{labelled.numel()} nodes, got {train_fraction}"
        )
    return perm[:cut], perm[cut:]


def edge_homophily(edge_index: torch.Tensor, y: torch.Tensor) -> float:
    """Share of edges (among those whose ends are both labelled) joining nodes of one
    class."""
    check_tensor("y", y, ndim=1, integer=True, nonempty=True)
    _check_index("edge_index", edge_index, y.shape[0], ndim=2)
    if edge_index.shape[0] != 2:
        raise ValueError(
            f"edge_index: expected shape (2, E), got {tuple(edge_index.shape)}"
        )
    a, b = y[edge_index[0]], y[edge_index[1]]
    ok = (a >= 0) & (b >= 0)
    if not bool(ok.any()):
        raise ValueError(
            "edge_index: expected at least one edge between labelled nodes (y >= 0), "
            "got none"
        )
    return float((a[ok] == b[ok]).float().mean())


#: squared ring radii (as shares of ``radius²``) and ring sizes of the two classes of
#: :func:`moment_graph`: two rings of 9 points against three rings of 6. Both sets
#: have mean 1/2, variance 0.09 and skewness 0 of the squared radius, so every projected
#: moment of order ≤ 5 agrees in every direction (order 8 differs on average).
MOMENT_RINGS = (
    ((0.2, 0.8), 9),
    ((0.5 - math.sqrt(0.135), 0.5, 0.5 + math.sqrt(0.135)), 6),
)


def moment_graph(
    num_centres: int,
    noise_degree: int = 0,
    centre_degree: int = 2,
    radius: float = 0.85,
    shift: float = 0.1,
    *,
    generator: torch.Generator | None = None,
    device=None,
) -> Graph:
    """Classes that no moment of order ≤ 5 of the neighbours' features can tell apart.

    Each labelled centre c has 18 private neighbours (*satellites*) on concentric
    regular polygons, each polygon with its own random phase: class 0 has two rings of
    9 points with squared radii (0.2, 0.8)·radius², class 1 three rings of 6 points
    with squared radii (0.5 − √0.135, 0.5, 0.5 + √0.135)·radius² (:data:`MOMENT_RINGS`).
    For a regular p-gon Σ_k ⟨x_k, ω⟩^q is the same for every phase and direction when q
    < p, and equals p·r^q·c_q; both classes have the same mean r², r⁴ (and r⁶) per
    point, so in every direction the projected mean, variance, skewness, kurtosis and
    5th moment agree exactly, whatever the phases. All satellites are then moved by
    one common random offset (std ``shift``), and centres' features are N(0, shift²)
    whatever the class. Satellites get ``noise_degree`` random satellite-satellite
    edges each (0: leaves, the default, so that message passing sees every satellite
    unmixed), centres ``centre_degree`` random centre-centre edges.
    """
    C = check_int("num_centres", num_centres, minimum=2)
    q = check_int("noise_degree", noise_degree, minimum=0)
    cd = check_int("centre_degree", centre_degree, minimum=0)
    radius = check_positive("radius", radius)
    shift = check_positive("shift", shift)
    g = check_generator("generator", generator)
    y_c = (torch.arange(C) % 2)[torch.randperm(C, generator=g)]  # (C,) balanced
    sets = []
    for squares, p in MOMENT_RINGS:  # one (C, m, 2) point set per class
        rings = []
        for s in squares:
            phase = 2 * math.pi * torch.rand(C, 1, generator=g)  # (C, 1)
            ang = phase + 2 * math.pi * torch.arange(p) / p  # (C, p)
            r = radius * math.sqrt(s)
            rings.append(r * torch.stack([ang.cos(), ang.sin()], dim=-1))
        sets.append(torch.cat(rings, dim=1))  # (C, m, 2)
    m = sets[0].shape[1]
    offset = shift * torch.randn(C, 1, 2, generator=g)
    sat = torch.where(y_c.view(C, 1, 1) == 0, sets[0], sets[1]) + offset  # (C, m, 2)
    x = torch.cat([shift * torch.randn(C, 2, generator=g), sat.reshape(C * m, 2)])
    owner = torch.arange(C).repeat_interleave(m)
    sat_id = C + torch.arange(C * m)
    src = [owner, torch.randint(0, C, (C * cd,), generator=g), sat_id.repeat(q)]
    dst = [
        sat_id,
        torch.randint(0, C, (C * cd,), generator=g),
        C + torch.randint(0, C * m, (C * m * q,), generator=g),
    ]
    src, dst = torch.cat(src), torch.cat(dst)
    keep = src != dst
    y = torch.cat([y_c, torch.full((C * m,), -1)])
    return Graph(
        x.float(), _both_directions(src[keep], dst[keep]), y, torch.arange(C)
    ).to(device)
