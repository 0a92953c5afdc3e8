"""The brokers: online ridge regression on the market value, with full or two-bit
feedback.

All learners share one loop over rounds, vectorised over a batch of K learners × R runs:
the state is A⁻¹ (K, R, d, d) and θ̂ (K, R, d), updated by Sherman–Morrison rank-one
steps; nothing in the loop reads a value back to the host, so on a GPU the rounds run
without synchronising.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from lib.common import check_int, check_positive, check_tensor

from .model import DTYPE, Market, _check_unit

#: learner kinds: the paper's two algorithms, the unsquared-norm ablation, and two
# baselines.
KINDS = ("full", "two_bit", "two_bit_unsquared", "eps_greedy", "greedy")


@dataclass(frozen=True)
class Learner:
    """One broker. ``kind`` is one of :data:`KINDS`; ``tau`` is the exploration
    threshold of the two-bit kinds (use :func:`paper_threshold`).

    ======================  ===================================  ======================
        ===========
    kind  explores when  learns from  on rounds
    ======================  ===================================  ======================
        ===========
    ``full``  never  (V + W) / 2  all
    ``two_bit``  ||c||²_{A⁻¹} > τ  (the paper)  (1{V>=U} + 1{W>=U})/2  explored
    ``two_bit_unsquared``  ||c||_{A⁻¹} > τ  (ablation)  same  explored
    ``eps_greedy``  coin < min(1, (d/t)^(1/3))  same  explored
    ``greedy``  never  the bits at its price  all
    ======================  ===================================  ======================
        ===========
    """

    kind: str
    tau: float = math.inf

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"kind: expected one of {KINDS}, got {self.kind!r}")
        if (
            not isinstance(self.tau, (int, float))
            or isinstance(self.tau, bool)
            or not self.tau > 0
        ):
            raise ValueError(
                f"tau: expected a number > 0 (math.inf for no threshold), got "
                f"{self.tau!r}"
            )
        if self.kind.startswith("two_bit") and math.isinf(self.tau):
            raise ValueError(
                f"tau: expected a finite threshold for kind {self.kind!r}, got "
                f"{self.tau}"
            )


def paper_threshold(d: int, L: float, horizon: int) -> float:
    """The exploration threshold τ = sqrt(d ln T / (L T)) for the squared norm
    ||c_t||²_{A⁻¹}, eq. (6)."""
    d, horizon, L = (
        check_int("d", d, 1),
        check_int("horizon", horizon, 1),
        check_positive("L", L),
    )
    return math.sqrt(d * math.log(max(horizon, 2)) / (L * horizon))


def two_bit_learner(d: int, L: float, horizon: int, squared: bool = True) -> Learner:
    """The paper's two-bit broker tuned for ``horizon`` (``squared=False``: the
    unsquared ablation)."""
    return Learner(
        "two_bit" if squared else "two_bit_unsquared", paper_threshold(d, L, horizon)
    )


def run_ridge(
    contexts: torch.Tensor,
    V: torch.Tensor,
    W: torch.Tensor,
    U: torch.Tensor,
    coin: torch.Tensor,
    learners,
    *,
    ridge: float = 1.0,
):
    """Run K ridge-regression brokers on R markets for T rounds, all in one vectorised
    loop.

    Args: ``contexts`` (R, T, d); valuations ``V``, ``W``, exploration prices ``U`` and
    ε-greedy coins ``coin`` (R, T), all in [0, 1]; ``learners`` a list of K
    :class:`Learner`. Returns ``prices`` (K, R, T) and ``explored`` (K, R, T) booleans.
    """
    R, T, d = _check_inputs(contexts, V, W, U, coin)
    contexts, V, W, U, coin = (x.to(DTYPE) for x in (contexts, V, W, U, coin))
    learners = _check_learners(learners)
    ridge = check_positive("ridge", ridge)
    K, dev = len(learners), contexts.device

    def column(
        values, dtype=DTYPE
    ):  # one value per learner, shape (K, 1) to broadcast over runs
        return torch.tensor(values, dtype=dtype, device=dev)[:, None]

    # explore when s = ||c||²_{A⁻¹} > thr: τ for the paper, τ² for the unsquared test, ∞
    # otherwise
    thr = column(
        [
            l.tau
            if l.kind == "two_bit"
            else l.tau**2
            if l.kind == "two_bit_unsquared"
            else math.inf
            for l in learners
        ]
    )
    is_eps = column([float(l.kind == "eps_greedy") for l in learners])
    full = column([l.kind == "full" for l in learners], torch.bool)
    upd_all = column([l.kind in ("full", "greedy") for l in learners], torch.bool)
    eps = [
        min(1.0, (d / t) ** (1 / 3)) for t in range(1, T + 1)
    ]  # ε_t as Python floats: no sync

    C = contexts.transpose(0, 1).contiguous()  # (T, R, d): round-major
    Vt, Wt, Ut, Et = (x.t().contiguous() for x in (V, W, U, coin))  # (T, R) each
    A_inv = (torch.eye(d, dtype=DTYPE, device=dev) / ridge).repeat(
        K, R, 1, 1
    )  # (K, R, d, d), A_0 = λI
    theta = torch.zeros(K, R, d, dtype=DTYPE, device=dev)  # (K, R, d)
    prices = torch.empty(T, K, R, dtype=DTYPE, device=dev)
    explored = torch.empty(T, K, R, dtype=torch.bool, device=dev)
    for t in range(T):
        c, v, w = C[t], Vt[t], Wt[t]  # (R, d), (R,), (R,)
        Ac = torch.matmul(A_inv, c.unsqueeze(-1)).squeeze(-1)  # (K, R, d)  A⁻¹c
        s = (Ac * c).sum(-1)  # (K, R)  ||c||²_{A⁻¹}
        pred = (theta * c).sum(-1)  # (K, R)  c·θ̂
        explore = (s > thr) | (Et[t] < eps[t] * is_eps)  # (K, R)
        p = torch.where(
            explore, Ut[t], pred.clamp(0, 1)
        )  # eq. (5): explore at U ~ U[0, 1]
        bits = (
            (v >= p).to(DTYPE) + (w >= p).to(DTYPE)
        ) * 0.5  # eq. (4): the two-bit label
        y = torch.where(full, (v + w) * 0.5, bits)  # (K, R)  regression label
        gAc = ((explore | upd_all).to(DTYPE) / (1 + s)).unsqueeze(
            -1
        ) * Ac  # A_t⁻¹c, 0 if no update
        A_inv.sub_(gAc.unsqueeze(-1) * Ac.unsqueeze(-2))  # Sherman–Morrison, eq. (7)
        theta.addcmul_(gAc, (y - pred).unsqueeze(-1))  # θ̂ += A_t⁻¹c (y - c·θ̂)
        prices[t], explored[t] = p, explore
    prices, explored = prices.permute(1, 2, 0), explored.permute(1, 2, 0)  # (K, R, T)
    return prices, explored


def simulate(market: Market, learners, *, ridge: float = 1.0):
    """:func:`run_ridge` on a :class:`~lib.brokerage.model.Market`."""
    if not isinstance(market, Market):
        raise TypeError(
            f"market: expected a Market (see make_market), got {type(market).__name__}"
        )
    return run_ridge(
        market.contexts,
        market.V,
        market.W,
        market.U,
        market.coin,
        learners,
        ridge=ridge,
    )


def full_feedback(market: Market, *, ridge: float = 1.0) -> torch.Tensor:
    """Prices (R, T) of the full-feedback broker: clip(c_t·θ̂_{t-1}) with ridge on (V +
    W) / 2."""
    return simulate(market, [Learner("full")], ridge=ridge)[0][0]


def two_bit(
    market: Market, L: float | None = None, *, squared: bool = True, ridge: float = 1.0
):
    """Prices (R, T) and exploration flags (R, T) of the paper's two-bit broker tuned
    for T."""
    if not isinstance(market, Market):
        raise TypeError(
            f"market: expected a Market (see make_market), got {type(market).__name__}"
        )
    R, T, d = market.shape
    learner = two_bit_learner(d, market.noise.L if L is None else L, T, squared)
    prices, explored = simulate(market, [learner], ridge=ridge)
    return prices[0], explored[0]


def fixed_price(V: torch.Tensor, price: float = 0.5) -> torch.Tensor:
    """The constant price ``price`` for every run and round, shaped like ``V`` (R,
    T)."""
    check_tensor("V", V, ndim=2, floating=True, nonempty=True)
    _check_unit("V", V, "valuations")
    if (
        not isinstance(price, (int, float))
        or isinstance(price, bool)
        or not 0 <= price <= 1
    ):
        raise ValueError(f"price: expected a number in [0, 1], got {price!r}")
    return torch.full_like(V, float(price))


def running_mean(V: torch.Tensor, W: torch.Tensor) -> torch.Tensor:
    """Non-contextual broker: post the mean of all past valuations (1/2 in round 1),
    shape (R, T).

    It ignores c_t: by eq. (2) the best fixed price for i.i.d. valuations is their mean,
    so this is the natural learner when the market value does not move.
    """
    check_tensor("V", V, ndim=2, floating=True, nonempty=True)
    check_tensor("W", W, shape=tuple(V.shape), floating=True)
    _check_unit("V", V, "valuations")
    _check_unit("W", W, "valuations")
    past = torch.cumsum(V + W, dim=1) - (V + W)  # (R, T) sum over s < t
    n = 2 * torch.arange(
        V.shape[1], dtype=V.dtype, device=V.device
    )  # (T,) valuations seen
    return torch.where(n > 0, past / n.clamp(min=1), torch.full_like(V, 0.5))


def _check_inputs(contexts, V, W, U, coin):
    check_tensor("contexts", contexts, ndim=3, floating=True)
    R, T, d = contexts.shape
    if R < 1 or T < 1 or d < 1:
        raise ValueError(
            f"contexts: expected a non-empty (runs, rounds, d) tensor, got shape "
            f"{tuple(contexts.shape)}"
        )
    check_tensor("contexts", contexts, finite=True)
    for name, x in (("V", V), ("W", W), ("U", U), ("coin", coin)):
        check_tensor(name, x, shape=(R, T), floating=True)
        if x.device != contexts.device:
            raise ValueError(
                f"{name}: expected a tensor on {contexts.device} like contexts, got "
                f"{x.device}"
            )
        _check_unit(name, x, "valuations" if name in "VW" else "numbers")
    return R, T, d


def _check_learners(learners):
    if isinstance(learners, Learner):
        learners = [learners]
    if not isinstance(learners, (list, tuple)) or not learners:
        raise ValueError(
            f"learners: expected a non-empty list of Learner, got {learners!r}"
        )
    for i, l in enumerate(learners):
        if not isinstance(l, Learner):
            raise TypeError(
                f"learners[{i}]: expected a Learner, got {type(l).__name__}"
            )
    return list(learners)
