"""Self-checks for the smooth_sb chapter's exercises: ``exercises.ex1(answer)`` says
right, close or wrong (with a hint) without giving the answer away. Every answer is
computed here from the chapter's own functions, on the sets the solutions use (the
first notebook seed's 1-D and 2-D tracks at SMOKE size)."""

from __future__ import annotations

import functools

import numpy as np
import torch

from lib.common.exercises import Feedback, check_number, check_numbers

from . import SMOKE
from .experiment import make_tracks, method_kwargs
from .model import simulate_tracks, smooth_log_kernels
from .reference import sinkhorn_naive
from .solver import chain_sinkhorn
from .tracking import correct_rates, track, w2_matching


@functools.lru_cache(maxsize=2)
def _tracks(dim: int):
    return make_tracks(SMOKE, dim, SMOKE.claim_seeds[0])


def _rate(tr, method: str, **kw) -> float:
    return correct_rates(track(tr, method, seed=0, **kw), tr.labels)["5-step"]


def ex1(answer) -> Feedback:
    """Exercise smooth_sb-ex1: does the ranking of the W2 paths' positions stay the same
    at every time on the notebook's 1-D set (True or False)?"""
    if not isinstance(answer, (bool, np.bool_)):
        raise TypeError(f"answer: expected True or False, got {answer!r}")
    tr = _tracks(1)
    paths = w2_matching(tr.obs)  # (n, K)
    pos = tr.obs[torch.arange(tr.obs.shape[0])[None, :], paths, 0]  # (n, K)
    order = pos.argsort(0)
    truth = bool((order == order[:, :1]).all())
    if bool(answer) == truth:
        return Feedback("smooth_sb ex1", "right")
    return Feedback(
        "smooth_sb ex1", "wrong", "on the line the optimal assignment is monotone"
    )


@functools.lru_cache(maxsize=1)
def _ex2_truth() -> tuple:
    tr = _tracks(2)
    rates = [
        correct_rates(
            track(tr, "brownian_sb", c=c, sweeps=8, per_start=20, seed=0), tr.labels
        )["5-step"]
        for c in (0.01, 0.1, 1.0)
    ]
    return tuple(rates)


def ex2(rates) -> Feedback:
    """Exercise smooth_sb-ex2: the Brownian SB's 5-step rates at c = 0.01, 0.1 and 1 on
    the notebook's 2-D set (the solution's settings: 8 sweeps, 20 paths per start)."""
    return check_numbers(
        "smooth_sb ex2",
        rates,
        _ex2_truth(),
        atol=0.0015,
        close=0.1,
        hint="run track(tr2, 'brownian_sb', c=c, sweeps=8, per_start=20, seed=0)",
    )


def ex3(gap) -> Feedback:
    """Exercise smooth_sb-ex3: the largest gap between the chain solver's two-snapshot
    plan and Sinkhorn's with the velocity-summed kernel. Right when it is at the level
    of rounding error, as the one computed here is."""
    tr = simulate_tracks(6, 1, 1, ell=1.0, seed=2)
    lk, lp = smooth_log_kernels(tr.obs, tr.times, 1.0, 1.0, M=4)
    sol = chain_sinkhorn(lk, lp, sweeps=3000, tol=1e-13)
    keff = torch.logsumexp(lk[0, 0] + lp[0][None, :, None, None], dim=(1, 3))  # (6, 6)
    P = sinkhorn_naive(np.exp(keff.numpy()), *[np.ones(6) / 6] * 2)
    truth = float(np.abs(sol.pair_marginal(0).numpy() - P).max())
    return check_number(
        "smooth_sb ex3",
        gap,
        truth,
        atol=1e-10,
        close=1e6,
        hint="the two plans should agree to rounding error (run both to convergence)",
    )


@functools.lru_cache(maxsize=1)
def _ex4_truth() -> tuple:
    tr = _tracks(1)
    return tuple(
        _rate(tr, "smooth_sb", **method_kwargs(SMOKE, "smooth_sb", 1, ell=ell))
        for ell in (3.0, SMOKE.ell1)
    )


def ex4(rates) -> Feedback:
    """Exercise smooth_sb-ex4: the smooth SB's 5-step rates on the notebook's 1-D set
    with ℓ = 3 and with the tuned ℓ (in that order)."""
    return check_numbers(
        "smooth_sb ex4",
        rates,
        _ex4_truth(),
        atol=0.0015,
        close=0.1,
        hint="method_kwargs(cfg, 'smooth_sb', 1, ell=ell), then track(..., seed=0)",
    )


def ex5(share) -> Feedback:
    """Exercise smooth_sb-ex5: the share of true 2-D velocities (all particles, times
    and coordinates of the notebook's 2-D set) beyond the w = 3 edge of the velocity
    grid at the tuned ℓ."""
    tr = _tracks(2)
    sd_v = tr.obs.std(dim=(0, 1)) * 3**0.5 / SMOKE.ell2  # (2,) σ·√3/ℓ per coordinate
    truth = (tr.states[..., 1].abs() > 3 * sd_v).double().mean().item()
    return check_number(
        "smooth_sb ex5",
        share,
        truth,
        atol=0.0015,
        close=0.2,
        hint="the stationary velocity s.d. of the Matérn-3/2 reference is σ√3/ℓ",
    )
