"""Stacked sequence models: M independent models trained at once.

Every weight has a leading model axis M (seeds × settings), every activation is
``(M, B, T, D)``; the losses of the M models are summed, and since Adam is
per-coordinate each model trains exactly as it would alone. Global encoders: a
Transformer layer (no positional encoding: permutation-equivariant), a Mamba-style
selective SSM layer (input-dependent Δ, B, C; a Hillis–Steele parallel scan), and the
hybrid (SSM, then Transformer).
"""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn import functional as F

from lib.common import check_choice, check_int, check_tensor

ENCODERS = ("transformer", "ssm", "hybrid")
#: the layers of each global encoder (the same depth for all three)
LAYERS = {
    "transformer": ("attn", "attn"),
    "ssm": ("ssm", "ssm"),
    "hybrid": ("ssm", "attn"),
}


class SLinear(nn.Module):
    """M stacked linear maps: ``(M, ..., i) -> (M, ..., o)``."""

    def __init__(self, m: int, i: int, o: int, bias: bool = True):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(m, i, o) / math.sqrt(i))
        self.bias = nn.Parameter(torch.zeros(m, o)) if bias else None

    def forward(self, x):
        shape = x.shape
        y = torch.bmm(x.reshape(shape[0], -1, shape[-1]), self.weight)
        if self.bias is not None:
            y = y + self.bias[:, None]
        return y.reshape(*shape[:-1], -1)


class SLayerNorm(nn.Module):
    """Layer norm with a per-model gain and shift."""

    def __init__(self, m: int, d: int):
        super().__init__()
        self.g = nn.Parameter(torch.ones(m, d))
        self.b = nn.Parameter(torch.zeros(m, d))

    def forward(self, x):  # (M, B, T, D)
        x = F.layer_norm(x, x.shape[-1:])
        return x * self.g[:, None, None] + self.b[:, None, None]


def _check_scan(a, b):
    check_tensor("a", a, floating=True, finite=True, nonempty=True)
    check_tensor("b", b, floating=True, finite=True, nonempty=True)
    if a.ndim < 3:
        raise ValueError(f"a: expected shape (M, B, T, ...), got {tuple(a.shape)}")
    if b.shape != a.shape or b.dtype != a.dtype:
        raise ValueError(
            f"a, b: expected one shape and dtype, got a {tuple(a.shape)} {a.dtype} and "
            f"b "
            f"{tuple(b.shape)} {b.dtype}"
        )


def scan_sequential(
    a: torch.Tensor, b: torch.Tensor, check: bool = True
) -> torch.Tensor:
    """Reference recurrence h_t = a_t ⊙ h_{t-1} + b_t (h_0 = 0) over dim 2, a loop.
    ``check=False`` (inside the model) skips the input checks."""
    if check:
        _check_scan(a, b)
    h, out = torch.zeros_like(b[:, :, 0]), []
    for t in range(b.shape[2]):
        h = a[:, :, t] * h + b[:, :, t]  # eq. (2)
        out.append(h)
    return torch.stack(out, 2)


def scan_parallel(a: torch.Tensor, b: torch.Tensor, check: bool = True) -> torch.Tensor:
    """The same recurrence by a Hillis–Steele scan: ⌈log₂ T⌉ steps of the associative
    combine (a₁, b₁) ∘ (a₂, b₂) = (a₁a₂, a₂b₁ + b₂), no loop over time."""
    if check:
        _check_scan(a, b)
    T, off = b.shape[2], 1
    while off < T:
        a_prev = F.pad(a[:, :, :-off], (0,) * (2 * (a.dim() - 3)) + (off, 0), value=1.0)
        b_prev = F.pad(b[:, :, :-off], (0,) * (2 * (b.dim() - 3)) + (off, 0))
        b = a * b_prev + b  # eq. (2), combined over windows of 2·off
        a = a * a_prev
        off *= 2
    return b


class SelectiveSSM(nn.Module):
    """A Mamba-style selective SSM layer (pre-norm, residual, SiLU gate; no conv).

    h_t = exp(Δ_t A) h_{t-1} + Δ_t B_t x_t,  y_t = C_t · h_t + D x_t, with
    Δ_t = softplus(W_Δ x_t), B_t = W_B x_t, C_t = W_C x_t (input-dependent)."""

    def __init__(self, m: int, d: int, state: int = 4, parallel: bool = True):
        super().__init__()
        m, d = check_int("m", m, 1), check_int("d", d, 1)
        state = check_int("state", state, 1)
        self.norm = SLayerNorm(m, d)
        self.inp = SLinear(m, d, 2 * d)
        self.dbc = SLinear(m, d, d + 2 * state)
        a0 = torch.log(torch.arange(1, state + 1, dtype=torch.float32))
        self.A_log = nn.Parameter(a0.repeat(m, d, 1))  # (M, D, N)
        self.D = nn.Parameter(torch.ones(m, d))
        self.out = SLinear(m, d, d)
        self.state, self.parallel = state, parallel

    def forward(self, x, mask):  # x (M, B, T, D), mask (M, B, T)
        u, z = self.inp(self.norm(x)).chunk(2, -1)  # (M, B, T, D) each
        u = u * mask[..., None]
        dt, Bm, Cm = self.dbc(u).split([u.shape[-1], self.state, self.state], -1)
        dt = F.softplus(dt)  # (M, B, T, D)
        A = -torch.exp(self.A_log)[:, None, None]  # (M, 1, 1, D, N)
        a = torch.exp(dt[..., None] * A)  # eq. (1): discretised A, (M, B, T, D, N)
        b = (dt * u)[..., None] * Bm[..., None, :]  # (M, B, T, D, N)
        h = (scan_parallel if self.parallel else scan_sequential)(a, b, check=False)
        y = (h * Cm[..., None, :]).sum(-1) + self.D[:, None, None] * u  # (M, B, T, D)
        return x + self.out(y * F.silu(z))


class Attention(nn.Module):
    """A pre-norm Transformer layer (multi-head self-attention + MLP), key-padding
    masked; no positional encoding."""

    def __init__(self, m: int, d: int, heads: int = 4):
        super().__init__()
        self.n1, self.n2 = SLayerNorm(m, d), SLayerNorm(m, d)
        self.qkv, self.proj = SLinear(m, d, 3 * d), SLinear(m, d, d)
        self.fc1, self.fc2 = SLinear(m, d, 2 * d), SLinear(m, 2 * d, d)
        self.heads = heads

    def forward(self, x, mask):  # x (M, B, T, D), mask (M, B, T)
        M, B, T, D = x.shape
        q, k, v = self.qkv(self.n1(x)).chunk(3, -1)
        q, k, v = (
            t.reshape(M * B, T, self.heads, D // self.heads).transpose(1, 2)
            for t in (q, k, v)
        )  # (M·B, H, T, D/H)
        keep = mask.reshape(M * B, 1, 1, T)
        keep = keep | ~keep.any(-1, keepdim=True)  # all-padding rows: no NaN
        att = F.scaled_dot_product_attention(q, k, v, attn_mask=keep)
        att = att.transpose(1, 2).reshape(M, B, T, D)
        x = x + self.proj(att)
        return x + self.fc2(F.gelu(self.fc1(self.n2(x))))


class GSM(nn.Module):
    """A stack of M graph sequence models: token embedding → local encoder → global
    encoder → readout.

    ``forward(x, mask, query, node_mask, adj=None)``: node-level tokens ``x``
    (M, B, N, F) with ``mask`` (M, B, N); or subgraph tokens ``x`` (M, B, N, L, F)
    with ``mask`` (M, B, N, L), which the encoder runs as B·N short sequences and
    averages per node. ``query`` (M, B, N, 2) marks the query tokens s and t,
    ``node_mask`` (M, B, N) the real nodes. Local encoder (node-level tokens, when
    ``adj`` (M, B, N, N) in token order is given): one sum-aggregation GNN layer,
    h_v ← h_v + W Σ_{u ~ v} h_u (GIN-style; a member given an all-zero ``adj`` runs
    without it, exactly). Readout: [mean over nodes, s's token, t's token] → MLP →
    logits (M, B, classes).
    """

    def __init__(self, m, encoder, feat, d=32, classes=8, parallel=True):
        super().__init__()
        encoder = check_choice("encoder", encoder, ENCODERS)
        for name, v in (("m", m), ("feat", feat), ("d", d), ("classes", classes)):
            check_int(name, v, 1)
        self.m, self.encoder = m, encoder
        self.embed = SLinear(m, feat, d)
        self.layers = nn.ModuleList(
            SelectiveSSM(m, d, parallel=parallel) if k == "ssm" else Attention(m, d)
            for k in LAYERS[encoder]
        )
        self.norm = SLayerNorm(m, d)
        self.head1, self.head2 = SLinear(m, 3 * d, d), SLinear(m, d, classes)
        # created last: the other weights draw the same initial values as without it
        self.local = SLinear(m, d, d, bias=False)

    def encode(self, x, mask, adj=None):
        h = self.embed(x) * mask[..., None]
        if adj is not None:  # local encoder: h_v + W Σ_{u~v} h_u, (M, B, N, D)
            h = h + self.local(adj @ h) * mask[..., None]
        for layer in self.layers:
            h = layer(h, mask) * mask[..., None]
        return self.norm(h) * mask[..., None]

    def forward(self, x, mask, query, node_mask, adj=None):
        x = check_tensor("x", x, floating=True)
        if x.ndim not in (4, 5) or x.shape[0] != self.m:
            raise ValueError(
                f"x: expected (M={self.m}, B, N, F) or (M, B, N, L, F), got "
                f"{tuple(x.shape)}"
            )
        if adj is not None:
            if x.ndim != 4:
                raise ValueError(
                    "adj: expected None with subgraph tokens (the local encoder runs "
                    f"on node-level tokens), got a tensor with x {tuple(x.shape)}"
                )
            check_tensor("adj", adj, shape=x.shape[:3] + x.shape[2:3], floating=True)
        mask = mask.bool()
        if x.ndim == 5:  # subgraph tokens: B·N sequences of length L
            M, B, N, L, Fe = x.shape
            h = self.encode(x.reshape(M, B * N, L, Fe), mask.reshape(M, B * N, L))
            cnt = mask.reshape(M, B * N, L, 1).sum(2).clamp_min(1)
            h = (h.sum(2) / cnt).reshape(M, B, N, -1)  # (M, B, N, D)
        else:
            h = self.encode(x, mask, adj)  # (M, B, N, D)
        nm = node_mask.float()[..., None]
        mean = (h * nm).sum(2) / nm.sum(2).clamp_min(1)
        qs = (h * query[..., 0:1].float()).sum(2)  # the s token, (M, B, D)
        qt = (h * query[..., 1:2].float()).sum(2)  # the t token
        z = F.gelu(self.head1(torch.cat([mean, qs, qt], -1)))  # (M, B, D)
        return self.head2(z)  # (M, B, classes)
