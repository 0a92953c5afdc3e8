"""The Noisy Laplacian: a Threshold Phenomenon for Non-Linear Dimension Reduction.

Alex Kokot, Octavian-Vlad Murad, Marina Meilă. ICML 2025 (PMLR 267).
https://openreview.net/forum?id=GK6q2SFNHm  (no official code; this is our implementation)

Claim: when data are a d-dimensional manifold M plus noise of constant amplitude r in the normal
directions (a tube around M), Diffusion Maps still recovers M's low-frequency eigenpairs, up to a
threshold O(r^-2) whose order does not depend on the ambient dimension; above it the embedding
coordinates describe the noise.

Key equation: in the Sasaki metric the tube's Laplacian splits, Delta_tube ~ Delta_M (x) I + I (x)
Delta_fibre, so its eigenvalues are

    lambda_ij ~ mu_i(M) + nu_j / r^2,

with nu_j the Neumann eigenvalues of the unit (D - d)-ball; the eigenpairs below the first
vertical eigenvalue nu_1 / r^2 are horizontal (manifold eigenfunctions, constant along fibres).

Public API: :func:`diffusion_map` (kNN Gaussian graph, alpha-normalisation, sparse eigensolver),
:func:`knn`, :func:`gaussian_affinity`, :func:`markov_operator`; the prediction
(:func:`neumann_ball_nu1`, :func:`threshold`, :func:`predicted_count_circle`,
:func:`predicted_count_sphere`) and the horizontal/vertical test (:func:`fourier_basis`,
:func:`harmonic_basis`, :func:`r_squared`, :func:`count_recovered`); data (:func:`noisy_circle`,
:func:`noisy_sphere`, :func:`rotated_digit`); baselines (:func:`ltsa_embedding`, :class:`VAE`,
:func:`vae_embedding`, :func:`circular_correlation`); :class:`Config`, ``SMOKE``, ``FULL``,
:func:`run_experiment`.
"""
from dataclasses import dataclass

from .graph import gaussian_affinity, knn
from .dmap import DiffusionMap, diffusion_map, markov_operator
from .theory import (count_recovered, fourier_basis, harmonic_basis, neumann_ball_nu1,
                     predicted_count_circle, predicted_count_sphere, r_squared, threshold)
from .data import curve_length, noisy_circle, noisy_sphere, rotate_image, rotated_digit, uniform_ball
from .baselines import (VAE, circular_correlation, embedding_angle, ltsa_embedding, train_vae,
                        vae_embedding)
from .experiment import (bandwidth, baseline_runs, circle_run, mnist_runs, normalised_spectrum,
                         run_experiment, slope, sphere_run)


@dataclass(frozen=True)
class Config:
    """Sizes of every experiment. ``eps`` = ``eps_scale`` x the median squared distance to the
    ``k_bandwidth``-th neighbour; the kernel graph keeps ``k`` neighbours per point."""
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


SMOKE = Config()
FULL = Config(n_circle=20000, n_sphere=20000, n_eigs=40, k=128, k_bandwidth=64,
              radii=(0.5, 0.4, 0.3, 0.25, 0.2, 0.15, 0.12, 0.1), dims=(3, 10, 50, 100),
              sphere_settings=((3, 0.4), (3, 0.3), (4, 0.4), (10, 0.7), (10, 0.5)),
              n_mnist=5000, mnist_noise=(0.0, 2.0, 4.0, 6.0, 8.0), n_baseline=3000,
              baseline_radii=(0.1, 0.2, 0.3, 0.4, 0.5), vae_steps=4000)

__all__ = [
    "knn", "gaussian_affinity", "markov_operator", "diffusion_map", "DiffusionMap",
    "neumann_ball_nu1", "threshold", "predicted_count_circle", "predicted_count_sphere",
    "fourier_basis", "harmonic_basis", "r_squared", "count_recovered",
    "uniform_ball", "noisy_circle", "noisy_sphere", "rotate_image", "rotated_digit", "curve_length",
    "VAE", "train_vae", "vae_embedding", "ltsa_embedding", "circular_correlation", "embedding_angle",
    "Config", "SMOKE", "FULL", "bandwidth", "circle_run", "sphere_run", "mnist_runs",
    "baseline_runs", "normalised_spectrum", "slope", "run_experiment",
]
