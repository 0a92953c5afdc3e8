"""Conformal scores, the standard CTM p-value and the weighted conformal p-value,
batched over streams.

Shapes: ``S`` streams (seeds), ``n`` calibration points, ``T`` test (deployment) points,
``R`` density-ratio refits. Large scores are non-conforming, so small p-values flag a
change.
"""

from __future__ import annotations

import torch

from lib.common import check_int, check_probability, check_tensor


def abs_residual_scores(y: torch.Tensor, y_hat: torch.Tensor) -> torch.Tensor:
    """Regression non-conformity score ``s = |y - mu(x)|`` (the paper's
    ``cs_type='abs'``)."""
    check_tensor("y", y, floating=True, finite=True)
    check_tensor("y_hat", y_hat, floating=True, finite=True)
    if y.shape != y_hat.shape:
        raise ValueError(
            f"y, y_hat: expected one shape, got {tuple(y.shape)} and "
            f"{tuple(y_hat.shape)}"
        )
    return (y - y_hat).abs()


def ctm_pvalues(
    cal_scores: torch.Tensor,
    test_scores: torch.Tensor,
    u: torch.Tensor,
    chunk: int = 128,
) -> torch.Tensor:
    """Standard CTM p-values of the test points; the reference set grows (calibration +
    earlier tests).

    For the ``k``-th point of the concatenated sequence ``z = [cal, test]`` (0-based),
    ``p_k = (#{i < k: z_i > z_k} + u_k * #{i <= k: z_i = z_k}) / (k + 1)``
    (eq. ctm-p). Returns the p-values of the test positions, shape ``(S, T)``. Cost
    ``O(T (n + T))`` per stream, computed in chunks of test positions.
    """
    _check_scores("cal_scores", cal_scores)
    check_tensor(
        "test_scores",
        test_scores,
        shape=(cal_scores.shape[0], None),
        floating=True,
        finite=True,
    )
    _check_uniforms(u, tuple(test_scores.shape))
    chunk = check_int("chunk", chunk, 1)
    n, T = cal_scores.shape[1], test_scores.shape[1]
    z = torch.cat([cal_scores, test_scores], dim=1)  # (S, n+T)
    idx = torch.arange(n + T, device=z.device)  # (n+T,)
    out = []
    for a in range(0, T, chunk):
        k = n + torch.arange(
            a, min(a + chunk, T), device=z.device
        )  # (c,) positions in z
        zk = z[:, k]  # (S, c)
        before = idx[None, :] < k[:, None]  # (c, n+T) strictly earlier
        upto = idx[None, :] <= k[:, None]  # (c, n+T) earlier or itself
        gt = ((z[:, None, :] > zk[:, :, None]) & before).sum(-1)  # (S, c)
        eq = ((z[:, None, :] == zk[:, :, None]) & upto).sum(-1)  # (S, c), >= 1 (itself)
        out.append((gt + u[:, a : a + len(k)] * eq) / (k + 1).to(z.dtype))  # eq. ctm-p
    return torch.cat(out, dim=1)


def _check_scores(name: str, scores) -> None:
    """(S, n) finite scores with S >= 1 streams and n >= 1 calibration points."""
    check_tensor(name, scores, ndim=2, floating=True)
    if scores.shape[0] < 1 or scores.shape[1] < 1:
        raise ValueError(
            f"{name}: expected at least one stream and one score, got shape "
            f"{tuple(scores.shape)}"
        )
    check_tensor(name, scores, finite=True)


def _check_uniforms(u, shape) -> None:
    """Tie-breaking uniforms in [0, 1] (a NaN would silently become a p-value)."""
    check_tensor("u", u, shape=shape, floating=True)
    if u.numel() and not bool(((u >= 0) & (u <= 1)).all()):
        raise ValueError("u: expected uniforms in [0, 1], got values outside (or NaN)")


def _sorted_cal(cal_scores: torch.Tensor, cal_weights: torch.Tensor):
    """Sort calibration scores once per stream; weights follow the same order, per
    refit."""
    order = torch.argsort(cal_scores, dim=-1)  # (S, n)
    s_sorted = torch.gather(cal_scores, 1, order)  # (S, n)
    w_sorted = torch.gather(
        cal_weights, 2, order[:, None, :].expand_as(cal_weights)
    )  # (S, R, n)
    zero = torch.zeros_like(w_sorted[..., :1])
    cum = torch.cat(
        [zero, torch.cumsum(w_sorted, dim=-1)], dim=-1
    )  # (S, R, n+1) prefix sums
    return s_sorted, cum


def _check_weighted(cal_scores, cal_weights, test_scores, test_weights, block):
    _check_scores("cal_scores", cal_scores)
    S, n = cal_scores.shape
    check_tensor(
        "test_scores", test_scores, shape=(S, None), floating=True, finite=True
    )
    T = test_scores.shape[1]
    check_tensor("test_weights", test_weights, shape=(S, T), floating=True, finite=True)
    check_tensor("cal_weights", cal_weights, floating=True, finite=True)
    if cal_weights.ndim == 2:
        cal_weights = cal_weights[:, None, :]
    if cal_weights.ndim != 3 or cal_weights.shape[0] != S or cal_weights.shape[2] != n:
        raise ValueError(
            f"cal_weights: expected shape ({S}, {n}) or ({S}, R, {n}), "
            f"got {tuple(cal_weights.shape)}"
        )
    if bool((cal_weights < 0).any()) or bool((test_weights < 0).any()):
        raise ValueError(
            "cal_weights/test_weights: expected non-negative weights, got negative "
            "entries"
        )
    if block is None:
        block = torch.zeros(T, dtype=torch.long, device=test_scores.device)
    check_tensor("block", block, shape=(T,))
    if block.dtype != torch.long:
        raise TypeError(f"block: expected a torch.long tensor, got dtype {block.dtype}")
    if T and (int(block.min()) < 0 or int(block.max()) >= cal_weights.shape[1]):
        raise ValueError(
            f"block: expected indices in [0, {cal_weights.shape[1]}), "
            f"got range [{int(block.min())}, {int(block.max())}]"
        )
    return cal_weights, block


def weighted_pvalues(
    cal_scores: torch.Tensor,
    cal_weights: torch.Tensor,
    test_scores: torch.Tensor,
    test_weights: torch.Tensor,
    u: torch.Tensor,
    alpha: float = 0.1,
    block: torch.Tensor | None = None,
) -> torch.Tensor:
    """Weighted conformal p-values over a fixed calibration set plus the test point.

    With normalised weights ``w~_i = w_i / (sum_cal w + w_t)`` over ``cal ∪ {t}``:
    ``p_t = sum_{i in cal} w~_i 1{s_i > s_t}
    + u_t (sum_{i in cal} w~_i 1{s_i = s_t} + w~_t)``  (eq. wcp),
    unless the tied weight (in practice the test point's own ``w~_t``) is ``>= alpha``:
    then the p-value is the anticonservative, deterministic
    ``p_t = sum_{i in cal} w~_i 1{s_i > s_t}``  (eq. wcp-anti).

    ``cal_weights`` is ``(S, n)`` or ``(S, R, n)`` (one row per density-ratio refit) and
    ``block[t]`` says which refit step ``t`` uses. Calibration scores are sorted once;
    each refit costs one cumulative sum (``O(n)``) and each step a binary search, never
    a re-sort.
    """
    cal_weights, block = _check_weighted(
        cal_scores, cal_weights, test_scores, test_weights, block
    )
    _check_uniforms(u, tuple(test_scores.shape))
    alpha = check_probability("alpha", alpha)
    s_sorted, cum = _sorted_cal(cal_scores, cal_weights)  # (S, n), (S, R, n+1)
    lo = torch.searchsorted(s_sorted, test_scores, right=False)  # (S, T) #cal < s_t
    hi = torch.searchsorted(s_sorted, test_scores, right=True)  # (S, T) #cal <= s_t
    cum_t = cum[:, block, :]  # (S, T, n+1)
    total = cum_t[..., -1]  # (S, T) sum of cal weights
    c_lo = torch.gather(cum_t, 2, lo[..., None])[..., 0]  # (S, T)
    c_hi = torch.gather(cum_t, 2, hi[..., None])[..., 0]  # (S, T)
    z = total + test_weights  # normaliser
    greater = (total - c_hi) / z  # sum w~ 1{s_i > s_t}
    tied = (c_hi - c_lo + test_weights) / z  # cal ties + the test point
    return torch.where(tied < alpha, greater + u * tied, greater)  # eq. wcp / wcp-anti


def weighted_quantile_upper(
    cal_scores: torch.Tensor,
    cal_weights: torch.Tensor,
    test_weights: torch.Tensor,
    alpha: float = 0.1,
    block: torch.Tensor | None = None,
) -> torch.Tensor:
    """Weighted split-conformal radius ``q_t``: the ``1 - alpha`` quantile of the
    distribution ``sum_{i in cal} w~_i δ_{s_i} + w~_t δ_{+∞}``
        (eq. wq); the interval is ``mu(x_t) ± q_t``.

    ``q_t = +∞`` when the calibration mass never reaches ``1 - alpha`` (``w~_t >
    alpha``). Shape ``(S, T)``.
    """
    _check_scores("cal_scores", cal_scores)
    check_tensor(
        "test_weights", test_weights, shape=(cal_scores.shape[0], None), floating=True
    )
    dummy = torch.zeros_like(test_weights)
    cal_weights, block = _check_weighted(
        cal_scores, cal_weights, dummy, test_weights, block
    )
    alpha = check_probability("alpha", alpha)
    s_sorted, cum = _sorted_cal(cal_scores, cal_weights)  # (S, n), (S, R, n+1)
    cum_t = cum[:, block, 1:]  # (S, T, n) cal CDF (unnormalised)
    z = cum_t[..., -1] + test_weights  # (S, T)
    need = (1.0 - alpha) * z  # mass to reach
    k = torch.searchsorted(cum_t, need[..., None] * (1 - 1e-12), right=False)[
        ..., 0
    ]  # (S, T)
    inf = torch.full_like(z, float("inf"))
    kk = k.clamp(max=s_sorted.shape[1] - 1)
    q = torch.gather(s_sorted, 1, kk)  # (S, T)
    return torch.where(k < s_sorted.shape[1], q, inf)
