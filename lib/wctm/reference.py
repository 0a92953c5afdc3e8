"""Naive reference implementations, written from the definitions with explicit loops
(numpy, one stream): the chapter's tests, its benchmark and its notebook check the fast
batched code against these."""

from __future__ import annotations

import math

import numpy as np


def _vec(name: str, x) -> np.ndarray:
    a = np.asarray(x, dtype=float)
    if a.ndim != 1 or a.size == 0:
        raise ValueError(f"{name}: expected a non-empty 1-D array, got shape {a.shape}")
    if not np.isfinite(a).all():
        raise ValueError(f"{name}: expected finite values, got NaN or inf")
    return a


def naive_ctm(cal, test, u) -> np.ndarray:
    """Standard CTM p-values (eq. ctm-p) of the test points: each against calibration
    plus earlier test points."""
    cal, test, u = _vec("cal", cal), _vec("test", test), _vec("u", u)
    if u.shape != test.shape:
        raise ValueError(f"u: expected shape {test.shape}, got {u.shape}")
    z, n = np.concatenate([cal, test]), len(cal)
    out = []
    for t in range(len(test)):
        k = n + t
        gt, eq = np.sum(z[:k] > z[k]), np.sum(z[: k + 1] == z[k])
        out.append((gt + u[t] * eq) / (k + 1))
    return np.array(out)


def naive_weighted(ref, ref_w, test, test_w, u, alpha: float) -> np.ndarray:
    """Weighted conformal p-values (eqs. wcp, wcp-anti) of each test point against a
    fixed reference set; ``ref_w`` is one weight vector, or one row per test point."""
    ref, test, test_w, u = (
        _vec("ref", ref),
        _vec("test", test),
        _vec("test_w", test_w),
        _vec("u", u),
    )
    ref_w = np.asarray(ref_w, dtype=float)
    rows = np.broadcast_to(ref_w, (len(test), len(ref)))
    if not 0 < alpha <= 1:
        raise ValueError(f"alpha: expected a number in (0, 1], got {alpha}")
    out = []
    for t in range(len(test)):
        s = np.append(ref, test[t])
        w = np.append(rows[t], test_w[t])
        w = w / w.sum()
        tied, greater = w[s == test[t]].sum(), w[s > test[t]].sum()
        out.append(greater + u[t] * tied if tied < alpha else greater)
    return np.array(out)


def naive_wquantile(ref, ref_w, test_w, alpha: float) -> np.ndarray:
    """Weighted split-conformal radius (eq. wq): the ``1 - alpha`` quantile of the
    reference scores plus a point at +inf carrying the test weight."""
    ref, test_w = _vec("ref", ref), _vec("test_w", test_w)
    rows = np.broadcast_to(np.asarray(ref_w, dtype=float), (len(test_w), len(ref)))
    out = []
    for t in range(len(test_w)):
        s = np.append(ref, np.inf)
        w = np.append(rows[t], test_w[t])
        w = w / w.sum()
        o = np.argsort(s, kind="stable")
        c = np.cumsum(w[o])
        out.append(s[o][np.argmax(c >= (1 - alpha) * (1 - 1e-12))])
    return np.array(out)


def naive_jumper(p, jumps=(1e-4, 1e-3, 1e-2, 1e-1, 1.0), epsilons=(-1.0, 0.0, 1.0)):
    """Log Composite Jumper (eq. cj) of one or several streams of p-values, loops
    only."""
    p = np.atleast_2d(np.asarray(p, dtype=float))
    out = np.empty_like(p)
    for s in range(p.shape[0]):
        C = np.full((len(jumps), len(epsilons)), 1.0 / len(epsilons))
        for t in range(p.shape[1]):
            for j, J in enumerate(jumps):
                tot = C[j].sum()
                for e, eps in enumerate(epsilons):
                    C[j, e] = ((1 - J) * C[j, e] + J / len(epsilons) * tot) * (
                        1 + eps * (p[s, t] - 0.5)
                    )
            out[s, t] = math.log(C.sum(1).mean())
    return out
