"""Mixture-of-experts building blocks: top-k routing with capacity, dispatch/combine,
batched experts.

Notation: N tokens of width D, E experts of hidden width H, k choices per token,
capacity C slots per expert. Everything is a batched tensor op; the only loops in this
file are over the k ≤ 2 choices inside the router's priority order (a cumulative sum
does the per-expert counting), never over experts or tokens. :mod:`.reference` keeps the
plain per-token, per-expert loops the tests compare to.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import torch
import torch.nn as nn
import torch.nn.functional as F

from lib.common import (
    check_finite,
    check_int,
    check_nonnegative,
    check_positive,
    check_tensor,
)


class Routing(NamedTuple):
    """Where each token's k copies go. Every field of shape (k, N) is in choice-major
    order."""

    expert: torch.Tensor  # (k, N) long: chosen expert of choice j for token n
    slot: (
        torch.Tensor
    )  # (k, N) long: position inside that expert's buffer (may be ≥ C: dropped)
    keep: torch.Tensor  # (k, N) bool: slot < capacity
    gate: torch.Tensor  # (k, N) float: combine weight (0 where dropped)
    capacity: int  # C
    probs: torch.Tensor  # (N, E) router softmax
    aux: torch.Tensor  # () load-balancing loss, eq. (3)


def capacity(n_tokens: int, n_experts: int, k: int, capacity_factor: float) -> int:
    """Slots per expert, eq. (2): C = ⌈cf · k · N / E⌉ (at least 1)."""
    n_tokens, n_experts = (
        check_int("n_tokens", n_tokens, 1),
        check_int("n_experts", n_experts, 1),
    )
    k, cf = check_int("k", k, 1), check_positive("capacity_factor", capacity_factor)
    return max(1, math.ceil(cf * k * n_tokens / n_experts))


def load_balance_loss(
    probs: torch.Tensor, first_choice: torch.Tensor, *, check: bool = True
) -> torch.Tensor:
    """Switch/GShard auxiliary loss, eq. (3): E · Σ_e f_e P_e (= 1 when routing is
    uniform).

    ``probs`` (N, E) router probabilities, ``first_choice`` (N,) long: each token's
    top-1 expert. f_e (the fraction of tokens whose first choice is e) carries no
    gradient; P_e does. ``check=False`` skips the value checks (the router, which built
    both).
    """
    check_tensor("probs", probs, ndim=2, floating=True)
    if check and (probs.shape[0] < 1 or probs.shape[1] < 1):
        raise ValueError(
            f"probs: expected at least one token and one expert, got shape "
            f"{tuple(probs.shape)}"
        )
    check_tensor("first_choice", first_choice, shape=(probs.shape[0],))
    if check:
        if not bool(((probs >= 0) & (probs <= 1)).all()):
            raise ValueError(
                "probs: expected probabilities in [0, 1], got values outside (or NaN)"
            )
        if first_choice.dtype != torch.long:
            raise TypeError(
                f"first_choice: expected a torch.long tensor of expert ids, got dtype "
                f"{first_choice.dtype}"
            )
        if not bool(((first_choice >= 0) & (first_choice < probs.shape[1])).all()):
            raise ValueError(
                f"first_choice: expected expert ids in [0, {probs.shape[1]}), got "
                f"values outside"
            )
    n_experts = probs.shape[1]
    frac = F.one_hot(first_choice, n_experts).to(probs.dtype).mean(0)  # f_e, (E,)
    return n_experts * (frac * probs.mean(0)).sum()  # eq. (3)


def route(
    logits: torch.Tensor, k: int, capacity_factor: float, *, check: bool = True
) -> Routing:
    """Top-k gating with capacity, eqs. (1)-(3), GShard priority: all first choices
    before any second.

    ``logits`` (N, E). Top-1 weights are the raw probability p_e (Switch), top-k weights
    are renormalised over the k chosen experts (GShard). Tokens beyond an expert's
    capacity are dropped: their copy gets weight 0 and contributes nothing (the residual
    stream carries the token on). A NaN logit raises (it would route silently);
    ``check=False`` skips that read (the MoE's forward).
    """
    check_tensor("logits", logits, ndim=2, floating=True)
    n, n_experts = logits.shape
    k = check_int("k", k, 1)
    if k > n_experts:
        raise ValueError(f"k: expected at most n_experts={n_experts} choices, got {k}")
    if n == 0:
        raise ValueError("logits: expected at least one token, got shape (0, E)")
    if check:
        check_tensor("logits", logits, finite=True)
    probs = logits.float().softmax(-1)  # eq. (1), (N, E)
    top_p, top_i = probs.topk(k, dim=-1)  # (N, k)
    gate = top_p if k == 1 else top_p / top_p.sum(-1, keepdim=True)  # Switch / GShard
    expert = top_i.t()  # (k, N) choice-major
    onehot = F.one_hot(expert.reshape(-1), n_experts)  # (kN, E)
    slot = (
        ((onehot.cumsum(0) - 1) * onehot).sum(-1).view(k, n)
    )  # running count per expert
    cap = capacity(n, n_experts, k, capacity_factor)  # eq. (2)
    keep = slot < cap
    gate = gate.t() * keep  # (k, N)
    aux = load_balance_loss(probs, top_i[:, 0], check=False)  # eq. (3)
    return Routing(expert, slot, keep, gate.to(logits.dtype), cap, probs, aux)


def _check_routing(r) -> None:
    if not isinstance(r, Routing):
        raise TypeError(f"r: expected a Routing (see route), got {type(r).__name__}")


def dispatch(
    x: torch.Tensor, r: Routing, n_experts: int, *, check: bool = True
) -> torch.Tensor:
    """Scatter the kept token copies into per-expert buffers: x (N, D) -> (E, C, D),
    zero padding.

    ``check=False`` skips the added checks (the MoE's forward and the timed schedules).
    """
    check_tensor("x", x, ndim=2)
    if check:
        _check_routing(r)
        check_tensor("x", x, floating=True, finite=True)
        check_int("n_experts", n_experts, 1)
        if r.probs.shape[1] != n_experts:
            raise ValueError(
                f"n_experts: expected the routing's {r.probs.shape[1]} experts, got "
                f"{n_experts}"
            )
    if x.shape[0] != r.expert.shape[1]:
        raise ValueError(
            f"x: expected {r.expert.shape[1]} tokens (the routing's), got {x.shape[0]}"
        )
    n, d = x.shape
    tok = torch.arange(n, device=x.device).expand_as(r.expert)[
        r.keep
    ]  # (M,) kept copies
    dest = (r.expert * r.capacity + r.slot)[r.keep]  # (M,) flat slot
    buf = x.new_zeros(n_experts * r.capacity, d).index_copy(
        0, dest, x[tok]
    )  # slots are unique
    return buf.view(n_experts, r.capacity, d)


def combine(y: torch.Tensor, r: Routing, *, check: bool = True) -> torch.Tensor:
    """Gather expert outputs back to tokens, weighted by the gates, eq. (4): (E, C, D)
    -> (N, D).

    ``check=False`` skips the added checks (the MoE's forward and the timed schedules).
    """
    check_tensor("y", y, ndim=3)
    if check:
        _check_routing(r)
        check_tensor("y", y, floating=True, finite=True)
        if y.shape[0] != r.probs.shape[1]:
            raise ValueError(
                f"y: expected the routing's {r.probs.shape[1]} experts in dim 0, got "
                f"shape {tuple(y.shape)}"
            )
    n_experts, cap, d = y.shape
    if cap != r.capacity:
        raise ValueError(f"y: expected capacity {r.capacity} in dim 1, got {cap}")
    n = r.expert.shape[1]
    tok = torch.arange(n, device=y.device).expand_as(r.expert)[r.keep]  # (M,)
    src = (r.expert * cap + r.slot)[r.keep]  # (M,)
    contrib = y.reshape(n_experts * cap, d)[src] * r.gate[r.keep].unsqueeze(
        -1
    )  # (M, D)
    return y.new_zeros(n, d).index_add(0, tok, contrib)  # Σ_j g_j E_j(x)


def expert_ffn(
    buf: torch.Tensor, w1, b1, w2, b2, *, check: bool = True
) -> torch.Tensor:
    """E GELU FFNs at once: (E, C, D) @ (E, D, H) -> GELU -> @ (E, H, D), two batched
    matmuls.

    Shapes: ``buf`` (E, C, D), ``w1`` (E, D, H), ``b1`` (E, 1, H), ``w2`` (E, H, D),
    ``b2`` (E, 1, D). ``check=False`` skips the checks (the MoE's forward and the timed
    schedules)."""
    if check:
        _check_ffn(buf, w1, b1, w2, b2)
    h = F.gelu(torch.baddbmm(b1, buf, w1))  # (E, C, H)
    return torch.baddbmm(b2, h, w2)  # (E, C, D)


def _check_ffn(buf, w1, b1, w2, b2) -> None:
    check_tensor("buf", buf, ndim=3, floating=True)
    E, C, D = buf.shape
    if E < 1 or D < 1:
        raise ValueError(
            f"buf: expected shape (E, C, D) with E, D >= 1, got {tuple(buf.shape)}"
        )
    check_tensor("w1", w1, shape=(E, D, None), floating=True)
    H = w1.shape[2]
    for name, t, shape in (
        ("b1", b1, (E, 1, H)),
        ("w2", w2, (E, H, D)),
        ("b2", b2, (E, 1, D)),
    ):
        check_tensor(name, t, shape=shape, floating=True)
    for name, t in (("w1", w1), ("b1", b1), ("w2", w2), ("b2", b2)):
        if t.dtype != buf.dtype:
            raise TypeError(
                f"{name}: expected the dtype of buf ({buf.dtype}), got {t.dtype}"
            )
    for name, t in (("buf", buf), ("w1", w1), ("b1", b1), ("w2", w2), ("b2", b2)):
        check_tensor(name, t, finite=True)


class Experts(nn.Module):
    """E independent GELU FFNs D -> H -> D stored as stacked weights (E, D, H), (E, H,
    D)."""

    def __init__(self, n_experts: int, d_model: int, hidden: int):
        super().__init__()
        n_experts, d_model = (
            check_int("n_experts", n_experts, 1),
            check_int("d_model", d_model, 1),
        )
        hidden = check_int("hidden", hidden, 1)
        self.w1 = nn.Parameter(
            torch.randn(n_experts, d_model, hidden) / math.sqrt(d_model)
        )
        self.b1 = nn.Parameter(torch.zeros(n_experts, 1, hidden))
        self.w2 = nn.Parameter(
            torch.randn(n_experts, hidden, d_model) / math.sqrt(hidden)
        )
        self.b2 = nn.Parameter(torch.zeros(n_experts, 1, d_model))

    def forward(self, buf: torch.Tensor, experts: slice = slice(None)) -> torch.Tensor:
        """Apply experts ``experts`` (all by default) to their buffers (E', C, D)."""
        return expert_ffn(
            buf,
            self.w1[experts],
            self.b1[experts],
            self.w2[experts],
            self.b2[experts],
            check=False,
        )


class MoE(nn.Module):
    """A top-k MoE FFN: router, capacity, dispatch, experts, combine. forward -> (y, aux
    loss)."""

    def __init__(
        self,
        d_model: int,
        n_experts: int,
        k: int = 1,
        capacity_factor: float = 1.25,
        hidden: int | None = None,
    ):
        super().__init__()
        d_model, n_experts = (
            check_int("d_model", d_model, 1),
            check_int("n_experts", n_experts, 1),
        )
        self.k = check_int("k", k, 1)
        if self.k > n_experts:
            raise ValueError(f"k: expected at most n_experts={n_experts}, got {k}")
        self.capacity_factor = check_positive("capacity_factor", capacity_factor)
        if hidden is not None:
            check_int("hidden", hidden, 1)
        self.n_experts = n_experts
        self.router = nn.Linear(d_model, n_experts, bias=False)
        nn.init.normal_(self.router.weight, std=0.02)
        self.experts = Experts(n_experts, d_model, hidden or 4 * d_model)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """x (..., D) -> (y (..., D), aux ())."""
        check_tensor("x", x, floating=True)
        flat = x.reshape(-1, x.shape[-1])  # (N, D)
        r = route(self.router(flat), self.k, self.capacity_factor, check=False)
        y = combine(
            self.experts(dispatch(flat, r, self.n_experts, check=False)), r, check=False
        )  # (N, D)
        return y.view_as(x), r.aux
