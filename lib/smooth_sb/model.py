"""The reference processes and the data: Matérn-ν Gaussian processes lifted to phase
space as linear SDEs, their exact Gaussian transitions, and simulated particle tracks.

A Matérn process with smoothness ν = m − ½ is the first coordinate of the m-dimensional
linear SDE dη = Aη dt + L dW (η = position and its first m − 1 derivatives), with A the
companion matrix of (s + λ)^m, λ = √(2ν)/ℓ, L = e_m and spectral density q chosen so the
stationary variance of the position is σ².
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import scipy.linalg
import scipy.special
import torch

from lib.common import (
    check_instance,
    check_int,
    check_nonnegative,
    check_positive,
    check_tensor,
)

DTYPE = torch.float64
NUS = (0.5, 1.5, 2.5)


@dataclass(frozen=True)
class LinearSDE:
    """dη = Aη dt + L dW with white-noise intensity q (NumPy float64 arrays)."""

    A: np.ndarray  # (m, m) drift
    L: np.ndarray  # (m, 1) diffusion
    q: float  # spectral density of W
    P_inf: np.ndarray  # (m, m) stationary covariance

    @property
    def order(self) -> int:
        return self.A.shape[0]


def matern_sde(nu: float = 1.5, ell: float = 3.0, sigma: float = 1.0) -> LinearSDE:
    """The phase-space SDE of the Matérn-ν kernel σ² k_ν(|t − s| / ℓ),
    ν ∈ {½, 3/2, 5/2}.

    q = 2σ²√π Γ(ν + ½) λ^(2ν) / Γ(ν); P∞ solves the Lyapunov equation
    A P + P Aᵀ + q L Lᵀ = 0.
    """
    if nu not in NUS:
        raise ValueError(f"nu: expected one of {NUS}, got {nu!r}")
    check_positive("ell", ell)
    check_positive("sigma", sigma)
    m = int(nu + 0.5)
    lam = math.sqrt(2 * nu) / ell
    A = np.zeros((m, m))
    A[np.arange(m - 1), np.arange(1, m)] = 1.0
    # last row: −binom(m, k) λ^(m−k) for k = 0..m−1 (companion matrix of (s + λ)^m)
    A[m - 1] = [-math.comb(m, k) * lam ** (m - k) for k in range(m)]
    L = np.zeros((m, 1))
    L[-1, 0] = 1.0
    q = (
        2
        * sigma**2
        * math.sqrt(math.pi)
        * scipy.special.gamma(nu + 0.5)
        * lam ** (2 * nu)
        / scipy.special.gamma(nu)
    )
    P_inf = scipy.linalg.solve_continuous_lyapunov(A, -q * L @ L.T)  # Lyapunov eq.
    return LinearSDE(A, L, float(q), 0.5 * (P_inf + P_inf.T))


def transition(sde: LinearSDE, dt: float) -> tuple[np.ndarray, np.ndarray]:
    """Exact transition of the SDE over ``dt``: η_{t+dt} | η_t ~ N(Φ η_t, Q).

    Φ = e^{A dt}, Q = P∞ − Φ P∞ Φᵀ (stationary process).
    """
    check_instance("sde", sde, LinearSDE)
    check_positive("dt", dt)
    Phi = scipy.linalg.expm(sde.A * dt)  # (m, m)
    Q = sde.P_inf - Phi @ sde.P_inf @ Phi.T  # (m, m)
    return Phi, 0.5 * (Q + Q.T)


@dataclass(frozen=True)
class Tracks:
    """Observed point clouds with hidden identities.

    ``obs`` (K, n, d): the positions seen at time k, in a random order per time;
    ``labels`` (K, n): which particle each observation is; ``states`` (K, n, d, m): the
    true phase-space states in particle order (velocities for the oracle);
    ``times`` (K,).
    """

    obs: torch.Tensor
    labels: torch.Tensor
    states: torch.Tensor
    times: torch.Tensor

    @property
    def shape(self) -> tuple:
        return tuple(self.obs.shape)


def simulate_tracks(
    n: int,
    steps: int,
    dim: int = 1,
    t_end: float = 2.0,
    nu: float = 1.5,
    ell: float = 1.0,
    sigma: float = 1.0,
    noise: float = 0.0,
    seed: int = 0,
    device="cpu",
) -> Tracks:
    """``n`` independent Matérn-ν tracks in ``dim`` dimensions, observed at
    ``steps`` + 1 equally spaced times on [0, t_end], each coordinate an independent
    stationary GP; observations shuffled per time, plus Gaussian noise of s.d.
    ``noise``."""
    check_int("n", n, 2)
    check_int("steps", steps, 1)
    check_int("dim", dim, 1)
    check_positive("t_end", t_end)
    check_nonnegative("noise", noise)
    check_int("seed", seed, 0)
    sde = matern_sde(nu, ell, sigma)
    Phi, Q = transition(sde, t_end / steps)
    gen = torch.Generator().manual_seed(int(seed))
    m = sde.order
    c0 = torch.linalg.cholesky(torch.tensor(sde.P_inf, dtype=DTYPE))  # (m, m)
    cq = torch.linalg.cholesky(torch.tensor(Q, dtype=DTYPE) + 1e-14 * torch.eye(m))
    Phi_t = torch.tensor(Phi, dtype=DTYPE)
    eta = torch.randn(n, dim, m, generator=gen, dtype=DTYPE) @ c0.T  # (n, d, m)
    states = [eta]
    for _ in range(steps):
        eta = eta @ Phi_t.T + torch.randn(n, dim, m, generator=gen, dtype=DTYPE) @ cq.T
        states.append(eta)
    states = torch.stack(states)  # (K, n, d, m)
    perms = torch.stack([torch.randperm(n, generator=gen) for _ in range(steps + 1)])
    obs = torch.gather(states[..., 0], 1, perms[..., None].expand(-1, -1, dim))
    obs = obs + noise * torch.randn(obs.shape, generator=gen, dtype=DTYPE)
    times = torch.linspace(0, t_end, steps + 1, dtype=DTYPE)
    return Tracks(obs.to(device), perms.to(device), states.to(device), times.to(device))


def velocity_grid(sd: float, M: int, width: float = 3.0) -> tuple[np.ndarray, float]:
    """Centres of ``M`` equal cells covering [−width·sd, width·sd] and the cell width
    (the finest level of a Haar basis)."""
    check_positive("sd", sd)
    check_int("M", M, 1)
    check_positive("width", width)
    h = 2 * width * sd / M
    return -width * sd + h * (np.arange(M) + 0.5), h


def check_obs_times(obs, times) -> tuple[int, int, int]:
    """Validate observed positions ``obs`` (K, n, d) with K ≥ 2 and their increasing
    ``times`` (K,); return (K, n, d)."""
    check_tensor("obs", obs, ndim=3, floating=True, finite=True, nonempty=True)
    K, n, d = obs.shape
    if K < 2:
        raise ValueError(
            f"obs: expected at least 2 times, got shape {tuple(obs.shape)}"
        )
    check_tensor("times", times, shape=(K,), floating=True, finite=True)
    if not bool((times[1:] > times[:-1]).all()):
        raise ValueError(f"times: expected increasing times, got {times.tolist()}")
    return K, n, d


def _log_normal2(rx: torch.Tensor, rv: torch.Tensor, Q: np.ndarray) -> torch.Tensor:
    """log N((rx, rv); 0, Q) with broadcasting (no stacked residual): the quadratic
    form written out, q = P₀₀ rx² + 2 P₀₁ rx rv + P₁₁ rv² (P = Q⁻¹)."""
    P = np.linalg.inv(Q)
    p00, p01, p11 = float(P[0, 0]), float(P[0, 1]), float(P[1, 1])
    quad = p00 * rx.square() + 2.0 * p01 * (rx * rv) + p11 * rv.square()
    return -0.5 * quad - 0.5 * math.log((2 * math.pi) ** 2 * np.linalg.det(Q))


def reference_grids(
    obs: torch.Tensor, ell: float, c: float, M: int, width: float
) -> list:
    """Per coordinate of ``obs`` (K, n, d): the Matérn-3/2 reference SDE with
    σ = ``c`` × the s.d. of all that coordinate's observations (as in the official
    code), the centres of its ``M`` velocity cells and their width, as
    [(sde, centres (M,), h)] × d."""
    out = []
    for k_dim in range(obs.shape[-1]):
        sigma = c * obs[..., k_dim].std().item()
        sde = matern_sde(1.5, ell, sigma)
        v, h = velocity_grid(math.sqrt(sde.P_inf[1, 1]), M, width)
        out.append((sde, v, h))
    return out


def smooth_log_kernels(
    obs: torch.Tensor,
    times: torch.Tensor,
    ell: float = 3.0,
    c: float = 1.0,
    M: int = 24,
    sub: int = 3,
    width: float = 3.0,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Log transition kernels of the Matérn-3/2 reference between observed positions and
    velocity cells, and the log prior of the first velocity cell.

    Returns ``log_k`` (K−1, d, n, M, n, M): log of the probability to move from
    (observation i, velocity cell a) at time k to (observation j, cell b) at k + 1, the
    position density at x_{k+1,j} times the mass of cell b, averaged over ``sub``
    quadrature points in cell a; and ``log_p0`` (d, M), the stationary velocity law over
    the cells. σ of each coordinate is ``c`` times the s.d. of all its observations (as
    in the official code).
    """
    K, n, d = check_obs_times(obs, times)
    check_positive("ell", ell)
    check_positive("c", c)
    check_int("M", M, 1)
    check_int("sub", sub, 1)
    check_positive("width", width)
    dev = obs.device
    out = torch.empty(K - 1, d, n, M, n, M, dtype=DTYPE, device=dev)
    log_p0 = torch.empty(d, M, dtype=DTYPE, device=dev)
    dts = (times[1:] - times[:-1]).tolist()
    for k_dim, (sde, v, h) in enumerate(reference_grids(obs, ell, c, M, width)):
        sd_v = math.sqrt(sde.P_inf[1, 1])
        off = h * ((np.arange(sub) + 0.5) / sub - 0.5)
        vs = torch.tensor(v[:, None] + off[None, :], dtype=DTYPE, device=dev)  # (M, S)
        p0 = -0.5 * (torch.tensor(v, dtype=DTYPE) / sd_v) ** 2
        log_p0[k_dim] = p0 - torch.logsumexp(p0, 0)
        for k, dt in enumerate(dts):
            Phi, Q = transition(sde, dt)
            x0, x1 = obs[k, :, k_dim], obs[k + 1, :, k_dim]  # (n,), (n,)
            # eq. (mean): Φ (x_i, v_{a,s}) for every observation i and quadrature point
            mx = Phi[0, 0] * x0[:, None, None] + Phi[0, 1] * vs  # (n, M, S)
            mv = Phi[1, 0] * x0[:, None, None] + Phi[1, 1] * vs  # (n, M, S)
            # the residual of eq. (mean), quadrature axes last (contiguous reduction):
            # rx (n, M, n, 1, S, 1), rv (n, M, 1, M, S, S)
            mx, mv = mx[:, :, None, None, :, None], mv[:, :, None, None, :, None]
            rx = x1[None, None, :, None, None, None] - mx
            rv = vs[None, None, None, :, None, :] - mv
            lp = _log_normal2(rx, rv, Q)  # (n, M, n, M, S, S)
            # average over start points, integrate the end cell: sum·h/S
            lp = lp.reshape(n, M, n, M, sub * sub)
            lk = torch.logsumexp(lp, dim=-1) - 2 * math.log(sub) + math.log(h)
            out[k, k_dim] = lk  # (n, M, n, M)
    return out, log_p0


def brownian_log_kernels(
    obs: torch.Tensor, times: torch.Tensor, c: float = 1.0
) -> tuple[torch.Tensor, torch.Tensor]:
    """The Brownian reference in the same layout with one velocity cell (M = 1):
    log N(x_{k+1,j}; x_{k,i}, s² Δt) with s = ``c`` × the s.d. of the coordinate's
    observations per unit time (s² = c² Var(x) / t_end)."""
    K, n, d = check_obs_times(obs, times)
    check_positive("c", c)
    span = (times[-1] - times[0]).item()
    s2 = c**2 * obs.var(dim=(0, 1)) / span  # (d,)
    dt = (times[1:] - times[:-1])[:, None, None, None]  # (K−1, 1, 1, 1)
    diff = obs[1:, None, :, :] - obs[:-1, :, None, :]  # (K−1, n_i, n_j, d)
    var = s2 * dt
    lk = -0.5 * diff**2 / var - 0.5 * torch.log(2 * math.pi * var)  # (K−1, n, n, d)
    lk = lk.permute(0, 3, 1, 2)[:, :, :, None, :, None]  # (K−1, d, n, 1, n, 1)
    return lk.contiguous(), torch.zeros(d, 1, dtype=obs.dtype, device=obs.device)
