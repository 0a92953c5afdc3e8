"""Diffusion maps (ours: k-d tree or batched torch kNN + SciPy CSR alpha-normalised
operator + ARPACK) against scikit-learn (kneighbors_graph + the same Gaussian kernel +
SpectralEmbedding), same inputs, one process.

Both build the same max-symmetrised kNN Gaussian graph (scikit-learn's Laplacian then
drops its diagonal, the self-loops W_ii = 1, which ours keeps) and return the same
number of non-trivial eigenvectors, at the sizes the chapter uses (Explore: n = 600, 12
pairs; the circles: n = 2,000, the spheres: n = 3,000, 30 pairs, 128 neighbours; FULL:
n = 20,000, 40 pairs). Before timing, each row reports both solvers' accuracy: the
largest eigen-residual |S phi - lambda phi| of the vectors they return, on the same
operator S. Run: python benchmarks/bench_diffusion_maps.py (or make bench); ``--quick``
skips n = 20,000."""

from __future__ import annotations

import pathlib
import sys

import numpy as np
import torch

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))
from harness import compare, table  # noqa: E402
from lib.common import device, set_threads  # noqa: E402
from lib.diffusion_maps import diffusion_map, noisy_circle  # noqa: E402

#: (n, D, k, eigenpairs, repeats): the chapter's sizes
SIZES = (
    (600, 3, 64, 12, 5),
    (2_000, 3, 128, 30, 3),
    (3_000, 10, 128, 30, 3),
    (20_000, 10, 128, 40, 1),
)
EPS = 0.02


def ours(x, k, m):
    return diffusion_map(x, eps=EPS, k=k, n_eigs=m, alpha=0.0).eigenvectors[:, 1:]


def reference(x_np, k, m):
    from sklearn.manifold import SpectralEmbedding
    from sklearn.neighbors import kneighbors_graph

    w = kneighbors_graph(x_np, k, mode="distance", include_self=True)
    w.data = np.exp(-(w.data**2) / EPS)
    w = w.maximum(w.T)
    # sklearn drops the trivial vector itself: m components are m non-trivial
    # eigenvectors
    return SpectralEmbedding(
        n_components=m, affinity="precomputed", eigen_solver="arpack", random_state=0
    ).fit_transform(w)


def residual(x_np, k, vecs, self_loops: bool = True) -> float:
    """Largest eigen-residual |S phi - (phi' S phi) phi| over the returned vectors, phi
    = the vector times sqrt(degree), normalised, with S = D^-1/2 W D^-1/2 the solver's
    own operator (both return D^-1/2-scaled eigenvectors of S). scikit-learn's Laplacian
    ignores the kernel's diagonal (self-loops), ours keeps W_ii = 1: each is measured on
    its own S."""
    from lib.diffusion_maps.dmap import markov_numpy
    from lib.diffusion_maps.graph import kernel_matrix

    w = kernel_matrix(x_np, EPS, k)
    if not self_loops:
        w.setdiag(0.0)
        w.eliminate_zeros()
    s, d = markov_numpy(w, 0.0)
    phi = vecs * np.sqrt(d)[:, None]  # (n, m)
    phi = phi / np.linalg.norm(phi, axis=0)
    sp_ = s @ phi
    lam = (phi * sp_).sum(0)  # Rayleigh quotients
    return float(np.linalg.norm(sp_ - phi * lam, axis=0).max())


def main(quick: bool = False) -> list[dict]:
    set_threads(1)
    dev = device()
    rows = []
    for n, D, k, m, repeats in SIZES:
        if quick and n > 5_000:
            continue
        x, _ = noisy_circle(n, D, 0.2, torch.Generator().manual_seed(0))
        res_o = residual(x.numpy(), k, ours(x, k, m).cpu().numpy())
        res_r = residual(x.numpy(), k, reference(x.numpy(), k, m), self_loops=False)
        row = compare(
            f"diffusion maps, n = {n:,}, D = {D}, k = {k}, {m} eigenpairs "
            f"({dev.type}); "
            f"residual ours {res_o:.0e}, sklearn {res_r:.0e}",
            ours,
            reference,
            args=(x.to(dev), k, m),
            ref_args=(x.numpy(), k, m),
            repeats=repeats,
        )
        row["residual_ours"], row["residual_reference"] = res_o, res_r
        rows.append(row)
    return rows


if __name__ == "__main__":
    print(table(main(quick="--quick" in sys.argv)))
