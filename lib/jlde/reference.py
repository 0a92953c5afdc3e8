"""Naive versions of the chapter's kernels, for the tests: loops and dense matrices,
written for clarity, not speed."""

from __future__ import annotations

import numpy as np
import torch


def pca_reduce_naive(h: np.ndarray, variance: float = 0.95) -> np.ndarray:
    """Eigen-decomposition of the covariance; the fewest axes reaching ``variance``."""
    z = h - h.mean(0)
    w, v = np.linalg.eigh(z.T @ z)
    order = np.argsort(w)[::-1]
    w, v = w[order], v[:, order]
    ratio = np.cumsum(w) / w.sum()
    q = min(int((ratio < variance).sum()) + 1, len(w))
    return z @ v[:, :q]


def knn_confidence_naive(values: np.ndarray, train: np.ndarray, k: int) -> np.ndarray:
    """For each row: −(mean of its k smallest distances to the training rows)²."""
    out = np.empty(len(values))
    for i, v in enumerate(values):
        d = sorted(float(np.sqrt(((v - t) ** 2).sum())) for t in values[train])
        out[i] = -((sum(d[:k]) / k) ** 2)
    return out


def jlde_naive(states, train: np.ndarray, k: int = 5, variance: float = 0.95):
    """JLDE with the naive PCA and KNN above (all layers, concatenated)."""
    z = np.concatenate([pca_reduce_naive(s, variance) for s in states], 1)
    return knn_confidence_naive(z, train, k)


def gcn_matrix_dense(edge_index: torch.Tensor, n: int) -> torch.Tensor:
    """D̃^{-1/2}(A + I)D̃^{-1/2} as a dense matrix, entry by entry."""
    A = torch.eye(n, dtype=torch.float64)
    for u, v in edge_index.T.tolist():
        A[v, u] = 1.0
    d = A.sum(1)
    return A / torch.sqrt(d[:, None] * d[None, :])


def mean_matrix_dense(edge_index: torch.Tensor, n: int) -> torch.Tensor:
    """Row-normalised adjacency (mean over neighbours) as a dense matrix."""
    A = torch.zeros(n, n, dtype=torch.float64)
    for u, v in edge_index.T.tolist():
        A[v, u] = 1.0
    return A / A.sum(1, keepdim=True).clamp_min(1)


def auroc_naive(pos, neg) -> float:
    """The fraction of (positive, negative) pairs ranked right, ties counting ½."""
    total = 0.0
    for p in pos:
        for q in neg:
            total += 1.0 if p > q else 0.5 if p == q else 0.0
    return total / (len(pos) * len(neg))
