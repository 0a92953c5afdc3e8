"""WATCH: Adaptive Monitoring for AI Deployments via Weighted-Conformal Martingales.

Drew Prinster, Xing Han, Anqi Liu, Suchi Saria. ICML 2025. arXiv:2505.04608;
official code github.com/aaronhan223/watch.

**Claim.** Weighted conformal test martingales (WCTMs), whose p-values re-weight a fixed
calibration set by an online estimate of the density ratio dP_test/dP_cal, keep
monitoring a deployed model valid under benign covariate shift (no alarm, coverage kept)
while still alarming quickly on shifts it cannot adapt to (extreme covariate shift,
concept shift) — and an X-only CTM tells the two apart.

**Key equation** (weighted conformal p-value over the calibration set plus the test
point ``t``, with normalised weights ``w~_i ∝ ŵ(x_i)``, ``ŵ = p̂/(1-p̂)`` from a
cal-vs-test classifier)::

    p_t = Σ_{i∈cal} w~_i 1{s_i > s_t} + U_t (Σ_{i∈cal} w~_i 1{s_i = s_t} + w~_t),

made anticonservative (``U_t`` term dropped) when the test point's own weight ``w~_t >=
α``; the p-values feed the Composite Jumper martingale ``M_t`` and an alarm is raised
when ``M_t >= 1/α_V`` (Ville) or a Shiryaev–Roberts / CUSUM statistic crosses its
threshold.
"""

from __future__ import annotations

from dataclasses import dataclass

from lib.common import (
    check_choice,
    check_finite,
    check_int,
    check_positive,
    check_probability,
)

from .adapt import REFERENCES, RATIOS, TRIGGERS, adaptation_start, adaptive_pvalues

from .baselines import (
    betting_ci_upper,
    betting_cs_lower,
    pr_cd_alarm,
    pr_losses,
    pr_st_alarm,
    split_conformal_radius,
)
from .claims import (
    CLAIMS,
    NOTEBOOK_SEEDS,
    TUNING_SEEDS,
    claim_runs,
    judge,
    measure_claims,
    values_from_runs,
)
from .conformal import (
    abs_residual_scores,
    ctm_pvalues,
    weighted_pvalues,
    weighted_quantile_upper,
)
from .data import (
    DEFAULT_MAGNITUDE,
    MAGNITUDES,
    SEED_OFFSETS,
    SCENARIOS,
    fit_linear,
    load_nmes,
    nn_distance,
    predict_linear,
    synthetic_shifted,
    synthetic_source,
    synthetic_streams,
    tabular_streams,
    uniforms,
)
from .density_ratio import (
    fit_logistic,
    log_density_ratio,
    mlp_init,
    mlp_logit,
    online_weights,
)
from .experiment import (
    EXPECTED,
    METHODS,
    run_experiment,
    run_mnist,
    run_synthetic,
    run_tabular,
    summarise,
)
from .martingales import (
    EPSILONS,
    JUMPS,
    composite_jumper,
    cusum,
    first_alarm,
    shiryaev_roberts,
)
from .watch import DIAGNOSES, StreamBatch, alarm_summary, diagnose, watch_monitor


@dataclass(frozen=True)
class Config:
    """Everything the experiment needs; ``SMOKE`` runs in the book on a CPU, ``FULL`` on
    a GPU box."""

    seed: int = 0
    # synthetic streams (the authors' tutorial setting)
    n_seeds: int = 50
    n_train: int = 500
    n_cal: int = 500
    T: int = 1000
    changepoint: int = 100
    # shift magnitudes: one table, lib.wctm.data.MAGNITUDES (meanings there)
    mag_none: float = MAGNITUDES["synthetic"]["none"]
    mag_benign: float = MAGNITUDES["synthetic"]["benign"]  # tilt exp(3x)
    mag_concept: float = MAGNITUDES["synthetic"]["concept"]  # Y += 1.5, x > 0.5
    mag_extreme: float = MAGNITUDES["synthetic"]["extreme"]  # X ~ U(1, 1.5)
    # monitors
    alpha: float = 0.1  # conformal level (intervals, anticonservative rule)
    ville_alpha: float = 0.01  # Ville alarm at M_t >= 100
    sched_threshold: float = 1e4  # SR / CUSUM thresholds
    # adaptation trigger of the official code (src/main.py, method fixed_cal_dyn):
    # synthetic data adapt when the X-CTM's Composite Jumper reaches 100 (its Ville
    # alarm); real data when the X-CTM's Shiryaev-Roberts statistic reaches
    # x_sched_thresh = 1000 (before the Ville alarm). Its x_ctm_thresh = sqrt(10)
    # argument is parsed but not used.
    trigger: str = "ville"  # synthetic streams
    real_trigger: str = "sr"  # NMES and MNIST streams
    adapt_threshold: float = 100.0
    x_sched_threshold: float = 1000.0
    # density ratio: official = MLP (20 sigmoid units) refitted every step; option:
    # L2 logistic regression refitted every 10 steps (this chapter's first version)
    ratio: str = "mlp"
    refit_every: int = 1
    reference: str = "cal+pre"  # official: calibration + pre-adaptation tests
    min_fit: int = 10
    l2: float = 1e-2
    # tabular (NMES 1988)
    tab_seeds: int = 20
    tab_n_train: int = 1000
    tab_n_cal: int = 500
    tab_T: int = 1000
    # images (MNIST)
    mnist_seeds: int = 20
    mnist_n_train: int = 3000
    mnist_epochs: int = 2
    mnist_n_cal: int = 500
    mnist_T: int = 400
    mnist_pool: int = 4000  # validation images embedded (streams are drawn from them)
    # the claims' runs (lib.wctm.claims): streams per seed
    null_streams: int = 100  # no-shift streams per seed (validity)
    claim_streams: int = 25  # streams per seed of each shift

    def __post_init__(self):
        check_int("seed", self.seed, 0)
        for name in (
            "n_seeds",
            "n_train",
            "T",
            "refit_every",
            "min_fit",
            "tab_seeds",
            "tab_n_train",
            "tab_T",
            "mnist_seeds",
            "mnist_n_train",
            "mnist_epochs",
            "mnist_T",
            "mnist_pool",
            "null_streams",
            "claim_streams",
        ):
            check_int(name, getattr(self, name), 1)
        for name in ("n_cal", "tab_n_cal", "mnist_n_cal"):
            check_int(name, getattr(self, name), 2)
        check_int("changepoint", self.changepoint, 0)
        if self.changepoint > min(self.T, self.tab_T, self.mnist_T):
            raise ValueError(
                f"changepoint: expected at most T, tab_T and mnist_T "
                f"({self.T}, {self.tab_T}, {self.mnist_T}), got {self.changepoint}"
            )
        for name in ("mag_none", "mag_benign", "mag_concept", "mag_extreme"):
            check_finite(name, getattr(self, name))
        for name in ("alpha", "ville_alpha"):
            if not 0 < check_probability(name, getattr(self, name)) < 1:
                raise ValueError(
                    f"{name}: expected a level in (0, 1), got {getattr(self, name)}"
                )
        for name in ("sched_threshold", "l2", "adapt_threshold", "x_sched_threshold"):
            check_positive(name, getattr(self, name))
        for name in ("trigger", "real_trigger"):
            check_choice(name, getattr(self, name), TRIGGERS)
        check_choice("ratio", self.ratio, RATIOS)
        check_choice("reference", self.reference, REFERENCES)


SMOKE = Config()
FULL = Config(
    n_seeds=500,
    tab_seeds=200,
    mnist_seeds=100,
    mnist_n_train=50000,
    mnist_epochs=5,
    mnist_T=1000,
    mnist_n_cal=1000,
    mnist_pool=10000,
)

__all__ = [
    "CLAIMS",
    "NOTEBOOK_SEEDS",
    "TUNING_SEEDS",
    "claim_runs",
    "values_from_runs",
    "measure_claims",
    "judge",
    "Config",
    "SMOKE",
    "FULL",
    "run_experiment",
    "run_synthetic",
    "run_tabular",
    "run_mnist",
    "summarise",
    "METHODS",
    "EXPECTED",
    "abs_residual_scores",
    "ctm_pvalues",
    "weighted_pvalues",
    "weighted_quantile_upper",
    "fit_logistic",
    "log_density_ratio",
    "online_weights",
    "mlp_init",
    "mlp_logit",
    "adaptation_start",
    "adaptive_pvalues",
    "TRIGGERS",
    "RATIOS",
    "REFERENCES",
    "MAGNITUDES",
    "SEED_OFFSETS",
    "composite_jumper",
    "shiryaev_roberts",
    "cusum",
    "first_alarm",
    "JUMPS",
    "EPSILONS",
    "StreamBatch",
    "watch_monitor",
    "diagnose",
    "alarm_summary",
    "DIAGNOSES",
    "betting_cs_lower",
    "betting_ci_upper",
    "pr_losses",
    "pr_st_alarm",
    "pr_cd_alarm",
    "split_conformal_radius",
    "SCENARIOS",
    "DEFAULT_MAGNITUDE",
    "synthetic_source",
    "synthetic_shifted",
    "synthetic_streams",
    "tabular_streams",
    "load_nmes",
    "nn_distance",
    "fit_linear",
    "predict_linear",
    "uniforms",
]
