"""Self-influence scores from per-sample gradients, and the selections compared in the
chapter.

eq. (1)  Self-Inf(z)  = ‖∇_θ ℓ(z; θ)‖²,
    ℓ = mean cross-entropy over the answer tokens of z
eq. (2)  Self-Inf-N(z) = log(Self-Inf(z) + 1) + log(|answer(z)| + 1)
"""

from __future__ import annotations

import math

import torch
import torch.nn as nn
from torch.func import functional_call, grad, vmap

from lib.common import check_generator, check_int, check_tensor
from lib.common.gpt import lm_loss


def _check_batch(inputs, targets, mask):
    check_tensor("inputs", inputs, ndim=2)
    if inputs.dtype != torch.long:
        raise TypeError(
            f"inputs: expected a torch.long tensor of token ids, got dtype "
            f"{inputs.dtype}"
        )
    if inputs.shape[0] == 0:
        raise ValueError("inputs: expected at least one sample, got an empty batch")
    check_tensor("targets", targets, shape=tuple(inputs.shape))
    if targets.dtype != torch.long:
        raise TypeError(
            f"targets: expected a torch.long tensor of token ids, got dtype "
            f"{targets.dtype}"
        )
    check_tensor("mask", mask, shape=tuple(inputs.shape))
    if not bool((mask.sum(1) > 0).all()):
        raise ValueError(
            "mask: expected every sample to have at least one answer token, got an "
            "empty row"
        )


def _lengths(mask: torch.Tensor) -> torch.Tensor:
    """Position of each row's last selected target + 1 (the prefix the loss depends
    on)."""
    T = mask.shape[1]
    pos = torch.arange(1, T + 1, device=mask.device).expand_as(mask)
    return (pos * mask.bool()).amax(1).cpu()


def _params(model: torch.nn.Module, param_names) -> dict:
    named = dict(model.named_parameters())
    if param_names is None:
        return {k: p.detach() for k, p in named.items()}
    missing = [n for n in param_names if n not in named]
    if missing or not param_names:
        raise ValueError(
            f"param_names: expected names of the model's parameters, got unknown "
            f"{missing or 'none'}"
        )
    return {k: named[k].detach() for k in param_names}


METHODS = ("auto", "hooks", "vmap")
_HOOKED = (nn.Linear, nn.Embedding, nn.LayerNorm)


def _hook_owners(model: torch.nn.Module, params: dict):
    """Map each parameter of θ to the (module, role) pairs that use it, if every one of
    them belongs to a Linear, Embedding or LayerNorm (the layers whose per-sample
    gradients have a closed form); otherwise None. A tied parameter (the GPT's embedding
    and head) has two owners."""
    wanted = {id(p): name for name, p in params.items()}
    owners: dict = {name: [] for name in params}
    for mod in model.modules():
        for role, p in mod.named_parameters(recurse=False):
            if id(p) not in wanted:
                continue
            if not isinstance(mod, _HOOKED):
                return None
            owners[wanted[id(p)]].append((mod, role))
    return owners if all(owners.values()) else None


def _gram(u, v) -> torch.Tensor:
    """(B, T, T) inner products ⟨u_t, v_s⟩ of two per-position factors, each either
    dense (B, T, n) or one-hot given by its index (B, T) (an embedding row)."""
    if u.dtype == torch.long and v.dtype == torch.long:
        return (u[:, :, None] == v[:, None, :]).float()  # ⟨e_i, e_j⟩ = [i = j]
    if u.dtype == torch.long:
        return _gram(v, u).transpose(1, 2)
    if v.dtype == torch.long:  # ⟨u_t, e_{id_s}⟩ = u_t[id_s]
        return u.gather(2, v[:, None, :].expand(-1, u.shape[1], -1))
    return u @ v.transpose(1, 2)


def _sq_norms_hooks(model, params: dict, owners: dict, x, y, m) -> torch.Tensor | None:
    """Per-sample squared gradient norms from one batched forward and one backward to
    the layer outputs.

    The loss is the sum of the rows' own losses, so the gradient g at a layer's output,
    row b, is that row's alone, and each per-sample parameter gradient is a sum over
    positions t:
      Linear     ∂W_b = Σ_t g_bt a_btᵀ,  ∂bias_b = Σ_t g_bt
      Embedding  ∂E_b = Σ_t e_{id_bt} g_btᵀ          (e: one-hot row of the token id)
      LayerNorm  ∂γ_b = Σ_t g_bt ⊙ x̂_bt,  ∂β_b = Σ_t g_bt
    A matrix gradient G_b = Σ_k Σ_t u_kt v_ktᵀ (k: every use of the weight; two for the
    GPT's tied embedding and head) is never formed: ‖G_b‖² = Σ_{k,l} Σ_{t,s} ⟨u_kt,
    u_ls⟩⟨v_kt, v_ls⟩ (the "ghost norm"), which costs B·T²·(rows + columns) instead of
    B·T·rows·columns. Returns None when a layer saw an input that is not one row per
    sample."""
    calls: dict = {}
    handles = []
    mods = {id(mod): mod for pairs in owners.values() for mod, _ in pairs}
    B = x.shape[0]

    def expand_shared(mod, inp):  # position ids (T,) shared by all rows -> (B, T)
        if inp[0].dim() == x.dim() - 1:
            return (inp[0].expand(B, *inp[0].shape),)

    def fwd(mod, inp, out):
        calls.setdefault(id(mod), []).append((inp[0].detach(), out))

    for mod in mods.values():
        if isinstance(mod, nn.Embedding):
            handles.append(mod.register_forward_pre_hook(expand_shared))
        handles.append(mod.register_forward_hook(fwd))
    try:
        with torch.enable_grad():
            logits = model(x)  # (B, T, V)
            loss = lm_loss(logits, y, m, reduction="per_sample").sum()  # Σ_b ℓ_b
            outs = [o for cs in calls.values() for _, o in cs]
            grads = iter(
                torch.autograd.grad(loss, outs, allow_unused=True)
            )  # output gradients only
    finally:
        for h in handles:
            h.remove()
    rec = {k: [(a, next(grads)) for a, _ in cs] for k, cs in calls.items()}
    if any(a.shape[:2] != x.shape or g is None for cs in rec.values() for a, g in cs):
        return None
    total = torch.zeros(B, dtype=logits.dtype, device=x.device)
    for name, pairs in owners.items():
        factors, vec = [], 0  # matrix: (u, v) pairs; vector: summed gradient
        for mod, role in pairs:
            for a, g in rec[id(mod)]:  # a: (B, T, in) or ids (B, T)
                if isinstance(mod, nn.Linear):
                    if role == "weight":
                        factors.append((g, a))  # u = g (B,T,out), v = a (B,T,in)
                    else:
                        vec = vec + g.sum(1)
                elif isinstance(mod, nn.Embedding):
                    factors.append((a, g))  # u = e_id, v = g (B,T,D)
                elif role == "bias":  # LayerNorm
                    vec = vec + g.sum(1)
                else:
                    xh = torch.nn.functional.layer_norm(
                        a, mod.normalized_shape, eps=mod.eps
                    )
                    vec = vec + (g * xh).sum(1)  # (B, D)
        if factors:
            for i, (ui, vi) in enumerate(factors):
                for j, (uj, vj) in enumerate(factors[i:], i):
                    term = (_gram(ui, uj) * _gram(vi, vj)).sum(
                        (1, 2)
                    )  # Σ_ts ⟨u_t,u_s⟩⟨v_t,v_s⟩
                    total += term if i == j else 2 * term
        else:
            total += vec.reshape(B, -1).pow(2).sum(1)  # eq. (1), this parameter
    return total


def self_influence(
    model: torch.nn.Module,
    inputs: torch.Tensor,
    targets: torch.Tensor,
    mask: torch.Tensor,
    chunk: int = 32,
    param_names=None,
    method: str = "auto",
) -> torch.Tensor:
    """Self-Inf (eq. 1) of every row: the squared norm of its own loss gradient, (N,)
    float.

    Two exact ways to the per-sample gradients, ``chunk`` rows at a time, rows of
    similar length together and padding cut off; ``param_names`` restricts θ to a subset
    (default: all).

    - ``"vmap"``: ``torch.func``, ``vmap(grad(loss))`` over rows (any model; memory ≈
      chunk × number of parameters);
    - ``"hooks"``: one batched forward/backward whose layer inputs and output gradients
      give every row's gradient in closed form (Linear, Embedding and LayerNorm
      parameters only; see :func:`_sq_norms_hooks`);
    - ``"auto"``: hooks when every parameter of θ allows it, else vmap."""
    if not isinstance(model, nn.Module):
        raise TypeError(
            f"model: expected a torch.nn.Module, got {type(model).__name__}"
        )
    _check_batch(inputs, targets, mask)
    check_int("chunk", chunk, 1)
    if method not in METHODS:
        raise ValueError(f"method: expected one of {METHODS}, got {method!r}")
    dev = next(model.parameters()).device
    params = _params(model, param_names)
    live = {k: p for k, p in model.named_parameters() if k in params}
    owners = _hook_owners(model, live) if method != "vmap" else None
    if method == "hooks" and owners is None:
        raise ValueError(
            "method: 'hooks' needs every parameter of θ in a Linear, Embedding or "
            "LayerNorm "
            "layer; got others, use 'vmap'"
        )
    buffers = {k: b.detach() for k, b in model.named_buffers()}
    was_training = model.training
    model.eval()

    def loss_one(p, x, y, m):  # x, y, m: (T,)
        logits = functional_call(model, (p, buffers), (x[None],))  # (1, T, V)
        return lm_loss(logits, y[None], m[None])  # mean over answer tokens

    def sq_norm(p, x, y, m):
        g = grad(loss_one)(p, x, y, m)
        return sum(t.pow(2).sum() for t in g.values())  # eq. (1)

    batched = vmap(sq_norm, in_dims=(None, 0, 0, 0))
    # rows sorted by length and each chunk cut to its longest row: exact, since
    # attention is causal and the loss only reads positions up to the last answer token
    length = _lengths(mask)  # (N,)
    order = torch.argsort(length, stable=True)
    out = torch.empty(
        inputs.shape[0], dtype=params[next(iter(params))].dtype, device=dev
    )
    for s in range(0, inputs.shape[0], chunk):
        rows = order[s : s + chunk]
        T = int(length[rows].max())
        xb, yb, mb = (t[rows, :T].to(dev) for t in (inputs, targets, mask))
        res = (
            _sq_norms_hooks(model, live, owners, xb, yb, mb)
            if owners is not None
            else None
        )
        if res is None and method == "hooks":
            raise ValueError(
                "method: 'hooks' needs layers that see one input row per sample; this "
                "model "
                "shares a layer input across rows, use 'vmap'"
            )
        if res is None:
            res = batched(params, xb, yb, mb)
        out[rows.to(dev)] = res.detach()
    model.train(was_training)
    return out


def self_inf_n(self_inf: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    """Self-Inf-N (eq. 2): log(Self-Inf + 1) + log(answer length + 1)."""
    check_tensor(
        "self_inf", self_inf, ndim=1, floating=True, nonempty=True, finite=True
    )
    check_tensor("lengths", lengths, shape=(self_inf.shape[0],), integer=True)
    if bool((self_inf < 0).any()):
        raise ValueError("self_inf: expected squared norms >= 0, got a negative value")
    if bool((lengths < 0).any()):
        raise ValueError("lengths: expected answer lengths >= 0, got a negative value")
    return torch.log1p(self_inf) + torch.log1p(lengths.to(self_inf.dtype))


def select_top(
    scores: torch.Tensor,
    k: int,
    trivial: torch.Tensor | None = None,
    largest: bool = True,
) -> torch.Tensor:
    """Indices of the ``k`` highest (``largest=False``: lowest) scores, trivial answers
    dropped first.

    Ties are broken by index (a stable sort), so the selection is deterministic."""
    check_tensor("scores", scores, ndim=1, floating=True, nonempty=True, finite=True)
    check_int("k", k, 1)
    if trivial is None:
        trivial = torch.zeros_like(scores, dtype=torch.bool)
    check_tensor("trivial", trivial, shape=(scores.shape[0],))
    keep = (~trivial.bool()).nonzero().flatten()
    if k > keep.numel():
        raise ValueError(
            f"k: expected at most {keep.numel()} (the non-trivial samples), got {k}"
        )
    order = torch.sort(scores[keep], descending=largest, stable=True).indices
    return keep[order[:k]]


def select_random(
    n: int, k: int, generator: torch.Generator, trivial: torch.Tensor | None = None
) -> torch.Tensor:
    """``k`` indices drawn uniformly without replacement among the non-trivial
    samples."""
    check_int("n", n, 1)
    check_int("k", k, 1)
    check_generator("generator", generator, allow_none=False)
    if trivial is not None:
        check_tensor("trivial", trivial, shape=(n,))
    keep = torch.arange(n) if trivial is None else (~trivial.bool()).nonzero().flatten()
    if k > keep.numel():
        raise ValueError(f"k: expected at most {keep.numel()}, got {k}")
    return keep[torch.randperm(keep.numel(), generator=generator)[:k]]


def spearman(x: torch.Tensor, y: torch.Tensor) -> float:
    """Spearman rank correlation (average ranks for ties); NaN raises (it has no
    rank)."""
    check_tensor("x", x, ndim=1)
    check_tensor("y", y, ndim=1)
    if x.shape != y.shape:
        raise ValueError(
            f"x, y: expected one shape, got {tuple(x.shape)} and {tuple(y.shape)}"
        )
    if x.numel() < 2:
        raise ValueError(f"x: expected at least 2 values, got {x.numel()}")
    for name, v in (("x", x), ("y", y)):
        if v.is_floating_point() and bool(torch.isnan(v).any()):
            raise ValueError(f"{name}: expected values without NaN, got NaN")

    def rank(v):
        v = v.double()
        order = torch.argsort(v, stable=True)
        r = torch.empty_like(v)
        r[order] = torch.arange(len(v), dtype=torch.float64)
        for u in torch.unique(v):  # average the ranks of ties
            tie = v == u
            if tie.sum() > 1:
                r[tie] = r[tie].mean()
        return r

    rx, ry = rank(x), rank(y)
    rx, ry = rx - rx.mean(), ry - ry.mean()
    den = math.sqrt(float((rx**2).sum() * (ry**2).sum()))
    return float((rx * ry).sum() / den) if den > 0 else 0.0
