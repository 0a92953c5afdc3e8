"""Self-influence scores from per-sample gradients, and the selections compared in the chapter.

eq. (1)  Self-Inf(z)   = ‖∇_θ ℓ(z; θ)‖²,  ℓ = mean cross-entropy over the answer tokens of z
eq. (2)  Self-Inf-N(z) = log(Self-Inf(z) + 1) + log(|answer(z)| + 1)
"""
from __future__ import annotations

import math

import torch
from torch.func import functional_call, grad, vmap

from lib.common import check_int, check_tensor
from lib.common.gpt import lm_loss


def _check_batch(inputs, targets, mask):
    check_tensor("inputs", inputs, ndim=2)
    if inputs.dtype != torch.long:
        raise TypeError(f"inputs: expected a torch.long tensor of token ids, got dtype {inputs.dtype}")
    check_tensor("targets", targets, shape=tuple(inputs.shape))
    check_tensor("mask", mask, shape=tuple(inputs.shape))
    if inputs.shape[0] == 0:
        raise ValueError("inputs: expected at least one sample, got an empty batch")
    if not bool((mask.sum(1) > 0).all()):
        raise ValueError("mask: expected every sample to have at least one answer token, got an empty row")


def _lengths(mask: torch.Tensor) -> torch.Tensor:
    """Position of each row's last selected target + 1 (the prefix the loss depends on)."""
    T = mask.shape[1]
    pos = torch.arange(1, T + 1, device=mask.device).expand_as(mask)
    return (pos * mask.bool()).amax(1).cpu()


def _params(model: torch.nn.Module, param_names) -> dict:
    named = dict(model.named_parameters())
    if param_names is None:
        return {k: p.detach() for k, p in named.items()}
    missing = [n for n in param_names if n not in named]
    if missing or not param_names:
        raise ValueError(f"param_names: expected names of the model's parameters, got unknown {missing or 'none'}")
    return {k: named[k].detach() for k in param_names}


def self_influence(model: torch.nn.Module, inputs: torch.Tensor, targets: torch.Tensor, mask: torch.Tensor,
                   chunk: int = 128, param_names=None) -> torch.Tensor:
    """Self-Inf (eq. 1) of every row: the squared norm of its own loss gradient, (N,) float.

    Per-sample gradients with ``torch.func``: ``vmap(grad(loss))`` over rows, ``chunk`` rows at a time
    (memory ≈ chunk × number of parameters), rows of similar length together and padding cut off.
    ``param_names`` restricts θ to a subset (default: all)."""
    _check_batch(inputs, targets, mask)
    check_int("chunk", chunk, 1)
    dev = next(model.parameters()).device
    params = _params(model, param_names)
    buffers = {k: b.detach() for k, b in model.named_buffers()}
    was_training = model.training
    model.eval()

    def loss_one(p, x, y, m):                                           # x, y, m: (T,)
        logits = functional_call(model, (p, buffers), (x[None],))      # (1, T, V)
        return lm_loss(logits, y[None], m[None])                       # mean over answer tokens

    def sq_norm(p, x, y, m):
        g = grad(loss_one)(p, x, y, m)
        return sum(t.pow(2).sum() for t in g.values())                 # eq. (1)

    batched = vmap(sq_norm, in_dims=(None, 0, 0, 0))
    # rows sorted by length and each chunk cut to its longest row: exact, since attention is causal
    # and the loss only reads positions up to the last answer token
    length = _lengths(mask)                                             # (N,)
    order = torch.argsort(length, stable=True)
    out = torch.empty(inputs.shape[0], dtype=params[next(iter(params))].dtype, device=dev)
    for s in range(0, inputs.shape[0], chunk):
        rows = order[s:s + chunk]
        T = int(length[rows].max())
        out[rows.to(dev)] = batched(params, inputs[rows, :T].to(dev), targets[rows, :T].to(dev),
                                    mask[rows, :T].to(dev)).detach()
    model.train(was_training)
    return out


def self_inf_n(self_inf: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    """Self-Inf-N (eq. 2): log(Self-Inf + 1) + log(answer length + 1)."""
    check_tensor("self_inf", self_inf, ndim=1, floating=True)
    check_tensor("lengths", lengths, shape=(self_inf.shape[0],))
    if bool((self_inf < 0).any()):
        raise ValueError("self_inf: expected squared norms >= 0, got a negative value")
    if bool((lengths < 0).any()):
        raise ValueError("lengths: expected answer lengths >= 0, got a negative value")
    return torch.log1p(self_inf) + torch.log1p(lengths.to(self_inf.dtype))


def select_top(scores: torch.Tensor, k: int, trivial: torch.Tensor | None = None,
               largest: bool = True) -> torch.Tensor:
    """Indices of the ``k`` highest (``largest=False``: lowest) scores, trivial answers dropped first.

    Ties are broken by index (a stable sort), so the selection is deterministic."""
    check_tensor("scores", scores, ndim=1)
    check_int("k", k, 1)
    if trivial is None:
        trivial = torch.zeros_like(scores, dtype=torch.bool)
    check_tensor("trivial", trivial, shape=(scores.shape[0],))
    keep = (~trivial.bool()).nonzero().flatten()
    if k > keep.numel():
        raise ValueError(f"k: expected at most {keep.numel()} (the non-trivial samples), got {k}")
    order = torch.sort(scores[keep], descending=largest, stable=True).indices
    return keep[order[:k]]


def select_random(n: int, k: int, generator: torch.Generator, trivial: torch.Tensor | None = None) -> torch.Tensor:
    """``k`` indices drawn uniformly without replacement among the non-trivial samples."""
    check_int("n", n, 1)
    check_int("k", k, 1)
    keep = torch.arange(n) if trivial is None else (~trivial.bool()).nonzero().flatten()
    if k > keep.numel():
        raise ValueError(f"k: expected at most {keep.numel()}, got {k}")
    return keep[torch.randperm(keep.numel(), generator=generator)[:k]]


def spearman(x: torch.Tensor, y: torch.Tensor) -> float:
    """Spearman rank correlation (average ranks for ties)."""
    check_tensor("x", x, ndim=1)
    check_tensor("y", y, shape=(x.shape[0],))
    if x.numel() < 2:
        raise ValueError(f"x: expected at least 2 values, got {x.numel()}")

    def rank(v):
        v = v.double()
        order = torch.argsort(v, stable=True)
        r = torch.empty_like(v)
        r[order] = torch.arange(len(v), dtype=torch.float64)
        for u in torch.unique(v):                         # average the ranks of ties
            tie = v == u
            if tie.sum() > 1:
                r[tie] = r[tie].mean()
        return r

    rx, ry = rank(x), rank(y)
    rx, ry = rx - rx.mean(), ry - ry.mean()
    den = math.sqrt(float((rx ** 2).sum() * (ry ** 2).sum()))
    return float((rx * ry).sum() / den) if den > 0 else 0.0
