"""The variational KL + Information-Bottleneck construction of a shaping function,
solved on a grid.

One activation x ≥ 0 (any unit of the penultimate layer; we pool the units) has law
p_ID(x) under in-distribution data and p_OOD(x) under an *assumed* OOD law. The OOD
feature is a random variable

    Z | x ~ N(g(x), σ²)  (eq. 1: the random feature)

whose conditional law is set by the shaping function g. With Y ∈ {ID, OOD} (prior π on
ID) and q_Y(z) = ∫ N(z; g(x), σ²) p_Y(x) dx, the loss functional is

    L[g] = −KL(q_ID ‖ q_OOD) + β [ I(X; Z) − γ I(Z; Y) ]  (eq. 2: KL + IB)

    I(X; Z) = H(q) − ½ log(2πeσ²),  I(Z; Y) = H(q) − π H(q_ID) − (1 − π) H(q_OOD),
        q = π q_ID + (1−π) q_OOD.

We follow the gradient flow ∂g/∂t = −δL/δg (eq. 3) of the discretised functional: x is
binned (an atom at 0 for the dead ReLU units plus K bins), z lives on a grid, integrals
are Riemann sums and the first variation is the gradient of that discretised functional
(automatic differentiation), with Adam as the step rule. L depends on g only through
g/σ and tends to 0 as g/σ → 0, so by default the flow keeps the scale of g fixed
(E_ID[g(X)²] = E_ID[X²] at every step) and chooses a shape only; see
:func:`solve_shaping`. Only the paper's abstract-level
description of eq. 2 could be verified; the Gaussian channel, γ, π and the grid are our
concrete choices (the chapter says so).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from lib.common import (
    check_choice,
    check_generator,
    check_int,
    check_nonnegative,
    check_positive,
    check_probability,
    check_tensor,
)

#: assumption families for p_OOD, built from ID samples X (see :func:`ood_law_samples`)
ASSUMPTIONS = ("weaker", "weaker+tail", "floor", "floor+tail", "surrogate", "same")
#: the families g ranges over: non-decreasing (our earlier choice) or any function on
# the knots (the paper's functional is over every conditional law p(z|x))
FAMILIES = ("monotone", "free")
#: how the flow treats the scale of g: "fixed" keeps E_ID[g(X)²] = E_ID[X²] at every
# step (σ is then measured against the ID spread of g); "unconstrained" lets the scale
# move, which for large β lets g collapse to a constant (see :func:`solve_shaping`)
SCALES = ("fixed", "unconstrained")


@dataclass(frozen=True)
class Grid:
    """x-knots: ``knots[0] = 0`` (the atom of dead units) and K bin centres on (0,
    x_max]."""

    knots: torch.Tensor  # (K + 1,)
    edges: torch.Tensor  # (K + 1,): edges[0] = 0 < edges[1] < ... < edges[K] = x_max

    def __post_init__(self):
        check_tensor("knots", self.knots, ndim=1, floating=True)
        if self.knots.numel() < 2:
            raise ValueError(
                f"knots: expected at least 2 knots (the atom and one bin), got "
                f"{self.knots.numel()}"
            )
        check_tensor("edges", self.edges, shape=tuple(self.knots.shape), floating=True)
        for name in ("knots", "edges"):
            v = getattr(self, name)
            check_tensor(name, v, finite=True)
            if not bool((v[1:] > v[:-1]).all()) or float(v[0]) != 0.0:
                raise ValueError(
                    f"{name}: expected increasing values starting at 0, got "
                    f"{v.tolist()}"
                )


def make_grid(x_max: float, n_bins: int = 64, device="cpu") -> Grid:
    """Equal-width bins on (0, x_max]; knots = [0, centres]."""
    x_max = check_positive("x_max", x_max)
    if isinstance(n_bins, bool) or not isinstance(n_bins, int) or n_bins < 2:
        raise ValueError(f"n_bins: expected an int >= 2, got {n_bins!r}")
    edges = torch.linspace(0.0, x_max, n_bins + 1, dtype=torch.float64, device=device)
    knots = torch.cat([edges[:1], 0.5 * (edges[1:] + edges[:-1])])
    return Grid(knots=knots, edges=edges)


def histogram(x: torch.Tensor, grid: Grid) -> torch.Tensor:
    """Probability of each knot: exact zeros go to the atom, the rest to their bin (the
    last bin absorbs everything above x_max). (K + 1,) summing to 1. A NaN activation
    raises (it would otherwise be counted as a dead unit)."""
    check_tensor("x", x, floating=True)
    if not isinstance(grid, Grid):
        raise TypeError(
            f"grid: expected a Grid (see make_grid), got {type(grid).__name__}"
        )
    x = x.flatten().to(grid.edges.dtype)
    if x.numel() == 0:
        raise ValueError("x: expected at least one sample, got none")
    check_tensor("x", x, finite=True)
    if bool((x < 0).any()):
        raise ValueError(
            f"x: expected non-negative activations (after ReLU), got min "
            f"{float(x.min()):.3g}"
        )
    K = grid.edges.numel() - 1
    idx = torch.bucketize(x, grid.edges[1:-1], right=True) + 1  # 1..K for x > 0
    idx = torch.where(
        x > 0, idx.clamp(1, K), torch.zeros_like(idx)
    )  # 0 = the atom at x = 0
    counts = torch.bincount(idx, minlength=K + 1).to(grid.edges.dtype)
    return counts / counts.sum()


def ood_law_samples(
    x_id: torch.Tensor,
    assumption: str,
    strength: float = 1.0,
    generator: torch.Generator | None = None,
    x_surrogate: torch.Tensor | None = None,
):
    """Samples of an assumed OOD activation law, built from ID activations ``x_id``
    (flat, ≥ 0).

    - ``weaker``: OOD activations are ID ones shrunk, X·a with a = 1/(1 + strength);
    - ``floor``: each active unit is, with probability ε = strength/(1 + strength),
      replaced by a weak activation drawn from U(0, median of the active ID activations)
      — extra OOD mass at small positive values (a "noise floor"); the rest is
      distributed as ID;
    - ``+tail``: in addition 10 % of the OOD activations are inflated, X·(2 + strength)
      (rare spikes);
    - ``surrogate``: the given activations of surrogate OOD inputs (e.g. noise images);
    - ``same``: no assumption, OOD activations distributed as ID ones (the negative
      control: the KL term is then zero whatever g is).
    """
    if assumption not in ASSUMPTIONS:
        raise ValueError(
            f"assumption: expected one of {ASSUMPTIONS}, got {assumption!r}"
        )
    strength = check_positive("strength", strength)
    _check_activations("x_id", x_id)
    check_generator("generator", generator)
    x = x_id.flatten()
    if assumption == "surrogate":
        if x_surrogate is None:
            raise ValueError(
                "x_surrogate: expected activations of surrogate OOD inputs for "
                "assumption='surrogate', got None"
            )
        _check_activations("x_surrogate", x_surrogate)
        return x_surrogate.flatten()
    if assumption == "same":
        return x.clone()
    n = x.numel()
    u = torch.rand(n, generator=generator, dtype=torch.float64).to(x.device)
    if assumption.startswith("weaker"):
        out = x / (1.0 + strength)
    # floor: active units replaced, with prob. ε, by a weak activation U(0, median of
    # active)
    else:
        active = x[x > 0]
        med = float(active.median()) if active.numel() else 1.0
        eps = strength / (1.0 + strength)
        weak = (
            torch.rand(n, generator=generator, dtype=torch.float64).to(x.device) * med
        ).to(x.dtype)
        out = torch.where((u < eps) & (x > 0), weak, x)
    if assumption.endswith("+tail"):
        v = torch.rand(n, generator=generator, dtype=torch.float64).to(x.device)
        out = torch.where(v < 0.1, x * (2.0 + strength), out)
    return out


def _check_activations(name: str, x) -> None:
    check_tensor(name, x, floating=True, nonempty=True)
    if not bool(((x >= 0) & torch.isfinite(x)).all()):
        raise ValueError(
            f"{name}: expected finite activations >= 0 (after ReLU), got NaN, inf or "
            f"a negative value"
        )


def _check_channel(g, p_id, p_ood, sigma, n_z) -> None:
    """The inputs of eq. 1-2: a shaping g on the K + 1 knots and two laws on them."""
    check_tensor("g", g, ndim=1, floating=True)
    if g.numel() < 2:
        raise ValueError(
            f"g: expected values on at least 2 knots, got shape {tuple(g.shape)}"
        )
    check_tensor("g", g, finite=True)
    for name, p in (("p_id", p_id), ("p_ood", p_ood)):
        check_tensor(name, p, shape=tuple(g.shape), floating=True)
        if p.dtype != g.dtype:
            raise TypeError(
                f"{name}: expected the dtype of g ({g.dtype}), got {p.dtype}"
            )
        if not bool(((p >= 0) & torch.isfinite(p)).all()):
            raise ValueError(
                f"{name}: expected probabilities (finite, >= 0), got NaN, inf or a "
                f"negative value"
            )
    check_positive("sigma", sigma)
    check_int("n_z", n_z, 2)


def _z_grid(g: torch.Tensor, sigma: float, n_z: int) -> torch.Tensor:
    lo = float(g.detach().min()) - 6 * sigma
    hi = float(g.detach().max()) + 6 * sigma
    return torch.linspace(lo, hi, n_z, dtype=g.dtype, device=g.device)


def channel_densities(
    g, p_id, p_ood, sigma: float, n_z: int = 512, *, check: bool = True
):
    """q_ID(z), q_OOD(z) on a z-grid for Z | x ~ N(g(x), σ²) (eq. 1); returns (z, dz,
    q_id, q_ood).

    ``check=False`` skips the input checks (the gradient flow of :func:`solve_shaping`).
    """
    if check:
        _check_channel(g, p_id, p_ood, sigma, n_z)
    z = _z_grid(g, sigma, n_z)  # (M,)
    dz = z[1] - z[0]
    kern = torch.exp(-0.5 * ((z[:, None] - g[None, :]) / sigma) ** 2) / (
        sigma * math.sqrt(2 * math.pi)
    )
    return z, dz, kern @ p_id, kern @ p_ood  # (M, K+1) @ (K+1,)


def _entropy(q, dz):
    return -(q * torch.log(q.clamp_min(1e-300))).sum() * dz


def kl_ib_terms(
    g,
    p_id,
    p_ood,
    sigma: float,
    prior: float = 0.5,
    n_z: int = 512,
    *,
    check: bool = True,
) -> dict:
    """The pieces of eq. 2 for a shaping g on the knots: KL(q_ID‖q_OOD), I(X;Z), I(Z;Y).

    ``check=False`` skips the input checks (the gradient flow of :func:`solve_shaping`).
    """
    if check:
        _check_channel(g, p_id, p_ood, sigma, n_z)
        check_probability("prior", prior)
    z, dz, q_id, q_ood = channel_densities(g, p_id, p_ood, sigma, n_z, check=False)
    eps = 1e-300
    kl = (
        q_id * (torch.log(q_id.clamp_min(eps)) - torch.log(q_ood.clamp_min(eps)))
    ).sum() * dz
    q = prior * q_id + (1 - prior) * q_ood
    h_q, h_id, h_ood = _entropy(q, dz), _entropy(q_id, dz), _entropy(q_ood, dz)
    i_xz = h_q - 0.5 * math.log(2 * math.pi * math.e * sigma**2)  # H(Z) − H(Z|X)
    i_zy = h_q - prior * h_id - (1 - prior) * h_ood  # H(Z) − H(Z|Y)
    return {"kl": kl, "i_xz": i_xz, "i_zy": i_zy}


def kl_ib_loss(
    g,
    p_id,
    p_ood,
    beta: float,
    sigma: float,
    gamma: float = 1.0,
    prior: float = 0.5,
    n_z: int = 512,
    *,
    check: bool = True,
) -> torch.Tensor:
    """Eq. 2: L[g] = −KL(q_ID ‖ q_OOD) + β (I(X;Z) − γ I(Z;Y)).

    ``check=False`` skips the input checks (the gradient flow of :func:`solve_shaping`).
    """
    if check:
        check_nonnegative("beta", beta)
        check_nonnegative("gamma", gamma)
    t = kl_ib_terms(g, p_id, p_ood, sigma, prior, n_z, check=check)
    return -t["kl"] + beta * (t["i_xz"] - gamma * t["i_zy"])


def solve_shaping(
    p_id: torch.Tensor,
    p_ood: torch.Tensor,
    grid: Grid,
    beta: float = 0.5,
    sigma: float = 0.05,
    gamma: float = 1.0,
    prior: float = 0.5,
    steps: int = 300,
    lr: float = 0.05,
    smooth: float = 1e-3,
    n_z: int = 512,
    init: torch.Tensor | None = None,
    family: str = "monotone",
    *,
    scale: str = "fixed",
) -> tuple[torch.Tensor, list]:
    """Gradient flow on g (eq. 3) with g(0) = 0, from g = identity or from ``init``,
    over the ``family`` of shapings.

    ``family="monotone"``: g is parametrised by its slopes, g(x_k) = Σ_{j≤k}
    softplus(u_j) Δx_j (x scaled to [0, 1]), so every iterate is a non-decreasing
    shaping, the family that holds ReAct, VRA-P and the one-dimensional analogue of ASH.
    ``family="free"``: g(x_k) = Σ_{j≤k} u_j Δx_j with unconstrained slopes u_j, so g may
    turn down (as OptFS's shapes do); this is the family the paper's functional ranges
    over (any conditional law, here any mean of the Gaussian channel). ``smooth`` adds
    smooth·Σ(u_{j+1} − u_j)², so that slopes in bins with no mass under either law
    follow their neighbours (our addition). ``init``, when given, is the starting
    shaping on ``grid.knots`` (in units of x, shape (K+1,), starting at 0; strictly
    increasing for the monotone family). Returns ``(g on grid.knots in units of x,
    loss history)``.

    ``scale``: eq. 2 depends on g and σ only through g/σ, and every term of it tends to
    0 as g/σ → 0, so whenever L < 0 is out of reach (large β) the unconstrained flow
    (``scale="unconstrained"``) drives g to a constant and only the *direction* of its
    collapse survives. ``scale="fixed"`` (the default) removes that degree of freedom:
    at every step g is rescaled so that E_ID[g(X)²] = E_ID[X²] (x scaled to [0, 1]),
    i.e. σ is measured in units of the ID spread of g, as the paper's low-noise limit
    (σ small against the spread of g) presupposes; the flow then chooses a shape only.
    """
    if not isinstance(grid, Grid):
        raise TypeError(
            f"grid: expected a Grid (see make_grid), got {type(grid).__name__}"
        )
    check_tensor("p_id", p_id, shape=(grid.knots.numel(),), floating=True)
    check_tensor("p_ood", p_ood, shape=(grid.knots.numel(),), floating=True)
    for name, p in (("p_id", p_id), ("p_ood", p_ood)):
        if not bool(((p >= 0) & torch.isfinite(p)).all()):
            raise ValueError(
                f"{name}: expected probabilities (finite, >= 0), got NaN, inf or a "
                f"negative value"
            )
    check_nonnegative("beta", beta)
    beta = float(beta)
    if not (beta >= 0 and math.isfinite(beta)):
        raise ValueError(f"beta: expected a finite number >= 0, got {beta}")
    sigma = check_positive("sigma", sigma)
    check_nonnegative("gamma", gamma)
    check_probability("prior", prior)
    check_int("steps", steps, 1)
    check_positive("lr", lr)
    check_nonnegative("smooth", smooth)
    check_int("n_z", n_z, 2)
    if family not in FAMILIES:
        raise ValueError(f"family: expected one of {FAMILIES}, got {family!r}")
    check_choice("scale", scale, SCALES)
    free, fixed = family == "free", scale == "fixed"
    unit = float(grid.edges[-1])  # x_max
    p_id, p_ood = p_id.to(grid.knots), p_ood.to(grid.knots)
    dx = torch.diff(grid.knots) / unit  # (K,) knot spacing
    if init is None:
        # softplus(u) = 1: g = x
        u = torch.full_like(dx, math.log(math.e - 1))
    else:
        check_tensor(
            "init", init, shape=(grid.knots.numel(),), floating=True, finite=True
        )
        init = init.to(grid.knots)
        slope = torch.diff(init) / unit / dx  # (K,) slope of g in scaled units
        if float(init[0]) != 0.0 or not (free or bool((slope > 0).all())):
            raise ValueError(
                "init: expected a shaping that starts at 0 and strictly increases, got "
                f"init[0] = {float(init[0]):.3g} and min slope {float(slope.min()):.3g}"
            )
        # softplus⁻¹(slope), stable for large slopes (free: the slope itself)
        u = slope if free else slope + torch.log(-torch.expm1(-slope))
    if free and init is None:
        u = torch.ones_like(dx)  # g = x
    u = u.clone().requires_grad_(True)
    opt = torch.optim.Adam([u], lr=lr)
    zero = torch.zeros(1, dtype=dx.dtype, device=dx.device)
    history = []

    # E_ID[X²] with x scaled to [0, 1]: the second moment g keeps when scale="fixed"
    m2 = p_id @ (grid.knots / unit) ** 2

    def shaping(u):
        g = torch.cat([zero, torch.cumsum((u if free else F.softplus(u)) * dx, 0)])
        if fixed:
            g = g * (m2 / (p_id @ g**2).clamp_min(1e-30)).sqrt()
        return g  # (K+1,)

    for _ in range(steps):
        g = shaping(u)
        loss = kl_ib_loss(g, p_id, p_ood, beta, sigma, gamma, prior, n_z, check=False)
        total = loss + smooth * (u[1:] - u[:-1]).pow(2).sum()
        opt.zero_grad()
        total.backward()
        opt.step()
        history.append(loss.detach())
    with torch.no_grad():
        g = shaping(u)
    return g * unit, [float(v) for v in torch.stack(history)]


def orient_and_scale(
    g: torch.Tensor, p_id: torch.Tensor, p_ood: torch.Tensor, knots: torch.Tensor
) -> torch.Tensor:
    """Fix the symmetries of eq. 2 (g ↦ ±g + c leave it unchanged): g(0) = 0, E_ID g ≥
    E_OOD g, and E_ID[g(X)²] = E_ID[X²] so that the energy score keeps the network's
    logit scale. After a flow with the scale fixed the last step changes nothing;
    after an unconstrained flow it blows a collapsed g back up to the ID scale."""
    _check_channel(g, p_id, p_ood, 1.0, 2)
    check_tensor("knots", knots, shape=tuple(g.shape), floating=True, finite=True)
    if knots.dtype != g.dtype:
        raise TypeError(
            f"knots: expected the dtype of g ({g.dtype}), got {knots.dtype}"
        )
    g = g - g[0]
    if float((p_id - p_ood) @ g) < 0:
        g = -g
    ratio = ((p_id @ knots**2) / (p_id @ g**2).clamp_min(1e-30)).sqrt()
    return g * ratio
