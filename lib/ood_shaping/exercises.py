"""Self-checks for the ood_shaping chapter's exercises: ``exercises.ex1(answer, run0)``
says right, close or wrong (with a hint) without giving the answer away. The answers
depend on a trained network, so each check takes the notebook's ``run0`` (seed 10's
:class:`SeedRun`; anything with its ``h_fit``, ``h_id``, ``h_ood``, ``W`` and ``b``
works) and recomputes the answer from the chapter's own functions on it, as the solution
does (a few seconds; a result is computed once per run). The checks leave the global
random state as they found it."""

from __future__ import annotations

import dataclasses

import torch

from lib.common import make_generator
from lib.common.exercises import Feedback, check_numbers

from . import SMOKE
from . import scores as S
from .claims import slope_ratios
from .experiment import kl_ib_shaping
from .variational import histogram, make_grid, ood_law_samples, solve_shaping

EX1_SIGMAS = (1e-4, 0.05)
EX4_BETAS = (0.1, 0.5, 1.0, 2.0, 5.0)
RUN_FIELDS = ("h_fit", "h_id", "h_ood", "W", "b")
_CACHE: dict = {}


def _check_run(run) -> None:
    missing = [f for f in RUN_FIELDS if not hasattr(run, f)]
    if missing:
        raise TypeError(
            f"run: expected the notebook's run0 (a SeedRun with {list(RUN_FIELDS)}), "
            f"got {type(run).__name__} without {missing}"
        )
    if not isinstance(run.h_fit, torch.Tensor) or not isinstance(run.h_ood, dict):
        raise TypeError(
            "run: expected tensors of features in h_fit and a dict of them in h_ood"
        )


def _key(run, *extra) -> tuple:
    """A fingerprint of ``run``'s features, so that a result is reused only for the
    same run."""
    h = run.h_fit.double()
    return (tuple(h.shape), float(h.sum()), float((h * h).sum()), *extra)


def _cached(key: tuple, compute):
    if key not in _CACHE:
        with torch.random.fork_rng():
            _CACHE[key] = compute()
    return _CACHE[key]


def mean_auroc(run, knots, g) -> float:
    """Mean AUROC (in %) of the shaped energy over the run's test OOD sets."""
    s_id = S.shaped_energy(run.h_id, run.W, run.b, knots, g)
    vals = [
        S.auroc(s_id, S.shaped_energy(h, run.W, run.b, knots, g))
        for h in run.h_ood.values()
    ]
    return 100 * sum(vals) / len(vals)


def _shaping(cfg, run, beta: float, family: str = "monotone"):
    torch.manual_seed(10)  # as seed_everything(10) in the solutions
    return kl_ib_shaping(
        cfg, run.h_fit, make_generator(10), "weaker+tail", beta, family=family
    )


def _ex1_truth(run) -> tuple:
    x = run.h_fit.flatten().double().cpu()
    grid = make_grid(float(x.quantile(0.999)), 64)
    p_id = histogram(x, grid)
    p_ood = histogram(ood_law_samples(x, "weaker"), grid)
    k = grid.knots
    starts = (None, torch.sqrt(k * k[-1]))
    out = []
    for sigma in EX1_SIGMAS:
        a, b = (
            solve_shaping(p_id, p_ood, grid, beta=2.0, sigma=sigma, init=g0)[0]
            for g0 in starts
        )
        out.append(float((a / a[-1] - b / b[-1]).abs().max()))
    return tuple(out)


def ex1(gaps, run) -> Feedback:
    """Exercise ood-shaping-deterministic: the largest gap between the shapes g/g(x_max)
    of the two solutions (identity start and √(x·x_max) start) at σ = 10⁻⁴ and at
    σ = 0.05, two numbers (right within 2 %)."""
    _check_run(run)
    truth = _cached(_key(run, "ex1"), lambda: _ex1_truth(run))
    return check_numbers(
        "ood_shaping ex1",
        gaps,
        truth,
        rtol=0.02,
        close=0.3,
        hint="the grid of 64 bins up to the 0.999 quantile, β = 2, the 'weaker' law; "
        "compare g/g[-1], the largest absolute difference",
    )


def _ex3_truth(run) -> tuple:
    out = []
    for family in ("monotone", "free"):
        kn, g = _shaping(SMOKE, run, 2.0, family)
        out.append((mean_auroc(run, kn, g), float(g[-1] / g.abs().max())))
    return tuple(out)


def ex3(aurocs, run, top=None) -> Feedback:
    """Exercise ood-shaping-direction: the mean test AUROC (in %) of the non-decreasing
    and of the free solution (two numbers, right within 0.2 points); ``top``
    (optional): g(x_max)/max|g| of the free solution (right within 0.02)."""
    _check_run(run)
    (a_mono, _), (a_free, t_free) = _cached(_key(run, "ex3"), lambda: _ex3_truth(run))
    parts = [
        check_numbers(
            "ood_shaping ex3 (AUROC)",
            aurocs,
            [a_mono, a_free],
            atol=0.2,
            rtol=0.0,
            close=0.02,
            hint="in %, averaged over run0.h_ood; β = 2, 'weaker+tail', generator "
            "seed 10",
        )
    ]
    if top is not None:
        parts.append(
            check_numbers(
                "ood_shaping ex3 (top)",
                [top],
                [t_free],
                atol=0.02,
                rtol=0.0,
                close=0.3,
                hint="divide g at the last knot by the largest |g|",
            )
        )
    bad = [p for p in parts if not p.ok]
    if not bad:
        return Feedback("ood_shaping ex3", "right")
    status = "close" if all(p.status == "close" for p in bad) else "wrong"
    return Feedback("ood_shaping ex3", status, "; ".join(str(p) for p in bad))


def _ex4_truth(run, scale: str) -> tuple:
    c = dataclasses.replace(SMOKE, g_scale=scale)
    out = []
    for beta in EX4_BETAS:
        kn, g = _shaping(c, run, beta)
        out.append(slope_ratios(run.h_fit, kn, g)["top"])
    return tuple(out)


def ex4(ratios, run, scale: str = "fixed") -> Feedback:
    """Exercise ood-shaping-beta: the clip statistic (``slope_ratios(...)["top"]``) for
    β = 0.1, 0.5, 1, 2, 5 (five numbers, right within 2 %), with the scale of g
    ``"fixed"`` or ``"unconstrained"`` (one scale per call, about 4 s each)."""
    if scale not in ("fixed", "unconstrained"):
        raise ValueError(f"scale: expected 'fixed' or 'unconstrained', got {scale!r}")
    _check_run(run)
    truth = _cached(_key(run, "ex4", scale), lambda: _ex4_truth(run, scale))
    return check_numbers(
        f"ood_shaping ex4 ({scale})",
        ratios,
        truth,
        rtol=0.02,
        close=0.3,
        hint="one fresh generator seed 10 per β; the ratio of slopes on [q90, q99] "
        "and [q10, q90] of run0.h_fit",
    )


__all__ = ["ex1", "ex3", "ex4", "mean_auroc"]
