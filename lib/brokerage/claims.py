"""The paper's claims as rules that can fail, measured on several seeds with a negative control each.

Each seed is a fresh batch of ``cfg.claim_runs`` markets drawn from its own generator; the seeds' batches
are concatenated along the runs axis and simulated in one call (a market's draws do not depend on which
other markets share the batch), then every statistic is computed seed by seed.

How the settings were chosen: the method has nothing to tune. The two-bit broker uses the threshold
τ = √(d ln T / (L T)) on the squared norm; d = 5, L = 2 and uniform noise were fixed before any run; the
rule windows follow from the rates (growth ratio 1 for ln T, 2 for √T, 4 for linear; local slope
½ + 1/(2 ln T) for √(T ln T)). The claims' horizon was looked at on :data:`TUNING_SEEDS` only: at
T = 2^15 the two-bit slope was 0.62–0.71 (5 of 6 seeds in the window, still pre-asymptotic), at
T = 2^16 it was 0.55–0.64 (6 of 6), so the book uses 2^16 and FULL 2^18.
"""
from __future__ import annotations

import math

import numpy as np
import torch

from lib.common.claims import Claim, Rule, evaluate

from .learners import Learner, running_mean, simulate, two_bit_learner
from .model import Market, expected_regret, make_market

#: seeds on which the claims' horizon was looked at (T = 2^15 and 2^16; see the chapter)
TUNING_SEEDS = (0, 1, 2, 3, 4, 5)
#: seeds the notebook evaluates (held-out seeds: lib.common.claims.HELDOUT_SEEDS, via `make claims`).
#: Three seeds (10-12) first: every rule held on every seed, but with three seeds the t-interval of the
#: two-bit slope, [0.49, 0.72], crossed the window's edge (verdict "partly"); five seeds since.
NOTEBOOK_SEEDS = (10, 11, 12, 13, 14)

CLAIMS = (
    Claim("full-log", "with full feedback the regret grows like ln T",
          paper="O(L d ln T), matched by Ω(L d ln T)", where="abstract: upper and lower bound",
          statistic="growth ratio [R(T) − R(T/4)] / [R(T/4) − R(T/16)]",
          rule=Rule.at_most(1.5),
          control="context removed: the non-contextual mean broker"),
    Claim("two-bit-sqrt", "with two-bit feedback the regret grows like √(T ln T)",
          paper="O(√(L d T ln T)), Ω(√(L d T))", where="abstract: upper and lower bound",
          statistic="log–log slope of regret at T/2^k (re-tuned per T)",
          rule=Rule.between(0.4, 0.7),
          control="exploration removed: greedy two-bit broker"),
    Claim("no-density", "without a bounded noise density the regret is linear",
          paper="unlearnable, even with full feedback", where="abstract",
          statistic="log–log slope of the full-feedback broker's regret on [T/64, T], noise with an atom",
          rule=Rule.at_least(0.9),
          control="bounded density restored: uniform noise"),
    Claim("lower-bounds", "no broker beats Ω(L d ln T) / Ω(√(L d T))",
          paper="lower bounds for every broker", where="abstract", expect="not tested here"),
    Claim("scaling", "the regret scales with d and L as the rates say",
          paper="L d and √(L d) factors", where="abstract", expect="not tested here"),
)


def concat_markets(markets: list[Market]) -> Market:
    """Markets with the same horizon, dimension and noise law, stacked along the runs axis."""
    if not markets or not all(isinstance(m, Market) for m in markets):
        raise TypeError("markets: expected a non-empty list of Market")
    if len({m.shape[1:] for m in markets}) != 1 or len({m.noise for m in markets}) != 1:
        raise ValueError("markets: expected the same horizon, dimension and noise law in every market")
    cat = {f: torch.cat([getattr(m, f) for m in markets]) for f in
           ("contexts", "phi", "m", "V", "W", "U", "coin")}
    return Market(**cat, noise=markets[0].noise)


def _seed_markets(cfg, seeds, noise: str, stream: int, device) -> Market:
    # seed s draws from generator 100·s + stream: every (seed, experiment) pair has its own stream
    return concat_markets([make_market(cfg.claim_runs, cfg.claim_horizon, cfg.d, cfg.L, noise,
                                       seed=100 * s + stream, device=device) for s in seeds])


def growth_ratio(cum: np.ndarray) -> float:
    """[R(T) − R(T/4)] / [R(T/4) − R(T/16)] of a mean cumulative regret curve over all T rounds."""
    T = len(cum)
    return float((cum[T - 1] - cum[T // 4 - 1]) / (cum[T // 4 - 1] - cum[T // 16 - 1]))


def _slope(ts, values) -> float:
    return float(np.polyfit(np.log(ts), np.log(values), 1)[0])


def measure_claims(cfg, seeds, device="cpu") -> dict:
    """Per-seed values of each tested claim's statistic and of its negative control.

    Returns ``{claim id: {"values": {seed: v}, "control": {seed: v}}}`` (plain floats).
    """
    seeds = tuple(int(s) for s in seeds)
    if not seeds or len(set(seeds)) != len(seeds) or min(seeds) < 0:
        raise ValueError(f"seeds: expected distinct non-negative seeds, got {seeds}")
    T, R, n = cfg.claim_horizon, cfg.claim_runs, cfg.n_horizons
    if T < 64 or T // 2 ** (n - 1) < 16:
        raise ValueError(f"claim_horizon: expected ≥ 64 and ≥ 16·2^(n_horizons-1), got {T}")
    hs = [T >> k for k in reversed(range(n))]                         # T/2^(n-1), ..., T
    mkt = _seed_markets(cfg, seeds, "uniform", 1, device)
    learners = [Learner("full"), Learner("greedy")] + [two_bit_learner(cfg.d, cfg.L, h) for h in hs]
    prices, _ = simulate(mkt, learners)                                # (K, S·R, T)
    reg = expected_regret(prices, mkt.m, mkt.noise)                    # (K, S·R, T)
    nc = expected_regret(running_mean(mkt.V, mkt.W), mkt.m, mkt.noise)  # (S·R, T)
    atom = _seed_markets(cfg, seeds, "atom", 2, device)
    atom_reg = expected_regret(simulate(atom, [Learner("full")])[0][0], atom.m, atom.noise)
    late = np.unique(np.round(np.logspace(np.log10(T // 64), np.log10(T), 16)).astype(int))
    out = {c.id: {"values": {}, "control": {}} for c in CLAIMS if c.rule is not None}
    for i, s in enumerate(seeds):
        rows = slice(i * R, (i + 1) * R)
        cum = lambda r: r[rows].mean(0).cumsum(-1).cpu().numpy()       # (T,) mean over the seed's runs
        full, greedy = cum(reg[0]), cum(reg[1])
        out["full-log"]["values"][s] = growth_ratio(full)
        out["full-log"]["control"][s] = growth_ratio(cum(nc))
        finals = [reg[2 + j, rows, :h].sum(-1).mean().item() for j, h in enumerate(hs)]
        out["two-bit-sqrt"]["values"][s] = _slope(hs, finals)
        out["two-bit-sqrt"]["control"][s] = _slope(hs, [greedy[h - 1] for h in hs])
        out["no-density"]["values"][s] = _slope(late, cum(atom_reg)[late - 1])
        out["no-density"]["control"][s] = _slope(late, full[late - 1])
    return out


def judge(measured: dict) -> list:
    """:func:`lib.common.claims.evaluate` for every claim of the chapter (untested ones included)."""
    return [evaluate(c, measured[c.id]["values"], control=measured[c.id]["control"])
            if c.id in measured else evaluate(c, None) for c in CLAIMS]


def full_values(measured: dict | None) -> dict | None:
    """Mean over seeds of each claim's statistic (the "ours FULL" column), or None without a run."""
    if measured is None:
        return None
    return {k: float(np.mean(list(v["values"].values()))) for k, v in measured.items()}
