"""Mixture of Tokenisation (MoT): every node weighs its own tokenisations.

GSM++'s MoT lets each node choose how it is tokenised. Here a node has two encodings:
its token in a node-level sequence (e.g. HAC-DFS: the whole graph as one sequence) and
its own short subgraph sequence (e.g. HAC-BFS: the node and its ancestor clusters),
each through its own global encoder. A gate reads both encodings and gives the node
softmax weights w_v over the two,

    h_v = w_v,node · h_v^node + w_v,sub · h_v^sub,
    w_v = softmax(W_g [h_v^node, h_v^sub]),

so a node can lean on the global sequence for a global question and on its
neighbourhood for a local one; the readout is GSM's ([mean, s, t] → MLP). The weights
are soft (trained end to end); ``weights`` returns them per node.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from lib.common import check_choice, check_int, check_tensor

from .experiment import make_dataset
from .graphs import NODE_TOKENS, SUBGRAPH_TOKENS
from .models import ENCODERS, GSM, SLinear


class MoT(nn.Module):
    """M stacked per-node mixtures of a node-level and a subgraph-level tokenisation.

    ``forward(xn, mn, query, node_mask, xs, ms, order)``: node-level tokens ``xn``
    (M, B, N, F) with ``mn`` (M, B, N) in token order; subgraph tokens ``xs``
    (M, B, N, L, F) with ``ms`` (M, B, N, L) in node order; ``order`` (M, B, N) long:
    token i of the node-level sequence is node ``order[..., i]`` (padding positions
    any distinct indices of padding nodes). Returns logits (M, B, classes)."""

    def __init__(self, m, encoder, feat, d=32, classes=8, parallel=True):
        super().__init__()
        encoder = check_choice("encoder", encoder, ENCODERS)
        for name, v in (("m", m), ("feat", feat), ("d", d), ("classes", classes)):
            check_int(name, v, 1)
        self.m, self.d = m, d
        self.node = GSM(m, encoder, feat, d, classes, parallel)
        self.sub = GSM(m, encoder, feat, d, classes, parallel)
        self.gate = SLinear(m, 2 * d, 2)
        self.head1, self.head2 = SLinear(m, 3 * d, d), SLinear(m, d, classes)

    def _check(self, xn, mn, query, node_mask, xs, ms, order):
        check_tensor("xn", xn, floating=True)
        if xn.ndim != 4 or xn.shape[0] != self.m:
            raise ValueError(
                f"xn: expected (M={self.m}, B, N, F), got {tuple(xn.shape)}"
            )
        M, B, N, Fe = xn.shape
        check_tensor("mn", mn, shape=(M, B, N))
        check_tensor("query", query, shape=(M, B, N, 2))
        check_tensor("node_mask", node_mask, shape=(M, B, N))
        check_tensor("xs", xs, floating=True)
        if xs.ndim != 5 or xs.shape[:3] != (M, B, N) or xs.shape[-1] != Fe:
            raise ValueError(
                f"xs: expected (M={M}, B={B}, N={N}, L, F={Fe}), got {tuple(xs.shape)}"
            )
        check_tensor("ms", ms, shape=xs.shape[:4])
        check_tensor("order", order, shape=(M, B, N))
        if order.dtype != torch.long:
            raise TypeError(f"order: expected a long tensor, got {order.dtype}")
        srt = order.sort(-1).values
        if not torch.equal(srt, torch.arange(N, device=order.device).expand_as(srt)):
            raise ValueError("order: expected a permutation of 0..N-1 in every graph")

    def weights(self, xn, mn, query, node_mask, xs, ms, order, check=True):
        """Per-token mixed states (M, B, N, D) in token order and the gate's weights
        (M, B, N, 2): [node-level, subgraph-level]."""
        if check:
            self._check(xn, mn, query, node_mask, xs, ms, order)
        mn, ms = mn.bool(), ms.bool()
        h1 = self.node.encode(xn, mn)  # (M, B, N, D), token order
        M, B, N, L, Fe = xs.shape
        h2 = self.sub.encode(xs.reshape(M, B * N, L, Fe), ms.reshape(M, B * N, L))
        cnt = ms.reshape(M, B * N, L, 1).sum(2).clamp_min(1)
        h2 = (h2.sum(2) / cnt).reshape(M, B, N, -1)  # node order
        h2 = torch.gather(h2, 2, order[..., None].expand(-1, -1, -1, h2.shape[-1]))
        w = torch.softmax(self.gate(torch.cat([h1, h2], -1)), -1)  # (M, B, N, 2)
        h = (w[..., :1] * h1 + w[..., 1:] * h2) * mn[..., None]
        return h, w

    def forward(self, xn, mn, query, node_mask, xs, ms, order):
        self._check(xn, mn, query, node_mask, xs, ms, order)
        h, _ = self.weights(xn, mn, query, node_mask, xs, ms, order, check=False)
        nm = node_mask.float()[..., None]
        mean = (h * nm).sum(2) / nm.sum(2).clamp_min(1)
        qs = (h * query[..., 0:1].float()).sum(2)
        qt = (h * query[..., 1:2].float()).sum(2)
        return self.head2(F.gelu(self.head1(torch.cat([mean, qs, qt], -1))))


def mot_inputs(
    task: str, cfg, seed: int, n_graphs: int, node="hac_dfs", sub="hac_bfs"
) -> dict:
    """The inputs of :class:`MoT` for one seed's graphs (no model axis): the node-level
    tokenisation ``node`` and the subgraph tokenisation ``sub`` of the same graphs
    (:func:`lib.gsm.make_dataset`), with the token order padded to a permutation;
    keys xn, mn, query, node_mask, xs, ms, order, y."""
    node = check_choice("node", node, NODE_TOKENS)
    sub = check_choice("sub", sub, SUBGRAPH_TOKENS)
    a = make_dataset(task, node, cfg, seed, n_graphs)
    b = make_dataset(task, sub, cfg, seed, n_graphs)
    N = a["x"].shape[1]
    order = torch.empty(n_graphs, N, dtype=torch.long)
    for i, o in enumerate(a["orders"]):
        n = len(o)
        order[i, :n] = torch.as_tensor(o)
        order[i, n:] = torch.arange(n, N)
    return {
        "xn": a["x"],
        "mn": a["mask"],
        "query": a["query"],
        "node_mask": a["node_mask"],
        "xs": b["x"],
        "ms": b["mask"],
        "order": order,
        "y": a["y"],
    }
