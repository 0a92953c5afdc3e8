"""A small decoder-only transformer (GPT), shared by the language-model chapters.

Pre-LayerNorm blocks in the style of GPT-2 / nanoGPT: learned token and position
embeddings,
``n_layer`` blocks of causal self-attention and a GELU MLP, a final LayerNorm and a head
tied to the token embedding. Small enough to train on the CPU in seconds, and plain
enough that ``torch.func`` (per-sample gradients) and ``torch.compile`` work on it
unchanged.

Also here: a token :class:`Vocab`, the masked next-token loss :func:`lm_loss`, batched
sampling
:func:`sample` and a minimal training loop :func:`fit_lm`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterable

import torch
import torch.nn as nn
import torch.nn.functional as F

from .checks import check_int, check_positive, check_tensor

__all__ = [
    "GPTConfig",
    "CausalSelfAttention",
    "MLP",
    "Block",
    "GPT",
    "Vocab",
    "lm_loss",
    "sample",
    "fit_lm",
]


@dataclass(frozen=True)
class GPTConfig:
    """Sizes of a :class:`GPT`."""

    vocab_size: int
    block_size: int
    n_layer: int = 2
    n_head: int = 4
    d_model: int = 128
    mlp_mult: int = 4
    dropout: float = 0.0

    def __post_init__(self):
        for name in (
            "vocab_size",
            "block_size",
            "n_layer",
            "n_head",
            "d_model",
            "mlp_mult",
        ):
            check_int(name, getattr(self, name), 1)
        if self.d_model % self.n_head:
            raise ValueError(
                f"d_model: expected a multiple of n_head={self.n_head}, got "
                f"{self.d_model}"
            )
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(
                f"dropout: expected a number in [0, 1), got {self.dropout}"
            )


def _under_vmap(t: torch.Tensor) -> bool:
    is_batched = getattr(torch._C._functorch, "is_batchedtensor", None)
    unwrap = getattr(torch._C._functorch, "get_unwrapped", None)
    wrapped = getattr(torch._C._functorch, "is_functorch_wrapped_tensor", None)
    if is_batched is None or wrapped is None or unwrap is None:
        return False
    while wrapped(t):  # grad wraps vmap's batched tensor: look through the layers
        if is_batched(t):
            return True
        t = unwrap(t)
    return False


def _math_attention(q, k, v, dropout_p: float) -> torch.Tensor:
    """softmax(QKᵀ/√d_head + causal mask) V written out: the reference for the fused
    kernel."""
    T = q.shape[-2]
    s = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])  # (B, H, T, T)
    causal = torch.ones(T, T, dtype=torch.bool, device=q.device).triu(1)
    p = s.masked_fill(causal, float("-inf")).softmax(-1)
    if dropout_p:
        p = F.dropout(p, dropout_p)
    return p @ v  # (B, H, T, d_head)


class CausalSelfAttention(nn.Module):
    """Multi-head causal self-attention: softmax(QKᵀ/√d_head + causal mask) V, heads
    concatenated."""

    def __init__(self, d_model: int, n_head: int, dropout: float = 0.0):
        super().__init__()
        check_int("d_model", d_model, 1)
        check_int("n_head", n_head, 1)
        if d_model % n_head:
            raise ValueError(
                f"d_model: expected a multiple of n_head={n_head}, got {d_model}"
            )
        self.n_head, self.dropout = n_head, dropout
        # "auto": the fused kernel, except under torch.func.vmap (per-sample gradients),
        # where the
        # fused CPU kernel has no batching rule and the explicit formula is both faster
        # and silent.
        self.impl = "auto"
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.proj = nn.Linear(d_model, d_model)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, T, D = x.shape
        q, k, v = self.qkv(x).split(D, dim=-1)  # 3 × (B, T, D)
        q, k, v = (
            t.view(B, T, self.n_head, D // self.n_head).transpose(
                1, 2
            )  # (B, H, T, D/H)
            for t in (q, k, v)
        )
        if self.impl == "math" or (self.impl == "auto" and _under_vmap(q)):
            y = _math_attention(q, k, v, self.dropout if self.training else 0.0)
        else:
            y = F.scaled_dot_product_attention(
                q,
                k,
                v,
                is_causal=True,
                dropout_p=self.dropout if self.training else 0.0,
            )
        return self.proj(y.transpose(1, 2).reshape(B, T, D))  # (B, T, D)


class MLP(nn.Module):
    """Position-wise feed-forward network: W₂ GELU(W₁ x)."""

    def __init__(self, d_model: int, mlp_mult: int = 4):
        super().__init__()
        check_int("d_model", d_model, 1)
        check_int("mlp_mult", mlp_mult, 1)
        self.fc = nn.Linear(d_model, mlp_mult * d_model)
        self.proj = nn.Linear(mlp_mult * d_model, d_model)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.proj(F.gelu(self.fc(x)))


class Block(nn.Module):
    """Pre-LN transformer block: x ← x + attn(LN x); x ← x + ffn(LN x), with ffn an
    :class:`MLP`."""

    def __init__(
        self, d_model: int, n_head: int, mlp_mult: int = 4, dropout: float = 0.0
    ):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)
        self.attn = CausalSelfAttention(d_model, n_head, dropout)
        self.ffn = MLP(d_model, mlp_mult)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln1(x))
        return x + self.ffn(self.ln2(x))


class GPT(nn.Module):
    """Decoder-only language model: ``forward(idx (B, T)) -> logits (B, T,
    vocab_size)``."""

    def __init__(self, cfg: GPTConfig):
        super().__init__()
        if not isinstance(cfg, GPTConfig):
            raise TypeError(f"cfg: expected a GPTConfig, got {type(cfg).__name__}")
        self.cfg = cfg
        self.tok = nn.Embedding(cfg.vocab_size, cfg.d_model)
        self.pos = nn.Embedding(cfg.block_size, cfg.d_model)
        self.drop = nn.Dropout(cfg.dropout)
        self.blocks = nn.ModuleList(
            Block(cfg.d_model, cfg.n_head, cfg.mlp_mult, cfg.dropout)
            for _ in range(cfg.n_layer)
        )
        self.ln_f = nn.LayerNorm(cfg.d_model)
        self.head = nn.Linear(cfg.d_model, cfg.vocab_size, bias=False)
        self.apply(self._init)
        self.head.weight = self.tok.weight  # tied embeddings

    @staticmethod
    def _init(m: nn.Module) -> None:
        if isinstance(m, (nn.Linear, nn.Embedding)):
            nn.init.normal_(m.weight, std=0.02)
        if isinstance(m, nn.Linear) and m.bias is not None:
            nn.init.zeros_(m.bias)

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        B, T = idx.shape
        if T > self.cfg.block_size:
            raise ValueError(
                f"idx: expected at most block_size={self.cfg.block_size} positions, "
                f"got {T}"
            )
        x = self.drop(
            self.tok(idx) + self.pos(torch.arange(T, device=idx.device))
        )  # (B, T, D)
        for blk in self.blocks:
            x = blk(x)
        return self.head(self.ln_f(x))  # (B, T, V)


class Vocab:
    """A token ↔ id table. Special tokens come first (``<pad>`` is id 0)."""

    def __init__(
        self, tokens: Iterable[str], specials: tuple = ("<pad>", "<bos>", "<eos>")
    ):
        tokens = list(tokens)
        if not all(isinstance(t, str) for t in tokens) or not all(
            isinstance(s, str) for s in specials
        ):
            raise TypeError("tokens: expected an iterable of str")
        self.itos: list[str] = []
        for t in list(specials) + tokens:
            if t not in self.itos:
                self.itos.append(t)
        self.stoi = {t: i for i, t in enumerate(self.itos)}
        self.specials = tuple(specials)

    def __len__(self) -> int:
        return len(self.itos)

    def _special(self, name: str) -> int:
        if name not in self.stoi:
            raise ValueError(
                f"{name}: this vocabulary has no such special token "
                f"(specials={self.specials})"
            )
        return self.stoi[name]

    pad_id = property(lambda self: self._special("<pad>"))
    bos_id = property(lambda self: self._special("<bos>"))
    eos_id = property(lambda self: self._special("<eos>"))

    def encode(self, seq: Iterable[str]) -> list[int]:
        """Ids of the tokens in ``seq`` (a string is a sequence of characters)."""
        out = []
        for t in seq:
            if t not in self.stoi:
                raise ValueError(
                    f"seq: token {t!r} is not in the vocabulary ({len(self)} tokens)"
                )
            out.append(self.stoi[t])
        return out

    def decode(self, ids) -> list[str]:
        """Tokens of the ids (a list, or a 1-D tensor)."""
        if isinstance(ids, torch.Tensor):
            ids = ids.tolist()
        return [self.itos[int(i)] for i in ids]


def lm_loss(
    logits: torch.Tensor,
    targets: torch.Tensor,
    mask: torch.Tensor | None = None,
    reduction: str = "mean",
) -> torch.Tensor:
    """Next-token cross-entropy. ``targets`` are already shifted (``targets[:, t]`` is
    the token after position t); ``mask`` (B, T) selects the positions that count.

    ``reduction``: ``"mean"`` over all selected tokens (a scalar), ``"per_sample"`` (B,)
    mean over each row's selected tokens (0 for a row with none), ``"none"`` (B, T) with
    unselected positions 0.
    """
    check_tensor("logits", logits, ndim=3, floating=True)
    check_tensor("targets", targets, shape=tuple(logits.shape[:2]))
    if reduction not in ("mean", "per_sample", "none"):
        raise ValueError(
            f"reduction: expected 'mean', 'per_sample' or 'none', got {reduction!r}"
        )
    B, T, V = logits.shape
    ce = F.cross_entropy(
        logits.reshape(B * T, V), targets.reshape(B * T), reduction="none"
    ).view(B, T)
    if mask is None:
        m = torch.ones_like(ce)
    else:
        check_tensor("mask", mask, shape=(B, T))
        m = mask.to(ce.dtype)
    ce = ce * m  # (B, T)
    if reduction == "none":
        return ce
    if reduction == "per_sample":
        return ce.sum(1) / m.sum(1).clamp_min(1.0)  # (B,)
    return ce.sum() / m.sum().clamp_min(1.0)


@torch.no_grad()
def sample(
    model: nn.Module,
    prompt: torch.Tensor,
    max_new_tokens: int,
    temperature: float = 1.0,
    top_k: int | None = None,
    generator: torch.Generator | None = None,
    eos_id: int | None = None,
    banned: tuple = (),
) -> torch.Tensor:
    """Autoregressive sampling for a batch of prompts (B, T0) → (B, T0 +
    max_new_tokens).

    ``temperature=0`` is greedy decoding. Random draws use ``generator`` (on its own
    device, so a CPU generator gives the same samples on every device). ``banned`` token
    ids are never drawn. Rows that have emitted ``eos_id`` keep emitting it; once every
    row has, decoding stops (no more forward passes or random draws) and the rest is
    filled with ``eos_id``."""
    check_tensor("prompt", prompt, ndim=2)
    check_int("max_new_tokens", max_new_tokens, 0)
    if (
        isinstance(temperature, bool)
        or not isinstance(temperature, (int, float))
        or temperature < 0
    ):
        raise ValueError(f"temperature: expected a number >= 0, got {temperature!r}")
    if top_k is not None:
        check_int("top_k", top_k, 1)
    block = (
        model.cfg.block_size
        if hasattr(model, "cfg")
        else prompt.shape[1] + max_new_tokens
    )
    was_training = model.training
    model.eval()
    idx = prompt
    done = torch.zeros(prompt.shape[0], dtype=torch.bool, device=prompt.device)
    for _ in range(max_new_tokens):
        out = model(idx[:, -block:])
        logits = (out[0] if isinstance(out, tuple) else out)[:, -1, :].float()  # (B, V)
        if banned:
            logits[:, list(banned)] = float("-inf")
        if temperature == 0:
            nxt = logits.argmax(-1, keepdim=True)  # (B, 1)
        else:
            logits = logits / temperature
            if top_k is not None and top_k < logits.shape[-1]:
                kth = logits.topk(top_k, dim=-1).values[:, -1:]
                logits = logits.masked_fill(logits < kth, float("-inf"))
            probs = logits.softmax(-1)
            gdev = generator.device if generator is not None else probs.device
            nxt = torch.multinomial(probs.to(gdev), 1, generator=generator).to(
                prompt.device
            )
        if eos_id is not None:
            nxt = torch.where(done[:, None], torch.full_like(nxt, eos_id), nxt)
            done = done | (nxt[:, 0] == eos_id)
        idx = torch.cat([idx, nxt], dim=1)
        if eos_id is not None and bool(done.all()):
            break
    model.train(was_training)
    rest = prompt.shape[1] + max_new_tokens - idx.shape[1]
    return (
        torch.cat([idx, idx.new_full((idx.shape[0], rest), eos_id)], dim=1)
        if rest
        else idx
    )


def fit_lm(
    model: nn.Module,
    inputs: torch.Tensor,
    targets: torch.Tensor,
    mask: torch.Tensor | None = None,
    *,
    steps: int,
    batch_size: int,
    lr: float,
    weight_decay: float = 0.0,
    generator: torch.Generator,
    device=None,
    warmup: int | None = None,
) -> list[float]:
    """Train ``model`` on (inputs, targets[, mask]) rows with AdamW and a cosine
    learning rate.

    Minibatches are drawn with replacement-free shuffles from ``generator`` (CPU). If
    the model returns ``(logits, aux)`` (a mixture of experts' balance loss), the scalar
    ``aux`` is added to the loss. Returns the training loss of every step (the LM loss
    plus the auxiliary term)."""
    check_tensor("inputs", inputs, ndim=2)
    check_tensor("targets", targets, shape=tuple(inputs.shape))
    if mask is not None:
        check_tensor("mask", mask, shape=tuple(inputs.shape))
    check_int("steps", steps, 1)
    check_int("batch_size", batch_size, 1)
    check_positive("lr", lr)
    if not isinstance(generator, torch.Generator):
        raise TypeError(
            f"generator: expected a torch.Generator, got {type(generator).__name__}"
        )
    dev = (
        torch.device(device) if device is not None else next(model.parameters()).device
    )
    warmup = min(100, steps // 10) if warmup is None else check_int("warmup", warmup, 0)
    opt = torch.optim.AdamW(
        model.parameters(), lr=lr, weight_decay=weight_decay, betas=(0.9, 0.95)
    )
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt,
        lambda s: (
            (s + 1) / max(warmup, 1)
            if s < warmup
            else 0.5 * (1 + math.cos(math.pi * (s - warmup) / max(steps - warmup, 1)))
        ),
    )
    n, losses, order, pos = (
        inputs.shape[0],
        [],
        torch.randperm(inputs.shape[0], generator=generator),
        0,
    )
    model.train()
    for _ in range(steps):
        if pos + min(batch_size, n) > n:
            order, pos = torch.randperm(n, generator=generator), 0
        b = order[pos : pos + batch_size]
        pos += len(b)
        x, y = inputs[b].to(dev), targets[b].to(dev)
        m = mask[b].to(dev) if mask is not None else None
        out = model(x)
        logits, aux = out if isinstance(out, tuple) else (out, None)
        loss = lm_loss(logits, y, m)
        if aux is not None:
            loss = loss + aux
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        losses.append(float(loss.detach()))
    model.eval()
    return losses
