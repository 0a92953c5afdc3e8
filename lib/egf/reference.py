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


def sphere_star_inflow_naive(egf, x: torch.Tensor) -> np.ndarray:
    """f*←(s) = Σ_i α_i(R_i⁻¹ s) f→(R_i⁻¹ s) on S², one point and one rotation at a
    time, the preimage by solving R_i y = s (rotations keep the area: no Jacobian)."""
    mats = egf.maps.mats.cpu().numpy()
    out = []
    for s in x.cpu().numpy():
        total = 0.0
        for i in range(len(mats)):
            y = np.linalg.solve(mats[i], s)  # R_i⁻¹ s
            with torch.no_grad():
                f, a = egf.outflow_policy(torch.tensor(y[None], dtype=torch.float64))
            total += float(a[0, i] * f[0])
        out.append(total)
    return np.array(out)


def surface_divergence_naive(field, x: torch.Tensor, h: float = 1e-5) -> np.ndarray:
    """div_S u = Σ_k t_kᵀ (u(x + h t_k) − u(x − h t_k)) / 2h over an orthonormal
    tangent basis t_1, t_2 at each point (central differences of the field's
    extension off the sphere)."""
    out = []
    with torch.no_grad():
        for s in x.cpu().double():
            a = torch.tensor([1.0, 0.0, 0.0], dtype=torch.float64)
            if abs(float(s[0])) > 0.9:
                a = torch.tensor([0.0, 1.0, 0.0], dtype=torch.float64)
            t1 = a - (a @ s) * s
            t1 = t1 / t1.norm()
            t2 = torch.linalg.cross(s, t1)
            div = 0.0
            for t in (t1, t2):
                up = field((s + h * t)[None])[0]
                dn = field((s - h * t)[None])[0]
                div += float(t @ (up - dn)) / (2 * h)
            out.append(div)
    return np.array(out)
