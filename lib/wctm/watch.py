"""The WATCH monitor: standard CTM, X-CTM-scheduled weighted CTM (WCTM), diagnosis,
intervals."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from lib.common import check_int, check_positive, check_probability, check_tensor

from .baselines import pr_cd_alarm, pr_losses, pr_st_alarm
from .adapt import adaptation_start, adaptive_pvalues
from .conformal import ctm_pvalues, weighted_quantile_upper
from .martingales import composite_jumper, cusum, first_alarm, shiryaev_roberts

#: diagnosis labels, in the order of :func:`diagnose`'s integer codes
DIAGNOSES = (
    "no shift",
    "benign covariate shift",
    "concept shift",
    "extreme covariate shift",
)


@dataclass
class StreamBatch:
    """Everything a monitor sees for ``S`` streams: scores, density-ratio features,
    covariate scores.

    ``cal_scores`` (S, n) and ``test_scores`` (S, T): non-conformity scores of the
    predictor; ``cal_x`` (S, n, d) / ``test_x`` (S, T, d): features of the cal-vs-test
    classifier; ``cal_xscores`` (S, n) / ``test_xscores`` (S, T): covariate-only scores
    for the X-CTM.
    """

    cal_scores: torch.Tensor
    test_scores: torch.Tensor
    cal_x: torch.Tensor
    test_x: torch.Tensor
    cal_xscores: torch.Tensor
    test_xscores: torch.Tensor

    def __post_init__(self):
        check_tensor("cal_scores", self.cal_scores, ndim=2, floating=True)
        S, n = self.cal_scores.shape
        if S < 1 or n < 2:
            raise ValueError(
                f"cal_scores: expected S >= 1 streams of n >= 2 calibration scores, "
                f"got shape {(S, n)}"
            )
        check_tensor("test_scores", self.test_scores, shape=(S, None), floating=True)
        T = self.test_scores.shape[1]
        if T < 1:
            raise ValueError(
                f"test_scores: expected T >= 1 test points, got shape {(S, T)}"
            )
        check_tensor("cal_x", self.cal_x, shape=(S, n, None), floating=True)
        check_tensor(
            "test_x", self.test_x, shape=(S, T, self.cal_x.shape[2]), floating=True
        )
        check_tensor("cal_xscores", self.cal_xscores, shape=(S, n), floating=True)
        check_tensor("test_xscores", self.test_xscores, shape=(S, T), floating=True)
        for name in (
            "cal_scores",
            "test_scores",
            "cal_x",
            "test_x",
            "cal_xscores",
            "test_xscores",
        ):
            check_tensor(name, getattr(self, name), finite=True)


def diagnose(x_alarm: torch.Tensor, w_alarm: torch.Tensor) -> torch.Tensor:
    """WATCH's diagnosis rule per stream (codes index :data:`DIAGNOSES`): X-CTM + WCTM
    alarms -> extreme covariate shift (3); WCTM alarm alone -> concept shift (2); X-CTM
    alarm alone -> benign covariate shift, adapted to (1); neither -> no shift (0)."""
    check_tensor("x_alarm", x_alarm, integer=True)
    check_tensor("w_alarm", w_alarm, integer=True)
    if x_alarm.shape != w_alarm.shape:
        raise ValueError(
            f"x_alarm, w_alarm: expected one shape, got {tuple(x_alarm.shape)} and "
            f"{tuple(w_alarm.shape)}"
        )
    x, w = x_alarm >= 0, w_alarm >= 0
    return torch.where(w, torch.where(x, 3, 2), torch.where(x, 1, 0))


def watch_monitor(
    batch: StreamBatch,
    u: torch.Tensor,
    alpha: float = 0.1,
    ville_alpha: float = 0.01,
    sched_threshold: float = 1e4,
    trigger: str = "ville",
    adapt_threshold: float = 100.0,
    x_sched_threshold: float = 1000.0,
    ratio: str = "mlp",
    reference: str = "cal+pre",
    refit_every: int = 1,
    min_fit: int = 10,
    l2: float = 1e-2,
    anticonservative: bool = True,
    pr: bool = True,
    seed: int = 0,
) -> dict:
    """Run every monitor on a batch of streams; ``u`` (S, T) are the tie-breaking
    uniforms.

    * CTM: standard conformal p-values (eq. ctm-p) -> Composite Jumper (eq. cj).
    * X-CTM: the same on covariate-only scores; its Ville alarm (``M_t >=
      1/ville_alpha``) is the diagnosis's covariate-shift evidence. Adaptation starts
      at the official trigger (:func:`lib.wctm.adapt.adaptation_start`): the X-CTM
      reaching ``adapt_threshold`` (``trigger="ville"``, synthetic data) or its
      Shiryaev–Roberts statistic reaching ``x_sched_threshold`` (``"sr"``, real data).
    * WATCH (WCTM): CTM p-values before adaptation, weighted p-values (eqs. wcp,
      wcp-anti) over calibration + pre-adaptation test points with online
      density-ratio weights after it (:func:`lib.wctm.adapt.adaptive_pvalues`); Ville
      (``M_t >= 1/ville_alpha``), SR and CUSUM alarms.
    * Intervals: weighted split-conformal radius (eq. wq) for WATCH after adaptation,
      the CTM's (uniform weights over the calibration set) otherwise.
    * PR-ST / PR-CD on miscoverage losses (``pr=True``).
    Alarm times are test indices (0-based), ``-1`` for none.
    """
    if not isinstance(batch, StreamBatch):
        raise TypeError(f"batch: expected a StreamBatch, got {type(batch).__name__}")
    alpha = check_probability("alpha", alpha)
    ville_alpha = check_probability("ville_alpha", ville_alpha)
    for name, a in (("alpha", alpha), ("ville_alpha", ville_alpha)):
        if not 0 < a < 1:
            raise ValueError(f"{name}: expected a level in (0, 1), got {a}")
    S, T = batch.test_scores.shape
    check_tensor("u", u, shape=(S, T), floating=True)
    if not bool(((u >= 0) & (u <= 1)).all()):
        raise ValueError("u: expected uniforms in [0, 1], got values outside (or NaN)")
    check_positive("sched_threshold", sched_threshold)
    check_positive("adapt_threshold", adapt_threshold)
    check_positive("x_sched_threshold", x_sched_threshold)
    ville = 1.0 / ville_alpha
    out = {}
    p_ctm = ctm_pvalues(batch.cal_scores, batch.test_scores, u)  # (S, T)
    p_x = ctm_pvalues(batch.cal_xscores, batch.test_xscores, u)  # (S, T)
    out["log_m_ctm"] = composite_jumper(p_ctm)  # (S, T)
    out["log_m_x"] = composite_jumper(p_x)
    out["x_alarm"] = first_alarm(out["log_m_x"], ville)  # (S,)
    adapt = adaptation_start(
        out["log_m_x"], trigger, adapt_threshold, x_sched_threshold
    )
    ad = adaptive_pvalues(
        batch.cal_scores,
        batch.test_scores,
        batch.cal_x,
        batch.test_x,
        u,
        adapt,
        alpha,
        ratio=ratio,
        reference=reference,
        refit_every=refit_every,
        min_fit=min_fit,
        l2=l2,
        anticonservative=anticonservative,
        seed=seed,
    )
    adapted = torch.arange(T, device=u.device)[None, :] >= adapt[:, None]  # (S, T)
    out["p_ctm"], out["p_watch"] = p_ctm, torch.where(adapted, ad["p"], p_ctm)
    out["log_m_watch"] = composite_jumper(out["p_watch"])
    # control: the same monitor with the anticonservative rule (eq. wcp-anti) off
    p_no_anti = torch.where(adapted, ad["p_rand"], p_ctm)
    out["no_anti_ville"] = first_alarm(composite_jumper(p_no_anti), ville)
    out["adapt_start"] = adapt
    out["u"] = u
    for name in ("ctm", "watch"):
        lm = out[f"log_m_{name}"]
        out[f"{name}_ville"] = first_alarm(lm, ville)
        out[f"{name}_sr"] = first_alarm(shiryaev_roberts(lm), sched_threshold)
        out[f"{name}_cusum"] = first_alarm(cusum(lm), sched_threshold)
    out["diagnosis"] = diagnose(out["x_alarm"], out["watch_ville"])
    ones = torch.ones_like(batch.cal_scores)
    q_ctm = weighted_quantile_upper(
        batch.cal_scores, ones, torch.ones_like(u), alpha
    )  # (S, T)
    q_watch = torch.where(adapted, ad["q"], q_ctm)
    for name, q in (("ctm", q_ctm), ("watch", q_watch)):
        out[f"cover_{name}"] = (batch.test_scores <= q).to(u.dtype)  # (S, T)
        out[f"width_{name}"] = 2 * q  # (S, T), may be inf
    out["test_w"] = torch.where(adapted, ad["w_test"], torch.zeros_like(u))
    if pr:
        src, tgt = pr_losses(batch.cal_scores, batch.test_scores, alpha)
        out["pr_st"] = pr_st_alarm(src, tgt)
        out["pr_cd"] = pr_cd_alarm(src, tgt)
    return out


def alarm_summary(
    alarm: torch.Tensor, changepoint: int, horizon: int | None = None
) -> dict:
    """Alarm statistics for one method over streams: ``alarm_rate`` (any alarm),
    ``false_alarm`` (before the changepoint), ``detect`` (first alarm at or after it),
    ``delay`` (mean over detections) and, with ``horizon`` (the stream length),
    ``delay_cens``: the mean delay over streams without a false alarm, a missed change
    counting as ``horizon - changepoint`` (a lower bound on its true delay)."""
    check_tensor("alarm", alarm, ndim=1, integer=True, nonempty=True)
    changepoint = check_int("changepoint", changepoint, 0)
    if horizon is not None and check_int("horizon", horizon, 1) < changepoint:
        raise ValueError(
            f"horizon: expected at least changepoint={changepoint}, got {horizon}"
        )
    a = alarm.detach().cpu().double()
    fired = a >= 0
    early = fired & (a < changepoint)
    det = fired & (a >= changepoint)
    delay = float((a[det] - changepoint).mean()) if bool(det.any()) else float("nan")
    out = {
        "alarm_rate": float(fired.double().mean()),
        "false_alarm": float(early.double().mean()),
        "detect": float(det.double().mean()),
        "delay": delay,
    }
    if horizon is not None:
        cens = (
            torch.where(det, a, torch.full_like(a, float(horizon)))[~early]
            - changepoint
        )
        out["delay_cens"] = float(cens.mean()) if cens.numel() else float("nan")
    return out
