"""The Euler Characteristic Transform (ECT) of embedded graphs, batched over many
graphs.

Conventions (shared by the whole chapter):

- ``x`` (N, d): vertex coordinates (for ℓ-ECT: the node features);
- ``v`` (d, K): K unit directions ω_1 … ω_K as columns, so the heights are ``h = x @ v``
  (N, K);
- ``t`` (T,): increasing thresholds;
- an ECT is returned as an image (B, T, K): row j is the threshold t_j, column k the
  direction ω_k.

The Euler characteristic of the sublevel set {y : ⟨y, ω⟩ ≤ t} of a graph is

    χ(t, ω) = #{u : h_u(ω) ≤ t} − #{(u, w) ∈ E : max(h_u(ω), h_w(ω)) ≤ t}        eq. (1)

(the ``points`` ECT keeps the first term only). The exact form counts with the indicator
1[h ≤ t]; the differentiable form of the paper's code replaces it by σ(s·(t − h)) with a
large scale s (500 there), which tends to the indicator as s → ∞ (for h ≠ t).
"""

from __future__ import annotations

import math

import torch

from lib.common import check_generator, check_int, check_positive, check_tensor

__all__ = [
    "thresholds",
    "random_directions",
    "circle_directions",
    "heights",
    "step",
    "undirected_edges",
    "entry_index",
    "binned_ect",
    "ect",
    "rotation_distance_2d",
    "rotation_distance",
]


def thresholds(
    num_thresholds: int,
    radius: float = 1.1,
    *,
    device=None,
    dtype: torch.dtype = torch.float32,
) -> torch.Tensor:
    """``num_thresholds`` evenly spaced thresholds in [-radius, radius] (the paper's R =
    1.1)."""
    if isinstance(num_thresholds, bool) or not isinstance(num_thresholds, int):
        raise TypeError(
            f"num_thresholds: expected an int, got {type(num_thresholds).__name__}"
        )
    if num_thresholds < 2:
        raise ValueError(f"num_thresholds: expected an int >= 2, got {num_thresholds}")
    radius = check_positive("radius", radius)
    return torch.linspace(
        -radius, radius, num_thresholds, device=device, dtype=dtype
    )  # (T,)


def random_directions(
    dim: int,
    num_directions: int,
    *,
    generator: torch.Generator | None = None,
    device=None,
    dtype: torch.dtype = torch.float32,
) -> torch.Tensor:
    """K random unit directions in R^dim as columns (d, K), drawn as in the paper's
    code: uniform in the cube [-1/2, 1/2]^d, then normalised. Drawn on the CPU, then
    moved."""
    for name, val in (("dim", dim), ("num_directions", num_directions)):
        if isinstance(val, bool) or not isinstance(val, int):
            raise TypeError(f"{name}: expected an int, got {type(val).__name__}")
        if val < 1:
            raise ValueError(f"{name}: expected an int >= 1, got {val}")
    check_generator("generator", generator)
    v = (
        torch.rand(dim, num_directions, generator=generator, dtype=torch.float64) - 0.5
    )  # (d, K)
    v = v / v.norm(dim=0, keepdim=True)
    return v.to(device=device, dtype=dtype)


def circle_directions(
    num_directions: int, *, device=None, dtype: torch.dtype = torch.float32
) -> torch.Tensor:
    """K evenly spaced unit directions in the plane, ω_k = (cos 2πk/K, sin 2πk/K), as
    (2, K)."""
    if isinstance(num_directions, bool) or not isinstance(num_directions, int):
        raise TypeError(
            f"num_directions: expected an int, got {type(num_directions).__name__}"
        )
    if num_directions < 1:
        raise ValueError(f"num_directions: expected an int >= 1, got {num_directions}")
    theta = (
        2 * math.pi * torch.arange(num_directions, dtype=torch.float64) / num_directions
    )  # (K,)
    return torch.stack([theta.cos(), theta.sin()]).to(
        device=device, dtype=dtype
    )  # (2, K)


def _check_xvt(x, v, t):
    check_tensor("x", x, ndim=2, floating=True)
    if x.shape[0] < 1 or x.shape[1] < 1:
        raise ValueError(
            f"x: expected at least one vertex with at least one coordinate, got shape "
            f"{tuple(x.shape)}"
        )
    check_tensor("v", v, ndim=2, floating=True)
    if v.shape[1] < 1:
        raise ValueError(
            f"v: expected at least one direction (column), got shape {tuple(v.shape)}"
        )
    check_tensor("t", t, ndim=1, floating=True)
    if x.shape[1] != v.shape[0]:
        raise ValueError(
            f"v: expected shape ({x.shape[1]}, K) to match x's {x.shape[1]} features, "
            f"got {tuple(v.shape)}"
        )
    if t.numel() < 1:
        raise ValueError("t: expected at least one threshold, got an empty tensor")
    if t.numel() > 1 and not bool((t[1:] > t[:-1]).all()):
        raise ValueError(
            "t: expected strictly increasing thresholds, got an unsorted tensor"
        )
    if x.device != v.device or x.device != t.device:
        raise ValueError(
            f"x, v, t: expected one device, got {x.device}, {v.device}, {t.device}"
        )
    for name, val in (("x", x), ("v", v), ("t", t)):
        check_tensor(name, val, finite=True)


def _check_scale(scale):
    if scale is not None:
        check_positive("scale", scale)


def _check_heights(h, t):
    check_tensor("h", h, ndim=2, floating=True)
    if h.shape[0] < 1 or h.shape[1] < 1:
        raise ValueError(
            f"h: expected shape (M, K) with M, K >= 1, got {tuple(h.shape)}"
        )
    check_tensor("h", h, finite=True)
    check_tensor("t", t, ndim=1, floating=True, nonempty=True, finite=True)
    if t.numel() > 1 and not bool((t[1:] > t[:-1]).all()):
        raise ValueError(
            "t: expected strictly increasing thresholds, got an unsorted tensor"
        )


def heights(x: torch.Tensor, v: torch.Tensor, *, check: bool = True) -> torch.Tensor:
    """Heights h_u(ω_k) = ⟨x_u, ω_k⟩ of every vertex in every direction: (N, d) @ (d, K)
    -> (N, K).

    ``check=False`` skips the input checks (callers that validated ``x`` and ``v``
    already)."""
    if check:
        check_tensor("x", x, ndim=2, floating=True, nonempty=True, finite=True)
        check_tensor(
            "v", v, shape=(x.shape[1], None), floating=True, nonempty=True, finite=True
        )
        if v.dtype != x.dtype:
            raise TypeError(f"v: expected the dtype of x ({x.dtype}), got {v.dtype}")
    return x @ v  # (N, K)


def step(
    h: torch.Tensor, t: torch.Tensor, scale: float | None = None, *, check: bool = True
) -> torch.Tensor:
    """Contribution of a cell with heights ``h`` (M, K) to every threshold: (M, T, K).

    Exact: 1[h ≤ t]; differentiable (``scale`` given): σ(scale · (t − h)), as the
    paper's code. ``check=False`` skips the input checks (callers that validated them
    already)."""
    if check:
        _check_heights(h, t)
        _check_scale(scale)
    diff = t.view(1, -1, 1) - h.unsqueeze(1)  # (M, T, K)
    if scale is None:
        return (diff >= 0).to(h.dtype)
    return torch.sigmoid(scale * diff)


def _check_edges(
    edge_index: torch.Tensor, num_nodes: int | None, name: str = "edge_index"
) -> None:
    check_tensor(name, edge_index, ndim=2)
    if edge_index.shape[0] != 2:
        raise ValueError(
            f"{name}: expected shape (2, E), got {tuple(edge_index.shape)}"
        )
    if edge_index.dtype != torch.long:
        raise TypeError(f"{name}: expected dtype torch.int64, got {edge_index.dtype}")
    if edge_index.numel() and int(edge_index.min()) < 0:
        raise ValueError(
            f"{name}: expected node indices >= 0, got {int(edge_index.min())}"
        )
    if (
        num_nodes is not None
        and edge_index.numel()
        and int(edge_index.max()) >= num_nodes
    ):
        raise ValueError(
            f"{name}: expected node indices < {num_nodes}, got {int(edge_index.max())}"
        )


def undirected_edges(
    edge_index: torch.Tensor, num_nodes: int | None = None
) -> torch.Tensor:
    """Each undirected edge once, as (2, E) with row 0 < row 1 (self-loops and
    duplicates dropped)."""
    if num_nodes is not None:
        check_int("num_nodes", num_nodes, 1)
    _check_edges(edge_index, num_nodes)
    lo = edge_index.min(dim=0).values
    hi = edge_index.max(dim=0).values
    keep = lo != hi
    n = num_nodes if num_nodes is not None else (int(hi.max()) + 1 if hi.numel() else 1)
    key = torch.unique(lo[keep] * n + hi[keep])  # sorted: lexicographic in (lo, hi)
    return torch.stack([key // n, key % n])  # (2, E')


def _check_batch(batch, n, num_graphs, device):
    if batch is None:
        return torch.zeros(n, dtype=torch.long, device=device), 1
    check_tensor("batch", batch, ndim=1)
    if batch.dtype != torch.long:
        raise TypeError(f"batch: expected dtype torch.int64, got {batch.dtype}")
    if batch.shape[0] != n:
        raise ValueError(
            f"batch: expected shape ({n},) (one graph id per vertex), got "
            f"{tuple(batch.shape)}"
        )
    if n and int(batch.min()) < 0:
        raise ValueError(f"batch: expected graph ids >= 0, got {int(batch.min())}")
    need = int(batch.max()) + 1 if n else 0
    if num_graphs is None:
        num_graphs = need
    elif isinstance(num_graphs, bool) or not isinstance(num_graphs, int):
        raise TypeError(f"num_graphs: expected an int, got {type(num_graphs).__name__}")
    elif num_graphs < need:
        raise ValueError(
            f"num_graphs: expected an int >= {need} (largest graph id + 1), got "
            f"{num_graphs}"
        )
    return batch, num_graphs


def ect(
    x: torch.Tensor,
    v: torch.Tensor,
    t: torch.Tensor,
    *,
    edge_index: torch.Tensor | None = None,
    batch: torch.Tensor | None = None,
    num_graphs: int | None = None,
    scale: float | None = None,
) -> torch.Tensor:
    """ECT images (B, T, K) of a batch of disjoint embedded graphs, eq. (1).

    ``x`` (N, d) vertex coordinates, ``v`` (d, K) directions, ``t`` (T,) increasing
    thresholds; ``edge_index`` (2, E) edges (each undirected edge once; ``None``: the
    ``points`` ECT); ``batch`` (N,) graph id of every vertex (``None``: one graph).
    ``scale=None`` gives the exact integer-valued ECT, computed in O((N + E)·K + B·T·K)
    by binning each cell at the first threshold that reaches it and taking a cumulative
    sum; ``scale=s`` gives the paper's differentiable form, Σ σ(s·(t − h)), in O((N +
    E)·T·K) memory.
    """
    _check_xvt(x, v, t)
    _check_scale(scale)
    n = x.shape[0]
    batch, B = _check_batch(batch, n, num_graphs, x.device)
    if edge_index is not None:
        _check_edges(edge_index, n)  # the caller passes each undirected edge once
    h = heights(x, v, check=False)  # (N, K)
    T, K = t.numel(), v.shape[1]
    if scale is None:
        return _ect_exact(h, t, batch, B, edge_index, x.dtype)
    out = torch.zeros(B, T, K, device=x.device, dtype=x.dtype)
    out.index_add_(
        0, batch, step(h, t, scale, check=False)
    )  # Σ_u σ(s(t − h_u))        (B, T, K)
    if edge_index is not None and edge_index.numel():
        he = torch.maximum(
            h[edge_index[0]], h[edge_index[1]]
        )  # (E, K) an edge enters at max height
        out.index_add_(
            0, batch[edge_index[0]], step(he, t, scale, check=False), alpha=-1
        )
    return out


def entry_index(
    h: torch.Tensor, t: torch.Tensor, *, check: bool = True
) -> torch.Tensor:
    """For every height, the first threshold index j with t_j ≥ h (T if none), same
    shape as ``h``: the threshold at which a cell of height h enters the sublevel sets.
    ``check=False`` skips the input checks."""
    if check:
        _check_heights(h, t)
    T = t.numel()
    if T < 3 or T * h.numel() < 4096:
        return torch.searchsorted(t.contiguous(), h.contiguous())
    step = (t[-1] - t[0]) / (T - 1)
    grid = t[0] + step * torch.arange(T, device=t.device, dtype=t.dtype)
    if not bool(((t - grid).abs() <= 1e-3 * step).all()):  # not evenly spaced
        return torch.searchsorted(t.contiguous(), h.contiguous())
    # evenly spaced: a guess by arithmetic, off by at most one, then corrected against
    # the thresholds themselves, so ties are resolved exactly as searchsorted does
    j = torch.ceil((h - t[0]) / step).clamp_(0, T).long()
    top = torch.cat([t, t.new_full((1,), torch.inf)])  # top[T] = ∞
    j += (top[j] < h).long()  # guess too low: t_j < h
    below = (j - 1).clamp(min=0)
    j -= ((j > 0) & (t[below] >= h)).long()  # guess too high: t_{j−1} ≥ h
    return j


def _count(counts: torch.Tensor, flat: torch.Tensor, sign: int) -> torch.Tensor:
    """counts[flat] += sign, with repeated indices (one ``index_add_``, in the counts'
    dtype, on any device)."""
    one = torch.ones((), dtype=counts.dtype, device=counts.device)
    return counts.index_add_(0, flat, one.expand(flat.numel()), alpha=sign)


def binned_ect(
    j: torch.Tensor,
    owner: torch.Tensor,
    num_graphs: int,
    num_thresholds: int,
    je: torch.Tensor | None = None,
    edge_owner: torch.Tensor | None = None,
    *,
    dtype: torch.dtype = torch.long,
    check: bool = True,
) -> torch.Tensor:
    """Exact eq. (1) from entry indices: vertex rows ``j`` (N, K) of graphs ``owner``
    (N,), edge rows ``je`` (E, K) of graphs ``edge_owner`` (E,). Cell c enters at
    threshold j_c, so χ(t_j) = Σ_{c: j_c ≤ j} ±1: bin the entries, then a cumulative sum
    over thresholds. (B, T, K). Entry indices lie in [0, T] (T: never enters) and graph
    ids in [0, B); ``check=False`` skips the input checks (the ECT functions, which
    built them). ``dtype``: of the counts and the result (a float dtype saves a
    conversion)."""
    if check:
        _check_binned(j, owner, num_graphs, num_thresholds, je, edge_owner)
        if not isinstance(dtype, torch.dtype) or dtype == torch.bool:
            raise TypeError(f"dtype: expected a numeric torch.dtype, got {dtype!r}")
    B, T, K = num_graphs, num_thresholds, j.shape[1]
    k = torch.arange(K, device=j.device)
    counts = torch.zeros(B * (T + 1) * K, dtype=dtype, device=j.device)
    counts = _count(
        counts, ((owner.unsqueeze(1) * (T + 1) + j) * K + k).reshape(-1), +1
    )
    if je is not None and je.numel():
        counts = _count(
            counts, ((edge_owner.unsqueeze(1) * (T + 1) + je) * K + k).reshape(-1), -1
        )
    return counts.view(B, T + 1, K)[:, :T].cumsum(dim=1)  # (B, T, K)


def _check_binned(j, owner, num_graphs, num_thresholds, je, edge_owner) -> None:
    B = check_int("num_graphs", num_graphs, 1)
    T = check_int("num_thresholds", num_thresholds, 1)
    check_tensor("j", j, ndim=2, integer=True)
    if j.shape[0] < 1 or j.shape[1] < 1:
        raise ValueError(
            f"j: expected shape (N, K) with N, K >= 1, got {tuple(j.shape)}"
        )
    check_tensor("owner", owner, shape=(j.shape[0],), integer=True)
    if (je is None) != (edge_owner is None):
        raise ValueError(
            "je, edge_owner: expected both (edge rows and their graphs) or neither"
        )
    pairs = [("j", j, "owner", owner)] + (
        [("je", je, "edge_owner", edge_owner)] if je is not None else []
    )
    for name, rows, oname, own in pairs:
        check_tensor(name, rows, shape=(None, j.shape[1]), integer=True)
        check_tensor(oname, own, shape=(rows.shape[0],), integer=True)
        if rows.numel() and not bool(((rows >= 0) & (rows <= T)).all()):
            raise ValueError(
                f"{name}: expected entry indices in [0, num_thresholds={T}], got "
                f"values outside"
            )
        if own.numel() and not bool(((own >= 0) & (own < B)).all()):
            raise ValueError(
                f"{oname}: expected graph ids in [0, num_graphs={B}), got values "
                f"outside"
            )


def _ect_exact(h, t, batch, B, edge_index, dtype):
    j = entry_index(h, t, check=False)  # (N, K) in [0, T]; T = never enters
    je = owner_e = None
    if edge_index is not None and edge_index.numel():
        je = torch.maximum(
            j[edge_index[0]], j[edge_index[1]]
        )  # (E, K): heights are monotone in j
        owner_e = batch[edge_index[0]]
    return binned_ect(j, batch, B, t.numel(), je, owner_e, dtype=dtype, check=False)


def rotation_distance_2d(
    ect_g: torch.Tensor, ect_h: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """Rotation-invariant distance between two planar ECTs over K evenly spaced
    directions.

    d(G, H) = min_R ‖ECT(G) − ECT(RH)‖ with ECT(RH)(ω, ·) = ECT(H)(Rᵀω, ·)  eq. (2)

    For ω_k at angle 2πk/K and R the rotation by 2πs/K, Rᵀω_k = ω_{k−s}: the minimum
    runs over the K cyclic shifts of the direction axis. Returns (distance, angle α̂ =
    2πs*/K in [0, 2π)), where rotating H by α̂ best matches G. Images are (T, K) or
    batched (B, T, K).
    """
    for name, val in (("ect_g", ect_g), ("ect_h", ect_h)):
        check_tensor(name, val, floating=True)
        if val.ndim not in (2, 3):
            raise ValueError(
                f"{name}: expected shape (T, K) or (B, T, K), got {tuple(val.shape)}"
            )
        if val.numel() == 0:
            raise ValueError(
                f"{name}: expected a non-empty image, got shape {tuple(val.shape)}"
            )
        check_tensor(name, val, finite=True)
    if ect_g.shape != ect_h.shape:
        raise ValueError(
            f"ect_g, ect_h: expected one shape, got {tuple(ect_g.shape)} and "
            f"{tuple(ect_h.shape)}"
        )
    K = ect_g.shape[-1]
    s = torch.arange(K, device=ect_g.device)
    idx = (
        torch.arange(K, device=ect_g.device).unsqueeze(0) - s.unsqueeze(1)
    ) % K  # (S, K): k − s
    shifted = ect_h[..., idx]  # (..., T, S, K): ECT(R_s H)
    diff = ect_g.unsqueeze(-2) - shifted  # (..., T, S, K)
    dist = diff.pow(2).sum(dim=(-3, -1)).sqrt()  # (..., S) Frobenius norm per shift
    best = dist.argmin(dim=-1)  # (...,)
    return dist.min(dim=-1).values, 2 * math.pi * best.to(ect_g.dtype) / K


def rotation_distance(
    x_g: torch.Tensor,
    x_h: torch.Tensor,
    rotations: torch.Tensor,
    v: torch.Tensor,
    t: torch.Tensor,
    *,
    scale: float | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Eq. (2) in any dimension, the minimum over a given set of rotations ``rotations``
    (R, d, d): returns (distance, index of the best rotation). All rotated copies form
    one ECT batch."""
    check_tensor("x_g", x_g, ndim=2, floating=True)
    if x_g.shape[0] < 1 or x_g.shape[1] < 1:
        raise ValueError(
            f"x_g: expected at least one point, got shape {tuple(x_g.shape)}"
        )
    check_tensor("x_g", x_g, finite=True)
    check_tensor("rotations", rotations, ndim=3, floating=True)
    d = x_g.shape[1]
    if rotations.shape[1:] != (d, d) or rotations.shape[0] < 1:
        raise ValueError(
            f"rotations: expected shape (R, {d}, {d}) with R >= 1, got "
            f"{tuple(rotations.shape)}"
        )
    check_tensor("rotations", rotations, finite=True)
    check_tensor("x_h", x_h, ndim=2, floating=True)
    if x_h.shape[1] != d or x_h.shape[0] < 1:
        raise ValueError(
            f"x_h: expected at least one point with {d} columns like x_g, got "
            f"{tuple(x_h.shape)}"
        )
    check_tensor("x_h", x_h, finite=True)
    e_g = ect(x_g, v, t, scale=scale)[0]  # (T, K)
    R, n = rotations.shape[0], x_h.shape[0]
    rotated = torch.einsum("rij,nj->rni", rotations, x_h).reshape(
        R * n, d
    )  # (R·n, d) points R x
    batch = torch.arange(R, device=x_h.device).repeat_interleave(n)
    e_h = ect(rotated, v, t, batch=batch, num_graphs=R, scale=scale)  # (R, T, K)
    dist = (e_h - e_g).pow(2).sum(dim=(1, 2)).sqrt()  # (R,)
    return dist.min(), dist.argmin()
