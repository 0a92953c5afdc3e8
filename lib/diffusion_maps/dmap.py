"""Diffusion maps: alpha-normalisation, the symmetric Markov operator, its leading
eigenpairs."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from lib.common import (
    check_int,
    check_nonnegative,
    check_positive,
    check_probability,
    check_tensor,
)
from .graph import coo, gaussian_affinity, kernel_matrix

SOLVERS = ("eigsh", "lobpcg", "dense")


@dataclass
class DiffusionMap:
    """The result of :func:`diffusion_map` (all tensors on the input's device).

    ``eigenvalues`` (m,) of the Markov matrix P, descending, the trivial 1 first;
    ``eigenvectors`` (n, m) right eigenvectors psi of P (psi_0 = 1), normalised so that
    sum_i pi_i psi_k(x_i)^2 = 1 with pi the stationary distribution;
    ``laplacian`` (m,) the Laplace-Beltrami estimates 4 (1 - lambda) / eps;
    ``eps`` the kernel bandwidth.
    """

    eigenvalues: torch.Tensor
    eigenvectors: torch.Tensor
    laplacian: torch.Tensor
    eps: float

    def embedding(self, dim: int, t: float = 0.0) -> torch.Tensor:
        """Diffusion coordinates (lambda_1^t psi_1, ..., lambda_dim^t psi_dim), shape
        (n, dim)."""
        check_int("dim", dim, minimum=1)
        check_nonnegative("t", t)
        if dim >= self.eigenvalues.shape[0]:
            raise ValueError(
                f"dim: expected at most {self.eigenvalues.shape[0] - 1} "
                f"(the non-trivial eigenpairs computed), got {dim}"
            )
        lam = self.eigenvalues[1 : dim + 1].clamp(min=0.0) ** t  # (dim,)
        return self.eigenvectors[:, 1 : dim + 1] * lam  # (n, dim)


def markov_operator(
    w: torch.Tensor, alpha: float = 1.0
) -> tuple[torch.Tensor, torch.Tensor]:
    """From a sparse kernel W to the symmetric form S = D^{-1/2} K_alpha D^{-1/2} of P =
    D^{-1} K_alpha.

    eq. (alpha-normalisation): q = W 1, K_alpha = Q^{-alpha} W Q^{-alpha};
        d = K_alpha 1.
    Returns ``(S, d)``: S sparse (n, n), similar to P, so it has the same eigenvalues; d
    (n,).
    """
    alpha = check_probability("alpha", alpha)
    if (
        not isinstance(w, torch.Tensor)
        or not w.is_sparse
        or w.ndim != 2
        or w.shape[0] != w.shape[1]
    ):
        raise TypeError(
            f"w: expected a sparse square (n, n) kernel (see gaussian_affinity), got "
            f"{getattr(w, 'shape', type(w).__name__)}"
        )
    w = w.coalesce()
    i, j = w.indices()  # (nnz,), (nnz,)
    v = w.values()  # (nnz,)
    n = w.shape[0]
    q = torch.zeros(n, dtype=v.dtype, device=v.device).index_add_(
        0, i, v
    )  # degrees, (n,)
    qa = q.pow(-alpha)  # (n,)
    ka = v * qa[i] * qa[j]  # K_alpha values, (nnz,)
    d = torch.zeros_like(q).index_add_(0, i, ka)  # (n,)
    dh = d.rsqrt()  # (n,)
    s = coo(w.indices(), ka * dh[i] * dh[j], n)
    return s, d


def _eigsh(s: torch.Tensor, m: int, seed: int):
    """ARPACK (Lanczos) on the CPU: the m algebraically largest eigenpairs of the sparse
    symmetric S."""
    import scipy.sparse as sp
    from scipy.sparse.linalg import eigsh

    i, j = s.indices().cpu().numpy()
    a = sp.csr_matrix((s.values().cpu().double().numpy(), (i, j)), shape=tuple(s.shape))
    v0 = np.random.default_rng(seed).standard_normal(a.shape[0])
    vals, vecs = eigsh(a, k=m, which="LA", v0=v0, tol=1e-10)
    return torch.from_numpy(vals), torch.from_numpy(vecs)


def _lobpcg(s: torch.Tensor, m: int, seed: int, iters: int = 500):
    """Block LOBPCG on the device: S + I is positive definite, so its top m eigenpairs
    are S's."""
    n = s.shape[0]
    g = torch.Generator().manual_seed(seed)
    x0 = torch.randn(n, m, generator=g, dtype=torch.float64).to(s.device)  # (n, m)
    diag = torch.arange(n, device=s.device).expand(2, n)
    a = coo(
        torch.cat([s.indices(), diag], 1),
        torch.cat(
            [s.values().double(), torch.ones(n, dtype=torch.float64, device=s.device)]
        ),
        n,
    )
    vals, vecs = torch.lobpcg(a, k=m, X=x0, niter=iters, tol=1e-9, largest=True)
    return vals - 1.0, vecs


def markov_numpy(w, alpha: float = 1.0):
    """:func:`markov_operator` for a SciPy CSR matrix or a dense array ``w`` (the CPU
    path).

    Returns ``(S, d)`` of the same kind as ``w`` (symmetric, similar to P) and d (n,).
    """
    import scipy.sparse as sp

    q = np.asarray(w.sum(1)).ravel()  # degrees, (n,)
    qa = q**-alpha  # (n,)
    if sp.issparse(w):
        rows = np.repeat(np.arange(w.shape[0]), np.diff(w.indptr))  # (nnz,)
        cols = w.indices  # (nnz,)
        ka = w.data * qa[rows] * qa[cols]  # K_alpha values, (nnz,)
        d = np.bincount(rows, ka, minlength=w.shape[0])  # (n,)
        dh = d**-0.5
        return sp.csr_matrix(
            (ka * dh[rows] * dh[cols], cols, w.indptr), shape=w.shape
        ), d
    ka = w * np.outer(qa, qa)  # (n, n)
    d = ka.sum(1)  # (n,)
    dh = d**-0.5
    return ka * np.outer(dh, dh), d


def _eigsh_np(a, m: int, seed: int):
    """ARPACK (Lanczos): the m algebraically largest eigenpairs of a symmetric CSR or
    dense array."""
    from scipy.sparse.linalg import eigsh

    v0 = np.random.default_rng(seed).standard_normal(a.shape[0])
    vals, vecs = eigsh(a, k=m, which="LA", v0=v0, tol=1e-10)
    return torch.from_numpy(vals), torch.from_numpy(vecs)


def diffusion_map(
    x: torch.Tensor,
    eps: float,
    k: int | None = 64,
    n_eigs: int = 10,
    alpha: float = 1.0,
    solver: str = "eigsh",
    batch_size: int = 2048,
    seed: int = 0,
) -> DiffusionMap:
    """Diffusion maps of the rows of ``x`` (n, D) with the kernel exp(-|x - y|^2 / eps).

    ``k``: neighbours kept per point (the max-symmetrised kNN truncation), or ``None``
    for the **untruncated** Gaussian kernel (a dense (n, n) matrix: the operator the
    theory is about; small n only). ``n_eigs`` non-trivial eigenpairs are returned after
    the trivial one. ``solver``: ``eigsh`` (ARPACK on the CPU, the default; for CPU
    input the graph is built with a k-d tree and SciPy's CSR, on a GPU the kNN search
    runs on the device), ``lobpcg`` (torch, stays on the device) or ``dense``
    (torch.linalg.eigh, small n only: a reference).
    """
    check_tensor("x", x, ndim=2, floating=True)
    if x.shape[0] < 1 or x.shape[1] < 1:
        raise ValueError(
            f"x: expected at least one point with at least one coordinate, got shape "
            f"{tuple(x.shape)}"
        )
    check_tensor("x", x, finite=True)
    check_int("batch_size", batch_size, minimum=1)
    check_int("seed", seed, minimum=0)
    eps = check_positive("eps", eps)
    n_eigs = check_int("n_eigs", n_eigs, minimum=1)
    if solver not in SOLVERS:
        raise ValueError(f"solver: expected one of {SOLVERS}, got {solver!r}")
    n = x.shape[0]
    if n_eigs + 1 >= n:
        raise ValueError(
            f"n_eigs: expected fewer than n - 1 = {n - 1} eigenpairs, got {n_eigs}"
        )
    if k is not None:
        check_int("k", k, minimum=1)
        if k > n:
            raise ValueError(
                f"k: expected at most n = {n} neighbours (or None), got {k}"
            )
    alpha = check_probability("alpha", alpha)
    m = n_eigs + 1
    if k is None or (solver == "eigsh" and x.device.type == "cpu"):
        w = kernel_matrix(
            x.detach().cpu().double().numpy(), eps, k
        )  # CSR or dense (n, n)
        s_np, d_np = markov_numpy(w, alpha)
        d = torch.from_numpy(d_np).to(x.device)  # (n,)
        if k is not None:
            vals, vecs = _eigsh_np(s_np, m, seed)
        else:  # dense: a full eigh (torch's threads) beats Lanczos on (n, n)
            vals, vecs = torch.linalg.eigh(torch.from_numpy(s_np))
            vals, vecs = vals[-m:], vecs[:, -m:]
    else:
        w = gaussian_affinity(x, eps, k, batch_size)  # sparse (n, n)
        s, d = markov_operator(w, alpha)  # sparse (n, n), (n,)
        if solver == "eigsh":
            vals, vecs = _eigsh(s, m, seed)
        elif solver == "lobpcg":
            vals, vecs = _lobpcg(s, m, seed)
        else:
            vals, vecs = torch.linalg.eigh(s.double().to_dense())
            vals, vecs = vals[-m:], vecs[:, -m:]
    d = d.to(x.device, x.dtype)
    order = torch.argsort(vals, descending=True)
    vals = vals[order].to(x.device, x.dtype)  # (m,)
    phi = vecs[:, order].to(x.device, x.dtype)  # (n, m), S's eigenvectors
    # P = D^{-1/2} S D^{1/2}: right eigenvectors psi = D^{-1/2} phi; pi = d / sum(d)
    psi = phi * d.rsqrt()[:, None]  # (n, m)
    pi = d / d.sum()  # (n,)
    psi = psi / torch.sqrt((pi[:, None] * psi**2).sum(0))  # pi-normalised
    peak = psi.abs().argmax(0)  # (m,)
    psi = psi * torch.sign(
        psi[peak, torch.arange(m, device=psi.device)]
    )  # fix signs: psi_0 = +1
    lap = 4.0 * (1.0 - vals) / eps  # Delta ~ 4 (I - P) / eps
    return DiffusionMap(vals, psi, lap, eps)
