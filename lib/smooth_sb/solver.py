"""The lifted multi-marginal Schrödinger bridge as entropic OT on a chain, solved by
belief propagation with iterative scaling on positions only (log domain, torch), and
ancestral sampling of trajectories.

The state at time k is (observation i, velocity cell a), a ∈ {0..M−1}^d. The path law
is P ∝ p₀(a₀) Π_k e^{u_k(i_k)} Π_k K_k[(i_k, a_k), (i_{k+1}, a_{k+1})], with one scaling
u_k per time and observation chosen so that every position marginal is uniform (the
velocities are free). The kernel of a d-dimensional state is the product of d
one-dimensional kernels, so a message is propagated one coordinate at a time.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from lib.common import (
    check_generator,
    check_instance,
    check_int,
    check_positive,
    check_tensor,
)


def _propagate_lse(f: torch.Tensor, log_k: torch.Tensor) -> torch.Tensor:
    """The plain log-sum-exp contraction (keeps the source axis): (n_i, n_j, b…)."""
    d, n, M = log_k.shape[0], log_k.shape[1], log_k.shape[2]
    F = f.unsqueeze(1)  # (n_i, 1, a_1..a_d)
    for c in range(d):
        # F: (n_i, n_j|1, b_1..b_{c}, a_{c+1}..a_d); contract a_{c+1} with kernel c
        L = log_k[c].permute(0, 2, 1, 3)  # (n_i, n_j, a, b)
        L = L.reshape(n, L.shape[1], *([1] * c), M, L.shape[3], *([1] * (d - c - 1)))
        F = torch.logsumexp(F.unsqueeze(3 + c) + L, dim=2 + c)
    return F


@dataclass
class ExpKernel:
    """A log kernel (d, n, M, n, M) stored for fast contraction: ``E`` (d, n_i, n_j,
    M_a, M_b) = exp(log K − ``shift``), ``shift`` (d, n_i, n_j, M_b) the largest entry
    of each column (over the source cells), so that every stored entry lies in [0, 1]
    and every column holds a 1."""

    E: torch.Tensor
    shift: torch.Tensor
    log_k: torch.Tensor

    @classmethod
    def build(cls, log_k: torch.Tensor) -> "ExpKernel":
        shift = log_k.amax(dim=2)  # (d, n_i, n_j, M_b): the best source cell per column
        shift = shift.masked_fill(
            shift == -torch.inf, 0.0
        )  # an all-zero column stays 0
        E = torch.exp(log_k - shift[:, :, None]).permute(0, 1, 3, 2, 4)
        return cls(E.contiguous(), shift, log_k)


_AXES = "abcdefgh"  # velocity axes of the message (d ≤ 8)
#: contributions below e^(−UNDERFLOW) of a block's shift may be lost to underflow in
#: the exponential domain; if a target's total is not far above that, fall back
UNDERFLOW = 700.0


def _propagate_exp(
    f: torch.Tensor, ker: ExpKernel, keep_source: bool = True
) -> torch.Tensor:
    """The contraction of :func:`propagate` as batched matrix products in the
    exponential domain, with the message shifted per source and the kernel per column:
    (n_i, n_j, b…) with ``keep_source``, else summed over the source i (n_j, b…). Falls
    back to log-sum-exp when some target's total is within ``UNDERFLOW`` of what
    underflow may lose."""
    d, n = ker.E.shape[0], ker.E.shape[1]
    fmax = f.reshape(n, -1).amax(1).clamp_min(-1e300)  # (n_i,)
    fshape = (n,) + (1,) * d
    X = torch.exp(f - fmax.reshape(fshape))  # (n_i, a_1..a_d) in [0, 1]
    ax = _AXES[:d]
    # first coordinate: X[i, a_1, …] E_1[i, j, a_1, b_1] → (i, j, b_1, a_2, …)
    X = torch.einsum(f"i{ax},ij{ax[0]}A->ijA{ax[1:]}", X, ker.E[0])
    for c in range(1, d):
        src = "ij" + "".join("ABCDEFGH"[:c]) + ax[c:]
        dst = "ij" + "".join("ABCDEFGH"[: c + 1]) + ax[c + 1 :]
        X = torch.einsum(f"{src},ij{ax[c]}{'ABCDEFGH'[c]}->{dst}", X, ker.E[c])
    # the shifts added back in logs: fmax_i + Σ_c shift_c[i, j, b_c]
    scale = fmax.reshape((n, 1) + (1,) * d)
    for c in range(d):  # one target axis at a time (small broadcast tensors)
        sh = ker.shift[c].reshape((n, n) + (1,) * c + (-1,) + (1,) * (d - c - 1))
        scale = scale + sh
    out = torch.log(X).add_(scale)  # (n_i, n_j, b…)
    shift = fmax[:, None] + ker.shift.amax(-1).sum(0)  # (n_i, n_j) largest shift
    bound = shift.masked_fill(~torch.isfinite(shift), -torch.inf).amax(0)  # (n_j,)
    if keep_source:
        total = torch.logsumexp(out.reshape(n, n, -1), dim=2)  # (n_i, n_j)
        total = torch.logsumexp(total, dim=0)  # (n_j,)
    else:
        out = torch.logsumexp(out, dim=0)  # (n_j, b…)
        total = torch.logsumexp(out.reshape(n, -1), dim=1)  # (n_j,)
    if bool((total < bound - UNDERFLOW).any()):
        g = _propagate_lse(f, ker.log_k)
        return g if keep_source else torch.logsumexp(g, dim=0)
    return out


def _check_log(name: str, x: torch.Tensor) -> None:
    """Log-domain values: −inf (zero mass) is allowed, NaN and +inf are not."""
    if bool(torch.isnan(x).any()) or bool((x == torch.inf).any()):
        raise ValueError(f"{name}: expected log values (no NaN or +inf)")


def propagate(f: torch.Tensor, log_k, keep_source: bool = False):
    """One message step: g(j, b) = log Σ_{i,a} e^{f(i, a)} Π_c K_c[(i, a_c), (j, b_c)].

    ``f`` (n, M, …, M) with d velocity axes; ``log_k`` (d, n, M, n, M) or an
    :class:`ExpKernel` built from it. The contraction runs one coordinate at a time as
    batched matrix products of shifted exponentials (log-domain stable: every factor
    lies in [0, 1] and the shifts are added back in logs). With ``keep_source`` the
    sum over i is left out: (n_i, n_j, M, …, M).
    """
    if isinstance(log_k, ExpKernel):
        ker = log_k
    else:
        check_tensor("log_k", log_k, ndim=5, floating=True, nonempty=True)
        _check_log("log_k", log_k)
        d, n, M = log_k.shape[:3]
        if log_k.shape != (d, n, M, n, M):
            raise ValueError(
                f"log_k: expected shape (d, n, M, n, M), got {tuple(log_k.shape)}"
            )
        ker = ExpKernel.build(log_k)
    d, n, M = ker.log_k.shape[:3]
    check_tensor("f", f, shape=(n,) + (M,) * d, floating=True)
    _check_log("f", f)
    return _step(f, ker, keep_source)


def _step(f: torch.Tensor, ker: ExpKernel, keep_source: bool = False, exact=False):
    if not exact:
        return _propagate_exp(f, ker, keep_source)  # (n_j | n_i n_j, b_1..b_d)
    g = _propagate_lse(f, ker.log_k)
    return g if keep_source else torch.logsumexp(g, dim=0)  # (n_j, b_1..b_d)


def _mass(alpha, beta, k, u_prev, ushape, ker, back: bool):
    """Σ_v α_k β_k per observation (n,); when the fast step's underflow left an
    observation with no mass at all (−inf, so u_k = +inf and NaN after), the message
    is recomputed exactly in the log domain. Returns the mass and the message."""
    m = _lse_v(alpha[k] + beta[k])
    if bool(torch.isfinite(m).all()) or ker is None:
        return m, None
    src = beta[k + 1] if back else alpha[k - 1]
    msg = _step(src + u_prev.reshape(ushape), ker, exact=True)
    if back:
        return _lse_v(alpha[k] + msg), msg
    return _lse_v(msg + beta[k]), msg


def transpose_kernel(log_k: torch.Tensor) -> torch.Tensor:
    """The backward kernel: (d, n, M, n, M) with the two states swapped."""
    return log_k.permute(0, 3, 4, 1, 2)


def _prior(log_p0: torch.Tensor, n: int) -> torch.Tensor:
    d, M = log_p0.shape
    out = torch.zeros((n,) + (M,) * d, dtype=log_p0.dtype, device=log_p0.device)
    for c in range(d):
        out = out + log_p0[c].reshape((1,) + (1,) * c + (M,) + (1,) * (d - c - 1))
    return out - math.log(n)  # (n, M, …, M)


def _lse_v(x: torch.Tensor) -> torch.Tensor:
    """log-sum-exp over every velocity axis: (n, M, …, M) → (n,)."""
    return torch.logsumexp(x.reshape(x.shape[0], -1), dim=1)


@dataclass
class ChainSolution:
    """Scalings and messages of a solved chain.

    ``u`` (K, n); ``alpha[k]`` (n, M…): forward message into time k *without* u_k;
    ``beta[k]`` (n, M…): backward message from k + 1 on (includes u_{k+1}, …);
    ``error``: largest |n·P(x_k = i) − 1| at the end; ``sweeps`` done (the loop stops
    when no scaling moved by more than ``tol`` in a sweep).
    """

    u: torch.Tensor
    alpha: list
    beta: list
    log_k: torch.Tensor
    error: float
    sweeps: int

    def node_marginal(self, k: int) -> torch.Tensor:
        """log P(x_k = i, v_k = a) (n, M, …, M), normalised."""
        m = self.alpha[k] + self.u[k].reshape((-1,) + (1,) * (self.alpha[k].ndim - 1))
        m = m + self.beta[k]
        return m - torch.logsumexp(m.reshape(-1), 0)

    def pair_marginal(self, k: int) -> torch.Tensor:
        """P(x_k = i, x_{k+1} = j) (n, n): the coupling of consecutive times."""
        n = self.u.shape[1]
        shp = (n,) + (1,) * (self.alpha[k].ndim - 1)
        f = self.alpha[k] + self.u[k].reshape(shp)
        g = _step(f, ExpKernel.build(self.log_k[k]), True)  # (n_i, n_j, b…)
        g = g + (self.u[k + 1].reshape(shp) + self.beta[k + 1]).unsqueeze(0)
        lp = torch.logsumexp(g.reshape(n, n, -1), dim=2)
        return torch.exp(lp - torch.logsumexp(lp.reshape(-1), 0))


def chain_sinkhorn(
    log_k: torch.Tensor, log_p0: torch.Tensor, sweeps: int = 40, tol: float = 1e-6
) -> ChainSolution:
    """Iterative scaling on the chain: each sweep runs forward then backward, and at
    each time k sets u_k so that the position marginal is exactly uniform (1/n) given
    the current messages (eq. (ipf): u_k ← log(1/n) − log Σ_a α_k β_k).

    ``log_k`` (K−1, d, n, M, n, M), ``log_p0`` (d, M).
    """
    check_tensor("log_k", log_k, ndim=6, floating=True, nonempty=True)
    _check_log("log_k", log_k)
    Km1, d, n, M = log_k.shape[:4]
    check_tensor("log_p0", log_p0, shape=(d, M), floating=True)
    _check_log("log_p0", log_p0)
    if log_k.shape != (Km1, d, n, M, n, M):
        raise ValueError(
            f"log_k: expected shape (K−1, d, n, M, n, M), got {tuple(log_k.shape)}"
        )
    check_int("sweeps", sweeps, 1)
    check_positive("tol", tol)
    if M == 1:  # one velocity cell (the Brownian reference): positions only
        return _chain_sinkhorn_cell(log_k, log_p0, sweeps, tol)
    K, vshape = Km1 + 1, (M,) * d
    u = torch.zeros(K, n, dtype=log_k.dtype, device=log_k.device)
    ushape = (n,) + (1,) * d
    beta = [torch.zeros((n,) + vshape, dtype=log_k.dtype, device=log_k.device)] * K
    alpha = [None] * K
    fwd = [ExpKernel.build(log_k[k]) for k in range(Km1)]
    back = [ExpKernel.build(transpose_kernel(log_k[k])) for k in range(Km1)]
    log_mu = -math.log(n)
    done, u_prev = 0, u.clone()
    for done in range(1, sweeps + 1):
        for k in range(K):  # forward: α_k from the updated u_{<k}, then fix u_k
            if k == 0:
                alpha[0] = _prior(log_p0, n)
            else:
                alpha[k] = _step(alpha[k - 1] + u[k - 1].reshape(ushape), fwd[k - 1])
            ker = fwd[k - 1] if k > 0 else None
            m, exact = _mass(
                alpha, beta, k, u[k - 1] if k else None, ushape, ker, False
            )
            if exact is not None:
                alpha[k] = exact
            u[k] = log_mu - (m - torch.logsumexp(m, 0))  # eq. (ipf)
        beta = list(beta)
        for k in range(K - 1, -1, -1):  # backward: β_k from the updated u_{>k}
            if k < K - 1:
                beta[k] = _step(beta[k + 1] + u[k + 1].reshape(ushape), back[k])
            ker = back[k] if k < K - 1 else None
            uk = u[k + 1] if k < K - 1 else None
            m, exact = _mass(alpha, beta, k, uk, ushape, ker, True)
            if exact is not None:
                beta[k] = exact
            u[k] = log_mu - (m - torch.logsumexp(m, 0))  # eq. (ipf)
        change = (u - u_prev).abs().max().item()
        u_prev = u.clone()
        if change < tol:
            break
    # messages consistent with the final scalings, and the constraint check
    worst = 0.0
    for k in range(K):
        if k > 0:
            alpha[k] = _step(alpha[k - 1] + u[k - 1].reshape(ushape), fwd[k - 1])
            _, exact = _mass(alpha, beta, k, u[k - 1], ushape, fwd[k - 1], False)
            if exact is not None:
                alpha[k] = exact
        lm = _lse_v(alpha[k] + u[k].reshape(ushape) + beta[k])
        p = torch.exp(lm - torch.logsumexp(lm, 0))
        worst = max(worst, (n * p - 1).abs().max().item())
    err = worst
    return ChainSolution(u, alpha, beta, log_k, err, done)


def _chain_sinkhorn_cell(log_k, log_p0, sweeps: int, tol: float) -> ChainSolution:
    """:func:`chain_sinkhorn` when every coordinate has a single velocity cell (M = 1):
    the product kernel is e^{Σ_c log K_c} (K−1, n, n), a message is a vector (n,), and
    each step is one log-sum-exp over the source: the same updates in the same order,
    without the per-coordinate machinery (and with no underflow to guard against)."""
    Km1, d, n = log_k.shape[:3]
    K, ushape = Km1 + 1, (n,) + (1,) * d
    L = log_k[:, :, :, 0, :, 0].sum(1)  # (K−1, n_i, n_j): Σ_c log K_c
    LT = L.transpose(1, 2)  # (K−1, n_j, n_i)
    u = torch.zeros(K, n, dtype=log_k.dtype, device=log_k.device)
    beta = [torch.zeros(n, dtype=log_k.dtype, device=log_k.device)] * K
    alpha = [None] * K
    a0 = log_p0[:, 0].sum() - math.log(n)  # eq. (prior) with one cell
    log_mu = -math.log(n)

    def fwd(k):  # α_k(j) = log Σ_i e^{α_{k−1}(i) + u_{k−1}(i)} K_{k−1}(i, j)
        return torch.logsumexp((alpha[k - 1] + u[k - 1])[:, None] + L[k - 1], dim=0)

    def scale(m):  # eq. (ipf)
        return log_mu - (m - torch.logsumexp(m, 0))

    done, u_prev = 0, u.clone()
    for done in range(1, sweeps + 1):
        for k in range(K):
            alpha[k] = a0.expand(n) if k == 0 else fwd(k)
            u[k] = scale(alpha[k] + beta[k])
        beta = list(beta)
        for k in range(K - 1, -1, -1):
            if k < K - 1:  # β_k(i) = log Σ_j K_k(i, j) e^{u_{k+1}(j) + β_{k+1}(j)}
                beta[k] = torch.logsumexp(
                    (beta[k + 1] + u[k + 1])[:, None] + LT[k], dim=0
                )
            u[k] = scale(alpha[k] + beta[k])
        change = (u - u_prev).abs().max().item()
        u_prev = u.clone()
        if change < tol:
            break
    worst = 0.0
    for k in range(1, K):
        alpha[k] = fwd(k)
    for k in range(K):
        lm = alpha[k] + u[k] + beta[k]
        p = torch.exp(lm - torch.logsumexp(lm, 0))
        worst = max(worst, (n * p - 1).abs().max().item())
    alpha = [a.reshape(ushape).clone() for a in alpha]
    beta = [b.reshape(ushape) for b in beta]
    return ChainSolution(u, alpha, beta, log_k, worst, done)


def sample_paths(
    sol: ChainSolution, per_start: int = 50, generator=None, cells: bool = False
):
    """Ancestral sampling: ``per_start`` paths from each observation at time 0, drawn
    from P(v₀ | x₀) then P(x_{k+1}, v_{k+1} | x_k, v_k) ∝ K_k e^{u_{k+1}} β_{k+1}.

    Returns observation indices (n·per_start, K), paths of start i in rows
    i·per_start … (i+1)·per_start − 1; with ``cells`` also the velocity cell of each
    path at each time (n·per_start, K, d).
    """
    check_instance("sol", sol, ChainSolution)
    if not isinstance(cells, bool):
        raise TypeError(f"cells: expected a bool, got {type(cells).__name__}")
    check_int("per_start", per_start, 1)
    check_generator("generator", generator)
    log_k = sol.log_k
    K, n = sol.u.shape
    d, M = log_k.shape[1], log_k.shape[3]
    dev = log_k.device
    S = n * per_start
    i = torch.arange(n, device=dev).repeat_interleave(per_start)  # (S,)
    node0 = sol.node_marginal(0).reshape(n, -1)  # (n, M^d)
    a = _gumbel_argmax(node0[i], generator)  # (S,) flat velocity index
    paths, cell = [i], [_unravel(a, M, d)]
    for k in range(K - 1):
        digits = cell[-1]  # (S, d)
        logw = (sol.u[k + 1].reshape((n,) + (1,) * d) + sol.beta[k + 1]).unsqueeze(0)
        for c in range(d):  # Σ_c log K_c[(i, a_c), (j, b_c)] → (S, n, M…)
            lk = log_k[k, c][i, digits[:, c]]  # (S, n, M)
            logw = logw + lk.reshape((S, n) + (1,) * c + (M,) + (1,) * (d - c - 1))
        flat = _gumbel_argmax(logw.reshape(S, -1), generator)  # (S,)
        i, a = flat // (M**d), flat % (M**d)
        paths.append(i)
        cell.append(_unravel(a, M, d))
    if cells:
        return torch.stack(paths, 1), torch.stack(cell, 1)  # (S, K), (S, K, d)
    return torch.stack(paths, 1)  # (S, K)


def _unravel(a: torch.Tensor, M: int, d: int) -> torch.Tensor:
    return torch.stack([(a // M ** (d - 1 - c)) % M for c in range(d)], 1)


def _gumbel_argmax(logits: torch.Tensor, generator) -> torch.Tensor:
    """One draw per row from softmax(logits), via the Gumbel-max trick (uniforms
    drawn on the CPU from ``generator``)."""
    U = torch.rand(logits.shape, generator=generator, dtype=torch.float64)
    g = -torch.log(-torch.log(U.clamp_min(1e-300)))
    return torch.argmax(logits + g.to(logits.device, logits.dtype), dim=1)
