"""Classifiers: gradient-boosted trees (the paper's classifier, with scikit-learn's
HistGradientBoosting in place of XGBoost) and two message-passing baselines in plain
torch."""

from __future__ import annotations

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from lib.common import (
    check_int,
    check_nonnegative,
    check_positive,
    check_probability,
    check_tensor,
)
from .local import _coo, adjacency, ego_masks

__all__ = [
    "gcn_norm",
    "sym_norm",
    "two_hop",
    "GCN",
    "GAT",
    "GIN",
    "H2GCN",
    "GNN_KINDS",
    "train_gnn",
    "gbdt_accuracy",
]

#: the message-passing baselines :func:`train_gnn` trains
GNN_KINDS = ("gcn", "gat", "gin", "h2gcn")


def gcn_norm(edge_index: torch.Tensor, num_nodes: int, *, device=None) -> torch.Tensor:
    """Â = D^{-1/2} (A + I) D^{-1/2} (Kipf & Welling), sparse (n, n)."""
    a = adjacency(edge_index, num_nodes, self_loops=True, device=device)  # (n, n)
    deg = torch.sparse.sum(a, dim=1).to_dense()  # (n,)
    r, c = a.indices()
    val = deg[r].rsqrt() * deg[c].rsqrt()
    return _coo(a.indices(), val, a.shape, coalesced=True)


class _SymSpMM(torch.autograd.Function):
    """A @ h for a *symmetric* sparse A, whose backward is A @ grad again (torch's own
    backward transposes A, re-sorting it at every step)."""

    @staticmethod
    def forward(ctx, a, h):
        ctx.a = a
        return a @ h

    @staticmethod
    def backward(ctx, grad):
        return None, ctx.a @ grad


def _spmm(a: torch.Tensor, h: torch.Tensor) -> torch.Tensor:
    """Product of a symmetric sparse (n, n) matrix (COO or CSR) with dense (n, f)."""
    return _SymSpMM.apply(a, h)


def _check_sizes(**sizes) -> None:
    for name, v in sizes.items():
        check_int(name, v, 1)


def _check_dropout(p) -> float:
    p = check_probability("dropout", p)
    if p >= 1:
        raise ValueError(f"dropout: expected a probability in [0, 1), got {p}")
    return p


def _check_nodes_of(name: str, idx, n: int) -> None:
    """A non-empty 1-d tensor of node ids in [0, n)."""
    check_tensor(name, idx, ndim=1, integer=True, nonempty=True)
    if not bool(((idx >= 0) & (idx < n)).all()):
        raise ValueError(
            f"{name}: expected node ids in [0, {n}), got values in [{int(idx.min())}, "
            f"{int(idx.max())}]"
        )


class GCN(nn.Module):
    """Two graph-convolution layers: logits = Â · relu(Â X W₁) W₂."""

    def __init__(self, in_dim: int, hidden: int, out_dim: int, dropout: float = 0.5):
        super().__init__()
        _check_sizes(in_dim=in_dim, hidden=hidden, out_dim=out_dim)
        _check_dropout(dropout)
        self.lin1 = nn.Linear(in_dim, hidden)
        self.lin2 = nn.Linear(hidden, out_dim)
        self.dropout = dropout

    def forward(self, x: torch.Tensor, a_hat: torch.Tensor) -> torch.Tensor:
        h = F.relu(_spmm(a_hat, self.lin1(x)))  # (n, hidden)
        h = F.dropout(h, self.dropout, self.training)
        return _spmm(a_hat, self.lin2(h))  # (n, out)


class GATLayer(nn.Module):
    """One graph-attention layer (Veličković et al.), vectorised over edges with segment
    softmax: α_{uv} = softmax_u LeakyReLU(aᵀ[W x_v ‖ W x_u]) over the in-neighbours u of
    v (self included)."""

    def __init__(self, in_dim: int, out_dim: int, heads: int, concat: bool = True):
        super().__init__()
        self.heads, self.out_dim, self.concat = heads, out_dim, concat
        self.lin = nn.Linear(in_dim, heads * out_dim, bias=False)
        self.att_src = nn.Parameter(torch.empty(heads, out_dim))
        self.att_dst = nn.Parameter(torch.empty(heads, out_dim))
        self.bias = nn.Parameter(torch.zeros(heads * out_dim if concat else out_dim))
        nn.init.xavier_uniform_(self.att_src)
        nn.init.xavier_uniform_(self.att_dst)

    def forward(
        self, x: torch.Tensor, edges: torch.Tensor, dropout: float = 0.0
    ) -> torch.Tensor:
        n = x.shape[0]
        src, dst = edges  # messages src -> dst, self-loops included
        z = self.lin(x).view(n, self.heads, self.out_dim)  # (n, H, F)
        score = F.leaky_relu(
            (z * self.att_src).sum(-1)[src] + (z * self.att_dst).sum(-1)[dst], 0.2
        )  # (E, H)
        top = torch.full((n, self.heads), -torch.inf, device=x.device, dtype=x.dtype)
        top = top.scatter_reduce(
            0, dst.unsqueeze(1).expand_as(score), score, "amax"
        )  # (n, H)
        w = (score - top[dst]).exp()  # (E, H)
        den = torch.zeros(n, self.heads, device=x.device, dtype=x.dtype).index_add_(
            0, dst, w
        )
        alpha = F.dropout(w / den[dst], dropout, self.training)  # (E, H)
        out = torch.zeros_like(z).index_add_(
            0, dst, alpha.unsqueeze(-1) * z[src]
        )  # (n, H, F)
        out = out.reshape(n, -1) if self.concat else out.mean(dim=1)
        return out + self.bias


class GAT(nn.Module):
    """Two GAT layers: ``heads`` heads of width ``hidden`` (concatenated, ELU), then one
    averaged head."""

    def __init__(
        self,
        in_dim: int,
        hidden: int,
        out_dim: int,
        heads: int = 4,
        dropout: float = 0.5,
    ):
        super().__init__()
        _check_sizes(in_dim=in_dim, hidden=hidden, out_dim=out_dim, heads=heads)
        _check_dropout(dropout)
        self.l1 = GATLayer(in_dim, hidden, heads, concat=True)
        self.l2 = GATLayer(hidden * heads, out_dim, 1, concat=False)
        self.dropout = dropout

    def forward(self, x: torch.Tensor, edges: torch.Tensor) -> torch.Tensor:
        h = F.elu(
            self.l1(F.dropout(x, self.dropout, self.training), edges, self.dropout)
        )
        return self.l2(F.dropout(h, self.dropout, self.training), edges, self.dropout)


def sym_norm(a: torch.Tensor) -> torch.Tensor:
    """D^{-1/2} A D^{-1/2} of a coalesced sparse 0/1 matrix (rows without entries stay
    empty)."""
    deg = torch.sparse.sum(a, dim=1).to_dense().clamp(min=1)  # (n,)
    r, c = a.indices()
    return _coo(a.indices(), deg[r].rsqrt() * deg[c].rsqrt(), a.shape, coalesced=True)


def two_hop(edge_index: torch.Tensor, num_nodes: int, *, device=None):
    """H2GCN's neighbourhoods: the 1-hop adjacency A₁ (no self-loops) and the strict
    2-hop adjacency A₂ (nodes at distance exactly 2), both symmetrically normalised,
    sparse (n, n)."""
    num_nodes = check_int("num_nodes", num_nodes, minimum=1)
    r1, c1 = ego_masks(edge_index, num_nodes, 1, device=device).indices()
    r2, c2 = ego_masks(edge_index, num_nodes, 2, device=device).indices()
    k1 = r1 * num_nodes + c1  # sorted keys of dist ≤ 1
    k2 = r2 * num_nodes + c2  # sorted keys of dist ≤ 2
    hit = torch.searchsorted(k1, k2).clamp(max=k1.numel() - 1)
    strict2 = k1[hit] != k2
    one = r1 != c1
    out = []
    for r, c in ((r1[one], c1[one]), (r2[strict2], c2[strict2])):
        a = _coo(
            torch.stack([r, c]),
            torch.ones(r.numel(), device=r.device),
            (num_nodes, num_nodes),
            coalesced=True,
        )
        out.append(sym_norm(a))
    return tuple(out)


class GIN(nn.Module):
    """Two GIN layers (Xu et al.): h' = MLP((1 + ε) h_v + Σ_{u ∈ N(v)} h_u) with a
    two-layer MLP and a learnable ε, then a linear read-out. Sum aggregation of
    nonlinear per-node embeddings is injective on multisets, the strongest aggregator
    of the message-passing family."""

    def __init__(self, in_dim: int, hidden: int, out_dim: int, dropout: float = 0.5):
        super().__init__()
        _check_sizes(in_dim=in_dim, hidden=hidden, out_dim=out_dim)
        _check_dropout(dropout)
        dims = [(in_dim, hidden), (hidden, hidden)]
        self.mlps = nn.ModuleList(
            nn.Sequential(nn.Linear(a, b), nn.ReLU(), nn.Linear(b, b)) for a, b in dims
        )
        self.eps = nn.Parameter(torch.zeros(2))
        self.out = nn.Linear(hidden, out_dim)
        self.dropout = dropout

    def forward(self, x: torch.Tensor, adj: torch.Tensor) -> torch.Tensor:
        h = x
        for i, mlp in enumerate(self.mlps):
            h = mlp((1 + self.eps[i]) * h + _spmm(adj, h))  # (n, hidden)
            h = F.dropout(F.relu(h), self.dropout, self.training)
        return self.out(h)


class H2GCN(nn.Module):
    """H2GCN (Zhu et al. 2020), the heterophily design: an ego embedding r₀ =
    relu(X W), two rounds r_k = [A₁ r_{k−1} ‖ A₂ r_{k−1}] over the 1-hop and the strict
    2-hop neighbourhoods (no self-loops), and a linear classifier on [r₀ ‖ r₁ ‖ r₂]."""

    def __init__(self, in_dim: int, hidden: int, out_dim: int, dropout: float = 0.5):
        super().__init__()
        _check_sizes(in_dim=in_dim, hidden=hidden, out_dim=out_dim)
        _check_dropout(dropout)
        self.embed = nn.Linear(in_dim, hidden, bias=False)
        self.out = nn.Linear(7 * hidden, out_dim)  # r₀ (1) + r₁ (2) + r₂ (4)
        self.dropout = dropout

    def forward(self, x: torch.Tensor, hops) -> torch.Tensor:
        a1, a2 = hops
        r = [F.relu(self.embed(x))]  # (n, hidden)
        for _ in range(2):
            r.append(torch.cat([_spmm(a1, r[-1]), _spmm(a2, r[-1])], 1))
        z = F.dropout(torch.cat(r, dim=1), self.dropout, self.training)
        return self.out(z)


def _to_csr(a: torch.Tensor) -> torch.Tensor:
    """A sparse COO matrix in CSR layout (its products and their gradients are about
    twice as fast on the CPU); torch's beta-state warning is silenced."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return a.to_sparse_csr()


def _gat_edges(edge_index: torch.Tensor, n: int) -> torch.Tensor:
    a = adjacency(edge_index, n, self_loops=True, device=edge_index.device)
    return a.indices()  # (2, 2E + n) both directions plus self-loops


def train_gnn(
    kind: str,
    x: torch.Tensor,
    edge_index: torch.Tensor,
    y: torch.Tensor,
    train: torch.Tensor,
    test: torch.Tensor,
    *,
    hidden: int = 32,
    epochs: int = 200,
    lr: float = 0.01,
    weight_decay: float = 5e-4,
    dropout: float = 0.5,
    heads: int = 4,
) -> float:
    """Train a 2-layer ``"gcn"``, ``"gat"``, ``"gin"`` or ``"h2gcn"`` full-batch on the
    ``train`` nodes (Adam, fixed epochs, no early stopping) and return the accuracy on
    ``test``. Seed torch beforehand."""
    if kind not in GNN_KINDS:
        raise ValueError(f"kind: expected one of {GNN_KINDS}, got {kind!r}")
    check_tensor("x", x, ndim=2, floating=True)
    if x.shape[0] < 1 or x.shape[1] < 1:
        raise ValueError(
            f"x: expected at least one node with at least one feature, got shape "
            f"{tuple(x.shape)}"
        )
    check_tensor("x", x, finite=True)
    check_tensor("y", y, shape=(x.shape[0],), integer=True)
    if not bool((y >= 0).all()):
        raise ValueError("y: expected class labels >= 0, got a negative one")
    for name, idx in (("train", train), ("test", test)):
        _check_nodes_of(name, idx, x.shape[0])
    epochs = check_int("epochs", epochs, minimum=1)
    lr = check_positive("lr", lr)
    _check_sizes(hidden=hidden, heads=heads)
    if kind == "gat" and hidden // heads < 1:
        raise ValueError(
            f"hidden: expected at least heads={heads} (hidden // heads units per "
            f"head), got {hidden}"
        )
    check_nonnegative("weight_decay", weight_decay)
    _check_dropout(dropout)
    n, C = x.shape[0], int(y.max()) + 1
    if kind == "gcn":
        model, graph = (
            GCN(x.shape[1], hidden, C, dropout),
            gcn_norm(edge_index, n, device=x.device),
        )
    elif kind == "gat":
        model, graph = (
            GAT(x.shape[1], hidden // heads, C, heads, dropout),
            _gat_edges(edge_index, n),
        )
    elif kind == "gin":
        a = adjacency(edge_index, n, self_loops=False, device=x.device)
        model, graph = GIN(x.shape[1], hidden, C, dropout), a.to(x.dtype)
    else:
        model, graph = (
            H2GCN(x.shape[1], hidden, C, dropout),
            two_hop(edge_index, n, device=x.device),
        )
    if kind in ("gcn", "gin"):
        graph = _to_csr(graph)
    elif kind == "h2gcn":
        graph = tuple(_to_csr(a) for a in graph)
    model = model.to(x.device)
    opt = torch.optim.Adam(model.parameters(), lr=lr, weight_decay=weight_decay)
    for _ in range(epochs):
        model.train()
        opt.zero_grad(set_to_none=True)
        F.cross_entropy(model(x, graph)[train], y[train]).backward()
        opt.step()
    model.eval()
    with torch.no_grad():
        pred = model(x, graph)[test].argmax(dim=1)
    return float((pred == y[test]).float().mean())


def gbdt_accuracy(
    features: torch.Tensor,
    y: torch.Tensor,
    train: torch.Tensor,
    test: torch.Tensor,
    *,
    seed: int = 0,
    max_depth: int = 5,
    max_iter: int = 100,
    learning_rate: float = 0.1,
    max_bins: int = 255,
) -> float:
    """Gradient-boosted trees on ``features`` (n, f) (rows indexed by node): fit on
    ``train``, accuracy on ``test``. scikit-learn's HistGradientBoostingClassifier
    replaces the paper's XGBoost (same family: histogram-binned, depth-limited boosted
    trees; max depth 5 as in the paper's setup). ``max_bins``: histogram bins per
    feature (255: scikit-learn's and XGBoost's default)."""
    from sklearn.ensemble import HistGradientBoostingClassifier

    check_tensor("features", features, ndim=2, floating=True)
    if features.shape[0] < 1 or features.shape[1] < 1:
        raise ValueError(
            f"features: expected at least one row and one column, got shape "
            f"{tuple(features.shape)}"
        )
    check_tensor("features", features, finite=True)
    check_tensor("y", y, ndim=1, integer=True, nonempty=True)
    n = min(
        features.shape[0], y.shape[0]
    )  # rows are node ids: features of the labelled nodes
    for name, idx in (("train", train), ("test", test)):
        _check_nodes_of(name, idx, n)
        if not bool((y[idx] >= 0).all()):
            raise ValueError(
                f"y: expected class labels >= 0 on the {name} nodes, got a negative one"
            )
    check_int("seed", seed, 0)
    check_int("max_depth", max_depth, 1)
    check_int("max_iter", max_iter, 1)
    check_positive("learning_rate", learning_rate)
    check_int("max_bins", max_bins, 2)
    if max_bins > 255:
        raise ValueError(f"max_bins: expected an int in [2, 255], got {max_bins}")
    X = features.detach().cpu().double().numpy()
    yy = y.detach().cpu().numpy()
    tr, te = train.cpu().numpy(), test.cpu().numpy()
    clf = HistGradientBoostingClassifier(
        max_depth=max_depth,
        max_iter=max_iter,
        learning_rate=learning_rate,
        max_bins=max_bins,
        early_stopping=False,
        random_state=seed,
    )
    clf.fit(X[tr], yy[tr])
    return float(np.mean(clf.predict(X[te]) == yy[te]))
