"""Betting martingales on p-values and the alarm statistics built on them, batched over
streams."""

from __future__ import annotations

import math

import torch

from lib.common import check_numbers, check_positive, check_tensor

#: jump rates J of the Composite Jumper (the paper and Vovk et al.)
JUMPS = (1e-4, 1e-3, 1e-2, 1e-1, 1.0)
#: bets ε of each Simple Jumper; the betting function is f_ε(p) = 1 + ε (p - 1/2)
EPSILONS = (-1.0, 0.0, 1.0)


def _check_log_stat(name: str, x) -> None:
    """A (S, T) log-statistic without NaN (±inf are the log of a martingale at 0 or
    unbounded)."""
    check_tensor(name, x, ndim=2, floating=True)
    if x.shape[0] < 1 or x.shape[1] < 1:
        raise ValueError(
            f"{name}: expected at least one stream and one step, got shape "
            f"{tuple(x.shape)}"
        )
    if bool(torch.isnan(x).any()):
        raise ValueError(
            f"{name}: expected a statistic without NaN, got NaN (it would read as no "
            f"alarm)"
        )


def composite_jumper(p: torch.Tensor, jumps=JUMPS, epsilons=EPSILONS) -> torch.Tensor:
    """Log of the Composite Jumper martingale after each p-value, shape ``(S, T)``
    (``M_0 = 1``).

    Each Simple Jumper (jump rate ``J``) keeps capital ``C_ε`` per bet ``ε``; per step
    ``C_ε <- (1 - J) C_ε + (J / |E|) sum_ε' C_ε'`` (jump), then
    ``C_ε <- C_ε (1 + ε (p_t - 1/2))`` (bet); the Composite Jumper is the average over
    ``J`` of ``sum_ε C_ε``  (eq. cj).
    Capital is renormalised every step and the scale kept in logs, so no overflow.
    """
    check_tensor("p", p, ndim=2, floating=True)
    if p.shape[0] < 1 or p.shape[1] < 1:
        raise ValueError(
            f"p: expected at least one stream and one p-value, got shape "
            f"{tuple(p.shape)}"
        )
    if not bool(((p >= 0) & (p <= 1)).all()):
        raise ValueError("p: expected p-values in [0, 1], got values outside (or NaN)")
    check_numbers("jumps", jumps)
    check_numbers("epsilons", epsilons)
    if len(jumps) == 0 or any(not 0 < j <= 1 for j in jumps):
        raise ValueError(
            f"jumps: expected a non-empty list of rates in (0, 1], got {jumps}"
        )
    if len(epsilons) == 0 or any(abs(e) > 2 for e in epsilons):
        raise ValueError(
            f"epsilons: expected a non-empty list of bets in [-2, 2], got {epsilons}"
        )
    S, T = p.shape
    J = torch.tensor(jumps, dtype=p.dtype, device=p.device)[None, :, None]  # (1, nJ, 1)
    eps = torch.tensor(epsilons, dtype=p.dtype, device=p.device)[
        None, None, :
    ]  # (1, 1, nE)
    nE = eps.shape[-1]
    C = torch.full(
        (S, J.shape[1], nE), 1.0 / nE, dtype=p.dtype, device=p.device
    )  # (S, nJ, nE)
    log_scale = torch.zeros(S, J.shape[1], dtype=p.dtype, device=p.device)  # (S, nJ)
    bets = 1.0 + eps * (p[:, :, None] - 0.5)  # (S, T, nE)
    out = torch.empty(S, T, dtype=p.dtype, device=p.device)
    for t in range(T):
        tot = C.sum(-1, keepdim=True)  # (S, nJ, 1)
        C = ((1 - J) * C + J / nE * tot) * bets[:, t, None, :]  # eq. cj: jump, then bet
        tot = C.sum(-1)  # (S, nJ)
        log_scale = log_scale + torch.log(tot)
        C = C / tot[..., None]
        out[:, t] = torch.logsumexp(log_scale, dim=1) - math.log(
            J.shape[1]
        )  # log mean_J
    return out


def shiryaev_roberts(log_m: torch.Tensor) -> torch.Tensor:
    """Log Shiryaev–Roberts statistic ``R_t = sum_{i=0}^{t-1} M_t / M_i`` with ``M_0 =
    1``  (eq. sr)."""
    _check_log_stat("log_m", log_m)
    prev = torch.cat(
        [torch.zeros_like(log_m[:, :1]), log_m[:, :-1]], dim=1
    )  # (S, T) log M_{t-1}
    return log_m + torch.logcumsumexp(-prev, dim=1)  # log(M_t sum_i 1/M_i)


def cusum(log_m: torch.Tensor) -> torch.Tensor:
    """Log CUSUM statistic ``max_{0<=i<=t} M_t / M_i`` with ``M_0 = 1``  (eq. cusum)."""
    _check_log_stat("log_m", log_m)
    run_min = torch.cummin(log_m, dim=1).values.clamp(max=0.0)  # min(M_0 = 1, M_1..M_t)
    return log_m - run_min


def first_alarm(log_stat: torch.Tensor, threshold: float) -> torch.Tensor:
    """Index of the first step with ``stat_t >= threshold`` per stream, or ``-1`` (no
    alarm); ``(S,)``.

    A NaN statistic raises: it would otherwise read as "no alarm"."""
    _check_log_stat("log_stat", log_stat)
    threshold = check_positive("threshold", threshold)
    hit = log_stat >= math.log(threshold)  # (S, T)
    idx = torch.argmax(hit.to(torch.uint8), dim=1)
    return torch.where(hit.any(dim=1), idx, torch.full_like(idx, -1))
