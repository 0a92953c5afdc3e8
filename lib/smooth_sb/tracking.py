"""Particle tracking: the methods (smooth SB, Brownian SB, W2 matching, a
constant-velocity tracker, a known-velocity oracle) and the correct-rate metrics."""

from __future__ import annotations

import numpy as np
import scipy.optimize
import torch

from lib.common import check_choice, check_instance, check_int, check_tensor

from .model import Tracks, brownian_log_kernels, matern_sde, smooth_log_kernels
from .model import transition
from .solver import chain_sinkhorn, sample_paths

METHODS = ("smooth_sb", "brownian_sb", "w2", "velocity", "oracle")


def link_correct(paths: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Whether each link of each path follows one particle: (S, K−1) bool.

    ``paths`` (S, K) observation indices; ``labels`` (K, n) particle of each
    observation."""
    check_tensor("labels", labels, ndim=2, integer=True, nonempty=True)
    check_tensor("paths", paths, ndim=2, integer=True, nonempty=True)
    K, n = labels.shape
    if paths.shape[1] != K:
        raise ValueError(f"paths: expected {K} times, got {paths.shape[1]}")
    if bool((paths < 0).any()) or bool((paths >= n).any()):
        raise ValueError(f"paths: expected observation indices in [0, {n})")
    who = labels[torch.arange(K, device=paths.device)[None, :], paths]  # (S, K)
    return who[:, 1:] == who[:, :-1]


def correct_rates(paths, labels) -> dict:
    """Correct rates as in the official evaluation: ``one-step`` the share of links
    that stay on one particle (1 − jump probability); ``3-step`` / ``5-step`` the share
    of windows of 3 / 5 consecutive observations (2 / 4 links, any start) on one
    particle; ``whole`` the share of paths on one particle throughout."""
    ok = link_correct(paths, labels).double()  # (S, K−1)
    out = {}
    for name, h in (("one-step", 1), ("3-step", 2), ("5-step", 4)):
        if h > ok.shape[1]:
            raise ValueError(
                f"paths: expected at least {h + 1} times, got {ok.shape[1] + 1}"
            )
        out[name] = ok.unfold(1, h, 1).prod(-1).mean().item()  # windows (S, K−h)
    out["whole"] = ok.prod(1).mean().item()
    return out


def _follow(perms: list, n: int) -> torch.Tensor:
    """Paths from each observation at time 0 through per-step assignments j = π_k(i)."""
    idx = torch.arange(n)
    paths = [idx]
    for p in perms:
        idx = p[idx]
        paths.append(idx)
    return torch.stack(paths, 1)  # (n, K)


def _assign(cost: torch.Tensor) -> torch.Tensor:
    """Hungarian assignment minimising ``cost`` (n, n): π(i) = j."""
    rows, cols = scipy.optimize.linear_sum_assignment(cost.detach().cpu().numpy())
    out = np.empty(len(rows), dtype=np.int64)
    out[rows] = cols
    return torch.from_numpy(out)


def w2_matching(obs: torch.Tensor) -> torch.Tensor:
    """Consecutive W2 matching: the optimal assignment between each pair of consecutive
    point clouds for the squared distance. Paths (n, K)."""
    check_tensor("obs", obs, ndim=3, floating=True, finite=True, nonempty=True)
    perms = [_assign(torch.cdist(obs[k], obs[k + 1]) ** 2) for k in range(len(obs) - 1)]
    return _follow(perms, obs.shape[1])


def velocity_matching(obs: torch.Tensor, first: str = "backward") -> torch.Tensor:
    """A greedy constant-velocity tracker: each point is predicted at
    x_k + (x_k − x_{k−1}) along its own path and matched to the next cloud by the
    optimal assignment for the squared distance to the predictions. The first link has
    no velocity yet: ``first="w2"`` takes it from W2 matching, ``first="backward"``
    (the default, the stronger tracker) from the same tracker run backwards from the
    last snapshot. Paths (n, K)."""
    check_tensor("obs", obs, ndim=3, floating=True, finite=True, nonempty=True)
    check_choice("first", first, ("w2", "backward"))
    if obs.shape[0] < 3 and first == "backward":
        raise ValueError(f"obs: expected at least 3 times, got {obs.shape[0]}")
    if obs.shape[0] < 2:
        raise ValueError(f"obs: expected at least 2 times, got {obs.shape[0]}")
    K, n, _ = obs.shape
    idx = torch.arange(n)
    if first == "w2":
        perm = _assign(torch.cdist(obs[0], obs[1]) ** 2)
    else:
        back = velocity_matching(obs.flip(0), first="w2")  # (n, K), time reversed
        perm = torch.empty(n, dtype=torch.long)
        perm[back[:, K - 1]] = back[:, K - 2]  # obs at time 0 -> its match at time 1
    paths, prev, idx = [idx], obs[0], perm
    paths.append(idx)
    for k in range(1, K - 1):
        cur = obs[k][idx]  # (n, d) in path order
        pred = 2 * cur - prev
        p = _assign(torch.cdist(pred, obs[k + 1]) ** 2)
        prev, idx = cur, p
        paths.append(idx)
    return torch.stack(paths, 1)


def oracle_matching(tracks: Tracks, nu: float, ell: float, sigma: float):
    """Known-velocity oracle: each observation's true phase-space state is given, and
    the next cloud is matched to the transition means by the Mahalanobis distance of the
    positions (Q_xx of the true process). Paths (n, K)."""
    check_instance("tracks", tracks, Tracks)
    matern_sde(nu, ell, sigma)  # validates nu, ell, sigma
    K, n, d = tracks.obs.shape
    sde = matern_sde(nu, ell, sigma)
    dts = (tracks.times[1:] - tracks.times[:-1]).tolist()
    perms = []
    for k, dt in enumerate(dts):
        Phi, _ = transition(sde, dt)
        lab = tracks.labels[k].cpu()
        st = tracks.states[k].cpu()[lab]  # (n, d, m) in observation order
        mean = st @ torch.tensor(Phi[0], dtype=st.dtype)  # (n, d) position mean
        perms.append(_assign(torch.cdist(mean, tracks.obs[k + 1].cpu()) ** 2))
    return _follow(perms, n)


def track(
    tracks: Tracks,
    method: str,
    ell: float = 3.0,
    c: float = 1.0,
    M: int = 24,
    sub: int = 3,
    width: float = 3.0,
    sweeps: int = 40,
    per_start: int = 50,
    seed: int = 0,
    truth: tuple | None = None,
):
    """Paths (S, K) reconstructed by ``method`` (one of :data:`METHODS`).

    ``ell``, ``c``: the Matérn length-scale and variance multiplier (smooth SB) or the
    Brownian scale (``c``; brownian_sb); ``truth`` = (ν, ℓ, σ) of the data (oracle)."""
    check_instance("tracks", tracks, Tracks)
    check_choice("method", method, METHODS)
    check_int("seed", seed, 0)
    obs = tracks.obs
    if method == "w2":
        return w2_matching(obs.cpu())
    if method == "velocity":
        return velocity_matching(obs.cpu())
    if method == "oracle":
        if truth is None:
            raise ValueError(
                "truth: expected (nu, ell, sigma) for the oracle, got None"
            )
        return oracle_matching(tracks, *truth)
    if method == "smooth_sb":
        log_k, log_p0 = smooth_log_kernels(obs, tracks.times, ell, c, M, sub, width)
    else:
        log_k, log_p0 = brownian_log_kernels(obs, tracks.times, c)
    sol = chain_sinkhorn(log_k, log_p0, sweeps=sweeps)
    gen = torch.Generator().manual_seed(int(seed))
    return sample_paths(sol, per_start, gen).cpu()
