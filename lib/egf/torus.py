"""The flat torus T² = [0, 1)²: the transformation sets, the target densities and
samplers, and a wrapped Gaussian kernel density estimate (the simplest baseline)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from lib.common import (
    check_choice,
    check_generator,
    check_int,
    check_positive,
    check_tensor,
)

#: transformation sets (see :func:`make_maps`)
MAP_KINDS = ("sl2", "translation", "rational", "identity")
#: target densities on the torus (see :func:`target_density`)
TARGETS = ("checkerboard", "mixture")

# two hyperbolic / parabolic generators of SL2(Z) and small irrational shifts
_A = ((2, 1), (1, 1))
_B = ((1, 1), (0, 1))
_SHIFTS = ((math.sqrt(2) - 1, math.sqrt(3) - 1), (math.pi - 3, math.e - 2))
# rational shifts: they generate a finite group of translations (every orbit is the
# 36 points x + (i, j)/6), so the maps are not ergodic
_RATIONAL = ((1 / 2, 1 / 3), (1 / 3, 1 / 2))
# centres of the wrapped mixture (fixed, spread over the torus) and its scale
_CENTRES = ((0.2, 0.2), (0.5, 0.35), (0.8, 0.15), (0.15, 0.7), (0.5, 0.8), (0.8, 0.6))
_SIGMA = 0.07


@dataclass(frozen=True)
class TorusMaps:
    """p affine maps Φ_i(x) = M_i x + b_i (mod 1) of the torus, with integer M_i.

    ``mats`` (p, 2, 2) float64 with integer entries, ``shifts`` (p, 2); the inverse
    Φ_i⁻¹(y) = M_i⁻¹ (y − b_i) (mod 1) has Jacobian 1/|det M_i| (1 for SL2(Z))."""

    mats: torch.Tensor
    shifts: torch.Tensor

    def __post_init__(self):
        m = check_tensor("mats", self.mats, ndim=3, floating=True, finite=True)
        s = check_tensor("shifts", self.shifts, ndim=2, floating=True, finite=True)
        if m.shape[1:] != (2, 2) or s.shape != (m.shape[0], 2) or m.shape[0] == 0:
            raise ValueError(
                f"mats, shifts: expected shapes (p, 2, 2) and (p, 2) with p >= 1, "
                f"got {tuple(m.shape)} and {tuple(s.shape)}"
            )
        if not torch.equal(m, m.round()):
            raise ValueError("mats: expected integer entries (maps of the torus)")
        if (torch.linalg.det(m).abs() < 0.5).any():
            raise ValueError("mats: expected invertible matrices")

    #: points are (N, 2); the network sees the 4 periodic features; f_init = 1
    dim = 2
    n_features = 4
    f_init = 1.0

    @property
    def p(self) -> int:
        return self.mats.shape[0]

    def check_points(self, name: str, x) -> torch.Tensor:
        """``x`` as points of the torus, (N, 2), or an error naming ``name``."""
        return _check_points(name, x)

    def features(self, x: torch.Tensor) -> torch.Tensor:
        """The network's input: :func:`periodic_features`, (N, 4)."""
        return periodic_features(x)

    def uniform(self, n: int, generator=None) -> torch.Tensor:
        """``n`` uniform points of the torus on the CPU, (n, 2) float64."""
        return torch.rand(n, 2, dtype=torch.float64, generator=generator)

    @property
    def inv_jacobian(self) -> torch.Tensor:
        """|det J Φ_i⁻¹| per map, (p,)."""
        return 1.0 / torch.linalg.det(self.mats).abs()

    def to(self, device) -> "TorusMaps":
        return TorusMaps(self.mats.to(device), self.shifts.to(device))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Φ_i(x) for every map: (N, 2) -> (p, N, 2)."""
        y = torch.einsum("pij,nj->pni", self.mats.to(x.dtype), x)  # (p, N, 2)
        return torch.remainder(y + self.shifts.to(x.dtype)[:, None], 1.0)

    def inverse(self, y: torch.Tensor) -> torch.Tensor:
        """Φ_i⁻¹(y) for every map: (N, 2) -> (p, N, 2)."""
        inv = torch.linalg.inv(self.mats).round().to(y.dtype)  # integer inverses
        z = y[None] - self.shifts.to(y.dtype)[:, None]  # (p, N, 2)
        return torch.remainder(torch.einsum("pij,pnj->pni", inv, z), 1.0)


def make_maps(kind: str = "sl2", device="cpu") -> TorusMaps:
    """The four maps of the chapter and their inverses.

    ``sl2``: Φ₁ = A x + b₁, Φ₂ = B x + b₂ with A = [[2,1],[1,1]] (hyperbolic, mixing)
    and B = [[1,1],[0,1]], and their inverses; ``translation``: the same shifts with
    M = I (ergodic rotations of the torus, not mixing); ``rational``: translations by
    (1/2, 1/3), (1/3, 1/2) and their inverses (a finite group: not ergodic, every
    orbit has 36 points); ``identity``: four copies of the identity (no transport)."""
    kind = check_choice("kind", kind, MAP_KINDS)
    f64 = dict(dtype=torch.float64)
    eye = torch.eye(2, **f64)
    if kind == "identity":
        return TorusMaps(eye.repeat(4, 1, 1), torch.zeros(4, 2, **f64)).to(device)
    b = torch.tensor(_RATIONAL if kind == "rational" else _SHIFTS, **f64)  # (2, 2)
    if kind in ("translation", "rational"):
        mats = eye.repeat(4, 1, 1)
        shifts = torch.cat([b, -b])
    else:
        M = torch.tensor((_A, _B), **f64)  # (2, 2, 2)
        Minv = torch.linalg.inv(M).round()
        mats = torch.cat([M, Minv])
        # Φ⁻¹(y) = M⁻¹ y − M⁻¹ b: the inverse maps as affine maps
        shifts = torch.cat([b, -torch.einsum("pij,pj->pi", Minv, b)])
    return TorusMaps(mats, torch.remainder(shifts, 1.0)).to(device)


def _check_points(name: str, x) -> torch.Tensor:
    x = check_tensor(name, x, ndim=2, floating=True, finite=True, nonempty=True)
    if x.shape[1] != 2:
        raise ValueError(f"{name}: expected shape (N, 2), got {tuple(x.shape)}")
    return x


def periodic_features(x: torch.Tensor) -> torch.Tensor:
    """(cos 2πx₁, sin 2πx₁, cos 2πx₂, sin 2πx₂): (N, 2) -> (N, 4), periodic on T²."""
    x = _check_points("x", x)
    a = 2 * math.pi * x
    return torch.cat([torch.cos(a), torch.sin(a)], -1)


def target_density(x: torch.Tensor, target: str) -> torch.Tensor:
    """The target's density at points ``x`` (N, 2) of [0, 1)², (N,).

    ``checkerboard``: 2 on the cells of a 4×4 board whose indices sum to an even
    number, 0 elsewhere; ``mixture``: six equal wrapped Gaussians (σ = 0.07)."""
    x = _check_points("x", x)
    target = check_choice("target", target, TARGETS)
    x = torch.remainder(x, 1.0)
    if target == "checkerboard":
        cell = torch.floor(4 * x).long()  # (N, 2)
        return 2.0 * ((cell.sum(1) % 2) == 0).to(x.dtype)
    c = torch.tensor(_CENTRES, dtype=x.dtype, device=x.device)  # (K, 2)
    k = torch.arange(-1, 2, dtype=x.dtype, device=x.device)
    img = torch.stack(torch.meshgrid(k, k, indexing="ij"), -1).reshape(-1, 2)  # (9, 2)
    d = x[:, None, None] - c[None, :, None] - img[None, None]  # (N, K, 9, 2)
    g = torch.exp(-(d**2).sum(-1) / (2 * _SIGMA**2)) / (2 * math.pi * _SIGMA**2)
    return g.sum(-1).mean(-1)  # (N,)


def sample_target(
    target: str, n: int, generator: torch.Generator | None = None, device="cpu"
) -> torch.Tensor:
    """``n`` samples of the target, (n, 2) float64, drawn on the CPU then moved."""
    target = check_choice("target", target, TARGETS)
    n = check_int("n", n, 1)
    generator = check_generator("generator", generator)
    f64 = dict(dtype=torch.float64, generator=generator)
    if target == "checkerboard":
        k = torch.randint(0, 8, (n,), generator=generator)  # one of the 8 even cells
        i = k // 2
        j = 2 * (k % 2) + (i % 2)
        corner = torch.stack([i, j], 1).double() / 4
        x = corner + torch.rand(n, 2, **f64) / 4
    else:
        k = torch.randint(0, len(_CENTRES), (n,), generator=generator)
        x = torch.tensor(_CENTRES, dtype=torch.float64)[k]
        x = x + _SIGMA * torch.randn(n, 2, **f64)
    return torch.remainder(x, 1.0).to(device)


def grid_points(n: int, device="cpu", dtype=torch.float64) -> torch.Tensor:
    """The n×n midpoint grid of the torus, (n², 2) (each cell has area 1/n²)."""
    n = check_int("n", n, 2)
    t = (torch.arange(n, dtype=dtype, device=device) + 0.5) / n
    return torch.stack(torch.meshgrid(t, t, indexing="ij"), -1).reshape(-1, 2)


def kde_density(x: torch.Tensor, centres: torch.Tensor, bandwidth: float):
    """Wrapped Gaussian kernel density estimate at ``x`` (N, 2) from ``centres`` (M, 2),
    (N,); the 3×3 nearest periodic images are summed (bandwidth ≤ 0.2)."""
    x = _check_points("x", x)
    centres = _check_points("centres", centres)
    h = check_positive("bandwidth", bandwidth)
    if h > 0.2:
        raise ValueError(f"bandwidth: expected a number in (0, 0.2], got {h}")
    c = centres.to(x.dtype)
    out = torch.zeros(x.shape[0], dtype=x.dtype, device=x.device)
    for lo in range(0, x.shape[0], 1024):  # bounded memory: (1024, M) at a time
        d = torch.remainder(x[lo : lo + 1024, None] - c[None] + 0.5, 1.0) - 0.5
        # the 3×3 periodic images factorise over the two coordinates
        k = sum(torch.exp(-((d + a) ** 2) / (2 * h * h)) for a in (-1.0, 0.0, 1.0))
        out[lo : lo + 1024] = (k[..., 0] * k[..., 1]).sum(-1)  # (chunk,)
    return out / (centres.shape[0] * 2 * math.pi * h * h)


def orbit_floor(target: str, period: int, n: int = 128) -> float:
    """The smallest KL(target ‖ q), in nats, over densities q whose average over every
    orbit {x + (i, j)/period} of the translation group (Z/period)² is 1, by quadrature
    on the n×n midpoint grid.

    An EGF whose maps are translations generating that group can only produce such
    densities (each map carries mass along the orbit, and f̂ averages f_init = 1 over
    it). Per orbit the best q is the target divided by its own orbit average p̄, so the
    floor is ∫ p log p̄ (an ergodic map set has no such floor)."""
    target = check_choice("target", target, TARGETS)
    period = check_int("period", period, 1)
    n = check_int("n", n, 2)
    x = grid_points(n)  # (n², 2)
    p = target_density(x, target)
    p = p / p.mean()  # normalised on the grid
    k = torch.arange(period, dtype=x.dtype) / period
    shifts = torch.stack(torch.meshgrid(k, k, indexing="ij"), -1).reshape(-1, 2)
    # p̄(x) = mean over the orbit of p, with the same grid normalisation: (n²,)
    p_bar = torch.stack([target_density(x + s, target) for s in shifts]).mean(0)
    p_bar = p_bar / target_density(x, target).mean()
    pos = p > 0
    return float((p[pos] * torch.log(p_bar[pos])).mean() * pos.float().mean())
