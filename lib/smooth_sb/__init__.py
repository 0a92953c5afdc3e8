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

from lib.common import check_int, check_nonnegative, check_numbers, check_positive

from .claims import (
    CLAIMS,
    NOTEBOOK_SEEDS,
    TUNING_SEEDS,
    judge,
    measure_claims,
    run_extra,
)
from .clouds import (
    DATASETS,
    HOLDOUT_METHODS,
    NB_METHODS,
    bridge_moments,
    holdout_kwargs,
    holdout_points,
    holdout_scores,
    make_cloud,
    make_nbody,
    mmd_gaussian,
    nbody_kwargs,
    run_holdout,
    run_nbody,
    simulate_cloud,
    simulate_nbody,
    summarise_extra,
    tune_clouds,
    w1_distance,
)
from .experiment import (
    METRICS,
    make_tracks,
    method_kwargs,
    run_experiment,
    run_seeds,
    run_tracking,
    summarise,
    tune,
    tuned_config,
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
    # smooth SB (Matérn-3/2 reference): length-scale ℓ and velocity-grid half-width
    # (in reference velocity s.d.) per dimension, chosen on TUNING_SEEDS (tune.py)
    ell1: float = 12.0
    ell2: float = 6.0
    width1: float = 10.0
    width2: float = 10.0
    c: float = 1.0  # smooth SB: σ = c · s.d. of the data (the repo's default)
    M1: int = 32  # velocity cells, 1-D
    M2: int = 12  # velocity cells per coordinate, 2-D
    sub: int = 2  # quadrature points per cell and coordinate
    sweeps: int = 20  # forward-backward scaling sweeps
    per_start: int = 10  # sampled paths per starting observation
    # Brownian SB: s = c · s.d. per unit time, per dimension (chosen on TUNING_SEEDS)
    bsb_c1: float = 0.05
    bsb_c2: float = 0.2
    bsb_sweeps: int = 200  # the Brownian SB's sweeps (cheap; as the official code)
    ell_grid: tuple = (3.0, 6.0, 12.0, 24.0)
    width_grid: tuple = (3.0, 5.0, 10.0)
    bsb_grid: tuple = (
        0.001,
        0.002,
        0.005,
        0.01,
        0.02,
        0.05,
        0.1,
        0.2,
        0.5,
        1.0,
        2.0,
        5.0,
    )
    # N-body (3-D, 8 bodies, 26 times): the smooth SB at the official ℓ = 3 with c and
    # the Brownian SB's c chosen on TUNING_SEEDS (tune.py --clouds)
    nb_n: int = 8
    nb_steps: int = 25
    nb_ell: float = 3.0
    nb_c: float = 4.0
    nb_M: int = 8
    nb_width: float = 3.0
    nb_bsb_c: float = 0.2
    nb_c_grid: tuple = (1.0, 2.0, 4.0, 8.0)
    nb_bsb_grid: tuple = (0.05, 0.2, 1.0, 5.0)
    # point clouds with one time left out (2-D, 40 fresh cells at each of 6 times)
    cl_n: int = 40
    cl_steps: int = 5
    cl_ell: float = 3.0
    cl_c: float = 1.0
    cl_M: int = 12
    cl_width: float = 3.0
    cl_per_start: int = 5
    cl_bsb_c: float = 0.1
    cl_ell_grid: tuple = (1.5, 3.0, 6.0)
    cl_c_grid: tuple = (0.5, 1.0)
    cl_bsb_grid: tuple = (0.05, 0.1, 0.2, 0.5, 1.0, 2.0)
    claim_seeds: tuple = NOTEBOOK_SEEDS

    def __post_init__(self):
        check_int("seed", self.seed, 0)
        for name in ("n1", "n2"):
            check_int(name, getattr(self, name), 2)
        for name in (
            "steps",
            "M1",
            "M2",
            "sub",
            "sweeps",
            "bsb_sweeps",
            "per_start",
            "nb_n",
            "nb_steps",
            "nb_M",
            "cl_n",
            "cl_steps",
            "cl_M",
            "cl_per_start",
        ):
            check_int(name, getattr(self, name), 1)
        if self.steps < 4:
            raise ValueError(f"steps: expected ≥ 4 (5-step windows), got {self.steps}")
        for name in (
            "t_end",
            "data_ell1",
            "data_ell2",
            "ell1",
            "ell2",
            "width1",
            "width2",
            "c",
            "bsb_c1",
            "bsb_c2",
            "nb_ell",
            "nb_c",
            "nb_width",
            "nb_bsb_c",
            "cl_ell",
            "cl_c",
            "cl_width",
            "cl_bsb_c",
        ):
            check_positive(name, getattr(self, name))
        if self.data_nu not in NUS:
            raise ValueError(f"data_nu: expected one of {NUS}, got {self.data_nu!r}")
        check_nonnegative("noise", self.noise)
        check_numbers("ell_grid", self.ell_grid, check_positive)
        check_numbers("width_grid", self.width_grid, check_positive)
        check_numbers("bsb_grid", self.bsb_grid, check_positive)
        for name in (
            "nb_c_grid",
            "nb_bsb_grid",
            "cl_ell_grid",
            "cl_c_grid",
            "cl_bsb_grid",
        ):
            check_numbers(name, getattr(self, name), check_positive)
        if self.cl_steps < 2:
            raise ValueError(f"cl_steps: expected ≥ 2, got {self.cl_steps}")
        check_numbers("claim_seeds", self.claim_seeds, lambda n, v: check_int(n, v, 0))


#: the CPU run the book executes (three seeds, under a minute)
SMOKE = Config()
#: finer velocity grids, more sweeps and samples (50 paths per start, as the official
# evaluation), eight seeds (for a GPU; several minutes on this CPU)
FULL = Config(
    M1=64, M2=16, sub=3, sweeps=40, per_start=50, claim_seeds=tuple(range(10, 18))
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
    "tuned_config",
    "summarise",
    "run_experiment",
    "run_extra",
    "DATASETS",
    "HOLDOUT_METHODS",
    "NB_METHODS",
    "simulate_nbody",
    "simulate_cloud",
    "make_nbody",
    "make_cloud",
    "nbody_kwargs",
    "holdout_kwargs",
    "bridge_moments",
    "holdout_points",
    "holdout_scores",
    "w1_distance",
    "mmd_gaussian",
    "run_nbody",
    "run_holdout",
    "summarise_extra",
    "tune_clouds",
]
