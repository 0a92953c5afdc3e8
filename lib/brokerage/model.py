"""The market: noise laws, the gain from trade and its closed-form expectation, the data
generator.

Everything is float64: the regret of a good broker is a difference of two expected gains
that agree to 6–8 digits (``G(0) - G(x)`` with ``G(0) ≈ 0.1`` and ``x ≈ 1e-3``), which
float32 cannot resolve.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from lib.common import check_choice, check_int, check_positive, check_tensor

DTYPE = torch.float64
#: noise laws: ``uniform`` and ``spike`` have densities bounded by L; ``atom`` has a
# point mass.
NOISE_LAWS = ("uniform", "spike", "atom")


@dataclass(frozen=True)
class NoiseLaw:
    """A zero-mean noise law: a mixture of centred uniforms U[-h, h] and (optionally) a
    point mass at 0.

    ``components`` is a tuple of ``(weight, h)``; ``h = 0`` stands for the point mass at
    0.
    """

    name: str
    L: float
    components: tuple

    def __post_init__(self):
        check_choice("name", self.name, NOISE_LAWS)
        check_positive("L", self.L)
        comps = self.components
        if not isinstance(comps, (tuple, list)) or not comps:
            raise ValueError(
                f"components: expected a non-empty tuple of (weight, h) pairs, got "
                f"{comps!r}"
            )
        for i, c in enumerate(comps):
            if (
                not isinstance(c, (tuple, list))
                or len(c) != 2
                or not all(
                    isinstance(v, (int, float))
                    and not isinstance(v, bool)
                    and math.isfinite(v)
                    and v >= 0
                    for v in c
                )
            ):
                raise ValueError(
                    f"components[{i}]: expected a (weight, h) pair of finite numbers "
                    f">= 0, got {c!r}"
                )
        if abs(sum(w for w, _ in comps) - 1) > 1e-9:
            raise ValueError(
                f"components: expected weights that sum to 1, got {comps!r}"
            )

    @property
    def half_width(self) -> float:
        """Largest |ξ| the law can produce (valuations stay in [0, 1] when m ∈ [h, 1 -
        h])."""
        return max(h for _, h in self.components)

    @property
    def density_bound(self) -> float:
        """sup of the density (inf when there is a point mass)."""
        if any(h == 0 for _, h in self.components):
            return math.inf
        return sum(w / (2 * h) for w, h in self.components)

    def cdf(self, x: torch.Tensor) -> torch.Tensor:
        """P(ξ <= x)."""
        return sum(
            w * (_step(x) if h == 0 else ((x + h) / (2 * h)).clamp(0, 1))
            for w, h in self.components
        )

    def sf(self, x: torch.Tensor) -> torch.Tensor:
        """P(ξ >= x) (differs from 1 - cdf only at the point mass)."""
        return sum(
            w * (_step(-x) if h == 0 else ((h - x) / (2 * h)).clamp(0, 1))
            for w, h in self.components
        )

    def upper(self, x: torch.Tensor) -> torch.Tensor:
        """E[(ξ - x)^+]: for U[-h, h] it is -x below -h, (h - x)^2 / (4h) inside, 0
        above h."""
        out = torch.zeros_like(x)
        for w, h in self.components:
            if h == 0:
                out = out + w * (-x).clamp(min=0)
            else:
                inside = (h - x).clamp(0, 2 * h) ** 2 / (4 * h)
                out = out + w * torch.where(x < -h, -x, inside)
        return out

    def sample(self, shape, generator: torch.Generator) -> torch.Tensor:
        """Draw ξ of ``shape`` on the CPU (two uniforms per draw: the component, then
        the value)."""
        pick = torch.rand(shape, generator=generator, dtype=DTYPE)
        unif = torch.rand(shape, generator=generator, dtype=DTYPE)
        out = torch.zeros(shape, dtype=DTYPE)
        lo = 0.0
        for w, h in self.components:
            chosen = (pick >= lo) & (pick < lo + w)
            out = torch.where(chosen, (2 * unif - 1) * h, out)
            lo += w
        return out


def _step(x: torch.Tensor) -> torch.Tensor:
    return (x >= 0).to(x.dtype)


def make_noise(name: str, L: float) -> NoiseLaw:
    """The noise law ``name`` with density bound ``L``.

    - ``uniform``: U[-a, a] with a = 1/(2L), density exactly L (needs L >= 1);
    - ``spike``: ½·U[-1/4, 1/4] + ½·U[-a, a] with a = 1/(4(L-1)): density L at 0,
      variance that does not shrink with L (needs L >= 2; spike(2) = uniform(2));
    - ``atom``: the uniform law with half its mass moved onto 0 — no bounded density.
    """
    check_choice("name", name, NOISE_LAWS)
    L = check_positive("L", L)
    least = 2.0 if name == "spike" else 1.0
    if L < least:
        raise ValueError(
            f"L: expected L >= {least:g} for {name} noise (so valuations fit in [0, "
            f"1]), got {L:g}"
        )
    if name == "uniform":
        comps = ((1.0, 1 / (2 * L)),)
    elif name == "spike":
        comps = ((0.5, 0.25), (0.5, 1 / (4 * (L - 1))))
    else:
        comps = ((0.5, 0.0), (0.5, 1 / (2 * L)))
    return NoiseLaw(name, L, comps)


def gft(p: torch.Tensor, v: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    """Realised gain from trade, eq. (1): GFT(p, v, w) = (max - min) · 1{min <= p <=
    max}.

    A NaN or infinite price raises (it would otherwise read as "no trade")."""
    for name, val in (("v", v), ("w", w)):
        check_tensor(name, val, floating=True)
        _check_unit(name, val, "valuations")
    if v.shape != w.shape:
        raise ValueError(
            f"w: expected the shape of v {tuple(v.shape)}, got {tuple(w.shape)}"
        )
    _check_price("p", p, v.shape)
    lo, hi = torch.minimum(v, w), torch.maximum(v, w)
    return (hi - lo) * ((lo <= p) & (p <= hi)).to(v.dtype)


def expected_gft(p: torch.Tensor, m: torch.Tensor, noise: NoiseLaw) -> torch.Tensor:
    """E[GFT(p, V, W)] for V = m + ξ, W = m + ζ, ξ, ζ i.i.d. ~ ``noise``, in closed
    form.

    With x = p - m: E GFT = 2 [E(ξ - x)^+ · P(ξ <= x) + E(x - ξ)^+ · P(ξ >= x)], and
    E(x - ξ)^+ = E(ξ - x)^+ + x because E ξ = 0.
    """
    if not isinstance(noise, NoiseLaw):
        raise TypeError(
            f"noise: expected a NoiseLaw (see make_noise), got {type(noise).__name__}"
        )
    _check_finite_values("p", p)
    _check_finite_values("m", m)
    x = torch.as_tensor(p, dtype=DTYPE) - torch.as_tensor(m, dtype=DTYPE)
    up = noise.upper(x)
    return 2 * (up * noise.cdf(x) + (up + x) * noise.sf(x))


def expected_regret(p: torch.Tensor, m: torch.Tensor, noise: NoiseLaw) -> torch.Tensor:
    """Per-round expected regret of price p against the best price m: G(m) - G(p),
    elementwise."""
    if not isinstance(noise, NoiseLaw):
        raise TypeError(
            f"noise: expected a NoiseLaw (see make_noise), got {type(noise).__name__}"
        )
    _check_finite_values("p", p)
    p = torch.as_tensor(p, dtype=DTYPE)
    best = expected_gft(
        torch.zeros((), dtype=DTYPE, device=p.device),
        torch.zeros((), dtype=DTYPE, device=p.device),
        noise,
    )
    return best - expected_gft(p, m, noise)


@dataclass
class Market:
    """R independent markets of T rounds: contexts, market values and everything the
    broker may see.

    Shapes: ``contexts`` (R, T, d); ``phi`` (R, d); ``m``, ``V``, ``W``, ``U``, ``coin``
    (R, T). ``U`` is the uniform exploration price, ``coin`` the ε-greedy coin (drawn
    for every round so that all learners see the same random numbers).
    """

    contexts: torch.Tensor
    phi: torch.Tensor
    m: torch.Tensor
    V: torch.Tensor
    W: torch.Tensor
    U: torch.Tensor
    coin: torch.Tensor
    noise: NoiseLaw

    @property
    def shape(self) -> tuple:
        return tuple(self.contexts.shape)  # (R, T, d)


def make_market(
    runs: int,
    horizon: int,
    d: int,
    L: float = 2.0,
    noise: str = "uniform",
    *,
    seed: int = 0,
    device: torch.device | str = "cpu",
) -> Market:
    """Draw ``runs`` markets of ``horizon`` rounds in dimension ``d`` (CPU generator,
    then moved).

    c_t = (1/√2, z_t/√2) with z_t uniform on the unit sphere of R^(d-1), so ||c_t|| <=
    1; φ = √2 (m̄, A u) with u a random unit vector, so ||φ|| <= 1 and m_t = c_t·φ = m̄
    + A z_t·u lies in [h, 1 - h] (h = the noise's half-width): V_t = m_t + ξ_t and W_t =
    m_t + ζ_t stay in [0, 1].
    """
    runs, horizon, d = (
        check_int("runs", runs, 1),
        check_int("horizon", horizon, 1),
        check_int("d", d, 1),
    )
    check_choice("noise", noise, NOISE_LAWS)
    law = make_noise(noise, L)
    check_int("seed", seed, 0)
    g = torch.Generator().manual_seed(seed)
    h = law.half_width
    m_bar, amp = (
        0.5 - (0.5 - h) / 4,
        0.75 * (0.5 - h),
    )  # m_t ∈ [m̄ - A, m̄ + A] ⊂ [h, 1 - h]
    u = _unit(torch.randn(runs, d - 1, generator=g, dtype=DTYPE))  # (R, d-1)
    z = _unit(
        torch.randn(runs, horizon, d - 1, generator=g, dtype=DTYPE)
    )  # (R, T, d-1)
    half = torch.full((runs, horizon, 1), 0.5**0.5, dtype=DTYPE)
    contexts = torch.cat([half, z * 0.5**0.5], dim=-1)  # (R, T, d)
    phi = (
        torch.cat([torch.full((runs, 1), m_bar, dtype=DTYPE), amp * u], dim=-1) * 2**0.5
    )  # (R, d)
    m = torch.einsum("rtd,rd->rt", contexts, phi).clamp(
        h, 1 - h
    )  # (R, T); clamp only trims rounding
    V = m + law.sample((runs, horizon), g)  # (R, T)
    W = m + law.sample((runs, horizon), g)
    U = torch.rand(runs, horizon, generator=g, dtype=DTYPE)
    coin = torch.rand(runs, horizon, generator=g, dtype=DTYPE)
    to = dict(device=device)
    return Market(
        contexts.to(**to),
        phi.to(**to),
        m.to(**to),
        V.clamp(0, 1).to(**to),
        W.clamp(0, 1).to(**to),
        U.to(**to),
        coin.to(**to),
        law,
    )


def _unit(x: torch.Tensor) -> torch.Tensor:
    if x.shape[-1] == 0:
        return x
    return x / x.norm(dim=-1, keepdim=True)


def _check_finite_values(name: str, x) -> None:
    """``x`` is a real number or a real tensor without NaN or ±inf (a NaN price must not
    read as a number)."""
    if isinstance(x, torch.Tensor):
        if x.is_complex() or x.dtype == torch.bool:
            raise TypeError(f"{name}: expected a real tensor, got dtype {x.dtype}")
        if x.is_floating_point() and x.numel() and not bool(torch.isfinite(x).all()):
            raise ValueError(
                f"{name}: expected finite values, got "
                f"{'NaN' if bool(x.isnan().any()) else 'inf'}"
            )
    elif isinstance(x, (int, float)) and not isinstance(x, bool):
        if not math.isfinite(x):
            raise ValueError(f"{name}: expected a finite number, got {x}")
    else:
        try:
            t = (
                torch.as_tensor(x, dtype=DTYPE)
                if not isinstance(x, (str, bytes, bool))
                else None
            )
        except (TypeError, ValueError, RuntimeError):
            t = None
        if t is None:
            raise TypeError(
                f"{name}: expected a tensor or a number, got {type(x).__name__}"
            )
        _check_finite_values(name, t)


def _check_price(name: str, p, shape) -> None:
    """A price: a finite number, or a finite floating tensor that broadcasts to
    ``shape``."""
    if isinstance(p, torch.Tensor) and not p.is_floating_point():
        raise TypeError(
            f"{name}: expected a floating-point tensor, got dtype {p.dtype}"
        )
    _check_finite_values(name, p)
    if isinstance(p, torch.Tensor):
        try:
            out = torch.broadcast_shapes(p.shape, shape)
        except RuntimeError:
            out = None
        if out != shape:
            raise ValueError(
                f"{name}: expected a shape that broadcasts to {tuple(shape)}, got "
                f"{tuple(p.shape)}"
            )


def _check_unit(name: str, x: torch.Tensor, what: str) -> None:
    if x.numel() and (x.min() < 0 or x.max() > 1 or torch.isnan(x).any()):
        raise ValueError(
            f"{name}: expected {what} in [0, 1], got values in "
            f"[{x.min().item():.4g}, {x.max().item():.4g}]"
        )
