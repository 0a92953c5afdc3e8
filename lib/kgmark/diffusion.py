"""A small latent diffusion model over multi-channel KG latents, with DDIM sampling
and DDIM inversion.

The denoiser uses EDM's preconditioning from :mod:`lib.common.edm`
(D(x, σ) = c_skip x + c_out F(c_in x, log σ / 4)). Deterministic DDIM is Euler's
method on the probability-flow ODE dx/dσ = (x − D(x, σ))/σ in this variance-exploding
parametrisation (Karras et al., 2022, §3), so sampling walks σ down a Karras grid and
inversion walks it up. The initial noise that carries the watermark is n = x_T/σ_max.
"""

from __future__ import annotations

import torch
from torch import nn

from lib.common import check_generator, check_int, check_positive, check_tensor
from lib.common.edm import karras_sigmas, precondition

from .data import _check_shape


class Denoiser(nn.Module):
    """F(x_in, c_noise): an MLP over the flattened latent with the noise level as an
    extra input (a small stand-in for the paper's UNet)."""

    def __init__(self, shape=(4, 8, 8), hidden=256, generator=None):
        super().__init__()
        _check_shape("shape", shape, None)
        check_int("hidden", hidden, 1)
        check_generator("generator", generator)
        self.shape = tuple(shape)
        d = int(torch.tensor(shape).prod())
        self.net = nn.Sequential(
            nn.Linear(d + 1, hidden), nn.SiLU(),
            nn.Linear(hidden, hidden), nn.SiLU(),
            nn.Linear(hidden, hidden), nn.SiLU(),
            nn.Linear(hidden, d),
        )  # fmt: skip
        if generator is not None:
            with torch.no_grad():
                for p in self.parameters():
                    bound = 1 / max(p.shape[-1], 1) ** 0.5
                    p.copy_(
                        torch.rand(p.shape, generator=generator) * 2 * bound - bound
                    )

    def forward(self, x_in, c_noise):
        flat = x_in.flatten(1)  # (B, C·h·w)
        out = self.net(torch.cat([flat, c_noise.reshape(-1, 1)], 1))
        return out.view(x_in.shape)


class LatentDiffusion(nn.Module):
    """D(x, σ) with EDM preconditioning around :class:`Denoiser`."""

    def __init__(self, shape=(4, 8, 8), hidden=256, sigma_data=1.0, generator=None):
        super().__init__()
        check_positive("sigma_data", sigma_data)
        self.F = Denoiser(shape, hidden, generator)
        self.sigma_data = sigma_data

    def forward(self, x, sigma):
        return precondition(self.F, x, sigma, self.sigma_data, check=False)


def train_diffusion(
    sample_batch, shape, steps=1500, batch=256, lr=2e-3, hidden=256,
    generator=None, device="cpu",
):  # fmt: skip
    """EDM training (log-normal σ, P_mean −1.2, P_std 1.2, λ(σ) weighting) on batches
    from ``sample_batch(batch, generator) -> (batch, *shape)``."""
    if not callable(sample_batch):
        raise TypeError(
            f"sample_batch: expected a function (batch, generator) -> latents, got "
            f"{type(sample_batch).__name__}"
        )
    _check_shape("shape", shape, None)
    check_int("steps", steps, 1)
    check_int("batch", batch, 1)
    check_positive("lr", lr)
    check_int("hidden", hidden, 1)
    check_generator("generator", generator)
    model = LatentDiffusion(shape, hidden, generator=generator).to(device)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    sd = model.sigma_data
    for _ in range(steps):
        x = sample_batch(batch, generator).to(device)  # (B, C, h, w)
        sigma = (torch.randn(batch, generator=generator) * 1.2 - 1.2).exp().to(device)
        noise = torch.randn(x.shape, generator=generator).to(device)
        w = (sigma**2 + sd**2) / (sigma * sd) ** 2  # λ(σ)
        err = (model(x + sigma.view(-1, 1, 1, 1) * noise, sigma) - x) ** 2
        loss = (w * err.flatten(1).mean(1)).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    return model.eval()


def sigma_grid(steps, sigma_min=0.01, sigma_max=10.0, device="cpu"):
    """σ_max = s_0 > … > s_steps = σ_min (Karras ρ = 7), the DDIM time grid."""
    check_int("steps", steps, 1)
    return karras_sigmas(steps + 1, sigma_min, sigma_max, device=device).flip(0)


def _check_inputs(model, name, x, sigmas, check):
    """A callable model, latents ``x`` (B, C, h, w) of the model's shape, and a grid
    of noise levels; ``check=False`` (the experiment's loops) keeps the old checks
    only."""
    check_tensor(name, x, ndim=4, floating=True)
    if not check:
        return
    if not callable(model):
        raise TypeError(
            f"model: expected a denoiser D(x, sigma), got {type(model).__name__}"
        )
    check_tensor(name, x, nonempty=True, finite=True)
    want = getattr(getattr(model, "F", None), "shape", None)
    if want is not None and tuple(x.shape[1:]) != tuple(want):
        raise ValueError(
            f"{name}: expected latents of shape (B, {', '.join(map(str, want))}), "
            f"got {tuple(x.shape)}"
        )
    check_tensor("sigmas", sigmas, ndim=1, floating=True, nonempty=True, finite=True)
    if bool((sigmas <= 0).any()):
        raise ValueError(
            f"sigmas: expected noise levels > 0, got min {float(sigmas.min()):.3g}"
        )


def _slope(model, x, s):
    return (x - model(x, s.expand(x.shape[0]))) / s  # dx/dσ


@torch.no_grad()
def ddim_sample(model, noise, sigmas, return_path=False, *, check=True):
    """Deterministic DDIM (Euler) from x_T = σ_max·noise down to σ_min.
    ``return_path`` also returns the states (steps+1, B, ...) at every σ."""
    _check_inputs(model, "noise", noise, sigmas, check)
    x = noise * sigmas[0]
    path = [x]
    for s, s_next in zip(sigmas[:-1], sigmas[1:]):
        x = x + (s_next - s) * _slope(model, x, s)  # eq. (2): one DDIM step
        path.append(x)
    return (x, torch.stack(path)) if return_path else x


@torch.no_grad()
def ddim_invert(model, x0, sigmas, fixed_point=1, return_path=False, *, check=True):
    """DDIM inversion from the data up to σ_max; returns the noise x_T/σ_max.

    Each step solves x' = x − (s − s') d(x', s') for x' (s' > s): the point whose
    sampling step lands on x. ``fixed_point = 0`` is the usual approximation
    d(x', s') ≈ d(x, s); each fixed-point iteration refines it (Wallace et al.
    2023 and later exact-inversion work use the same idea)."""
    _check_inputs(model, "x0", x0, sigmas, check)
    check_int("fixed_point", fixed_point, 0)
    up = sigmas.flip(0)  # σ_min → σ_max
    x = x0
    path = [x]
    for s, s_next in zip(up[:-1], up[1:]):
        x_next = x + (s_next - s) * _slope(model, x, s)  # eq. (3): naive inversion
        for _ in range(fixed_point):
            x_next = x + (s_next - s) * _slope(model, x_next, s_next)
        x = x_next
        path.append(x)
    noise = x / up[-1]
    return (noise, torch.stack(path).flip(0)) if return_path else noise
