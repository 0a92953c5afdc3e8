"""Naive references for the batched MoE kernels: plain Python loops over tokens and
experts.

They define what :func:`lib.scmoe.moe.route`, :func:`~lib.scmoe.moe.dispatch`,
:func:`~lib.scmoe.moe.combine` and :class:`~lib.scmoe.moe.MoE` must compute; the tests
compare them on the same inputs and ``benchmarks/bench_scmoe.py`` times them side by
side.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F


def route_naive(logits: torch.Tensor, k: int, capacity_factor: float):
    """Per token, per choice: (expert, slot, kept, gate) lists in GShard priority order,
    and C."""
    probs = logits.float().softmax(-1)
    n, n_experts = probs.shape
    cap = max(1, math.ceil(capacity_factor * k * n / n_experts))
    choices = []
    for t in range(n):
        order = sorted(range(n_experts), key=lambda e: (-probs[t, e].item(), e))[:k]
        p = [probs[t, e].item() for e in order]
        w = p if k == 1 else [q / sum(p) for q in p]
        choices.append(list(zip(order, w)))
    count = [0] * n_experts
    table = {}
    for j in range(k):  # every first choice before any second choice
        for t in range(n):
            e, w = choices[t][j]
            slot = count[e]
            count[e] += 1
            table[(j, t)] = (e, slot, slot < cap, w if slot < cap else 0.0)
    return table, cap


def moe_naive(
    x: torch.Tensor,
    logits: torch.Tensor,
    k: int,
    capacity_factor: float,
    w1,
    b1,
    w2,
    b2,
) -> torch.Tensor:
    """y_t = Σ_j g_j · FFN_{e_j}(x_t) over the kept copies, one token and one expert at
    a time."""
    table, _ = route_naive(logits, k, capacity_factor)
    y = torch.zeros_like(x)
    for (j, t), (e, _slot, kept, w) in table.items():
        if kept:
            h = F.gelu(x[t] @ w1[e] + b1[e, 0])
            y[t] += w * (h @ w2[e] + b2[e, 0])
    return y


def load_balance_naive(probs: torch.Tensor) -> float:
    """E · Σ_e (share of tokens whose argmax is e) · (mean probability of e), with
    loops."""
    n, n_experts = probs.shape
    total = 0.0
    for e in range(n_experts):
        f = sum(1 for t in range(n) if int(probs[t].argmax()) == e) / n
        p = sum(probs[t, e].item() for t in range(n)) / n
        total += f * p
    return n_experts * total
