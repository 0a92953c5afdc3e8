"""The linear causal model behind the identifiability argument, with known answers.

Latent factors z = (z_inv, z_var) ~ N(0, I); embeddings f(x) = A z with A (D, d) of
full column rank (the paper's linear identifiability: CLIP's embedding is an
invertible linear map of the factors). An intervention keeps z_inv and redraws z_var,
so Δ = f(x) − f(x̃) = A_var (z_var − z̃_var) lies in the span of A's variant columns.
"""

from __future__ import annotations

import torch

from lib.common import check_generator, check_int, check_tensor


def linear_scm(
    n: int, d_inv: int, d_var: int, D: int, n_pairs: int, generator: torch.Generator
) -> dict:
    """Embeddings Z (n, D), differences Δ (n_pairs, D), the mixing matrix A (D, d) and
    the factors, in float64."""
    n, n_pairs = check_int("n", n, 1), check_int("n_pairs", n_pairs, 1)
    d_inv, d_var = check_int("d_inv", d_inv, 1), check_int("d_var", d_var, 1)
    D = check_int("D", D, d_inv + d_var)
    check_generator("generator", generator, allow_none=False)
    dt = torch.float64
    a = torch.randn(D, d_inv + d_var, generator=generator, dtype=dt)  # (D, d)
    z = torch.randn(n, d_inv + d_var, generator=generator, dtype=dt)  # (n, d)
    dz = torch.zeros(n_pairs, d_inv + d_var, dtype=dt)
    dz[:, d_inv:] = torch.randn(n_pairs, d_var, generator=generator, dtype=dt) * 2**0.5
    return {"z": z @ a.T, "delta": dz @ a.T, "A": a, "factors": z, "d_inv": d_inv}


def subspace_leak(basis: torch.Tensor, A: torch.Tensor, d_inv: int) -> tuple:
    """``(kept, leak)``: ‖basisᵀ A_inv‖_F / ‖A_inv‖_F, the share of the invariant
    factors' signal the projection onto ``basis`` keeps, and ‖basisᵀ A_var‖_F /
    ‖A_var‖_F, the share of the variant factors' signal that leaks through (leak 0:
    the kept coordinates are functions of z_inv alone)."""
    check_tensor("basis", basis, ndim=2, floating=True, nonempty=True, finite=True)
    check_tensor(
        "A", A, shape=(basis.shape[0], None), floating=True, nonempty=True,
        finite=True,
    )  # fmt: skip
    d_inv = check_int("d_inv", d_inv, 1)
    if d_inv >= A.shape[1]:
        raise ValueError(
            f"d_inv: expected fewer than A's {A.shape[1]} columns, got {d_inv}"
        )
    a = A.to(basis.dtype)
    norm = torch.linalg.norm
    inv, var = a[:, :d_inv], a[:, d_inv:]
    return float(norm(basis.T @ inv) / norm(inv)), float(
        norm(basis.T @ var) / norm(var)
    )
