"""Trajectory Inference with Smooth Schrödinger Bridges.

Wanli Hong, Yuliang Shi, Jonathan Niles-Weed. ICML 2025 (PMLR 267).
arXiv:2503.00530 · https://github.com/WanliHongC/Smooth_SB

Claim: replacing the Brownian reference of the multi-marginal Schrödinger bridge by a
smooth Gauss–Markov-liftable process (a Matérn GP written as a linear SDE in phase
space) lets trajectory inference follow particles through crossings: the bridge is an
entropic OT problem on a chain over (position, velocity) states with constraints on the
positions only, solved by belief propagation / iterative scaling.

Key equations (Matérn-3/2, λ = √3/ℓ, state η = (x, v)):

    dη = A η dt + L dW,   A = [[0, 1], [−λ², −2λ]],   L = (0, 1)ᵀ,   q = 4σ²λ³,
    η_{k+1} | η_k ~ N(Φ η_k, Q),   Φ = e^{A Δt},   Q = P∞ − Φ P∞ Φᵀ,
    P* = argmin { KL(P ‖ R) : P(x_{t_k} ∈ ·) = μ_k for every k }.

Modules: :mod:`.model` (the lifted SDEs, exact transitions, simulated tracks, the
log-kernels on a velocity grid), :mod:`.solver` (the chain solver and ancestral
sampling), :mod:`.tracking` (methods and metrics), :mod:`.reference` (naive versions
for the tests), :mod:`.experiment` and :mod:`.claims` (the chapter's runs).
"""

from dataclasses import dataclass

from lib.common import check_int, check_numbers, check_positive

from .claims import CLAIMS, NOTEBOOK_SEEDS, TUNING_SEEDS, judge, measure_claims
from .experiment import (
    METRICS,
    make_tracks,
    method_kwargs,
    run_experiment,
    run_seeds,
    run_tracking,
    summarise,
    tune,
)
from .model import (
    DTYPE,
    NUS,
    LinearSDE,
    Tracks,
    brownian_log_kernels,
    matern_sde,
    simulate_tracks,
    smooth_log_kernels,
    transition,
    velocity_grid,
)
from .solver import ChainSolution, chain_sinkhorn, propagate, sample_paths
from .tracking import (
    METHODS,
    correct_rates,
    link_correct,
    oracle_matching,
    track,
    velocity_matching,
    w2_matching,
)


@dataclass(frozen=True)
class Config:
    """One preset of the chapter's tracking experiments."""

    seed: int = 0
    n1: int = 20  # particles, 1-D set (as the repo's 1dGP)
    n2: int = 25  # particles, 2-D set (as the repo's 2dGP)
    steps: int = 20  # 21 observation times on [0, t_end]
    t_end: float = 2.0
    data_nu: float = 2.5  # smoothness of the data (from the repo files' increments)
    data_ell1: float = 2.5  # length-scale of the 1-D data
    data_ell2: float = 1.3  # length-scale of the 2-D data
    noise: float = 0.0  # observation noise s.d.
    ell: float = 6.0  # smooth SB: Matérn-3/2 length-scale (chosen on TUNING_SEEDS)
    c: float = 1.0  # smooth SB: σ = c · s.d. of the data (the repo's default)
    M1: int = 16  # velocity cells, 1-D
    M2: int = 5  # velocity cells per coordinate, 2-D
    sub: int = 2  # quadrature points per cell and coordinate
    sweeps: int = 5  # forward-backward scaling sweeps
    per_start: int = 10  # sampled paths per starting observation
    bsb_c: float = 0.1  # Brownian SB: s = c · s.d. per unit time (chosen on tuning)
    ell_grid: tuple = (1.5, 3.0, 6.0)
    bsb_grid: tuple = (0.03, 0.1, 0.3)
    claim_seeds: tuple = NOTEBOOK_SEEDS

    def __post_init__(self):
        check_int("seed", self.seed, 0)
        for name in ("n1", "n2"):
            check_int(name, getattr(self, name), 2)
        for name in ("steps", "M1", "M2", "sub", "sweeps", "per_start"):
            check_int(name, getattr(self, name), 1)
        if self.steps < 4:
            raise ValueError(f"steps: expected ≥ 4 (5-step windows), got {self.steps}")
        for name in ("t_end", "data_ell1", "data_ell2", "ell", "c", "bsb_c"):
            check_positive(name, getattr(self, name))
        if self.data_nu not in NUS:
            raise ValueError(f"data_nu: expected one of {NUS}, got {self.data_nu!r}")
        if not (isinstance(self.noise, (int, float)) and self.noise >= 0):
            raise ValueError(f"noise: expected a number ≥ 0, got {self.noise!r}")
        check_numbers("ell_grid", self.ell_grid, check_positive)
        check_numbers("bsb_grid", self.bsb_grid, check_positive)
        check_numbers("claim_seeds", self.claim_seeds, lambda n, v: check_int(n, v, 0))


#: the CPU run the book executes (three seeds, about half a minute)
SMOKE = Config()
#: finer velocity grids, more sweeps and samples, eight seeds (for a GPU; minutes on
# this CPU)
FULL = Config(
    M1=48, M2=12, sub=3, sweeps=30, per_start=50, claim_seeds=tuple(range(10, 18))
)

__all__ = [
    "Config",
    "SMOKE",
    "FULL",
    "CLAIMS",
    "NOTEBOOK_SEEDS",
    "TUNING_SEEDS",
    "measure_claims",
    "judge",
    "METRICS",
    "METHODS",
    "DTYPE",
    "NUS",
    "LinearSDE",
    "Tracks",
    "matern_sde",
    "transition",
    "simulate_tracks",
    "velocity_grid",
    "smooth_log_kernels",
    "brownian_log_kernels",
    "ChainSolution",
    "propagate",
    "chain_sinkhorn",
    "sample_paths",
    "link_correct",
    "correct_rates",
    "w2_matching",
    "velocity_matching",
    "oracle_matching",
    "track",
    "make_tracks",
    "method_kwargs",
    "run_tracking",
    "run_seeds",
    "tune",
    "summarise",
    "run_experiment",
]
