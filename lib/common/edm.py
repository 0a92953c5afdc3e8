"""EDM pieces shared by the diffusion chapters (Karras et al., 2022).

- :func:`edm_scalings`, :func:`precondition` — EDM's preconditioning
  D(x, σ) = c_skip(σ) x + c_out(σ) F(c_in(σ) x, c_noise(σ)), with the consistency-model
  boundary shift σ → σ − σ_min of Song et al. (2023) as an option;
- :func:`karras_sigmas` — the ρ = 7 discretisation of [σ_min, σ_max].

Used by ``lib.consistency_gc`` and ``lib.memorization``.
"""

from __future__ import annotations

import torch

from .checks import check_int, check_nonnegative, check_positive, check_tensor


def edm_scalings(
    sigma: torch.Tensor,
    sigma_data: float = 0.5,
    sigma_min: float = 0.0,
    *,
    check: bool = True,
):
    """EDM's (c_skip, c_out, c_in) at noise levels ``sigma`` (any shape; same shape
    out).

    With ``sigma_min > 0`` the consistency-model form: c_skip(σ_min) = 1 and
    c_out(σ_min) = 0, so f(x, σ_min) = x exactly (the boundary condition). With
    ``sigma_min = 0`` plain EDM. ``check=False`` skips reading σ's values (NaN, sign):
    the training loop, which validated once.
    """
    check_tensor("sigma", sigma, floating=True)
    sigma_data = check_positive("sigma_data", sigma_data)
    if (
        isinstance(sigma_min, bool)
        or not isinstance(sigma_min, (int, float))
        or sigma_min < 0
    ):
        raise ValueError(f"sigma_min: expected a number >= 0, got {sigma_min!r}")
    check_nonnegative("sigma_min", sigma_min)
    if (
        check
        and sigma.numel()
        and not bool(((sigma >= 0) & torch.isfinite(sigma)).all())
    ):
        raise ValueError(
            "sigma: expected finite noise levels >= 0, got NaN, inf or a negative value"
        )
    s = sigma - sigma_min
    c_skip = sigma_data**2 / (s**2 + sigma_data**2)  # σ_d² / ((σ−σ_min)² + σ_d²)
    c_out = (
        sigma_data * s / (sigma**2 + sigma_data**2).sqrt()
    )  # σ_d (σ−σ_min) / √(σ² + σ_d²)
    c_in = 1.0 / (sigma**2 + sigma_data**2).sqrt()  # 1 / √(σ² + σ_d²)
    return c_skip, c_out, c_in


def precondition(
    net,
    x: torch.Tensor,
    sigma: torch.Tensor,
    sigma_data: float = 0.5,
    sigma_min: float = 0.0,
    *,
    check: bool = True,
) -> torch.Tensor:
    """f(x, σ) = c_skip x + c_out F(c_in x, log(σ)/4), one σ per sample.

    ``sigma`` has the leading shape of ``x``: x (B, ...) with σ (B,), or x (M, B, ...)
    with σ (M, B) for an ensemble of M models. ``net(x_in, c_noise)`` is the raw network
    F; c_noise = log(σ)/4 is EDM's noise conditioning. ``check=False`` skips reading the
    values (NaN, inf): the model's forward.
    """
    if not callable(net):
        raise TypeError(
            f"net: expected the raw network F (a callable), got {type(net).__name__}"
        )
    check_tensor("x", x, floating=True)
    check_tensor("sigma", sigma, floating=True)
    if (
        sigma.ndim < 1
        or sigma.ndim > x.ndim
        or tuple(x.shape[: sigma.ndim]) != tuple(sigma.shape)
    ):
        raise ValueError(
            f"x, sigma: expected sigma's shape to be a leading part of x's, got x "
            f"{tuple(x.shape)} and sigma {tuple(sigma.shape)}"
        )
    if check:
        check_tensor("x", x, finite=True)
    c_skip, c_out, c_in = edm_scalings(sigma, sigma_data, sigma_min, check=check)
    view = tuple(sigma.shape) + (1,) * (
        x.ndim - sigma.ndim
    )  # broadcast σ over the data dims
    f_raw = net(c_in.view(view) * x, sigma.log() / 4)  # F(c_in x, c_noise)   like x
    return c_skip.view(view) * x + c_out.view(view) * f_raw  # like x


def karras_sigmas(
    n: int,
    sigma_min: float = 0.002,
    sigma_max: float = 80.0,
    rho: float = 7.0,
    device: str | torch.device = "cpu",
    dtype=torch.float32,
) -> torch.Tensor:
    """σ_1 < … < σ_n with σ_i = (σ_min^{1/ρ} + (i−1)/(n−1) (σ_max^{1/ρ} −
    σ_min^{1/ρ}))^ρ; shape (n,).

    Increasing order (iCT's convention: a pair is (σ_i, σ_{i+1}) with σ_i < σ_{i+1}).
    """
    n = check_int("n", n, minimum=2)
    sigma_min, sigma_max = (
        check_positive("sigma_min", sigma_min),
        check_positive("sigma_max", sigma_max),
    )
    rho = check_positive("rho", rho)
    if sigma_min >= sigma_max:
        raise ValueError(
            f"sigma_max: expected a number > sigma_min = {sigma_min}, got {sigma_max}"
        )
    ramp = torch.arange(n, dtype=torch.float64) / (n - 1)  # (n,)
    lo, hi = sigma_min ** (1 / rho), sigma_max ** (1 / rho)
    return ((lo + ramp * (hi - lo)) ** rho).to(device=device, dtype=dtype)  # (n,)
