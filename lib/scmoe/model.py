"""The four MoE transformers of the quality experiment, and the offline character
corpus.

A model is a stack of **block pairs**: a dense pre-LN block (l−1) followed by an MoE
block (l), as in GPT-MoE with an MoE layer every other block. The variants differ only
in the MoE block's FFN:

- ``top2``   — GShard top-2 MoE on LN(h_cur);
- ``top1``   — Switch top-1 MoE on LN(h_cur);
- ``shared`` — top-1 MoE + a dense shared expert, both on LN(h_cur) (DeepSpeed's
  residual MoE);
- ``scmoe``
    — the shared expert on LN(h_cur) and the top-1 MoE on LN(h_prev), the representation
  after the *previous* block's attention, brought in by a shortcut (eq. (5)).
"""

from __future__ import annotations

import math

import torch
import torch.nn as nn

from lib.common import check_int, check_nonnegative, check_positive, check_tensor
from lib.common.gpt import MLP, CausalSelfAttention, Vocab

from .moe import Experts, MoE

VARIANTS = ("top2", "top1", "shared", "scmoe")


def load_corpus() -> str:
    """CPython's ``pydoc_data.topics`` (≈ 465 k characters of Python documentation,
    ships offline)."""
    from pydoc_data.topics import topics

    return "\n".join(topics[k] for k in sorted(topics))


def char_vocab(text: str) -> Vocab:
    """Characters of ``text`` (sorted) after the specials; no <bos>/<eos> needed for
    windows."""
    if not isinstance(text, str) or not text:
        raise ValueError("text: expected a non-empty str")
    return Vocab(sorted(set(text)), specials=("<pad>",))


def make_windows(ids: torch.Tensor, block: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Non-overlapping windows of ``block`` + 1 ids -> inputs (M, block), targets (M,
    block)."""
    check_tensor("ids", ids, ndim=1, integer=True)
    block = check_int("block", block, 1)
    m = (ids.numel() - 1) // block
    if m < 1:
        raise ValueError(
            f"ids: expected more than block={block} ids, got {ids.numel()}"
        )
    x = ids[: m * block].view(m, block)
    y = ids[1 : m * block + 1].view(m, block)
    return x, y


class BlockPair(nn.Module):
    """Dense block l−1, then MoE block l whose FFN is one of :data:`VARIANTS`; forward
    -> (h, aux)."""

    def __init__(
        self,
        d_model: int,
        n_head: int,
        variant: str,
        n_experts: int = 4,
        capacity_factor: float = 1.25,
        mlp_mult: int = 4,
    ):
        super().__init__()
        if variant not in VARIANTS:
            raise ValueError(f"variant: expected one of {VARIANTS}, got {variant!r}")
        for name, v in (
            ("d_model", d_model),
            ("n_head", n_head),
            ("n_experts", n_experts),
            ("mlp_mult", mlp_mult),
        ):
            check_int(name, v, 1)
        check_positive("capacity_factor", capacity_factor)
        self.variant = variant
        ln = lambda: nn.LayerNorm(d_model)  # noqa: E731
        self.ln1a, self.attn_a = ln(), CausalSelfAttention(d_model, n_head)
        self.ln2a, self.mlp_a = ln(), MLP(d_model, mlp_mult)
        self.ln1b, self.attn_b, self.ln2b = (
            ln(),
            CausalSelfAttention(d_model, n_head),
            ln(),
        )
        self.moe = MoE(
            d_model,
            n_experts,
            2 if variant == "top2" else 1,
            capacity_factor,
            mlp_mult * d_model,
        )
        if variant in ("shared", "scmoe"):
            self.shared = MLP(d_model, mlp_mult)  # the shared expert SE
        if variant == "scmoe":
            self.ln_sc = ln()  # LN on the shortcut input

    # --- the stages: forward and both expert-parallel steps
    # (lib.scmoe.parallel.ep_step) are built from these, so there is one definition of
    # the block

    def attn_prev(self, x: torch.Tensor) -> torch.Tensor:
        """Block l−1 up to its attention: h_prev = x + Attn(LN(x)), (B, T, D)."""
        return x + self.attn_a(self.ln1a(x))

    def mlp_prev(self, h_prev: torch.Tensor) -> torch.Tensor:
        """The rest of block l−1: h = h_prev + MLP(LN(h_prev))."""
        return h_prev + self.mlp_a(self.ln2a(h_prev))

    def attn_cur(self, h: torch.Tensor) -> torch.Tensor:
        """Block l up to its attention: h_cur = h + Attn(LN(h))."""
        return h + self.attn_b(self.ln1b(h))

    @property
    def early_moe(self) -> bool:
        """Whether the MoE input exists after block l−1's attention (ScMoE's
        shortcut)."""
        return self.variant == "scmoe"

    def moe_input(self, h_prev: torch.Tensor, h_cur=None) -> torch.Tensor:
        """What the MoE reads: LN'(h_prev) for ScMoE (eq. (5); ``h_cur`` unused),
        LN(h_cur) otherwise."""
        return self.ln_sc(h_prev) if self.early_moe else self.ln2b(h_cur)

    def shared_branch(self, h_cur: torch.Tensor):
        """The shared expert SE(LN(h_cur)), or ``None`` for top-1 / top-2."""
        return self.shared(self.ln2b(h_cur)) if hasattr(self, "shared") else None

    def join(self, h_cur: torch.Tensor, y: torch.Tensor, s=None) -> torch.Tensor:
        """The block's output: h_cur + MoE output (+ shared expert)."""
        return h_cur + y if s is None else h_cur + s + y

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        h_prev = self.attn_prev(x)  # (B, T, D) block l−1, after attention
        h_cur = self.attn_cur(self.mlp_prev(h_prev))  # block l, after attention
        y, aux = self.moe(self.moe_input(h_prev, h_cur))
        return self.join(h_cur, y, self.shared_branch(h_cur)), aux


class MoEGPT(nn.Module):
    """Character LM: embeddings, ``n_pairs`` :class:`BlockPair`s, final LN, tied head.

    forward(idx (B, T)) -> (logits (B, T, V), aux_weight · mean load-balancing loss).
    """

    def __init__(
        self,
        vocab_size: int,
        block_size: int,
        variant: str,
        n_pairs: int = 2,
        d_model: int = 64,
        n_head: int = 4,
        n_experts: int = 4,
        capacity_factor: float = 1.25,
        aux_weight: float = 0.01,
    ):
        super().__init__()
        for name, v in (
            ("vocab_size", vocab_size),
            ("block_size", block_size),
            ("n_pairs", n_pairs),
            ("d_model", d_model),
            ("n_head", n_head),
            ("n_experts", n_experts),
        ):
            check_int(name, v, 1)
        check_nonnegative("aux_weight", aux_weight)
        self.block_size, self.aux_weight = block_size, float(aux_weight)
        self.tok = nn.Embedding(vocab_size, d_model)
        self.pos = nn.Embedding(block_size, d_model)
        self.pairs = nn.ModuleList(
            BlockPair(d_model, n_head, variant, n_experts, capacity_factor)
            for _ in range(n_pairs)
        )
        self.ln_f = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, vocab_size, bias=False)
        for m in self.modules():  # GPT-2 init, experts alike
            if isinstance(m, (nn.Linear, nn.Embedding)):
                nn.init.normal_(m.weight, std=0.02)
            if isinstance(m, nn.Linear) and m.bias is not None:
                nn.init.zeros_(m.bias)
            if isinstance(m, Experts):
                nn.init.normal_(m.w1, std=0.02)
                nn.init.normal_(m.w2, std=0.02)
        self.head.weight = self.tok.weight  # tied embeddings

    def forward(self, idx: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        check_tensor("idx", idx, ndim=2)
        B, T = idx.shape
        if T > self.block_size:
            raise ValueError(
                f"idx: expected at most block_size={self.block_size} positions, got {T}"
            )
        x = self.tok(idx) + self.pos(torch.arange(T, device=idx.device))  # (B, T, D)
        aux = x.new_zeros(())
        for pair in self.pairs:
            x, a = pair(x)
            aux = aux + a
        return self.head(self.ln_f(x)), self.aux_weight * aux / len(self.pairs)


def active_ffn_params(model: MoEGPT) -> int:
    """FFN parameters a token passes through in the MoE blocks (k experts + shared
    expert)."""
    if not isinstance(model, MoEGPT):
        raise TypeError(f"model: expected a MoEGPT, got {type(model).__name__}")
    total = 0
    for pair in model.pairs:
        ex = pair.moe.experts
        per_expert = sum(p[0].numel() for p in (ex.w1, ex.b1, ex.w2, ex.b2))
        total += pair.moe.k * per_expert
        if hasattr(pair, "shared"):
            total += sum(p.numel() for p in pair.shared.parameters())
    return total


@torch.no_grad()
def bits_per_char(
    model: nn.Module, inputs: torch.Tensor, targets: torch.Tensor, batch_size: int = 64
) -> float:
    """Mean next-character cross-entropy in bits over all positions of (inputs,
    targets)."""
    if not isinstance(model, nn.Module):
        raise TypeError(
            f"model: expected a torch.nn.Module, got {type(model).__name__}"
        )
    check_tensor("inputs", inputs, ndim=2, integer=True)
    if inputs.shape[0] < 1 or inputs.shape[1] < 1:
        raise ValueError(
            f"inputs: expected at least one window of at least one character, got "
            f"shape {tuple(inputs.shape)}"
        )
    check_tensor("targets", targets, shape=tuple(inputs.shape), integer=True)
    for name, t in (("inputs", inputs), ("targets", targets)):
        if not bool((t >= 0).all()):
            raise ValueError(f"{name}: expected character ids >= 0, got a negative one")
    check_int("batch_size", batch_size, 1)
    model.eval()
    dev = next(model.parameters()).device
    total, count = 0.0, 0
    for i in range(0, inputs.shape[0], batch_size):
        x, y = inputs[i : i + batch_size].to(dev), targets[i : i + batch_size].to(dev)
        out = model(x)
        logits = out[0] if isinstance(out, tuple) else out
        ce = torch.nn.functional.cross_entropy(
            logits.reshape(-1, logits.shape[-1]), y.reshape(-1), reduction="sum"
        )
        total, count = total + float(ce), count + y.numel()
    return total / count / math.log(2)
