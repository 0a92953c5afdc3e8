"""Message-passing networks in plain torch sparse ops: GCN and a SAGE-style layer with
separate self and neighbour weights, each followed by a linear classifier head.

``forward`` returns the logits and the list of node embeddings H^(1), …, H^(L) after
each message-passing layer (the input features are H^(0)); JLDE reads all of them.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from lib.common import (
    check_choice,
    check_int,
    check_nonnegative,
    check_positive,
    check_probability,
    check_tensor,
)

KINDS = ("gcn", "sage", "mlp")


def propagation(
    edge_index: torch.Tensor, n: int, kind: str = "gcn"
) -> torch.Tensor | None:
    """The sparse propagation matrix of a layer kind, (n, n).

    ``gcn``: D̃^{-1/2}(A + I)D̃^{-1/2} with D̃ the degrees of A + I (Kipf & Welling);
    ``sage``: the row-normalised D^{-1}A (mean over neighbours; isolated nodes get 0);
    ``mlp``: None (no message passing: the negative control).
    """
    check_choice("kind", kind, KINDS)
    n = check_int("n", n, minimum=1)
    check_tensor("edge_index", edge_index, ndim=2, integer=True)
    if edge_index.shape[0] != 2:
        raise ValueError(
            f"edge_index: expected shape (2, E), got {tuple(edge_index.shape)}"
        )
    if edge_index.numel() and (int(edge_index.min()) < 0 or int(edge_index.max()) >= n):
        raise ValueError(f"edge_index: expected node ids in [0, {n}), got others")
    if kind == "mlp":
        return None
    dev = edge_index.device
    src, dst = edge_index
    if kind == "gcn":
        loop = torch.arange(n, device=dev)
        src, dst = torch.cat([src, loop]), torch.cat([dst, loop])
    w = torch.ones(src.numel(), device=dev)
    deg = torch.zeros(n, device=dev).index_add_(0, dst, w)  # (n,)
    if kind == "gcn":
        w = deg[src].rsqrt() * deg[dst].rsqrt()  # eq. (1): D̃^{-1/2} Ã D̃^{-1/2}
    else:
        w = w / deg[dst].clamp_min(1)  # eq. (2): mean over the neighbours
    return torch.sparse_coo_tensor(
        torch.stack([dst, src]), w, (n, n), check_invariants=False
    ).coalesce()  # row = receiving node


class MPNN(nn.Module):
    """L message-passing layers of width ``hidden`` (ReLU, dropout), a linear head."""

    def __init__(
        self,
        in_dim: int,
        hidden: int,
        out_dim: int,
        depth: int = 2,
        kind: str = "gcn",
        dropout: float = 0.5,
    ):
        super().__init__()
        in_dim = check_int("in_dim", in_dim, 1)
        hidden = check_int("hidden", hidden, 1)
        out_dim = check_int("out_dim", out_dim, 1)
        self.depth = check_int("depth", depth, 1)
        self.kind = check_choice("kind", kind, KINDS)
        self.dropout = check_probability("dropout", dropout)
        dims = [in_dim] + [hidden] * depth
        self.lin = nn.ModuleList(nn.Linear(a, b) for a, b in zip(dims, dims[1:]))
        self.nb = nn.ModuleList(
            nn.Linear(a, b, bias=False) for a, b in zip(dims, dims[1:])
        )  # SAGE's neighbour weights (unused by gcn and mlp)
        self.head = nn.Linear(hidden, out_dim)

    def layer(self, i: int, h: torch.Tensor, P) -> torch.Tensor:
        if self.kind == "gcn":
            return torch.sparse.mm(P, self.lin[i](h))  # eq. (1): Â H W
        if self.kind == "sage":
            return self.lin[i](h) + self.nb[i](torch.sparse.mm(P, h))  # eq. (2)
        return self.lin[i](h)  # mlp: the node alone

    def forward(self, x: torch.Tensor, P) -> tuple[torch.Tensor, list[torch.Tensor]]:
        h, states = x, []
        for i in range(self.depth):
            h = F.dropout(h, self.dropout, self.training)
            h = F.relu(self.layer(i, h, P))  # (n, hidden)
            states.append(h)
        return self.head(F.dropout(h, self.dropout, self.training)), states


def train_mpnn(
    graph,
    train_mask: torch.Tensor,
    num_classes: int,
    *,
    kind: str = "gcn",
    hidden: int = 64,
    depth: int = 2,
    epochs: int = 200,
    lr: float = 0.01,
    weight_decay: float = 5e-4,
    dropout: float = 0.5,
    seed: int = 0,
) -> MPNN:
    """Full-batch Adam on the cross-entropy of the training nodes; returns the model in
    eval mode. Labels ≥ ``num_classes`` must not be in ``train_mask`` (left-out
    classes)."""
    from .graph import Graph

    if not isinstance(graph, Graph):
        raise TypeError(f"graph: expected a Graph, got {type(graph).__name__}")
    C = check_int("num_classes", num_classes, 2)
    check_tensor("train_mask", train_mask, shape=(graph.num_nodes,))
    if train_mask.dtype != torch.bool:
        raise TypeError(f"train_mask: expected a bool tensor, got {train_mask.dtype}")
    if not bool(train_mask.any()):
        raise ValueError("train_mask: expected at least one training node, got none")
    if int(graph.y[train_mask].max()) >= C:
        raise ValueError(
            f"train_mask: expected training labels < num_classes = {C}, got "
            f"{int(graph.y[train_mask].max())}"
        )
    epochs = check_int("epochs", epochs, 1)
    check_positive("lr", lr)
    check_nonnegative("weight_decay", weight_decay)
    check_int("seed", seed, 0)
    dev = graph.x.device
    # the weights and the dropout masks come from ``seed``; the global state is restored
    with torch.random.fork_rng(devices=[] if dev.type == "cpu" else [dev]):
        torch.manual_seed(seed)
        model = MPNN(graph.x.shape[1], hidden, C, depth, kind, dropout).to(dev)
        P = propagation(graph.edge_index, graph.num_nodes, kind)
        opt = torch.optim.Adam(model.parameters(), lr=lr, weight_decay=weight_decay)
        y = graph.y[train_mask]
        model.train()
        for _ in range(epochs):
            opt.zero_grad()
            logits, _ = model(graph.x, P)
            F.cross_entropy(logits[train_mask], y).backward()
            opt.step()
    return model.eval()


@torch.no_grad()
def embed(model: MPNN, graph) -> tuple[torch.Tensor, list[torch.Tensor]]:
    """Logits (n, C) and the states [X, H^(1), …, H^(L)] of a trained model."""
    from .graph import Graph

    if not isinstance(model, MPNN):
        raise TypeError(f"model: expected an MPNN, got {type(model).__name__}")
    if not isinstance(graph, Graph):
        raise TypeError(f"graph: expected a Graph, got {type(graph).__name__}")
    if graph.x.shape[1] != model.lin[0].in_features:
        raise ValueError(
            f"graph: expected {model.lin[0].in_features} features per node, got "
            f"{graph.x.shape[1]}"
        )
    P = propagation(graph.edge_index, graph.num_nodes, model.kind)
    model.eval()
    logits, states = model(graph.x, P)
    return logits, [graph.x] + states
