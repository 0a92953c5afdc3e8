"""A Parametric Contextual Online Learning Theory of Brokerage.

François Bachoc, Tommaso Cesari, Roberto Colomboni. ICML 2025 (PMLR 267).
arXiv:2407.01566 · https://openreview.net/forum?id=GA7RDBGs6S

Claim: when the market value of an asset is linear in a d-dimensional context, m_t =
c_tᵀφ, and the two traders' valuations are m_t plus independent zero-mean noise with
densities bounded by L, a broker that posts prices learns at regret O(L d ln T) when it
sees the valuations and O(√(L d T ln T)) when it only sees whether each trader wants to
buy or sell — both optimal up to log factors — while without bounded densities no broker
can learn.

Key equation (the reduction to online squared-loss regression): with GFT(p) = (max −
min)·1{min ≤ p ≤ max},

    d/dp E[GFT(p)] = (f_V + f_W)(p) · (m_t − p)  ⇒  p* = m_t  and
        E[GFT(m_t) − GFT(p)] ≤ L (p − m_t)².

Modules: :mod:`.model` (noise laws, gain from trade, markets), :mod:`.learners` (the
vectorised brokers), :mod:`.reference` (naive loops for tests), :mod:`.experiment` (the
chapter's runs).
"""

from dataclasses import dataclass

from lib.common import check_choice, check_int, check_numbers, check_positive

from .experiment import (
    atom_experiment,
    checkpoints,
    horizons,
    loglog_slope,
    main_experiment,
    quick_curves,
    run_experiment,
    scaling_experiment,
)
from .claims import CLAIMS, NOTEBOOK_SEEDS, concat_markets, judge, measure_claims
from .learners import (
    KINDS,
    Learner,
    fixed_price,
    full_feedback,
    paper_threshold,
    run_ridge,
    running_mean,
    simulate,
    two_bit,
    two_bit_learner,
)
from .model import (
    DTYPE,
    NOISE_LAWS,
    Market,
    NoiseLaw,
    expected_gft,
    expected_regret,
    gft,
    make_market,
    make_noise,
)


@dataclass(frozen=True)
class Config:
    """One preset of the chapter's experiments (see :func:`run_experiment`)."""

    seed: int = 0
    runs: int = 64  # independent markets per experiment (the batch dimension R)
    horizon: int = 2**15  # T of the main experiment
    d: int = 5  # context dimension
    L: float = 2.0  # density bound of the noise
    noise: str = "uniform"  # noise law of the main experiment
    n_horizons: int = 5  # two-bit broker re-tuned at T/2^(n-1), ..., T
    kappas: tuple = (0.125, 0.25, 0.5, 2.0)  # ablation: threshold κ·τ instead of τ
    scaling_ds: tuple = (2, 5, 10)  # d sweep (uniform noise, L fixed)
    scaling_Ls: tuple = (2.0, 4.0, 8.0)  # L sweep (spike noise, d fixed)
    scaling_horizon: int = 2**13
    scaling_runs: int = 8
    atom_horizon: int = 2**14
    claim_horizon: int = 2**16  # T of the claims' runs (several seeds, see .claims)
    claim_runs: int = 16  # markets per seed in the claims' runs
    claim_seeds: tuple = (
        NOTEBOOK_SEEDS  # the notebook's seeds (the settings were looked at on 0-5)
    )

    def __post_init__(self):
        for name in ("seed",):
            check_int(name, getattr(self, name), 0)
        for name in (
            "runs",
            "horizon",
            "d",
            "n_horizons",
            "scaling_horizon",
            "scaling_runs",
            "atom_horizon",
            "claim_horizon",
            "claim_runs",
        ):
            check_int(name, getattr(self, name), 1)
        check_positive("L", self.L)
        check_choice("noise", self.noise, NOISE_LAWS)
        check_numbers("claim_seeds", self.claim_seeds, lambda n, v: check_int(n, v, 0))
        if len(set(self.claim_seeds)) != len(self.claim_seeds):
            raise ValueError(
                f"claim_seeds: expected distinct seeds, got {self.claim_seeds!r}"
            )
        for name in ("kappas", "scaling_Ls"):
            check_numbers(name, getattr(self, name), check_positive)
        check_numbers("scaling_ds", self.scaling_ds, lambda n, v: check_int(n, v, 1))


#: the CPU run the book executes (about a minute of compute on one core)
SMOKE = Config()
#: the larger run: T up to 2^18, the claims on 2^18 rounds, wider sweeps (minutes on
# this CPU)
FULL = Config(
    runs=64,
    horizon=2**18,
    n_horizons=7,
    scaling_ds=(2, 5, 10, 20),
    scaling_Ls=(2.0, 4.0, 8.0, 16.0),
    scaling_horizon=2**15,
    scaling_runs=16,
    atom_horizon=2**16,
    claim_horizon=2**18,
    claim_seeds=(10, 11, 12),
)

__all__ = [
    "Config",
    "SMOKE",
    "FULL",
    "DTYPE",
    "NOISE_LAWS",
    "KINDS",
    "NoiseLaw",
    "Market",
    "Learner",
    "make_noise",
    "make_market",
    "gft",
    "expected_gft",
    "expected_regret",
    "paper_threshold",
    "two_bit_learner",
    "run_ridge",
    "simulate",
    "full_feedback",
    "two_bit",
    "fixed_price",
    "running_mean",
    "checkpoints",
    "horizons",
    "loglog_slope",
    "main_experiment",
    "scaling_experiment",
    "atom_experiment",
    "run_experiment",
    "quick_curves",
    "CLAIMS",
    "NOTEBOOK_SEEDS",
    "measure_claims",
    "judge",
    "concat_markets",
]
