"""The Noisy Laplacian: a Threshold Phenomenon for Non-Linear Dimension Reduction.

Alex Kokot, Octavian-Vlad Murad, Marina Meilă. ICML 2025 (PMLR 267).
https://openreview.net/forum?id=GK6q2SFNHm
    (no official code; this is our implementation)

Claim: when data are a d-dimensional manifold M plus noise of constant amplitude r in
the normal directions (a tube around M), Diffusion Maps still recovers M's low-frequency
eigenpairs, up to a threshold O(r^-2) whose order does not depend on the ambient
dimension; above it the embedding coordinates describe the noise.

Key equation: in the Sasaki metric the tube's Laplacian splits, Delta_tube ~ Delta_M (x)
I + I (x) Delta_fibre, so its eigenvalues are

    lambda_ij ~ mu_i(M) + nu_j / r^2,

with nu_j the Neumann eigenvalues of the unit (D - d)-ball; the eigenpairs below the
first vertical eigenvalue nu_1 / r^2 are horizontal (manifold eigenfunctions, constant
along fibres).

Public API: :func:`diffusion_map` (kNN-truncated or untruncated Gaussian kernel,
alpha-normalisation, eigensolver), :func:`knn`, :func:`gaussian_affinity`,
:func:`markov_operator`; the prediction (:func:`neumann_ball_nu1`, :func:`threshold`,
:func:`predicted_count_circle`, :func:`predicted_count_sphere`) and the
horizontal/vertical test (:func:`fourier_basis`, :func:`harmonic_basis`,
:func:`r_squared`, :func:`count_recovered`); data (:func:`noisy_circle`,
:func:`noisy_sphere`, :func:`rotated_digit`); baselines (:func:`ltsa_embedding`,
:class:`VAE`, :func:`vae_embedding`, :func:`circular_correlation`); :class:`Config`,
``SMOKE``, ``FULL``, :func:`run_experiment`, :func:`kernel_and_n` (kernel truncation
against finite n); the claims ledger (:mod:`.claims`: ``NOTEBOOK_SEEDS``,
:func:`measure_claims`, :func:`judge`), asserted on the untruncated kernel, the setting
the paper's theorem covers.
"""

from dataclasses import dataclass

from lib.common import (
    check_int,
    check_nonnegative,
    check_numbers,
    check_positive,
    check_probability,
    check_range,
)

from .graph import gaussian_affinity, knn
from .dmap import DiffusionMap, diffusion_map, markov_operator
from .theory import (
    count_recovered,
    fourier_basis,
    harmonic_basis,
    neumann_ball_nu1,
    predicted_count_circle,
    predicted_count_sphere,
    r_squared,
    threshold,
)
from .data import (
    curve_length,
    noisy_circle,
    noisy_sphere,
    rotate_image,
    rotated_digit,
    uniform_ball,
)
from .baselines import (
    VAE,
    circular_correlation,
    embedding_angle,
    ltsa_embedding,
    train_vae,
    vae_embedding,
)
from .claims import CLAIMS, NOTEBOOK_SEEDS, TUNING_SEEDS, judge, measure_claims
from .experiment import (
    bandwidth,
    baseline_runs,
    circle_run,
    mnist_runs,
    normalised_spectrum,
    kernel_and_n,
    run_experiment,
    slope,
    sphere_run,
)


@dataclass(frozen=True)
class Config:
    """Sizes of every experiment. ``eps`` = ``eps_scale`` x the median squared distance
    to the ``k_bandwidth``-th neighbour; the kernel graph keeps ``k`` neighbours per
    point (the claims use the untruncated kernel, ``claim_*`` sizes)."""

    seed: int = 0
    n_circle: int = 2000
    n_sphere: int = 3000
    n_eigs: int = 30
    k: int = 128
    k_bandwidth: int = 64
    eps_scale: float = 0.5
    r2_cut: float = 0.5
    D_base: int = 3
    radii: tuple = (0.4, 0.3, 0.25, 0.2, 0.15)
    r_fixed: float = 0.3
    dims: tuple = (3, 10, 50)
    sphere_settings: tuple = ((3, 0.4), (4, 0.4), (10, 0.7))
    n_mnist: int = 1200
    mnist_digit: int = 3
    mnist_noise: tuple = (0.0, 3.0, 6.0)
    n_baseline: int = 1000
    baseline_D: int = 10
    baseline_radii: tuple = (0.1, 0.3, 0.5)
    vae_steps: int = 1500
    ltsa_neighbors: int = 20
    claim_n: int = 1000  # points per data set in the claims (untruncated kernel)
    # points per circle for the fibre-constant claim (the count must resolve nu_1)
    claim_n_sharp: int = 2000
    claim_radii: tuple = (
        0.4,
        0.3,
        0.25,
        0.2,
        0.15,
    )  # the threshold's noise levels (D = D_base)
    claim_dims: tuple = (3, 10, 50)  # ambient dimensions at r = r_fixed
    claim_wobble: float = 0.5  # control: radius r (1 + wobble cos theta)
    claim_digit_count: int = 10  # the digit's noise: predicted count 10 (inside n_eigs)
    sweep_ns: tuple = (
        500,
        1000,
        2000,
    )  # kernel-truncation vs finite-n table (r = r_fixed)
    claim_seeds: tuple = (
        NOTEBOOK_SEEDS  # the notebook's seeds (settings looked at on 0-5)
    )

    def __post_init__(self):
        check_int("seed", self.seed, 0)
        for name in (
            "n_circle",
            "n_sphere",
            "n_eigs",
            "k",
            "k_bandwidth",
            "n_mnist",
            "n_baseline",
            "vae_steps",
            "ltsa_neighbors",
            "claim_n",
            "claim_n_sharp",
        ):
            check_int(name, getattr(self, name), 1)
        for name in ("D_base", "baseline_D", "claim_digit_count"):
            check_int(name, getattr(self, name), 2)
        for name in ("eps_scale", "r_fixed"):
            check_positive(name, getattr(self, name))
        check_probability("r2_cut", self.r2_cut)
        if not 0 <= check_int("mnist_digit", self.mnist_digit, 0) <= 9:
            raise ValueError(
                f"mnist_digit: expected a digit in 0..9, got {self.mnist_digit}"
            )
        for name in ("radii", "baseline_radii", "claim_radii"):
            check_numbers(name, getattr(self, name), check_positive)
        check_numbers("mnist_noise", self.mnist_noise, check_nonnegative)
        for name in ("dims", "claim_dims"):
            check_numbers(name, getattr(self, name), lambda n, v: check_int(n, v, 2))
        check_numbers("sweep_ns", self.sweep_ns, lambda n, v: check_int(n, v, 1))
        if (
            isinstance(self.sphere_settings, (str, bytes))
            or not isinstance(self.sphere_settings, (tuple, list))
            or not self.sphere_settings
        ):
            raise TypeError(
                f"sphere_settings: expected a non-empty tuple of (D, r) pairs, got "
                f"{self.sphere_settings!r}"
            )
        for i, pair in enumerate(self.sphere_settings):
            if not isinstance(pair, (tuple, list)) or len(pair) != 2:
                raise TypeError(
                    f"sphere_settings[{i}]: expected a (D, r) pair, got {pair!r}"
                )
            check_int(f"sphere_settings[{i}][0]", pair[0], 3)
            check_positive(f"sphere_settings[{i}][1]", pair[1])
        if not 0 <= check_range("claim_wobble", self.claim_wobble, 0, 1) < 1:
            raise ValueError(
                f"claim_wobble: expected a number in [0, 1), got {self.claim_wobble}"
            )
        check_numbers("claim_seeds", self.claim_seeds, lambda n, v: check_int(n, v, 0))
        if len(set(self.claim_seeds)) != len(self.claim_seeds):
            raise ValueError(
                f"claim_seeds: expected distinct seeds, got {self.claim_seeds!r}"
            )


SMOKE = Config()
FULL = Config(
    n_circle=20000,
    n_sphere=20000,
    n_eigs=40,
    k=128,
    k_bandwidth=64,
    radii=(0.5, 0.4, 0.3, 0.25, 0.2, 0.15, 0.12, 0.1),
    dims=(3, 10, 50, 100),
    sphere_settings=((3, 0.4), (3, 0.3), (4, 0.4), (10, 0.7), (10, 0.5)),
    n_mnist=5000,
    mnist_noise=(0.0, 2.0, 4.0, 6.0, 8.0),
    n_baseline=3000,
    baseline_radii=(0.1, 0.2, 0.3, 0.4, 0.5),
    vae_steps=4000,
    claim_n=2000,
    claim_n_sharp=4000,
    sweep_ns=(1000, 2000, 4000),
)

__all__ = [
    "knn",
    "gaussian_affinity",
    "markov_operator",
    "diffusion_map",
    "DiffusionMap",
    "neumann_ball_nu1",
    "threshold",
    "predicted_count_circle",
    "predicted_count_sphere",
    "fourier_basis",
    "harmonic_basis",
    "r_squared",
    "count_recovered",
    "uniform_ball",
    "noisy_circle",
    "noisy_sphere",
    "rotate_image",
    "rotated_digit",
    "curve_length",
    "VAE",
    "train_vae",
    "vae_embedding",
    "ltsa_embedding",
    "circular_correlation",
    "embedding_angle",
    "Config",
    "SMOKE",
    "FULL",
    "bandwidth",
    "circle_run",
    "sphere_run",
    "mnist_runs",
    "baseline_runs",
    "normalised_spectrum",
    "slope",
    "run_experiment",
    "kernel_and_n",
    "CLAIMS",
    "NOTEBOOK_SEEDS",
    "TUNING_SEEDS",
    "measure_claims",
    "judge",
]
