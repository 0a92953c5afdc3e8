"""Naive versions of the chapter's kernels, for the tests: one point and one map at a
time, inverses by solving, divergence by central differences."""

from __future__ import annotations

import math

import numpy as np
import torch


def star_inflow_naive(egf, x: torch.Tensor) -> np.ndarray:
    """f*←(s) = Σ_i α_i(Φ_i⁻¹ s) f→(Φ_i⁻¹ s) / |det M_i|, point by point."""
    mats = egf.maps.mats.cpu().numpy()
    shifts = egf.maps.shifts.cpu().numpy()
    out = []
    for s in x.cpu().numpy():
        total = 0.0
        for i in range(len(mats)):
            y = np.linalg.solve(mats[i], s - shifts[i]) % 1.0  # Φ_i⁻¹ s
            with torch.no_grad():
                f, a = egf.outflow_policy(torch.tensor(y[None], dtype=torch.float64))
            total += float(a[0, i] * f[0]) / abs(np.linalg.det(mats[i]))
        out.append(total)
    return np.array(out)


def moser_density_naive(moser, x: torch.Tensor, h: float = 1e-5) -> np.ndarray:
    """1 − div u by central finite differences."""
    out = []
    with torch.no_grad():
        for s in x.cpu().double():
            div = 0.0
            for i in range(2):
                e = torch.zeros(2, dtype=torch.float64)
                e[i] = h
                up = moser.net(_features((s + e)[None]))[0, i]
                dn = moser.net(_features((s - e)[None]))[0, i]
                div += float(up - dn) / (2 * h)
            out.append(1.0 - div)
    return np.array(out)


def _features(x):
    a = 2 * math.pi * x
    return torch.cat([torch.cos(a), torch.sin(a)], -1)


def kde_naive(x: np.ndarray, centres: np.ndarray, h: float) -> np.ndarray:
    """Wrapped Gaussian KDE, one point, one centre and one periodic image at a time."""
    out = np.zeros(len(x))
    for n, s in enumerate(x):
        for c in centres:
            for a in (-1, 0, 1):
                for b in (-1, 0, 1):
                    d = (s - c + 0.5) % 1.0 - 0.5 + np.array([a, b])
                    out[n] += math.exp(-(d @ d) / (2 * h * h))
    return out / (len(centres) * 2 * math.pi * h * h)
