"""Gaussian kernel graphs: batched k-nearest neighbours (never an (n, n) matrix on the
device), the SciPy CSR form the CPU solver uses, and the untruncated dense kernel of the
theory."""

from __future__ import annotations

import numpy as np
import torch

from lib.common import check_int, check_positive, check_tensor


def coo(indices: torch.Tensor, values: torch.Tensor, n: int) -> torch.Tensor:
    """A coalesced sparse (n, n) COO tensor (indices are ours and valid: skip torch's
    checks)."""
    return torch.sparse_coo_tensor(
        indices, values, (n, n), check_invariants=False
    ).coalesce()


def knn(
    x: torch.Tensor, k: int, batch_size: int = 2048
) -> tuple[torch.Tensor, torch.Tensor]:
    """The ``k`` nearest neighbours of every row of ``x`` (itself included, at distance
    0).

    Distances are computed ``batch_size`` rows at a time, so memory is O(batch_size *
    n), not O(n^2). Returns ``(d2, idx)``: squared distances (n, k), ascending, and
    neighbour indices (n, k).
    """
    check_tensor("x", x, ndim=2, floating=True)
    n = x.shape[0]
    if n < 1 or x.shape[1] < 1:
        raise ValueError(
            f"x: expected at least one point with at least one coordinate, got shape "
            f"{tuple(x.shape)}"
        )
    check_tensor("x", x, finite=True)
    check_int("k", k, minimum=1)
    if k > n:
        raise ValueError(f"k: expected at most n = {n} neighbours, got {k}")
    check_int("batch_size", batch_size, minimum=1)
    sq = (x * x).sum(1)  # (n,)
    d2_out, idx_out = [], []
    for start in range(0, n, batch_size):
        xb = x[start : start + batch_size]  # (b, D)
        d2 = (
            sq[start : start + batch_size, None] - 2.0 * xb @ x.T + sq[None, :]
        )  # (b, n)
        d2.clamp_(min=0.0)
        rows = torch.arange(start, start + xb.shape[0], device=x.device)
        d2[rows - start, rows] = 0.0  # exact zero to itself
        vals, idx = torch.topk(d2, k, dim=1, largest=False, sorted=True)  # (b, k)
        d2_out.append(vals)
        idx_out.append(idx)
    return torch.cat(d2_out), torch.cat(idx_out)  # (n, k), (n, k)


def gaussian_affinity(
    x: torch.Tensor, eps: float, k: int, batch_size: int = 2048
) -> torch.Tensor:
    """The symmetric sparse kernel matrix W_ij = exp(-|x_i - x_j|^2 / eps) on the kNN
    graph.

    An edge is kept when j is among the k nearest neighbours of i *or* i among those of
    j (the weights agree, so symmetrising by the maximum is exact). Returns a coalesced
    sparse COO tensor of shape (n, n) on ``x.device`` with at most 2 n k stored entries.
    """
    eps = check_positive("eps", eps)
    n = x.shape[0] if isinstance(x, torch.Tensor) else 0
    d2, idx = knn(x, k, batch_size)  # (n, k), (n, k)
    w = torch.exp(-d2 / eps)  # kernel, (n, k)
    rows = torch.arange(n, device=x.device).repeat_interleave(k)  # (n k,)
    cols = idx.reshape(-1)  # (n k,)
    ij = torch.cat(
        [torch.stack([rows, cols]), torch.stack([cols, rows])], 1
    )  # (2, 2 n k)
    vals = torch.cat([w.reshape(-1), w.reshape(-1)])  # (2 n k,)
    summed = coo(ij, vals, n)
    counts = coo(ij, torch.ones_like(vals), n)
    # each kept edge appears 2 or 4 times (once per direction, once per list it is in):
    # dividing the sum by the count gives max(W, W^T) exactly
    return coo(summed.indices(), summed.values() / counts.values(), n)


# ---------------------------------------------------------------- the CPU path (SciPy
# sparse)
#: below this ambient dimension a k-d tree beats brute-force distances on the CPU
KDTREE_MAX_DIM = 16


def knn_numpy(x, k: int) -> tuple:
    """:func:`knn` for a CPU array: a k-d tree (``scipy.spatial.cKDTree``) when D is
    small, else the batched brute force. Returns numpy ``(d2, idx)``, both (n, k),
    ascending."""
    x = np.asarray(x, dtype=np.float64)
    if x.shape[1] <= KDTREE_MAX_DIM:
        from scipy.spatial import cKDTree

        dist, idx = cKDTree(x).query(x, k)  # (n, k), (n, k)
        return dist * dist, idx
    d2, idx = knn(torch.from_numpy(x), k)
    return d2.numpy(), idx.numpy()


def kernel_matrix(x, eps: float, k: int | None):
    """The Gaussian kernel W_ij = exp(-|x_i - x_j|^2 / eps) for a CPU array ``x`` (n,
    D).

    ``k=None``: the **untruncated** kernel, a dense (n, n) array (the operator of the
    theory). ``k`` an int: the max-symmetrised kNN truncation of
    :func:`gaussian_affinity`, as a SciPy CSR matrix with at most 2 n k stored entries
    (the same matrix, built without torch's COO sort).
    """
    import scipy.sparse as sp

    x = np.asarray(x, dtype=np.float64)
    n = x.shape[0]
    if k is None:
        sq = (x * x).sum(1)  # (n,)
        d2 = np.maximum(sq[:, None] - 2.0 * x @ x.T + sq[None, :], 0.0)  # (n, n)
        np.fill_diagonal(d2, 0.0)
        return np.exp(-d2 / eps)  # (n, n)
    d2, idx = knn_numpy(x, k)  # (n, k), (n, k)
    w = sp.csr_matrix(
        (np.exp(-d2 / eps).ravel(), idx.ravel(), np.arange(0, n * k + 1, k)),
        shape=(n, n),
    )
    return w.maximum(w.T).tocsr()  # symmetric, (n, n)
