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

from lib.common import check_generator, check_int, check_positive, check_tensor


def propagate(f: torch.Tensor, log_k: torch.Tensor, keep_source: bool = False):
    """One message step: g(j, b) = log Σ_{i,a} e^{f(i, a)} Π_c K_c[(i, a_c), (j, b_c)].

    ``f`` (n, M, …, M) with d velocity axes; ``log_k`` (d, n, M, n, M). With
    ``keep_source`` the sum over i is left out: (n_i, n_j, M, …, M).
    """
    d, n, M = log_k.shape[0], log_k.shape[1], log_k.shape[2]
    F = f.unsqueeze(1)  # (n_i, 1, a_1..a_d)
    for c in range(d):
        # F: (n_i, n_j|1, b_1..b_{c}, a_{c+1}..a_d); contract a_{c+1} with kernel c
        L = log_k[c].permute(0, 2, 1, 3)  # (n_i, n_j, a, b)
        L = L.reshape(n, L.shape[1], *([1] * c), M, L.shape[3], *([1] * (d - c - 1)))
        F = torch.logsumexp(F.unsqueeze(3 + c) + L, dim=2 + c)
    return F if keep_source else torch.logsumexp(F, dim=0)  # (n_j, b_1..b_d)


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
        g = propagate(f, self.log_k[k], keep_source=True)  # (n_i, n_j, b…)
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
    check_tensor("log_k", log_k, ndim=6, floating=True)
    Km1, d, n, M = log_k.shape[:4]
    check_tensor("log_p0", log_p0, shape=(d, M), floating=True)
    if log_k.shape != (Km1, d, n, M, n, M):
        raise ValueError(
            f"log_k: expected shape (K−1, d, n, M, n, M), got {tuple(log_k.shape)}"
        )
    check_int("sweeps", sweeps, 1)
    check_positive("tol", tol)
    K, vshape = Km1 + 1, (M,) * d
    u = torch.zeros(K, n, dtype=log_k.dtype, device=log_k.device)
    ushape = (n,) + (1,) * d
    beta = [torch.zeros((n,) + vshape, dtype=log_k.dtype, device=log_k.device)] * K
    alpha = [None] * K
    back = [transpose_kernel(log_k[k]) for k in range(Km1)]
    log_mu = -math.log(n)
    done, u_prev = 0, u.clone()
    for done in range(1, sweeps + 1):
        for k in range(K):  # forward: α_k from the updated u_{<k}, then fix u_k
            if k == 0:
                alpha[0] = _prior(log_p0, n)
            else:
                alpha[k] = propagate(
                    alpha[k - 1] + u[k - 1].reshape(ushape), log_k[k - 1]
                )
            m = _lse_v(alpha[k] + beta[k])
            u[k] = log_mu - (m - torch.logsumexp(m, 0))  # eq. (ipf)
        beta = list(beta)
        for k in range(K - 1, -1, -1):  # backward: β_k from the updated u_{>k}
            if k < K - 1:
                beta[k] = propagate(beta[k + 1] + u[k + 1].reshape(ushape), back[k])
            m = _lse_v(alpha[k] + beta[k])
            u[k] = log_mu - (m - torch.logsumexp(m, 0))  # eq. (ipf)
        change = (u - u_prev).abs().max().item()
        u_prev = u.clone()
        if change < tol:
            break
    # messages consistent with the final scalings, and the constraint check
    worst = 0.0
    for k in range(K):
        if k > 0:
            alpha[k] = propagate(alpha[k - 1] + u[k - 1].reshape(ushape), log_k[k - 1])
        lm = _lse_v(alpha[k] + u[k].reshape(ushape) + beta[k])
        p = torch.exp(lm - torch.logsumexp(lm, 0))
        worst = max(worst, (n * p - 1).abs().max().item())
    err = worst
    return ChainSolution(u, alpha, beta, log_k, err, done)


def sample_paths(
    sol: ChainSolution, per_start: int = 50, generator=None
) -> torch.Tensor:
    """Ancestral sampling: ``per_start`` paths from each observation at time 0, drawn
    from P(v₀ | x₀) then P(x_{k+1}, v_{k+1} | x_k, v_k) ∝ K_k e^{u_{k+1}} β_{k+1}.

    Returns observation indices (n·per_start, K), paths of start i in rows
    i·per_start … (i+1)·per_start − 1.
    """
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
    paths = [i]
    for k in range(K - 1):
        digits = _unravel(a, M, d)  # (S, d)
        logw = (sol.u[k + 1].reshape((n,) + (1,) * d) + sol.beta[k + 1]).unsqueeze(0)
        for c in range(d):  # Σ_c log K_c[(i, a_c), (j, b_c)] → (S, n, M…)
            lk = log_k[k, c][i, digits[:, c]]  # (S, n, M)
            logw = logw + lk.reshape((S, n) + (1,) * c + (M,) + (1,) * (d - c - 1))
        flat = _gumbel_argmax(logw.reshape(S, -1), generator)  # (S,)
        i, a = flat // (M**d), flat % (M**d)
        paths.append(i)
    return torch.stack(paths, 1)  # (S, K)


def _unravel(a: torch.Tensor, M: int, d: int) -> torch.Tensor:
    return torch.stack([(a // M ** (d - 1 - c)) % M for c in range(d)], 1)


def _gumbel_argmax(logits: torch.Tensor, generator) -> torch.Tensor:
    """One draw per row from softmax(logits), via the Gumbel-max trick (uniforms
    drawn on the CPU from ``generator``)."""
    U = torch.rand(logits.shape, generator=generator, dtype=torch.float64)
    g = -torch.log(-torch.log(U.clamp_min(1e-300)))
    return torch.argmax(logits + g.to(logits.device, logits.dtype), dim=1)
