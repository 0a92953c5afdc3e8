"""Diffusion / consistency-model pieces (EDM and iCT recipes) the chapter builds on.

- :func:`edm_scalings`, :func:`precondition`, :func:`karras_sigmas` — re-exported from
  :mod:`lib.common.edm` (EDM preconditioning with the consistency-model boundary shift;
  the ρ = 7 σ grid), shared with the memorization chapter;
- :func:`ict_num_scales` — iCT's doubling schedule N(k) of Song & Dhariwal (2024);
- :func:`lognormal_indices` — iCT's lognormal timestep sampling over the discrete σ's;
- :func:`ict_loss_weights` — iCT's weight λ(σ_i) = 1 / (σ_{i+1} − σ_i);
- :func:`pseudo_huber` — iCT's distance √(‖a − b‖² + c²) − c, c = 0.00054 √d by default;
- :func:`ema_update` — θ⁻ ← β θ⁻ + (1 − β) θ, in place.
"""

from __future__ import annotations

import math

import torch

from lib.common.edm import edm_scalings, karras_sigmas, precondition  # noqa: F401
from lib.common import (
    check_finite,
    check_generator,
    check_int,
    check_nonnegative,
    check_positive,
    check_probability,
    check_tensor,
)


def _check_sigmas(sigmas: torch.Tensor) -> None:
    if not bool(((sigmas > 0) & torch.isfinite(sigmas)).all()):
        raise ValueError(
            "sigmas: expected finite noise levels > 0, got NaN, inf or a value <= 0"
        )


def ict_num_scales(step: int, total_steps: int, s0: int = 10, s1: int = 1280) -> int:
    """iCT's discretisation schedule N(k) = min(s0 · 2^⌊k/K'⌋, s1) + 1, K' = ⌊K /
    (log2⌊s1/s0⌋ + 1)⌋ (the logarithm is not rounded, as in iCT and the official
    code: with s1/s0 = 10 the last stage reaches s1).

    Returns the number of σ's (so N(k) − 1 intervals) at training step k of K.
    """
    step, total_steps = (
        check_int("step", step, minimum=0),
        check_int("total_steps", total_steps, minimum=1),
    )
    s0, s1 = check_int("s0", s0, minimum=1), check_int("s1", s1, minimum=1)
    if s1 < s0:
        raise ValueError(f"s1: expected an int >= s0 = {s0}, got {s1}")
    k_prime = max(math.floor(total_steps / (math.log2(s1 // s0) + 1)), 1)  # K'
    return min(s0 * 2 ** (step // k_prime), s1) + 1


def lognormal_probs(
    sigmas: torch.Tensor, p_mean: float = -1.1, p_std: float = 2.0
) -> torch.Tensor:
    """p(i) ∝ erf((log σ_{i+1} − P_mean)/(√2 P_std)) − erf((log σ_i − P_mean)/(√2
    P_std)); shape (n−1,)."""
    check_tensor("sigmas", sigmas, ndim=1, floating=True)
    if sigmas.numel() < 2 or not bool((sigmas[1:] > sigmas[:-1]).all()):
        raise ValueError(
            f"sigmas: expected an increasing 1-d tensor of length >= 2, got "
            f"{sigmas.numel()} values"
        )
    _check_sigmas(sigmas)
    check_finite("p_mean", p_mean)
    p_std = check_positive("p_std", p_std)
    cdf = torch.erf((sigmas.double().log() - p_mean) / (p_std * math.sqrt(2)))  # (n,)
    p = cdf[1:] - cdf[:-1]  # (n−1,)
    return (p / p.sum()).to(sigmas.dtype)


def lognormal_indices(
    batch: int,
    sigmas: torch.Tensor,
    p_mean: float = -1.1,
    p_std: float = 2.0,
    generator: torch.Generator | None = None,
) -> torch.Tensor:
    """Indices i ∈ {0, …, n−2} of pairs (σ_i, σ_{i+1}), drawn with
    :func:`lognormal_probs`; (batch,) int64 on CPU.

    Draw on the CPU with a seeded ``generator``, then move (CPU and GPU runs then see
    the same i's).
    """
    batch = check_int("batch", batch, minimum=1)
    check_tensor("sigmas", sigmas, ndim=1, floating=True)
    check_generator("generator", generator)
    p = lognormal_probs(sigmas.detach().cpu(), p_mean, p_std)  # (n−1,)
    return torch.multinomial(
        p, batch, replacement=True, generator=generator
    )  # (batch,)


def ict_loss_weights(sigmas: torch.Tensor) -> torch.Tensor:
    """λ(σ_i) = 1 / (σ_{i+1} − σ_i) for each of the n−1 pairs; shape (n−1,)."""
    check_tensor("sigmas", sigmas, ndim=1, floating=True)
    if sigmas.numel() < 2:
        raise ValueError(f"sigmas: expected at least 2 values, got {sigmas.numel()}")
    _check_sigmas(sigmas)
    return 1.0 / (sigmas[1:] - sigmas[:-1])


def pseudo_huber(
    a: torch.Tensor, b: torch.Tensor, c: float | None = None, *, check: bool = True
) -> torch.Tensor:
    """d(a, b) = √(‖a − b‖² + c²) − c per sample (norm over all but the first dim);
    shape (B,).

    Default c = 0.00054 √d with d the per-sample dimension (iCT). ``check=False`` skips
    reading the values (NaN, inf): the training loss.
    """
    check_tensor("a", a, floating=True)
    check_tensor("b", b, floating=True)
    if a.shape != b.shape or a.ndim < 1:
        raise ValueError(
            f"a, b: expected one shape, got a {tuple(a.shape)} and b {tuple(b.shape)}"
        )
    if a.shape[0] < 1:
        raise ValueError(
            f"a, b: expected at least one sample, got shape {tuple(a.shape)}"
        )
    if check:
        check_tensor("a", a, finite=True)
        check_tensor("b", b, finite=True)
    d = a[0].numel() if a.shape[0] > 0 else 0
    c = 0.00054 * math.sqrt(d) if c is None else check_positive("c", c)
    sq = (a - b).reshape(a.shape[0], -1).pow(2).sum(dim=1)  # ‖a − b‖²  (B,)
    return (sq + c**2).sqrt() - c


@torch.no_grad()
def ema_update(
    ema_model: torch.nn.Module, model: torch.nn.Module, decay: float
) -> None:
    """θ⁻ ← β θ⁻ + (1 − β) θ for every parameter (buffers are copied), in place."""
    decay = check_probability("decay", decay)
    for name, m in (("ema_model", ema_model), ("model", model)):
        if not isinstance(m, torch.nn.Module):
            raise TypeError(
                f"{name}: expected a torch.nn.Module, got {type(m).__name__}"
            )
    ema_params, params = list(ema_model.parameters()), list(model.parameters())
    if len(ema_params) != len(params):
        raise ValueError(
            f"ema_model: expected {len(params)} parameters like model, got "
            f"{len(ema_params)}"
        )
    torch._foreach_lerp_(ema_params, params, 1.0 - decay)  # θ⁻ + (1−β)(θ − θ⁻)
    for b_ema, b in zip(ema_model.buffers(), model.buffers()):
        b_ema.copy_(b)
