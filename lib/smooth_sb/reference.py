"""Naive references in plain NumPy loops, for the tests and the benchmark.

- :func:`propagate_naive`: one message step with the d-dimensional kernel built
  explicitly over flattened velocity indices;
- :func:`chain_bruteforce`: the multi-marginal problem on the full path space (every
  sequence of states enumerated), solved by iterative proportional fitting on the
  position marginals; feasible only for a handful of points, times and cells;
- :func:`sinkhorn_naive`: the textbook two-marginal Sinkhorn iteration in the
  probability domain;
- :func:`matern_cov`: the Matérn covariance function in closed form.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
from scipy.special import logsumexp


def full_kernel(log_k: np.ndarray) -> np.ndarray:
    """(d, n, M, n, M) per-coordinate log kernels → (n, M^d, n, M^d) joint log
    kernel."""
    d, n, M = log_k.shape[:3]
    cells = list(itertools.product(range(M), repeat=d))
    out = np.zeros((n, len(cells), n, len(cells)))
    for i in range(n):
        for A, a in enumerate(cells):
            for j in range(n):
                for B, b in enumerate(cells):
                    out[i, A, j, B] = sum(log_k[c, i, a[c], j, b[c]] for c in range(d))
    return out


def propagate_naive(f: np.ndarray, log_k: np.ndarray) -> np.ndarray:
    """g(j, b) = log Σ_{i,a} exp(f(i, a) + log K[(i, a), (j, b)]), loop over (j, b)."""
    n = f.shape[0]
    F = f.reshape(n, -1)
    Kf = full_kernel(log_k)
    g = np.empty((n, F.shape[1]))
    for j in range(n):
        for b in range(F.shape[1]):
            g[j, b] = logsumexp(F + Kf[:, :, j, b])
    return g.reshape(f.shape)


def chain_bruteforce(log_k: np.ndarray, log_p0: np.ndarray, sweeps: int = 500):
    """Pair marginals P(x_k = i, x_{k+1} = j) (K−1, n, n) of the chain problem on the
    enumerated path space: log P(path) = log p₀(v₀) + Σ_k log K_k + Σ_k u_k(x_k), with
    u_k fitted by IPF so that every position marginal is uniform."""
    Km1, d, n, M = log_k.shape[:4]
    K = Km1 + 1
    kern = [full_kernel(log_k[k]) for k in range(Km1)]
    cells = list(itertools.product(range(M), repeat=d))
    p0 = np.array([sum(log_p0[c, a[c]] for c in range(d)) for a in cells])
    states = list(itertools.product(range(n), range(len(cells))))
    paths = list(itertools.product(states, repeat=K))
    base = np.empty(len(paths))
    pos = np.empty((len(paths), K), dtype=int)
    for p, path in enumerate(paths):
        s = p0[path[0][1]]
        for k in range(Km1):
            (i, a), (j, b) = path[k], path[k + 1]
            s += kern[k][i, a, j, b]
        base[p] = s
        pos[p] = [st[0] for st in path]
    u = np.zeros((K, n))
    for _ in range(sweeps):
        for k in range(K):
            lp = base + u[np.arange(K), pos].sum(1)
            lp -= logsumexp(lp)
            marg = np.array([logsumexp(lp[pos[:, k] == i]) for i in range(n)])
            u[k] += -math.log(n) - marg
    lp = base + u[np.arange(K), pos].sum(1)
    P = np.exp(lp - logsumexp(lp))
    out = np.zeros((Km1, n, n))
    for k in range(Km1):
        np.add.at(out[k], (pos[:, k], pos[:, k + 1]), P)
    return out


def sinkhorn_naive(Kmat: np.ndarray, a: np.ndarray, b: np.ndarray, iters: int = 2000):
    """Plan diag(u) K diag(v) with marginals a and b (probability domain)."""
    u, v = np.ones(len(a)), np.ones(len(b))
    for _ in range(iters):
        u = a / (Kmat @ v)
        v = b / (Kmat.T @ u)
    return u[:, None] * Kmat * v[None, :]


def matern_cov(tau, nu: float, ell: float, sigma: float = 1.0):
    """σ² k_ν(τ/ℓ) for ν ∈ {½, 3/2, 5/2}."""
    r = np.abs(np.asarray(tau, dtype=float)) * math.sqrt(2 * nu) / ell
    if nu == 0.5:
        poly = 1.0
    elif nu == 1.5:
        poly = 1 + r
    elif nu == 2.5:
        poly = 1 + r + r**2 / 3
    else:
        raise ValueError(f"nu: expected 0.5, 1.5 or 2.5, got {nu!r}")
    return sigma**2 * poly * np.exp(-r)
