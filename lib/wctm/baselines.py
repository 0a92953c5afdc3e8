"""Podkopaev & Ramdas (2021) baselines on miscoverage losses: a sequential test (PR-ST)
and its changepoint-detection extension (PR-CD), with predictable-mixture betting
confidence bounds.

PR-ST alarms at the first ``t`` where the lower confidence *sequence* on the target risk
exceeds the upper confidence bound on the source risk plus a tolerance: ``L_T^t > U_S +
eps``
    (eq. pr).
All bounds are computed on a grid of candidate means for every stream at once.
"""

from __future__ import annotations

import math

import torch

from lib.common import (
    check_int,
    check_nonnegative,
    check_positive,
    check_probability,
    check_tensor,
)

GRID = 200


def _running_var(x: torch.Tensor) -> torch.Tensor:
    """Predictable variance estimates ``σ²_i`` built from ``x_0..x_{i-1}`` plus a fake
    point 1/2."""
    S, n = x.shape
    k = torch.arange(1, n + 1, dtype=x.dtype, device=x.device)  # 1..n
    mean = (0.5 + torch.cumsum(x, 1)) / (k + 1)  # μ_{i+1}: mean incl. x_i
    var_next = (0.25 + torch.cumsum((x - mean) ** 2, 1)) / (k + 1)  # σ²_{i+1}
    return torch.cat(
        [torch.full((S, 1), 0.25, dtype=x.dtype, device=x.device), var_next[:, :-1]], 1
    )


def _check_losses(name: str, x) -> None:
    """(S, n) losses in [0, 1] (a NaN would silently shift a confidence bound), S, n >=
    1."""
    check_tensor(name, x, ndim=2, floating=True)
    if x.shape[0] < 1 or x.shape[1] < 1:
        raise ValueError(
            f"{name}: expected at least one stream and one loss, got shape "
            f"{tuple(x.shape)}"
        )
    if not bool(((x >= 0) & (x <= 1)).all()):
        raise ValueError(
            f"{name}: expected losses in [0, 1], got values outside (or NaN)"
        )


def _check_level(name: str, value) -> float:
    """A level in the open interval (0, 1)."""
    value = check_probability(name, value)
    if not 0 < value < 1:
        raise ValueError(f"{name}: expected a number in (0, 1), got {value}")
    return value


def _check_scores(name: str, scores, S=None) -> None:
    check_tensor(name, scores, ndim=2, floating=True)
    if scores.shape[0] < 1 or scores.shape[1] < 1:
        raise ValueError(
            f"{name}: expected at least one stream and one score, got shape "
            f"{tuple(scores.shape)}"
        )
    if S is not None and scores.shape[0] != S:
        raise ValueError(
            f"{name}: expected {S} streams like cal_scores, got shape "
            f"{tuple(scores.shape)}"
        )
    check_tensor(name, scores, finite=True)


def _grid(x: torch.Tensor) -> torch.Tensor:
    return torch.linspace(1e-5, 1 - 1e-5, GRID, dtype=x.dtype, device=x.device)  # (G,)


def betting_cs_lower(x: torch.Tensor, delta: float, c: float = 0.5) -> torch.Tensor:
    """Running lower confidence sequence for the mean of ``x`` in [0, 1]: ``(S, n)``,
    non-decreasing.

    Bet ``λ_i(m) = min(sqrt(2 log(1/δ) / (i log(i+1) σ²_i)), c/m)`` on ``x_i - m``; a
    candidate mean ``m`` stays while ``sum_i log(1 + λ_i (x_i - m)) < log(1/δ)``
    (eq. cs).
    """
    _check_losses("x", x)
    _check_level("delta", delta)
    _check_level("c", c)
    return _cs_lower(x, delta, c)


def _cs_lower(x, delta, c=0.5):
    S, n = x.shape
    m = _grid(x)  # (G,)
    i = torch.arange(1, n + 1, dtype=x.dtype, device=x.device)
    lam = torch.sqrt(
        2 * math.log(1 / delta) / (i * torch.log(i + 1) * _running_var(x))
    )  # (S, n)
    lam = torch.minimum(lam[..., None], c / m)  # (S, n, G)
    K = torch.cumsum(torch.log1p(lam * (x[..., None] - m)), dim=1)  # (S, n, G)
    first_ok = torch.argmax((K < math.log(1 / delta)).to(torch.uint8), dim=-1)  # (S, n)
    return torch.cummax(m[first_ok], dim=1).values  # running intersection


def betting_ci_upper(x: torch.Tensor, delta: float, c: float = 0.5) -> torch.Tensor:
    """Fixed-sample upper confidence bound for the mean of ``x`` in [0, 1]; shape
    ``(S,)``."""
    _check_losses("x", x)
    _check_level("delta", delta)
    _check_level("c", c)
    return _ci_upper(x, delta, c)


def _ci_upper(x, delta, c=0.5):
    S, n = x.shape
    m = _grid(x)
    lam = torch.sqrt(2 * math.log(1 / delta) / (n * _running_var(x)))  # (S, n)
    lam = torch.minimum(lam[..., None], c / (1 - m))  # (S, n, G)
    K = torch.cumsum(torch.log1p(-lam * (x[..., None] - m)), dim=1)  # (S, n, G)
    ok = (K < math.log(1 / delta)).flip(-1)
    last_ok = GRID - 1 - torch.argmax(ok.to(torch.uint8), dim=-1)  # largest surviving m
    return m[last_ok].min(dim=1).values.clamp(max=1.0)


def split_conformal_radius(cal_scores: torch.Tensor, alpha: float) -> torch.Tensor:
    """Split-conformal radius: the ``ceil((n+1)(1-alpha))``-th smallest calibration
    score; ``(S,)``."""
    _check_scores("cal_scores", cal_scores)
    _check_level("alpha", alpha)
    return _radius(cal_scores, alpha)


def _radius(cal_scores, alpha):
    n = cal_scores.shape[1]
    k = math.ceil((n + 1) * (1 - alpha))
    if k > n:
        return torch.full(
            cal_scores.shape[:1],
            float("inf"),
            dtype=cal_scores.dtype,
            device=cal_scores.device,
        )
    return torch.sort(cal_scores, dim=1).values[:, k - 1]


def pr_losses(
    cal_scores: torch.Tensor,
    test_scores: torch.Tensor,
    alpha: float = 0.1,
    proper_frac: float = 0.75,
):
    """Miscoverage losses for PR: intervals from the first ``proper_frac`` of the
    calibration set; returns (source losses on the held-out rest ``(S, n_h)``, target
    losses ``(S, T)``)."""
    _check_scores("cal_scores", cal_scores)
    _check_scores("test_scores", test_scores, cal_scores.shape[0])
    _check_level("alpha", alpha)
    _check_level("proper_frac", proper_frac)
    n_p = int(proper_frac * cal_scores.shape[1])
    if n_p < 1 or n_p >= cal_scores.shape[1]:
        raise ValueError(
            f"proper_frac: expected a share leaving both parts of the "
            f"{cal_scores.shape[1]} "
            f"calibration scores non-empty, got {proper_frac}"
        )
    q = _radius(cal_scores[:, :n_p], alpha)[:, None]  # (S, 1)
    return (cal_scores[:, n_p:] > q).to(cal_scores.dtype), (test_scores > q).to(
        cal_scores.dtype
    )


def _check_pr(source_loss, target_loss, delta, eps_tol) -> None:
    _check_losses("source_loss", source_loss)
    _check_losses("target_loss", target_loss)
    if target_loss.shape[0] != source_loss.shape[0]:
        raise ValueError(
            f"target_loss: expected {source_loss.shape[0]} streams like source_loss, "
            f"got shape {tuple(target_loss.shape)}"
        )
    _check_level("delta", delta)
    check_nonnegative("eps_tol", eps_tol)


def pr_st_alarm(
    source_loss: torch.Tensor,
    target_loss: torch.Tensor,
    delta: float = 1 / 200,
    eps_tol: float = 0.0,
) -> torch.Tensor:
    """PR-ST: first test index with ``L_T^t > U_S + eps`` (eq. pr), or -1; ``(S,)``."""
    _check_pr(source_loss, target_loss, delta, eps_tol)
    ucb = _ci_upper(source_loss, delta) + eps_tol  # (S,)
    lcb = _cs_lower(target_loss, delta)  # (S, T)
    hit = lcb > ucb[:, None]
    idx = torch.argmax(hit.to(torch.uint8), dim=1)
    return torch.where(hit.any(1), idx, torch.full_like(idx, -1))


def pr_cd_alarm(
    source_loss: torch.Tensor,
    target_loss: torch.Tensor,
    delta: float = 1 / 20000,
    eps_tol: float = 0.0,
    batch: int = 50,
) -> torch.Tensor:
    """PR-CD: a new PR-ST is started every ``batch`` points; bounds are checked at batch
    ends; the alarm is the first batch end where any running test rejects, or -1;
    ``(S,)``."""
    _check_pr(source_loss, target_loss, delta, eps_tol)
    batch = check_int("batch", batch, 1)
    S, T = target_loss.shape
    ucb = _ci_upper(source_loss, delta) + eps_tol  # (S,)
    best = torch.full((S,), T, dtype=torch.long, device=target_loss.device)
    for b0 in range(0, T - T % batch if T >= batch else 0, batch):
        lcb = _cs_lower(target_loss[:, b0:], delta)  # (S, T-b0)
        hit = lcb > ucb[:, None]
        first = b0 + torch.argmax(
            hit.to(torch.uint8), dim=1
        )  # global index of crossing
        at_end = (
            torch.div(first, batch, rounding_mode="floor") + 1
        ) * batch - 1  # next batch end
        at_end = torch.where(
            hit.any(1) & (at_end < T), at_end, torch.full_like(at_end, T)
        )
        best = torch.minimum(best, at_end)
    return torch.where(best < T, best, torch.full_like(best, -1))
