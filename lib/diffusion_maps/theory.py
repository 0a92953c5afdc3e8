"""The paper's prediction: eigenvalues mu_i(M) + nu_j / r^2, horizontal below nu_1 /
r^2."""

from __future__ import annotations

import math

import numpy as np
import torch

from lib.common import check_int, check_positive, check_probability, check_tensor


def _bessel_ratio(h: float, k: np.ndarray, terms: int = 400) -> np.ndarray:
    """T_h(k) = J_h(k) / J_{h-1}(k) by backward recurrence T_v = 1 / (2 v / k -
    T_{v+1}).

    Works where J_h itself underflows (order h ~ 400 at k ~ 30 for MNIST's 783-ball)."""
    t = np.zeros_like(k)
    for j in range(terms, -1, -1):
        t = 1.0 / (2.0 * (h + j) / k - t)
    return t


def neumann_ball_nu1(m: int) -> float:
    """nu_1(m): the first non-zero Neumann eigenvalue of the Laplacian on the unit
    m-ball.

    Its eigenfunction is rho^{1 - m/2} J_{m/2}(k rho) times a degree-1 spherical
    harmonic; the Neumann condition d/drho [rho^{1-m/2} J_{m/2}(k rho)] = 0 at rho = 1
    reads (1 - m/2) J_{m/2}(k) + k J'_{m/2}(k) = 0, i.e. k J_{m/2-1}(k) = (m - 1)
    J_{m/2}(k); nu_1 = k^2 for its smallest root k > 0. (m = 1: the interval, k = pi /
    2.)
    """
    from scipy.optimize import brentq

    m = check_int("m", m, minimum=1)
    if m == 1:
        return math.pi**2 / 4
    h = m / 2.0

    def g(
        k,
    ):  # k J_{h-1} / J_h - (m - 1): +1 at k -> 0, -(m - 1) at the first zero of J_{h-1}
        return k / _bessel_ratio(h, np.atleast_1d(np.asarray(k, dtype=np.float64))) - (
            m - 1
        )

    grid = np.linspace(1e-3, 3.0 * math.sqrt(m + 1.0) + 5.0, 20000)
    vals = g(grid)
    i = int(np.flatnonzero((vals[:-1] > 0) & (vals[1:] <= 0))[0])
    k = brentq(lambda t: float(g(t)[0]), grid[i], grid[i + 1], xtol=1e-14, rtol=1e-15)
    return float(k * k)


def threshold(r: float, m: int) -> float:
    """The first vertical eigenvalue nu_1(m) / r^2 of a tube of radius r with m-ball
    fibres."""
    return neumann_ball_nu1(m) / check_positive("r", r) ** 2


def predicted_count_circle(r: float, D: int, length: float = 2 * math.pi) -> int:
    """Non-trivial circle eigenpairs (2 pi k / L)^2, each double, below nu_1(D - 1) /
    r^2."""
    D = check_int("D", D, minimum=2)
    check_positive("length", length)
    kmax = math.floor(math.sqrt(threshold(r, D - 1)) * length / (2 * math.pi) - 1e-12)
    return 2 * kmax


def predicted_count_sphere(r: float, D: int) -> int:
    """Non-trivial S^2 eigenpairs l (l + 1) (multiplicity 2 l + 1) below nu_1(D - 2) /
    r^2."""
    D = check_int("D", D, minimum=3)
    thr = threshold(r, D - 2)
    lmax = 0
    while (lmax + 1) * (lmax + 2) < thr:
        lmax += 1
    return (lmax + 1) ** 2 - 1


def fourier_basis(theta: torch.Tensor, kmax: int) -> torch.Tensor:
    """[1, cos theta, sin theta, ..., cos kmax theta, sin kmax theta], shape (n, 2 kmax
    + 1)."""
    check_tensor("theta", theta, ndim=1, floating=True, nonempty=True, finite=True)
    check_int("kmax", kmax, minimum=0)
    k = torch.arange(1, kmax + 1, dtype=theta.dtype, device=theta.device)  # (kmax,)
    a = theta[:, None] * k  # (n, kmax)
    return torch.cat([torch.ones_like(theta)[:, None], torch.cos(a), torch.sin(a)], 1)


def harmonic_basis(p: torch.Tensor, lmax: int) -> torch.Tensor:
    """Monomials of degree <= lmax in the coordinates of p (n, 3) on S^2: they span the
    spherical harmonics of degree <= lmax. Shape (n, number of monomials)."""
    check_tensor("p", p, shape=(None, 3), floating=True, nonempty=True, finite=True)
    check_int("lmax", lmax, minimum=0)
    cols = [torch.ones_like(p[:, 0])]
    for a in range(lmax + 1):
        for b in range(lmax + 1 - a):
            for c in range(lmax + 1 - a - b):
                if 0 < a + b + c:
                    cols.append(p[:, 0] ** a * p[:, 1] ** b * p[:, 2] ** c)
    return torch.stack(cols, 1)


def r_squared(vecs: torch.Tensor, basis: torch.Tensor) -> torch.Tensor:
    """R^2 of the least-squares fit of each column of ``vecs`` (n, m) on ``basis`` (n,
    p); (m,)."""
    check_tensor("vecs", vecs, ndim=2, floating=True)
    if vecs.shape[0] < 1 or vecs.shape[1] < 1:
        raise ValueError(
            f"vecs: expected at least one row and one column, got shape "
            f"{tuple(vecs.shape)}"
        )
    check_tensor("basis", basis, ndim=2, floating=True)
    if basis.shape[0] != vecs.shape[0]:
        raise ValueError(
            f"basis: expected {vecs.shape[0]} rows like vecs, got {basis.shape[0]}"
        )
    check_tensor("vecs", vecs, finite=True)
    check_tensor("basis", basis, finite=True)
    b = basis.double()
    v = vecs.double()
    q, _ = torch.linalg.qr(b)  # (n, p)
    fit = q @ (q.T @ v)  # (n, m)
    vc = v - v.mean(0)
    res = ((v - fit) ** 2).sum(0)
    return (1.0 - res / (vc**2).sum(0).clamp(min=1e-300)).to(vecs.dtype)


def count_recovered(r2: torch.Tensor, cut: float = 0.5) -> int:
    """Leading non-trivial eigenvectors that are horizontal (R^2 >= cut) before the
    first vertical one.

    A NaN R^2 raises (it would read as "vertical" and stop the count)."""
    check_tensor("r2", r2, ndim=1, floating=True, nonempty=True, finite=True)
    check_probability("cut", cut)
    horiz = (r2 >= cut).tolist()
    n = 0
    for h in horiz:
        if not h:
            break
        n += 1
    return n
