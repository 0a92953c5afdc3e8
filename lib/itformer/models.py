"""The three parts: a time-series encoder (frozen after masked-patch pretraining), a
frozen language model (the shared small GPT, fed embeddings), and the bridges between
them (ITFormer, its ablations and the baselines), each returning ``n_slots`` tokens of
the LM's width."""

from __future__ import annotations

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

from lib.common import (
    check_generator,
    check_choice,
    check_instance,
    check_int,
    check_positive,
    check_probability,
    check_tensor,
)
from lib.common.gpt import GPT

BRIDGES = ("text", "linear", "qformer", "itformer", "no_ita", "no_instruct", "no_tpe")


def _check_cfg(cfg):
    from . import Config

    return check_instance("cfg", cfg, Config, "a lib.itformer.Config")


def _check_heads(d: int, n_head: int) -> None:
    """Attention widths: ``d`` a multiple of ``n_head``, both >= 1."""
    check_int("d", d, 1)
    check_int("n_head", n_head, 1)
    if d % n_head:
        raise ValueError(f"d: expected a multiple of n_head={n_head}, got {d}")


def _check_widths(cfg, d_enc: int, d_lm: int) -> None:
    """A bridge's arguments: the config and the encoder's and the LM's widths."""
    _check_cfg(cfg)
    check_int("d_enc", d_enc, 1)
    check_int("d_lm", d_lm, 1)


# ----------------------------------------------------------------------------------
# time-series encoder
class ChannelTimeBlock(nn.Module):
    """One encoder block: channel attention (q, k averaged over patches, the values
    mixed at every patch), then temporal attention within each channel, then an FFN."""

    def __init__(self, d: int, n_head: int):
        super().__init__()
        self.ln1, self.ln2, self.ln3 = (nn.LayerNorm(d) for _ in range(3))
        self.cq, self.ck, self.cv = (nn.Linear(d, d) for _ in range(3))
        self.co = nn.Linear(d, d)
        self.time = nn.MultiheadAttention(d, n_head, batch_first=True)
        self.ffn = nn.Sequential(nn.Linear(d, 2 * d), nn.GELU(), nn.Linear(2 * d, d))

    def forward(self, h: torch.Tensor) -> torch.Tensor:  # (B, V, N, d)
        B, V, N, d = h.shape
        z = self.ln1(h)
        q, k = self.cq(z).mean(2), self.ck(z).mean(2)  # (B, V, d)
        w = (q @ k.transpose(1, 2) / math.sqrt(d)).softmax(-1)  # (B, V, V)
        h = h + self.co(torch.einsum("buv,bvnd->bund", w, self.cv(z)))
        z = self.ln2(h).reshape(B * V, N, d)
        h = h + self.time(z, z, z, need_weights=False)[0].view(B, V, N, d)
        return h + self.ffn(self.ln3(h))


class TSEncoder(nn.Module):
    """Patches (B, V, L) into (B, V, N, patch), embeds them with learned channel and
    patch positions and runs ``n_layer`` :class:`ChannelTimeBlock` s -> (B, V, N, d)."""

    def __init__(self, n_channels, n_patches, patch, d=32, n_layer=2, n_head=4):
        super().__init__()
        for name, v in (("n_channels", n_channels), ("n_patches", n_patches)):
            check_int(name, v, 1)
        check_int("patch", patch, 1)
        check_int("n_layer", n_layer, 1)
        _check_heads(d, n_head)
        self.patch, self.n_patches = patch, n_patches
        self.embed = nn.Linear(patch, d)
        self.chan = nn.Parameter(0.02 * torch.randn(n_channels, 1, d))
        self.pos = nn.Parameter(0.02 * torch.randn(1, n_patches, d))
        self.mask_token = nn.Parameter(torch.zeros(d))
        self.blocks = nn.ModuleList(ChannelTimeBlock(d, n_head) for _ in range(n_layer))
        self.ln = nn.LayerNorm(d)
        self.head = nn.Linear(d, patch)  # reconstruction head (pretraining only)

    def patches(self, x: torch.Tensor) -> torch.Tensor:
        B, V, L = x.shape
        return x.view(B, V, L // self.patch, self.patch)  # (B, V, N, P)

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None):
        e = self.embed(self.patches(x))  # (B, V, N, d)
        if mask is not None:  # (B, V, N) True = hidden
            e = torch.where(mask[..., None], self.mask_token, e)
        h = e + self.chan + self.pos
        for blk in self.blocks:
            h = blk(h)
        return self.ln(h)  # (B, V, N, d)


def _check_encoder_input(enc, x) -> None:
    """A :class:`TSEncoder` and series x (B, V, L) of its channels and length."""
    check_instance("enc", enc, TSEncoder, "a TSEncoder")
    check_series("x", x)
    V, L = enc.chan.shape[0], enc.n_patches * enc.patch
    if tuple(x.shape[1:]) != (V, L):
        raise ValueError(
            f"x: expected series (B, {V}, {L}) for this encoder, got {tuple(x.shape)}"
        )


def masked_patch_loss(
    enc: TSEncoder, x: torch.Tensor, ratio: float, generator, mask=None
):
    """MSE of the reconstruction on the hidden patches only (``ratio`` of them, drawn
    from ``generator`` unless ``mask`` (B, V, N) is given)."""
    _check_encoder_input(enc, x)
    check_probability("ratio", ratio)
    check_generator("generator", generator)
    B, V, L = x.shape
    if mask is not None:
        check_tensor("mask", mask, shape=(B, V, L // enc.patch))
    N = L // enc.patch
    if mask is None:
        mask = torch.rand(B, V, N, generator=generator).to(x.device) < ratio
    rec = enc.head(enc(x, mask))  # (B, V, N, P)
    err = ((rec - enc.patches(x)) ** 2).mean(-1)  # (B, V, N)
    return (err * mask).sum() / mask.sum().clamp_min(1)


def pretrain_encoder(enc, x, steps, batch, lr, ratio, generator, device):
    """Masked-patch pretraining with AdamW; returns the loss per step, freezes enc."""
    _check_encoder_input(enc, x)
    check_int("steps", steps, 1)
    check_int("batch", batch, 1)
    check_positive("lr", lr)
    check_probability("ratio", ratio)
    check_generator("generator", generator)
    opt = torch.optim.AdamW(enc.parameters(), lr=lr, weight_decay=0.01)
    losses = []
    enc.train()
    for _ in range(steps):
        b = torch.randint(x.shape[0], (batch,), generator=generator)
        loss = masked_patch_loss(enc, x[b].to(device), ratio, generator)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        losses.append(float(loss.detach()))
    enc.eval().requires_grad_(False)
    return losses


# ----------------------------------------------------------------------------------
# the frozen LM, fed embeddings
def lm_logits(lm: GPT, emb: torch.Tensor) -> torch.Tensor:
    """The GPT's forward pass from input embeddings (B, T, D) -> logits (B, T, V)."""
    check_instance("lm", lm, GPT, "a lib.common.gpt.GPT")
    check_tensor(
        "emb", emb, shape=(None, None, lm.cfg.d_model), floating=True, nonempty=True,
        finite=True,
    )  # fmt: skip
    if emb.shape[1] > lm.cfg.block_size:
        raise ValueError(
            f"emb: expected at most block_size={lm.cfg.block_size} positions, got "
            f"{emb.shape[1]}"
        )
    x = emb + lm.pos(torch.arange(emb.shape[1], device=emb.device))
    for blk in lm.blocks:
        x = blk(x)
    return lm.head(lm.ln_f(x))


def splice(lm, ids: torch.Tensor, slot: torch.Tensor, tokens: torch.Tensor):
    """Time token as language: the LM's token embeddings of ``ids`` (B, T) with the
    ``slot`` positions (T,) replaced by ``tokens`` (B, K, D)."""
    emb = lm.tok(ids)  # (B, T, D)
    pos = torch.nonzero(slot).squeeze(1)
    return emb.index_copy(1, pos, tokens.to(emb.dtype))


# ----------------------------------------------------------------------------------
# time token position encoding (TPE)
def sinusoid(pos: torch.Tensor, d: int, base: float = 10000.0) -> torch.Tensor:
    """Sinusoidal code of integer positions (…,) -> (…, d)."""
    check_tensor("pos", pos, integer=True, nonempty=True)
    if check_int("d", d, 2) % 2:
        raise ValueError(f"d: expected an even width, got {d}")
    check_positive("base", base)
    i = torch.arange(0, d, 2, device=pos.device, dtype=torch.float32)
    ang = pos[..., None].float() / base ** (i / d)  # (…, d/2)
    return torch.stack([ang.sin(), ang.cos()], -1).flatten(-2)


class TPE(nn.Module):
    """Temporal (sinusoid of the patch index), segment (sinusoid of the cycle index,
    another base) and channel (learned) codes added to the time tokens (B, V, N, d)."""

    def __init__(self, n_channels, n_patches, patches_per_cycle, d):
        super().__init__()
        for name, v in (
            ("n_channels", n_channels),
            ("n_patches", n_patches),
            ("patches_per_cycle", patches_per_cycle),
        ):
            check_int(name, v, 1)
        n = torch.arange(n_patches)
        self.register_buffer("temporal", sinusoid(n, d))  # (N, d)
        self.register_buffer("segment", sinusoid(n // patches_per_cycle, d, 100.0))
        # learned channel codes, started from a sinusoid of the channel index (as the
        # official code's learnable position embedding is), so that the channels are
        # told apart from the first step
        self.channel = nn.Parameter(sinusoid(torch.arange(n_channels), d)[:, None])

    def forward(self, h):  # TPE: h + time(n) + segment(cycle(n)) + channel(v)
        return h + self.temporal + self.segment + self.channel


# ----------------------------------------------------------------------------------
# instruct time attention (ITA)
class InstructTimeAttention(nn.Module):
    """Channel stage: each instruct token scores the channels (keys averaged over
    time), the weights mix the channels at every time step (averaged over the
    tokens); temporal stage: multi-head attention from the instruct tokens to the
    mixed sequence. Set ``return_weights`` to keep the channel weights (B, H, K, V)."""

    def __init__(self, d: int, n_head: int):
        super().__init__()
        _check_heads(d, n_head)
        self.h, self.dh = n_head, d // n_head
        self.cq, self.ck, self.cv = (nn.Linear(d, d, bias=False) for _ in range(3))
        self.q, self.k, self.v = (nn.Linear(d, d, bias=False) for _ in range(3))
        self.proj = nn.Linear(d, d)
        self.last_channel_weights = None

    def forward(self, p: torch.Tensor, mem: torch.Tensor) -> torch.Tensor:
        B, K, d = p.shape  # p (B, K, d); mem (B, V, N, d)
        _, V, N, _ = mem.shape
        H, dh = self.h, self.dh
        q = self.cq(p).view(B, K, H, dh).transpose(1, 2)  # (B, H, K, dh)
        k = self.ck(mem).mean(2).view(B, V, H, dh).transpose(1, 2)  # (B, H, V, dh)
        v = self.cv(mem).view(B, V, N, H, dh).permute(0, 3, 1, 2, 4)  # (B,H,V,N,dh)
        alpha = (q @ k.transpose(-1, -2) / math.sqrt(dh)).softmax(-1)  # eq. (2): α
        self.last_channel_weights = alpha.detach()  # (B, H, K, V)
        agg = torch.einsum("bhkv,bhvnd->bhnd", alpha, v) / K  # eq. (2): H̄ (B,H,N,dh)
        agg = agg.transpose(1, 2).reshape(B, N, d)  # (B, N, d)
        Q = self.q(p).view(B, K, H, dh).transpose(1, 2)  # (B, H, K, dh)
        Kt = self.k(agg).view(B, N, H, dh).transpose(1, 2)  # (B, H, N, dh)
        Vt = self.v(agg).view(B, N, H, dh).transpose(1, 2)
        out = F.scaled_dot_product_attention(Q, Kt, Vt)  # eq. (3) (B, H, K, dh)
        return self.proj(out.transpose(1, 2).reshape(B, K, d))


class FlatCrossAttention(nn.Module):
    """Plain multi-head cross-attention from the tokens to all V·N time tokens (the
    Q-Former's and the −ITA ablation's)."""

    def __init__(self, d: int, n_head: int):
        super().__init__()
        _check_heads(d, n_head)
        self.att = nn.MultiheadAttention(d, n_head, batch_first=True)

    def forward(self, p, mem):
        B, V, N, d = mem.shape
        m = mem.reshape(B, V * N, d)
        return self.att(p, m, m, need_weights=False)[0]


# ----------------------------------------------------------------------------------
# bridges
class ITFormer(nn.Module):
    """Instruct tokens ``P`` (K learnable) read the question (LM embeddings projected),
    then the series (ITA), in ``n_layer`` blocks; the K outputs go to the LM's slots.

    ``ita=False``: flat cross-attention in ITA's place; ``instruct=False``: the
    question is not read (the blocks run on ``P`` alone); ``tpe=False``: no TPE."""

    def __init__(self, cfg, d_enc, d_lm, ita=True, instruct=True, tpe=True):
        super().__init__()
        _check_widths(cfg, d_enc, d_lm)
        d, K = cfg.d_bridge, cfg.n_slots
        self.ita_on, self.instruct_on, self.tpe_on = ita, instruct, tpe
        self.ts_project = nn.Linear(d_enc, d)
        self.query_project = nn.Linear(d_lm, d)
        self.tpe = TPE(cfg.n_channels, cfg.n_patches, cfg.patches_per_cycle, d)
        self.prompt = nn.Parameter(torch.randn(K, d))  # LIT (std 1, as the official)
        self.register_buffer("instr_pe", sinusoid(torch.arange(K + cfg.q_len), d))
        L, H = cfg.bridge_layers, cfg.n_head
        self.self_att = nn.ModuleList(
            nn.MultiheadAttention(d, H, batch_first=True) for _ in range(L)
        )
        self.ffn_x = nn.ModuleList(_ffn(d) for _ in range(L))
        self.cross = nn.ModuleList(
            (InstructTimeAttention if ita else FlatCrossAttention)(d, H)
            for _ in range(L)
        )
        self.ffn_p = nn.ModuleList(_ffn(d) for _ in range(L))
        self.ln = nn.ModuleList(nn.LayerNorm(d) for _ in range(5 * L))
        self.out_ln = nn.LayerNorm(d)
        self.fusion_project = nn.Linear(d, d_lm)

    def forward(self, h, q_emb, q_mask):
        # h (B, V, N, d_enc); q_emb (B, Tq, d_lm); q_mask (B, Tq) True = a word
        B, K = h.shape[0], self.prompt.shape[0]
        mem = self.ts_project(h)  # (B, V, N, d)
        if self.tpe_on:
            mem = self.tpe(mem)
        p = self.prompt.expand(B, -1, -1)  # (B, K, d)
        if self.instruct_on:  # eq. (1): X = [P; Q] + PE
            x = torch.cat([p, self.query_project(q_emb)], 1)
            pad = torch.cat([q_mask.new_zeros(B, K), ~q_mask], 1)  # True = ignore
        else:
            x, pad = p, None
        x = x + self.instr_pe[: x.shape[1]]
        for i in range(len(self.self_att)):
            ln = self.ln[5 * i : 5 * i + 5]
            z = ln[0](x)
            x = x + self.self_att[i](
                z, z, z, key_padding_mask=pad, need_weights=False
            )[0]
            x = x + self.ffn_x[i](ln[1](x))
            p, rest = x[:, :K], x[:, K:]
            # ITA's update is normalised before it is added (the official block's
            # x + LN(ITA(x, H))), so the series enters at full scale from the start
            p = p + ln[3](self.cross[i](ln[2](p), mem))  # ITA
            p = p + self.ffn_p[i](ln[4](p))
            x = torch.cat([p, rest], 1)
        return self.fusion_project(self.out_ln(x[:, :K]))  # (B, K, d_lm)


class QFormer(nn.Module):
    """Q-Former-style bridge: K learnable queries, self-attention among them, flat
    cross-attention to the time tokens (with the same TPE), no question."""

    def __init__(self, cfg, d_enc, d_lm):
        super().__init__()
        _check_widths(cfg, d_enc, d_lm)
        d, K, H = cfg.d_bridge, cfg.n_slots, cfg.n_head
        self.ts_project = nn.Linear(d_enc, d)
        self.tpe = TPE(cfg.n_channels, cfg.n_patches, cfg.patches_per_cycle, d)
        self.queries = nn.Parameter(0.02 * torch.randn(K, d))
        L = cfg.bridge_layers
        self.self_att = nn.ModuleList(
            nn.MultiheadAttention(d, H, batch_first=True) for _ in range(L)
        )
        self.cross = nn.ModuleList(FlatCrossAttention(d, H) for _ in range(L))
        self.ffn = nn.ModuleList(_ffn(d) for _ in range(L))
        self.ln = nn.ModuleList(nn.LayerNorm(d) for _ in range(3 * L))
        self.out_ln = nn.LayerNorm(d)
        self.fusion_project = nn.Linear(d, d_lm)

    def forward(self, h, q_emb=None, q_mask=None):
        mem = self.tpe(self.ts_project(h))  # (B, V, N, d)
        p = self.queries.expand(h.shape[0], -1, -1)  # (B, K, d)
        for i in range(len(self.self_att)):
            z = self.ln[3 * i](p)
            p = p + self.self_att[i](z, z, z, need_weights=False)[0]
            p = p + self.cross[i](self.ln[3 * i + 1](p), mem)
            p = p + self.ffn[i](self.ln[3 * i + 2](p))
        return self.fusion_project(self.out_ln(p))


class LinearBridge(nn.Module):
    """Linear projection: every time token to the LM's width, then a learned linear
    pooling of the V·N tokens into K."""

    def __init__(self, cfg, d_enc, d_lm):
        super().__init__()
        _check_widths(cfg, d_enc, d_lm)
        n = cfg.n_channels * cfg.n_patches
        self.proj = nn.Linear(d_enc, d_lm)
        self.pool = nn.Parameter(torch.randn(cfg.n_slots, n) / math.sqrt(n))

    def forward(self, h, q_emb=None, q_mask=None):
        B, V, N, d = h.shape
        return self.pool @ self.proj(h.reshape(B, V * N, d))  # (B, K, d_lm)


class TextOnly(nn.Module):
    """No series: K learnable soft-prompt tokens (prompt tuning), the floor."""

    def __init__(self, cfg, d_enc, d_lm):
        super().__init__()
        _check_widths(cfg, d_enc, d_lm)
        self.tokens = nn.Parameter(0.02 * torch.randn(cfg.n_slots, d_lm))

    def forward(self, h, q_emb=None, q_mask=None):
        return self.tokens.expand(h.shape[0], -1, -1)


def _ffn(d):
    return nn.Sequential(nn.Linear(d, 2 * d), nn.GELU(), nn.Linear(2 * d, d))


def make_bridge(name: str, cfg, d_enc: int, d_lm: int) -> nn.Module:
    """The bridge called ``name`` (one of :data:`BRIDGES`)."""
    check_choice("name", name, BRIDGES)
    _check_widths(cfg, d_enc, d_lm)
    if name == "text":
        return TextOnly(cfg, d_enc, d_lm)
    if name == "linear":
        return LinearBridge(cfg, d_enc, d_lm)
    if name == "qformer":
        return QFormer(cfg, d_enc, d_lm)
    flags = dict(
        itformer={},
        no_ita=dict(ita=False),
        no_instruct=dict(instruct=False),
        no_tpe=dict(tpe=False),
    )[name]
    return ITFormer(cfg, d_enc, d_lm, **flags)


def n_params(module: nn.Module, trainable: bool = False) -> int:
    """Number of (trainable) parameters."""
    check_instance("module", module, nn.Module, "a torch.nn.Module")
    return sum(
        p.numel() for p in module.parameters() if p.requires_grad or not trainable
    )


def check_series(name: str, x) -> torch.Tensor:
    """A (B, V, L) float tensor of finite values."""
    return check_tensor(name, x, ndim=3, floating=True, finite=True, nonempty=True)
