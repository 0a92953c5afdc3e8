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
from .graph import gaussian_affinity, knn
from .dmap import DiffusionMap, diffusion_map, markov_operator
from .theory import (count_recovered, fourier_basis, harmonic_basis, neumann_ball_nu1,
                     predicted_count_circle, predicted_count_sphere, r_squared, threshold)
from .data import curve_length, noisy_circle, noisy_sphere, rotate_image, rotated_digit, uniform_ball
from .baselines import (VAE, circular_correlation, embedding_angle, ltsa_embedding, train_vae,
                        vae_embedding)
from .experiment import (FULL, SMOKE, Config, bandwidth, baseline_runs, circle_run, mnist_runs,
                         normalised_spectrum, run_experiment, slope, sphere_run)

__all__ = [
    "knn", "gaussian_affinity", "markov_operator", "diffusion_map", "DiffusionMap",
    "neumann_ball_nu1", "threshold", "predicted_count_circle", "predicted_count_sphere",
    "fourier_basis", "harmonic_basis", "r_squared", "count_recovered",
    "uniform_ball", "noisy_circle", "noisy_sphere", "rotate_image", "rotated_digit", "curve_length",
    "VAE", "train_vae", "vae_embedding", "ltsa_embedding", "circular_correlation", "embedding_angle",
    "Config", "SMOKE", "FULL", "bandwidth", "circle_run", "sphere_run", "mnist_runs",
    "baseline_runs", "normalised_spectrum", "slope", "run_experiment",
]
