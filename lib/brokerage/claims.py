"""The paper's claims as rules that can fail, measured on several seeds with a negative
control each.

Each seed is a fresh batch of ``cfg.claim_runs`` markets drawn from its own generator;
the seeds' batches are concatenated along the runs axis and simulated in one call (a
market's draws do not depend on which other markets share the batch), then every
statistic is computed seed by seed.

How the settings were chosen: the method has nothing to tune. The two-bit broker uses
the threshold τ = √(d ln T / (L T)) on the squared norm; d = 5, L = 2 and uniform noise
were fixed before any run; the rule windows follow from the rates (growth ratio 1 for ln
T, 2 for √T, 4 for linear; local slope ½ + 1/(2 ln T) for √(T ln T)). The claims'
horizon was looked at on :data:`TUNING_SEEDS` only: at T = 2^15 the two-bit slope was
0.62–0.71 (5 of 6 seeds in the window, still pre-asymptotic), at T = 2^16 it was
0.55–0.64 (6 of 6), so the book uses 2^16 and FULL 2^18.

Revision after an outside review (the held-out seeds had been seen by then): the
growth-ratio rule was narrowed from ≤ 1.5 to [0.5, 1.4] (it had accepted T^0.29 and
bounded regret) and its control changed from the non-contextual broker (linear) to
ε-greedy (an intermediate rate); the two-bit slope is now recorded as partly reproduced,
because ε-greedy, a T^(2/3) design, satisfies the same window at these horizons; the
exploration-count claim was added, which separates the two; and the no-density claim
became "not tested here", because the atom law is learnable by a broker that uses the
rounds where the two valuations coincide, so the ridge broker's linear regret there does
not test "no broker can learn".
"""

from __future__ import annotations


import numpy as np
import torch

from lib.common.claims import Claim, Rule, judge_all, mean_values, seed_list

from .learners import Learner, simulate, two_bit_learner
from .model import Market, expected_regret, make_market

#: seeds on which the claims' horizon was looked at (T = 2^15 and 2^16; see the chapter)
TUNING_SEEDS = (0, 1, 2, 3, 4, 5)
#: seeds the notebook evaluates (held-out seeds: lib.common.claims.HELDOUT_SEEDS, via
# `make claims`). : Three seeds (10-12) first: every rule held on every seed, but with
# three seeds the t-interval of the : two-bit slope, [0.49, 0.72], crossed the window's
# edge (verdict "partly"); five seeds since.
NOTEBOOK_SEEDS = (10, 11, 12, 13, 14)

CLAIMS = (
    Claim(
        "full-log",
        "with full feedback the regret grows like ln T",
        paper="O(L d ln T), matched by Ω(L d ln T)",
        where="abstract: upper and lower bound",
        statistic="growth ratio [R(T) − R(T/4)] / [R(T/4) − R(T/16)] (ln T: 1, T^a: "
        "4^a)",
        rule=Rule.between(0.5, 1.4),
        control="two-bit feedback instead: the ε-greedy broker",
    ),
    Claim(
        "two-bit-explore",
        "the two-bit broker explores on about √(T ln T) rounds, as its analysis "
        "requires",
        paper="exploration rounds ≤ 2d ln T / τ, τ ∝ √(d ln T/(L T))",
        where="abstract: rate; exploration count from the analysis",
        statistic="log–log slope of the number of exploration rounds at T/2^k "
        "(re-tuned per T)",
        rule=Rule.between(0.4, 0.6),
        control="uncertainty test replaced by an ε-greedy schedule (T^(2/3) "
        "explorations)",
    ),
    Claim(
        "two-bit-sqrt",
        "with two-bit feedback the regret grows like √(T ln T)",
        paper="O(√(L d T ln T)), Ω(√(L d T))",
        where="abstract: upper and lower bound",
        statistic="log–log slope of regret at T/2^k (re-tuned per T)",
        rule=Rule.between(0.4, 0.7),
        control="ε-greedy broker, a T^(2/3) design (not separable at T ≤ 2^18)",
        expect="partly reproduced",
    ),
    Claim(
        "no-density",
        "without a bounded noise density no broker can learn",
        paper="unlearnable, even with full feedback",
        where="abstract",
        expect="not tested here",
    ),
    Claim(
        "lower-bounds",
        "no broker beats Ω(L d ln T) / Ω(√(L d T))",
        paper="lower bounds for every broker",
        where="abstract",
        expect="not tested here",
    ),
    Claim(
        "scaling",
        "the regret scales with d and L as the rates say",
        paper="L d and √(L d) factors",
        where="abstract",
        expect="not tested here",
    ),
)


def concat_markets(markets: list[Market]) -> Market:
    """Markets with the same horizon, dimension and noise law, stacked along the runs
    axis."""
    if (
        not isinstance(markets, (list, tuple))
        or not markets
        or not all(isinstance(m, Market) for m in markets)
    ):
        raise TypeError("markets: expected a non-empty list of Market")
    if len({m.shape[1:] for m in markets}) != 1 or len({m.noise for m in markets}) != 1:
        raise ValueError(
            "markets: expected the same horizon, dimension and noise law in every "
            "market"
        )
    cat = {
        f: torch.cat([getattr(m, f) for m in markets])
        for f in ("contexts", "phi", "m", "V", "W", "U", "coin")
    }
    return Market(**cat, noise=markets[0].noise)


def _seed_markets(cfg, seeds, noise: str, stream: int, device) -> Market:
    # seed s draws from generator 100·s + stream: every (seed, experiment) pair has its
    # own stream
    return concat_markets(
        [
            make_market(
                cfg.claim_runs,
                cfg.claim_horizon,
                cfg.d,
                cfg.L,
                noise,
                seed=100 * s + stream,
                device=device,
            )
            for s in seeds
        ]
    )


def growth_ratio(cum: np.ndarray) -> float:
    """[R(T) − R(T/4)] / [R(T/4) − R(T/16)] of a mean cumulative regret curve over all T
    rounds."""
    T = len(cum)
    return float((cum[T - 1] - cum[T // 4 - 1]) / (cum[T // 4 - 1] - cum[T // 16 - 1]))


def _slope(ts, values) -> float:
    return float(np.polyfit(np.log(ts), np.log(values), 1)[0])


def measure_claims(cfg, seeds, device="cpu") -> dict:
    """Per-seed values of each tested claim's statistic and of its negative control.

    Returns ``{claim id: {"values": {seed: v}, "control": {seed: v}}}`` (plain floats).
    """
    from .experiment import _check_cfg

    _check_cfg(cfg)
    seeds = seed_list(seeds)
    T, R, n = cfg.claim_horizon, cfg.claim_runs, cfg.n_horizons
    if T < 64 or T // 2 ** (n - 1) < 16:
        raise ValueError(
            f"claim_horizon: expected ≥ 64 and ≥ 16·2^(n_horizons-1), got {T}"
        )
    hs = [T >> k for k in reversed(range(n))]  # T/2^(n-1), ..., T
    mkt = _seed_markets(cfg, seeds, "uniform", 1, device)
    learners = [Learner("full"), Learner("eps_greedy")] + [
        two_bit_learner(cfg.d, cfg.L, h) for h in hs
    ]
    prices, explored = simulate(mkt, learners)  # (K, S·R, T) each
    reg = expected_regret(prices, mkt.m, mkt.noise)  # (K, S·R, T)
    out = {c.id: {"values": {}, "control": {}} for c in CLAIMS if c.rule is not None}
    for i, s in enumerate(seeds):
        rows = slice(i * R, (i + 1) * R)
        cum = lambda r: (
            r[rows].mean(0).cumsum(-1).cpu().numpy()
        )  # (T,) mean over the seed's runs
        full, eps = cum(reg[0]), cum(reg[1])
        eps_explored = cum(explored[1].double())  # (T,) explorations up to t
        out["full-log"]["values"][s] = growth_ratio(full)
        out["full-log"]["control"][s] = growth_ratio(eps)
        finals = [reg[2 + j, rows, :h].sum(-1).mean().item() for j, h in enumerate(hs)]
        counts = [
            explored[2 + j, rows, :h].double().sum(-1).mean().item()
            for j, h in enumerate(hs)
        ]
        out["two-bit-sqrt"]["values"][s] = _slope(hs, finals)
        out["two-bit-sqrt"]["control"][s] = _slope(hs, [eps[h - 1] for h in hs])
        out["two-bit-explore"]["values"][s] = _slope(hs, counts)
        out["two-bit-explore"]["control"][s] = _slope(
            hs, [eps_explored[h - 1] for h in hs]
        )
    return out


def judge(measured: dict) -> list:
    """:func:`lib.common.claims.evaluate` for every claim of the chapter (untested ones
    included)."""
    return judge_all(CLAIMS, measured)


def full_values(measured: dict | None) -> dict | None:
    """Mean over seeds of each claim's statistic (the "ours FULL" column), or None
    without a run."""
    return mean_values(measured)
