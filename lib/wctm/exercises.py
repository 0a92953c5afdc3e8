"""Self-checks for the wctm chapter's exercises: ``exercises.ex1(answer)`` says right,
close or wrong (with a hint) without giving the answer away. Every answer is computed
here from the chapter's own functions, on the streams the solutions use."""

from __future__ import annotations

import torch

from lib.common import make_generator
from lib.common.exercises import Feedback, check_choice, check_number, check_numbers

from . import Config
from .conformal import ctm_pvalues, weighted_pvalues
from .data import synthetic_streams, uniforms
from .martingales import composite_jumper, cusum, first_alarm, shiryaev_roberts
from .watch import alarm_summary


def _rate(log_stat: torch.Tensor, threshold: float) -> float:
    return float((first_alarm(log_stat, threshold) >= 0).double().mean())


def ex1(answer, streams: int = 300) -> Feedback:
    """Exercise wctm-oracle: the share of benign streams (seed 0, ``streams`` of them)
    whose Composite Jumper crosses 1/α_V with the oracle weights e^{3x} applied from the
    change on. Another seed's answer is right within about two binomial s.d."""
    cfg = Config()
    g = make_generator(0)
    b, _ = synthetic_streams("benign", streams, g)
    u = uniforms(streams, cfg.T, g)
    one_c, one_t = torch.ones_like(b.cal_x[..., 0]), torch.ones_like(b.test_x[..., 0])
    w_c, w_t = torch.exp(3 * b.cal_x[..., 0]), torch.exp(3 * b.test_x[..., 0])
    after = torch.arange(cfg.T) >= cfg.changepoint  # (T,)
    p = weighted_pvalues(
        b.cal_scores,
        torch.stack([one_c, w_c], 1),
        b.test_scores,
        torch.where(after, w_t, one_t),
        u,
        cfg.alpha,
        after.long(),
    )
    truth = _rate(composite_jumper(p), 1 / cfg.ville_alpha)
    return check_number(
        "wctm ex1",
        answer,
        truth,
        atol=0.025,
        close=1.0,
        hint="weights e^{3x} only from the changepoint on; before it the reference is "
        "the unweighted calibration set (two weight rows and a block index)",
    )


def ex2(answer) -> Feedback:
    """Exercise wctm-anti: without the anticonservative rule, what does the p-value of
    an out-of-support point become: "zero", "uniform" or "one"?"""
    return check_choice(
        "wctm ex2",
        answer,
        "uniform",
        ("zero", "uniform", "one"),
        hint="when the test point carries almost all the weight, which term of eq. wcp "
        "is left?",
    )


def ex3(answer, streams: int = 100) -> Feedback:
    """Exercise wctm-reference: under concept shift, which CTM detects sooner:
    "growing" (the standard CTM) or "fixed" (the calibration set only)? Decided here
    by the mean delay* of both on ``streams`` concept-shift streams (seed 0)."""
    cfg = Config()
    g = make_generator(0)
    b, _ = synthetic_streams("concept", streams, g)
    u = uniforms(streams, cfg.T, g)
    v = 1 / cfg.ville_alpha
    grow = composite_jumper(ctm_pvalues(b.cal_scores, b.test_scores, u))
    ones_c, ones_t = torch.ones_like(b.cal_scores), torch.ones_like(b.test_scores)
    fix = composite_jumper(
        weighted_pvalues(b.cal_scores, ones_c, b.test_scores, ones_t, u, cfg.alpha)
    )
    d_grow, d_fix = (
        alarm_summary(first_alarm(m, v), cfg.changepoint, cfg.T)["delay_cens"]
        for m in (grow, fix)
    )
    return check_choice(
        "wctm ex3",
        answer,
        "fixed" if d_fix < d_grow else "growing",
        ("growing", "fixed"),
        hint="where do the post-change scores go in each reference set?",
    )


def ex4(answer, streams: int = 1000, T: int = 5000) -> Feedback:
    """Exercise wctm-sr: the shares of ``streams`` null streams (uniform p-values, seed
    0, ``T`` steps) on which (Shiryaev–Roberts ≥ 10⁴, CUSUM ≥ 10⁴, Composite Jumper ≥
    100). Another seed's answer is right within about 0.02."""
    g = make_generator(0)
    p = torch.rand(streams, T, generator=g, dtype=torch.float64)
    log_m = composite_jumper(p)
    truth = [
        _rate(shiryaev_roberts(log_m), 1e4),
        _rate(cusum(log_m), 1e4),
        _rate(log_m, 100.0),
    ]
    return check_numbers(
        "wctm ex4",
        answer,
        truth,
        atol=0.02,
        close=0.5,
        hint="three numbers: SR and CUSUM against 10^4, the martingale itself against "
        "100, on the same null streams",
    )


__all__ = ["ex1", "ex2", "ex3", "ex4"]
