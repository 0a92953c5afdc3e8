"""Naive references: one run, one round at a time, in plain Python/NumPy, with A solved
afresh.

They define what the vectorised kernels in :mod:`lib.brokerage.learners` must compute;
the tests compare the two on the same random draws and the benchmark times them side by
side.
"""

from __future__ import annotations

import math

import numpy as np


def ridge_broker_naive(
    contexts, V, W, U, coin, kind: str, tau: float = math.inf, ridge: float = 1.0
):
    """Prices and exploration flags of one :class:`~lib.brokerage.learners.Learner` on
    one run.

    ``contexts`` (T, d), the others (T,), NumPy float64 arrays. A = λI + Σ c cᵀ and b =
    Σ y c over the rounds the learner updates on; θ̂ = A⁻¹ b by a linear solve (no
    Sherman–Morrison).
    """
    T, d = contexts.shape
    A, b = ridge * np.eye(d), np.zeros(d)
    prices, explored = np.zeros(T), np.zeros(T, dtype=bool)
    for t in range(T):
        c = contexts[t]
        theta = np.linalg.solve(A, b)
        s = c @ np.linalg.solve(A, c)  # ||c||²_{A⁻¹}
        if kind == "two_bit":
            explore = s > tau
        elif kind == "two_bit_unsquared":
            explore = math.sqrt(s) > tau
        elif kind == "eps_greedy":
            explore = coin[t] < min(1.0, (d / (t + 1)) ** (1 / 3))
        else:
            explore = False
        p = U[t] if explore else min(max(c @ theta, 0.0), 1.0)
        if kind == "full":
            y, update = (V[t] + W[t]) / 2, True
        else:
            y, update = (
                (float(V[t] >= p) + float(W[t] >= p)) / 2,
                explore or kind == "greedy",
            )
        if update:
            A += np.outer(c, c)
            b += y * c
        prices[t], explored[t] = p, explore
    return prices, explored


def running_mean_naive(V, W):
    """The non-contextual broker on one run: the mean of all valuations before round t
    (1/2 first)."""
    out = np.zeros(len(V))
    for t in range(len(V)):
        out[t] = 0.5 if t == 0 else (np.sum(V[:t]) + np.sum(W[:t])) / (2 * t)
    return out


def expected_gft_numeric(p: float, m: float, sample_noise, n: int, rng) -> float:
    """Monte Carlo E[GFT(p)]: ``sample_noise(n, rng)`` draws n noise values."""
    v, w = m + sample_noise(n, rng), m + sample_noise(n, rng)
    lo, hi = np.minimum(v, w), np.maximum(v, w)
    return float(np.mean((hi - lo) * ((lo <= p) & (p <= hi))))
