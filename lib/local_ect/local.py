"""The local ECT: the ECT of every node's k-hop ego graph, for all nodes in one batched
pass.

The k-hop ego graph N_k(c) of a node c is the subgraph induced by the nodes within k
hops of c (as ``k_hop_subgraph`` in the paper's code), embedded at the node features.
Because a vertex's heights h_u(ω) = ⟨x_u, ω⟩ do not depend on the centre, the points
ℓ-ECT of all centres is one sparse-dense product:

    ℓ-ECT_k(c)(t, ω) = Σ_u M_k[c, u] · 1[h_u(ω) ≤ t],  M_k[c, u] = 1[dist(c, u) ≤ k]
        eq. (3)

and the edges version subtracts Σ_e M^E_k[c, e] · 1[max(h_u, h_w) ≤ t], where M^E_k[c,
e] = 1 when both ends of e lie in N_k(c). As in the paper's code each image is then
divided by its maximum over (t, ω) (for the points version: the size of the ego graph),
so that ego graphs of different sizes are comparable.

Two paths compute eq. (3): the sigmoid form as the sparse-dense product above (the (n,
T·K) sigmoid table is computed once per node), the exact form without any (n, T·K)
table, by binning the threshold index at which every ego member (and edge) enters and
taking a cumulative sum.
"""

from __future__ import annotations

import torch

from lib.common import check_int, check_positive, check_tensor
from .ect import (
    _check_edges,
    _check_scale,
    _check_xvt,
    binned_ect,
    entry_index,
    heights,
    step,
    undirected_edges,
)

__all__ = [
    "adjacency",
    "ego_pairs",
    "ego_masks",
    "ego_batch",
    "ego_edge_masks",
    "local_ect",
    "local_ect_features",
    "ego_mean",
    "ego_moments",
    "normalize_max",
]


def _check_nodes(nodes, n, device):
    if nodes is None:
        return torch.arange(n, device=device)
    check_tensor("nodes", nodes, ndim=1)
    if nodes.dtype != torch.long:
        raise TypeError(f"nodes: expected dtype torch.int64, got {nodes.dtype}")
    if nodes.numel() == 0:
        raise ValueError("nodes: expected at least one node, got an empty tensor")
    if int(nodes.min()) < 0 or int(nodes.max()) >= n:
        raise ValueError(
            f"nodes: expected indices in [0, {n}), got values in "
            f"[{int(nodes.min())}, {int(nodes.max())}]"
        )
    return nodes.to(device)


def _coo(
    indices: torch.Tensor, values: torch.Tensor, shape, coalesced: bool = False
) -> torch.Tensor:
    """A sparse COO tensor; invariant checks are skipped on purpose (indices are built
    here)."""
    out = torch.sparse_coo_tensor(
        indices, values, shape, check_invariants=False, is_coalesced=coalesced or None
    )
    return out if coalesced else out.coalesce()


def adjacency(
    edge_index: torch.Tensor, num_nodes: int, *, self_loops: bool = True, device=None
) -> torch.Tensor:
    """Symmetric 0/1 adjacency (n, n) as a coalesced sparse COO tensor, with the
    identity added when ``self_loops`` (so that k hops of (A + I) reach exactly the
    nodes within k hops)."""
    num_nodes = check_int("num_nodes", num_nodes, minimum=1)
    e = undirected_edges(edge_index, num_nodes).to(device)  # (2, E)
    rows, cols = [e[0], e[1]], [e[1], e[0]]
    if self_loops:
        loop = torch.arange(num_nodes, device=e.device)
        rows.append(loop)
        cols.append(loop)
    idx = torch.stack([torch.cat(rows), torch.cat(cols)])  # (2, 2E + n)
    return _coo(idx, torch.ones(idx.shape[1], device=e.device), (num_nodes, num_nodes))


def _csr(a: torch.Tensor):
    """Row pointers and column indices of a coalesced (row-sorted) sparse COO matrix."""
    r, c = a.indices()
    ptr = torch.zeros(a.shape[0] + 1, dtype=torch.long, device=r.device)
    ptr[1:] = torch.bincount(r, minlength=a.shape[0]).cumsum(0)
    return ptr, c


def _expand(ptr: torch.Tensor, rows: torch.Tensor):
    """For every entry of ``rows``, the positions of its row's entries: (owner (P,),
    position (P,))."""
    deg = ptr[rows + 1] - ptr[rows]  # (R,)
    owner = torch.repeat_interleave(
        torch.arange(rows.numel(), device=rows.device), deg
    )  # (P,)
    first = torch.repeat_interleave(ptr[rows] - (deg.cumsum(0) - deg), deg)
    return owner, first + torch.arange(owner.numel(), device=rows.device)


def ego_pairs(
    edge_index: torch.Tensor,
    num_nodes: int,
    k: int,
    *,
    nodes: torch.Tensor | None = None,
    device=None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """All (centre position i, member u) with dist(nodes[i], u) ≤ k, sorted by (i, u):
    (P,), (P,).

    k rounds of a vectorised join with the adjacency (A + I), deduplicated with
    ``unique`` (no loop over nodes)."""
    k = check_int("k", k, minimum=0)
    a = adjacency(edge_index, num_nodes, device=device)  # (n, n) with self-loops
    ptr, col = _csr(a)
    centres = _check_nodes(nodes, num_nodes, col.device)
    pos, mem = torch.arange(centres.numel(), device=col.device), centres
    for _ in range(k):
        owner, at = _expand(ptr, mem)  # one more hop from every current member
        key = torch.unique(pos[owner] * num_nodes + col[at])  # (P,) sorted
        pos, mem = key // num_nodes, key % num_nodes
    return pos, mem


def ego_masks(
    edge_index: torch.Tensor,
    num_nodes: int,
    k: int,
    *,
    nodes: torch.Tensor | None = None,
    device=None,
) -> torch.Tensor:
    """M_k (B, n), sparse: M_k[i, u] = 1 when u is within ``k`` hops of centre
    ``nodes[i]``."""
    pos, mem = ego_pairs(edge_index, num_nodes, k, nodes=nodes, device=device)
    B = num_nodes if nodes is None else nodes.numel()
    return _coo(
        torch.stack([pos, mem]),
        torch.ones(pos.numel(), device=pos.device),
        (B, num_nodes),
        coalesced=True,
    )


def ego_edge_masks(masks: torch.Tensor, edges: torch.Tensor) -> torch.Tensor:
    """M^E (B, E), sparse: 1 when both ends of the undirected edge ``edges[:, e]`` (row
    0 < row 1) lie in ego graph i. Each edge is found from its lower end, then its upper
    end is looked up."""
    if not isinstance(masks, torch.Tensor) or not masks.is_sparse or masks.ndim != 2:
        raise TypeError(
            f"masks: expected the sparse (B, n) tensor of ego_masks, got "
            f"{type(masks).__name__}"
        )
    _check_edges(edges, masks.shape[1], "edges")
    if edges.numel() and not bool((edges[0] < edges[1]).all()):
        raise ValueError(
            "edges: expected each undirected edge once with row 0 < row 1 (see "
            "undirected_edges)"
        )
    n, E = masks.shape[1], edges.shape[1]
    pos, mem = masks.indices()  # (P,) sorted by (i, u)
    key = pos * n + mem
    order = torch.argsort(edges[0])
    by_low = _coo(
        torch.stack([edges[0][order], order]),
        torch.ones(E, device=edges.device),
        (n, E),
    )
    ptr, eid = _csr(by_low)  # edges grouped by their lower end
    owner, at = _expand(
        ptr, mem
    )  # candidate (pair, edge) with the pair's member as lower end
    e = eid[at]
    want = pos[owner] * n + edges[1][e]  # is the upper end in the same ego graph?
    hit = torch.searchsorted(key, want).clamp(max=key.numel() - 1)
    inside = key[hit] == want
    return _coo(
        torch.stack([pos[owner][inside], e[inside]]),
        torch.ones(int(inside.sum()), device=e.device),
        (masks.shape[0], E),
    )


def ego_batch(
    x: torch.Tensor,
    edge_index: torch.Tensor,
    k: int,
    *,
    nodes: torch.Tensor | None = None,
):
    """The k-hop ego graphs of ``nodes`` as one batch of disjoint graphs, for
    :func:`ect`: (x_b (P, d) member features, edges_b (2, E_b) each edge once, batch
    (P,) ego id), vectorised."""
    _check_features(x)
    n = x.shape[0]
    masks = ego_masks(edge_index, n, k, nodes=nodes, device=x.device)  # (B, n)
    pos, mem = masks.indices()
    key = pos * n + mem  # sorted: the batch position of (i, u) is its rank
    edges = undirected_edges(edge_index, n).to(x.device)
    i, e = ego_edge_masks(masks, edges).indices()
    ends = torch.stack(
        [
            torch.searchsorted(key, i * n + edges[0][e]),
            torch.searchsorted(key, i * n + edges[1][e]),
        ]
    )
    return x[mem], ends, pos


def _check_features(x) -> None:
    check_tensor("x", x, ndim=2, floating=True)
    if x.shape[0] < 1 or x.shape[1] < 1:
        raise ValueError(
            f"x: expected at least one node with at least one feature, got shape "
            f"{tuple(x.shape)}"
        )
    check_tensor("x", x, finite=True)


def normalize_max(img: torch.Tensor, *, check: bool = True) -> torch.Tensor:
    """Divide every image (B, T, K) by its maximum over (t, ω), as the paper's code does
    (images whose maximum is ≤ 0, e.g. all heights above the last threshold, are left as
    they are). ``check=False`` skips the input checks."""
    if check:
        check_tensor("img", img, ndim=3, floating=True, nonempty=True, finite=True)
    top = img.amax(dim=(1, 2), keepdim=True)  # (B, 1, 1)
    return img / torch.where(top > 0, top, torch.ones_like(top))


def local_ect(
    x: torch.Tensor,
    edge_index: torch.Tensor,
    k: int,
    v: torch.Tensor,
    t: torch.Tensor,
    *,
    nodes: torch.Tensor | None = None,
    scale: float | None = None,
    ect_type: str = "points",
    normalize: bool = True,
) -> torch.Tensor:
    """ℓ-ECT_k of the nodes ``nodes`` (default: all), eq. (3): images (B, T, K).

    ``x`` (n, d) node features (the embedding), ``edge_index`` (2, E) the graph (either
    or both directions), ``v`` (d, K) directions, ``t`` (T,) thresholds; ``scale`` as in
    :func:`ect`; ``ect_type`` is ``"points"`` (the paper's experiments) or ``"edges"``.
    """
    _check_xvt(x, v, t)
    _check_scale(scale)
    if ect_type not in ("points", "edges"):
        raise ValueError(f"ect_type: expected 'points' or 'edges', got {ect_type!r}")
    n, T, K = x.shape[0], t.numel(), v.shape[1]
    masks = ego_masks(edge_index, n, k, nodes=nodes, device=x.device)  # (B, n)
    B = masks.shape[0]
    h = heights(x, v, check=False)  # (n, K)
    edges = (
        undirected_edges(edge_index, n).to(x.device) if ect_type == "edges" else None
    )
    emask = (
        ego_edge_masks(masks, edges) if edges is not None and edges.numel() else None
    )  # (B, E)
    if (
        scale is None
    ):  # exact: bin the entry thresholds of the members of every ego graph
        j = entry_index(h, t, check=False)  # (n, K)
        pos, mem = masks.indices()
        je = owner_e = None
        if emask is not None:
            owner_e, e = emask.indices()
            je = torch.maximum(j[edges[0][e]], j[edges[1][e]])  # (E_b, K)
        out = binned_ect(j[mem], pos, B, T, je, owner_e, dtype=x.dtype, check=False)
        return normalize_max(out, check=False) if normalize else out
    masks = masks.to(x.dtype)
    out = torch.sparse.mm(
        masks, step(h, t, scale, check=False).reshape(n, T * K)
    )  # (B, T·K) eq. (3)
    if emask is not None:
        he = torch.maximum(h[edges[0]], h[edges[1]])  # (E, K)
        out = out - torch.sparse.mm(
            emask.to(x.dtype), step(he, t, scale, check=False).reshape(-1, T * K)
        )
    out = out.reshape(-1, T, K)  # (B, T, K)
    return normalize_max(out, check=False) if normalize else out


def local_ect_features(
    x: torch.Tensor,
    edge_index: torch.Tensor,
    v: torch.Tensor,
    t: torch.Tensor,
    *,
    hops=(1, 2),
    nodes: torch.Tensor | None = None,
    scale: float | None = None,
    ect_type: str = "points",
) -> torch.Tensor:
    """The classifier's input of the paper: [ℓ-ECT_1(c), ℓ-ECT_2(c), x_c] flattened, (B,
    |hops|·T·K + d)."""
    _check_features(x)
    if isinstance(hops, (str, bytes)) or not isinstance(hops, (list, tuple)):
        raise TypeError(
            f"hops: expected a tuple of hop counts such as (1, 2), got "
            f"{type(hops).__name__}"
        )
    if not hops:
        raise ValueError(
            f"hops: expected at least one hop count such as (1, 2), got {hops!r}"
        )
    for i, k in enumerate(hops):
        check_int(f"hops[{i}]", k, 0)
    centres = _check_nodes(nodes, x.shape[0], x.device)
    parts = [
        local_ect(
            x, edge_index, k, v, t, nodes=centres, scale=scale, ect_type=ect_type
        ).flatten(1)
        for k in hops
    ]  # each (B, T·K)
    return torch.cat(parts + [x[centres]], dim=1)


def ego_mean(
    x: torch.Tensor,
    edge_index: torch.Tensor,
    k: int,
    *,
    nodes: torch.Tensor | None = None,
) -> torch.Tensor:
    """Mean of the features over each k-hop ego graph (the mean-aggregation baseline),
    (B, d)."""
    _check_features(x)
    masks = ego_masks(edge_index, x.shape[0], k, nodes=nodes, device=x.device).to(
        x.dtype
    )  # (B, n)
    size = torch.sparse.sum(masks, dim=1).to_dense().unsqueeze(1)  # (B, 1)
    return torch.sparse.mm(masks, x) / size


def ego_moments(
    x: torch.Tensor,
    edge_index: torch.Tensor,
    k: int,
    v: torch.Tensor,
    order: int = 4,
    *,
    nodes: torch.Tensor | None = None,
    eps: float = 1e-8,
) -> torch.Tensor:
    """Moments of the projected features over each k-hop ego graph, the moment
    aggregator baseline: for every direction ω (column of ``v``, the ℓ-ECT's own
    directions) the mean μ and standard deviation σ of {⟨x_u, ω⟩ : u ∈ N_k(c)}, then
    the standardised central moments E[(h − μ)^q] / σ^q for q = 3 … ``order``.
    ``order=2`` is the mean/std aggregator. Returns (B, order·K), blocks in that
    order."""
    _check_features(x)
    check_tensor(
        "v", v, shape=(x.shape[1], None), floating=True, nonempty=True, finite=True
    )
    order = check_int("order", order, minimum=1)
    # a 0-hop ego graph is the centre alone: no spread to take moments of
    check_int("k", k, minimum=1)
    check_positive("eps", eps)
    masks = ego_masks(edge_index, x.shape[0], k, nodes=nodes, device=x.device)
    pos, mem = masks.indices()  # (P,)
    B = masks.shape[0]
    h = heights(x, v.to(x.dtype), check=False)  # (n, K)
    size = torch.bincount(pos, minlength=B).to(x.dtype).unsqueeze(1)  # (B, 1)
    mu = torch.zeros(B, h.shape[1], dtype=x.dtype, device=x.device)
    mu = mu.index_add_(0, pos, h[mem]) / size  # (B, K)
    out = [mu]
    if order >= 2:
        d = h[mem] - mu[pos]  # (P, K) centred projections
        var = torch.zeros_like(mu).index_add_(0, pos, d * d) / size
        sd = var.sqrt()
        out.append(sd)
        for q in range(3, order + 1):
            mq = torch.zeros_like(mu).index_add_(0, pos, d**q) / size
            out.append(mq / (sd**q + eps))
    return torch.cat(out, dim=1)
