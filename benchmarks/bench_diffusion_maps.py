"""Diffusion maps (ours: batched torch kNN + sparse alpha-normalised operator + ARPACK) against
scikit-learn (kneighbors_graph + the same Gaussian kernel + SpectralEmbedding), same inputs.

Both build the same max-symmetrised kNN Gaussian graph and return 10 non-trivial eigenvectors.
Run: python benchmarks/bench_diffusion_maps.py  (or make bench)."""
from __future__ import annotations

import pathlib
import sys

import numpy as np
import torch

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))
from harness import compare, table  # noqa: E402
from lib.common import device  # noqa: E402
from lib.diffusion_maps import diffusion_map, noisy_circle  # noqa: E402

K, EPS, N_EIGS = 32, 0.02, 10


def ours(x):
    return diffusion_map(x, eps=EPS, k=K, n_eigs=N_EIGS, alpha=0.0).eigenvectors


def reference(x_np):
    from sklearn.manifold import SpectralEmbedding
    from sklearn.neighbors import kneighbors_graph

    w = kneighbors_graph(x_np, K, mode="distance", include_self=True)
    w.data = np.exp(-w.data ** 2 / EPS)
    w = w.maximum(w.T)
    return SpectralEmbedding(n_components=N_EIGS, affinity="precomputed", eigen_solver="arpack",
                             random_state=0).fit_transform(w)


def main() -> list[dict]:
    dev = device()
    rows = []
    for n, repeats in ((2_000, 5), (20_000, 1)):
        x, _ = noisy_circle(n, 10, 0.2, torch.Generator().manual_seed(0))
        rows.append(compare(f"diffusion maps, n = {n:,}, D = 10, k = {K}, {N_EIGS} eigenpairs ({dev.type})",
                            ours, reference, args=(x.to(dev),), ref_args=(x.numpy(),), repeats=repeats))
    return rows


if __name__ == "__main__":
    print(table(main()))
