"""The authors' 2-D toy: a mixture of isotropic Gaussians, whose denoiser and PF-ODE map
are exact.

Data x* ~ Σ_k w_k N(μ_k, s² I); noisy x_σ = x* + σ z ~ Σ_k w_k N(μ_k, (s² + σ²) I), so

    D(x, σ) = E[x* | x_σ = x] = Σ_k r_k(x, σ) (μ_k + s²/(s² + σ²) (x − μ_k)),
        (denoiser)
    r_k(x, σ) ∝ w_k N(x; μ_k, (s² + σ²) I),

and the probability-flow ODE is dx/dσ = (x − D(x, σ)) / σ (EDM, with x_σ = x* + σ z).
"""

from __future__ import annotations

import torch

from lib.common import check_int, check_positive, check_tensor

from .diffusion import karras_sigmas

#: the authors' toy: two Gaussians at (0, ±0.5) with standard deviation 0.01
TWO_GAUSSIANS = {"means": ((0.0, -0.5), (0.0, 0.5)), "std": 0.01}


def _as_float64(name: str, values) -> torch.Tensor:
    try:
        return torch.as_tensor(values, dtype=torch.float64)
    except (TypeError, ValueError, RuntimeError):
        raise TypeError(
            f"{name}: expected an array of numbers, got {values!r}"
        ) from None


class GaussianMixture:
    """An isotropic Gaussian mixture with exact sampling and an exact denoiser."""

    def __init__(self, means, std: float, weights=None):
        self.means = _as_float64("means", means)  # (K, d)
        if self.means.ndim != 2 or self.means.shape[0] < 1 or self.means.shape[1] < 1:
            raise ValueError(
                f"means: expected a (K, d) array with K >= 1, got shape "
                f"{tuple(self.means.shape)}"
            )
        if not bool(torch.isfinite(self.means).all()):
            raise ValueError("means: expected finite numbers, got NaN or inf")
        self.std = check_positive("std", std)
        k = self.means.shape[0]
        w = (
            torch.full((k,), 1.0 / k, dtype=torch.float64)
            if weights is None
            else _as_float64("weights", weights)
        )
        if (
            w.shape != (k,)
            or not bool((w >= 0).all())
            or not abs(float(w.sum()) - 1) <= 1e-6
        ):
            raise ValueError(
                f"weights: expected {k} non-negative numbers summing to 1, got "
                f"{w.tolist()}"
            )
        self.weights = w  # (K,)

    @property
    def dim(self) -> int:
        return self.means.shape[1]

    def sample(self, n: int, generator: torch.Generator | None = None) -> torch.Tensor:
        """n samples on the CPU, float32; shape (n, d)."""
        n = check_int("n", n, minimum=1)
        k = torch.multinomial(
            self.weights, n, replacement=True, generator=generator
        )  # (n,)
        eps = torch.randn(
            n, self.dim, generator=generator, dtype=torch.float64
        )  # (n, d)
        return (self.means[k] + self.std * eps).float()

    def denoise(self, x: torch.Tensor, sigma: torch.Tensor) -> torch.Tensor:
        """Exact D(x, σ) = E[x* | x* + σ z = x]; x (..., d), σ of shape x.shape[:-1] (or
        scalar)."""
        check_tensor("x", x, floating=True)
        if x.shape[-1] != self.dim:
            raise ValueError(
                f"x: expected last dimension {self.dim}, got shape {tuple(x.shape)}"
            )
        sigma = torch.as_tensor(sigma, dtype=x.dtype, device=x.device).expand(
            x.shape[:-1]
        )
        mu = self.means.to(x.device, x.dtype)  # (K, d)
        var = self.std**2 + sigma**2  # s² + σ²   (...)
        diff = x.unsqueeze(-2) - mu  # (..., K, d)
        logits = self.weights.to(x.device, x.dtype).log() - 0.5 * diff.pow(2).sum(
            -1
        ) / var.unsqueeze(-1)
        r = torch.softmax(logits, dim=-1)  # r_k   (..., K)
        shrink = (self.std**2 / var).unsqueeze(-1).unsqueeze(-1)  # s²/(s²+σ²)
        post = mu + shrink * diff  # E[x*|x, k]  (..., K, d)
        return (r.unsqueeze(-1) * post).sum(-2)  # (..., d)

    def nearest_mode_distance(self, x: torch.Tensor) -> torch.Tensor:
        """‖x − μ_k‖ to the nearest mean; shape x.shape[:-1]."""
        mu = self.means.to(x.device, x.dtype)
        return (x.unsqueeze(-2) - mu).norm(dim=-1).min(dim=-1).values


def two_gaussians() -> GaussianMixture:
    """The authors' two-Gaussian toy (means (0, ±0.5), std 0.01)."""
    return GaussianMixture(TWO_GAUSSIANS["means"], TWO_GAUSSIANS["std"])


@torch.no_grad()
def pf_ode_map(
    gmm: GaussianMixture,
    x: torch.Tensor,
    sigma_max: float,
    sigma_min: float,
    steps: int = 400,
) -> torch.Tensor:
    """Φ(x): the exact PF-ODE dx/dσ = (x − D(x, σ))/σ solved from σ_max to σ_min with
    Heun's method on a Karras (ρ = 7) grid of ``steps`` intervals; x (..., d) -> (...,
    d). Computed in float64."""
    if not isinstance(gmm, GaussianMixture):
        raise TypeError(f"gmm: expected a GaussianMixture, got {type(gmm).__name__}")
    check_tensor("x", x, floating=True, nonempty=True, finite=True)
    if x.ndim < 1 or x.shape[-1] != gmm.dim:
        raise ValueError(
            f"x: expected last dimension {gmm.dim}, got shape {tuple(x.shape)}"
        )
    steps = check_int("steps", steps, minimum=1)
    grid = karras_sigmas(steps + 1, sigma_min, sigma_max, dtype=torch.float64).flip(
        0
    )  # σ_max → σ_min
    y = x.double()
    for s, s_next in zip(grid[:-1].tolist(), grid[1:].tolist()):
        d = (y - gmm.denoise(y, torch.tensor(s, dtype=torch.float64))) / s  # dx/dσ at σ
        y_euler = y + (s_next - s) * d
        d_next = (
            y_euler - gmm.denoise(y_euler, torch.tensor(s_next, dtype=torch.float64))
        ) / s_next
        y = y + (s_next - s) * 0.5 * (d + d_next)  # Heun
    return y.to(x.dtype)
