"""The chapter's experiments: regret against T, scaling in d and L, and a noise law with
an atom.

:func:`run_experiment` is what the notebook (SMOKE) and ``python -m lib.brokerage``
(FULL) call; it returns plain lists and floats, so the FULL results saved as JSON have
the SMOKE keys.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from lib.common import check_int, progress

from .learners import (
    Learner,
    fixed_price,
    paper_threshold,
    running_mean,
    simulate,
    two_bit_learner,
)
from .model import expected_regret, gft, make_market


def checkpoints(horizon: int, n: int = 48) -> list[int]:
    """About ``n`` log-spaced rounds in [1, horizon], always including every power of
    two and T."""
    horizon, n = check_int("horizon", horizon, 1), check_int("n", n, 2)
    grid = np.unique(np.round(np.logspace(0, math.log10(horizon), n)).astype(int))
    pow2 = [2**k for k in range(int(math.log2(horizon)) + 1)]
    return sorted(set(grid.tolist()) | set(pow2) | {horizon})


def horizons(horizon: int, n: int) -> list[int]:
    """The ``n`` horizons T/2^(n-1), ..., T/2, T at which the two-bit broker is
    re-tuned."""
    horizon, n = check_int("horizon", horizon, 1), check_int("n", n, 1)
    return [max(horizon >> k, 1) for k in reversed(range(n))]


def _check_cfg(cfg):
    from . import Config

    if not isinstance(cfg, Config):
        raise TypeError(
            f"cfg: expected a lib.brokerage.Config (e.g. SMOKE or FULL), got "
            f"{type(cfg).__name__}"
        )
    return cfg


def _positive_series(name: str, values) -> np.ndarray:
    try:
        a = np.asarray(values, float)
    except (TypeError, ValueError):
        raise TypeError(
            f"{name}: expected a sequence of positive numbers, got "
            f"{type(values).__name__}"
        ) from None
    if a.ndim != 1 or a.size < 2:
        raise ValueError(
            f"{name}: expected a 1-d sequence of at least 2 numbers, got shape "
            f"{a.shape}"
        )
    if not (np.isfinite(a).all() and (a > 0).all()):
        raise ValueError(
            f"{name}: expected finite numbers > 0 (their logarithms are fitted), got "
            f"{a.tolist()}"
        )
    return a


def loglog_slope(ts, values) -> float:
    """Least-squares slope of log(values) against log(ts)."""
    a, b = _positive_series("ts", ts), _positive_series("values", values)
    if a.shape != b.shape:
        raise ValueError(f"values: expected {a.size} values like ts, got {b.size}")
    x, y = np.log(np.asarray(ts, float)), np.log(np.asarray(values, float))
    return float(np.polyfit(x, y, 1)[0])


def _at(cum: torch.Tensor, ts) -> torch.Tensor:
    """Cumulative regret (R, T) read at rounds ``ts`` (1-based) -> (R, len(ts))."""
    return cum[:, torch.as_tensor(ts, device=cum.device) - 1]


def _mean_se(x: torch.Tensor) -> dict:
    """Mean and standard error over runs (dim 0) of an (R, n) tensor, as lists."""
    mean = x.mean(0)
    se = x.std(0) / math.sqrt(x.shape[0]) if x.shape[0] > 1 else torch.zeros_like(mean)
    return {"mean": mean.tolist(), "se": se.tolist()}


def main_experiment(cfg, device) -> dict:
    """Every broker on one batch of markets: curves, the two-bit slope, the ablations,
    the baselines."""
    _check_cfg(cfg)
    mkt = make_market(
        cfg.runs, cfg.horizon, cfg.d, cfg.L, cfg.noise, seed=cfg.seed, device=device
    )
    T, ts, hs = (
        cfg.horizon,
        checkpoints(cfg.horizon),
        horizons(cfg.horizon, cfg.n_horizons),
    )
    tau = paper_threshold(cfg.d, cfg.L, T)
    learners = {
        "full": Learner("full"),
        "eps_greedy": Learner("eps_greedy"),
        "greedy": Learner("greedy"),
    }
    learners |= {
        f"two_bit@{h}": two_bit_learner(cfg.d, cfg.L, h) for h in hs
    }  # re-tuned per T
    learners |= {
        f"two_bit_unsquared@{h}": two_bit_learner(cfg.d, cfg.L, h, squared=False)
        for h in hs
    }
    learners |= {
        f"kappa@{k:g}": Learner("two_bit", k * tau) for k in cfg.kappas
    }  # τ scaled by κ
    names = list(learners)
    prices, explored = simulate(mkt, list(learners.values()))  # (K, R, T) each
    row = {name: k for k, name in enumerate(names)}

    def regret(name, upto=T):  # (R, upto)
        return expected_regret(prices[row[name], :, :upto], mkt.m[:, :upto], mkt.noise)

    cum = {
        "full": regret("full").cumsum(-1),
        "two_bit": regret(f"two_bit@{T}").cumsum(-1),
        "two_bit_unsquared": regret(f"two_bit_unsquared@{T}").cumsum(-1),
        "eps_greedy": regret("eps_greedy").cumsum(-1),
        "greedy": regret("greedy").cumsum(-1),
        "fixed": expected_regret(fixed_price(mkt.V), mkt.m, mkt.noise).cumsum(-1),
        "noncontextual": expected_regret(
            running_mean(mkt.V, mkt.W), mkt.m, mkt.noise
        ).cumsum(-1),
    }
    out = {
        "checkpoints": ts,
        "horizons": hs,
        "curves": {k: _mean_se(_at(v, ts)) for k, v in cum.items()},
    }
    for kind in (
        "two_bit",
        "two_bit_unsquared",
    ):  # the broker re-tuned for each horizon
        finals = [regret(f"{kind}@{h}", h).sum(-1) for h in hs]  # n × (R,)
        out[kind] = {
            "final": [f.mean().item() for f in finals],
            "final_se": [(f.std() / math.sqrt(len(f))).item() for f in finals],
            "slope": loglog_slope(hs, [f.mean().item() for f in finals]),
            "explore_fraction": [
                explored[row[f"{kind}@{h}"], :, :h].double().mean().item() for h in hs
            ],
        }
    out["kappa"] = {
        "kappas": [1.0, *cfg.kappas],
        "final": [cum["two_bit"][:, -1].mean().item()]
        + [regret(f"kappa@{k:g}").sum(-1).mean().item() for k in cfg.kappas],
        "explore_fraction": [explored[row[f"two_bit@{T}"]].double().mean().item()]
        + [explored[row[f"kappa@{k:g}"]].double().mean().item() for k in cfg.kappas],
    }
    late = [t for t in ts if t >= T // 64]
    mean = {k: np.asarray(v["mean"]) for k, v in out["curves"].items()}
    out["slopes"] = {k: loglog_slope(late, mean[k][-len(late) :]) for k in mean}
    full_at = dict(zip(ts, mean["full"]))
    out["full_growth"] = (full_at[T] - full_at[T // 4]) / (
        full_at[T // 4] - full_at[T // 16]
    )
    out["full_over_log"] = [full_at[t] / math.log(t) for t in ts if t >= 2]
    out["full_logfit"] = np.polyfit(
        np.log(late), mean["full"][-len(late) :], 1
    ).tolist()  # [β, α]
    out["realised"] = {}
    for name, k in (("full", row["full"]), ("two_bit", row[f"two_bit@{T}"])):
        r = (gft(mkt.m, mkt.V, mkt.W) - gft(prices[k], mkt.V, mkt.W)).sum(
            -1
        )  # (R,) sampled
        out["realised"][name] = {
            "mean": r.mean().item(),
            "se": (r.std() / math.sqrt(len(r))).item(),
        }
    return out


def scaling_experiment(cfg, device) -> dict:
    """Normalised regret for several d (uniform noise) and several L (spike noise)."""
    _check_cfg(cfg)
    T, ts, hs = (
        cfg.scaling_horizon,
        checkpoints(cfg.scaling_horizon),
        horizons(cfg.scaling_horizon, cfg.n_horizons),
    )
    grid = [("d", d, cfg.L, "uniform") for d in cfg.scaling_ds] + [
        ("L", cfg.d, L, "spike") for L in cfg.scaling_Ls
    ]
    out = {"checkpoints": ts, "horizons": hs, "d": {}, "L": {}}
    for i, (axis, d, L, noise) in enumerate(progress(grid, desc="scaling")):
        mkt = make_market(
            cfg.scaling_runs, T, d, L, noise, seed=cfg.seed + 1 + i, device=device
        )
        learners = [Learner("full")] + [two_bit_learner(d, L, h) for h in hs]
        prices, _ = simulate(mkt, learners)
        full = _at(expected_regret(prices[0], mkt.m, mkt.noise).cumsum(-1), ts).mean(
            0
        )  # (n,)
        finals = [
            expected_regret(prices[1 + j, :, :h], mkt.m[:, :h], mkt.noise)
            .sum(-1)
            .mean()
            .item()
            for j, h in enumerate(hs)
        ]
        key = str(d) if axis == "d" else f"{L:g}"
        at = dict(zip(ts, full.tolist()))
        out[axis][key] = {
            "full_norm": [
                r / (L * d * math.log(t)) for r, t in zip(full.tolist(), ts) if t >= 2
            ],
            "full_flat": (at[T] / math.log(T))
            / (at[T // 4] / math.log(T // 4)),  # 1: flat in t
            "two_bit_norm": [
                r / math.sqrt(L * d * h * math.log(h)) for r, h in zip(finals, hs)
            ],
            "full_final": full[-1].item(),
            "two_bit_final": finals[-1],
        }
    return out


def atom_experiment(cfg, device) -> dict:
    """The full-feedback broker when half the noise mass sits exactly on the market
    value."""
    _check_cfg(cfg)
    T, ts = cfg.atom_horizon, checkpoints(cfg.atom_horizon)
    out = {"checkpoints": ts}
    for noise in (
        "atom",
        "uniform",
    ):  # same seed: same contexts, only the noise differs
        mkt = make_market(
            cfg.runs, T, cfg.d, cfg.L, noise, seed=cfg.seed, device=device
        )
        prices, _ = simulate(mkt, [Learner("full")])
        cum = expected_regret(prices[0], mkt.m, mkt.noise).cumsum(-1)
        out[noise] = _mean_se(_at(cum, ts))
        out[noise]["per_round_at_T"] = (cum[:, -1] / T).mean().item()
        late = [t for t in ts if t >= T // 64]
        out[noise]["slope"] = loglog_slope(late, out[noise]["mean"][-len(late) :])
        if noise == "atom":  # the loss of missing m by any ε > 0: a jump
            out["jump"] = expected_regret(
                torch.tensor(1e-9), torch.tensor(0.0), mkt.noise
            ).item()
    return out


def run_experiment(cfg, device=None) -> dict:
    """All three experiments at the preset ``cfg`` on ``device``; plain lists and
    floats."""
    from lib.common import device as pick_device

    _check_cfg(cfg)
    dev = pick_device() if device is None else torch.device(device)
    from .claims import measure_claims

    return {
        "main": main_experiment(cfg, dev),
        "scaling": scaling_experiment(cfg, dev),
        "atom": atom_experiment(cfg, dev),
        "claims": measure_claims(cfg, cfg.claim_seeds, dev),
    }


def quick_curves(
    d: int = 5,
    L: float = 2.0,
    horizon: int = 2048,
    noise: str = "uniform",
    *,
    runs: int = 4,
    seed: int = 0,
    device="cpu",
) -> dict:
    """Mean cumulative regret (all rounds) of four brokers on a small batch, for the
    widget (~1 s)."""
    mkt = make_market(runs, horizon, d, L, noise, seed=seed, device=device)
    prices, _ = simulate(mkt, [Learner("full"), two_bit_learner(d, L, horizon)])
    curves = {
        "full feedback": prices[0],
        "two-bit": prices[1],
        "fixed 1/2": fixed_price(mkt.V),
        "non-contextual": running_mean(mkt.V, mkt.W),
    }
    return {
        k: expected_regret(p, mkt.m, mkt.noise).cumsum(-1).mean(0).cpu().numpy()
        for k, p in curves.items()
    }
