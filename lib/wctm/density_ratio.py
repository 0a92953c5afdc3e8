"""Density-ratio estimation by probabilistic classification (calibration = 0 vs test =
1), batched.

A classifier ``p(x) = P(test | x)`` trained with balanced classes gives the likelihood
ratio ``w(x) = dP_test / dP_cal (x) ∝ p(x) / (1 - p(x))``
    (eq. ratio). We use L2-regularised logistic
regression fitted by Newton's method (IRLS) for all streams at once: one ``(d+1) x
(d+1)`` solve per stream and iteration, on any device.
"""

from __future__ import annotations

import torch

from lib.common import check_int, check_positive, check_tensor

MAX_LOGIT = 30.0


def _design(x: torch.Tensor) -> torch.Tensor:
    return torch.cat(
        [x, torch.ones_like(x[..., :1])], dim=-1
    )  # (..., d+1) with intercept


def fit_logistic(
    x: torch.Tensor,
    y: torch.Tensor,
    weight: torch.Tensor,
    l2: float = 1e-2,
    iters: int = 12,
    beta0: torch.Tensor | None = None,
) -> torch.Tensor:
    """Batched weighted logistic regression: minimise ``sum_i weight_i * CE(y_i, σ(x_i
    β)) + l2/2 |β|²``.

    ``x`` (S, N, d), ``y`` (S, N) in {0, 1}, ``weight`` (S, N) >= 0 (zero = point not in
    the fit). Returns ``β`` (S, d+1), the last entry being the intercept (not
    penalised).
    """
    check_tensor("x", x, ndim=3, floating=True)
    S, N, d = x.shape
    if S < 1 or N < 1:
        raise ValueError(
            f"x: expected at least one stream and one point, got shape {tuple(x.shape)}"
        )
    check_tensor("x", x, finite=True)
    check_tensor("y", y, shape=(S, N), floating=True)
    if not bool(((y == 0) | (y == 1)).all()):
        raise ValueError("y: expected labels in {0, 1}, got other values (or NaN)")
    check_tensor("weight", weight, shape=(S, N), floating=True, finite=True)
    if bool((weight < 0).any()):
        raise ValueError("weight: expected weights >= 0, got a negative one")
    l2 = check_positive("l2", l2)
    iters = check_int("iters", iters, 1)
    if beta0 is not None:
        check_tensor("beta0", beta0, shape=(S, d + 1), floating=True, finite=True)
    return _fit_logistic(x, y, weight, l2, iters, beta0)


def _fit_logistic(x, y, weight, l2, iters, beta0):
    """:func:`fit_logistic` without the input checks (the refit loop of
    :func:`online_weights`)."""
    S, N, d = x.shape
    X = _design(x)  # (S, N, d+1)
    pen = torch.full((d + 1,), float(l2), dtype=x.dtype, device=x.device)
    pen[-1] = 1e-8  # intercept unpenalised
    beta = (
        torch.zeros(S, d + 1, dtype=x.dtype, device=x.device)
        if beta0 is None
        else beta0.clone()
    )
    for _ in range(iters):
        eta = (X @ beta[..., None])[..., 0].clamp(-MAX_LOGIT, MAX_LOGIT)  # (S, N)
        prob = torch.sigmoid(eta)
        grad = (X * (weight * (prob - y))[..., None]).sum(1) + pen * beta  # (S, d+1)
        h = weight * prob * (1 - prob)  # (S, N)
        H = X.transpose(1, 2) @ (X * h[..., None]) + torch.diag(pen)  # (S, d+1, d+1)
        beta = beta - torch.linalg.solve(H, grad[..., None])[..., 0]  # Newton step
    return beta


def log_density_ratio(beta: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """``log w(x) = logit p(x) = x β`` (balanced classes), clamped to ±30; ``x`` (S, M,
    d) -> (S, M)."""
    check_tensor("beta", beta, ndim=2, floating=True)
    if beta.shape[0] < 1 or beta.shape[1] < 1:
        raise ValueError(
            f"beta: expected shape (S, d + 1) with S >= 1, got {tuple(beta.shape)}"
        )
    check_tensor("beta", beta, finite=True)
    check_tensor(
        "x",
        x,
        shape=(beta.shape[0], None, beta.shape[1] - 1),
        floating=True,
        finite=True,
    )
    return _log_density_ratio(beta, x)


def _log_density_ratio(beta, x):
    return (_design(x) @ beta[..., None])[..., 0].clamp(-MAX_LOGIT, MAX_LOGIT)


def online_weights(
    cal_x: torch.Tensor,
    test_x: torch.Tensor,
    adapt_start: torch.Tensor,
    refit_every: int = 10,
    min_fit: int = 10,
    l2: float = 1e-2,
):
    """Online density-ratio weights for WATCH, refitted every ``refit_every`` steps for
    all streams.

    At refit time ``r`` the classifier separates the calibration set (label 0) from the
    test points ``adapt_start <= j < r`` of the same stream (label 1; the current point
    is never in its own fit), with balanced class weights. Streams with fewer than
    ``min_fit`` such points use ``w = 1``. Returns ``cal_w`` (S, R, n), ``test_w`` (S,
    T) and ``block`` (T,) = refit used at each step.
    """
    check_tensor("cal_x", cal_x, ndim=3, floating=True)
    S, n, d = cal_x.shape
    if S < 1 or n < 2 or d < 1:
        raise ValueError(
            f"cal_x: expected shape (S, n, d) with S >= 1, n >= 2, d >= 1, got "
            f"{tuple(cal_x.shape)}"
        )
    check_tensor("cal_x", cal_x, finite=True)
    check_tensor("test_x", test_x, shape=(S, None, d), floating=True, finite=True)
    check_tensor("adapt_start", adapt_start, shape=(S,), integer=True)
    T = test_x.shape[1]
    if bool((adapt_start < 0).any()):
        raise ValueError(
            f"adapt_start: expected test indices >= 0, got {adapt_start.tolist()}"
        )
    refit_every, min_fit = (
        check_int("refit_every", refit_every, 1),
        check_int("min_fit", min_fit, 1),
    )
    l2 = check_positive("l2", l2)
    mu = cal_x.mean(1, keepdim=True)
    sd = cal_x.std(1, keepdim=True).clamp_min(1e-8)
    cx, tx = (cal_x - mu) / sd, (test_x - mu) / sd  # standardised on cal
    xs = torch.cat([cx, tx], dim=1)  # (S, n+T, d)
    ys = torch.cat([torch.zeros(S, n), torch.ones(S, T)], dim=1).to(cal_x)  # (S, n+T)
    j = torch.arange(T, device=cal_x.device)
    starts = list(range(0, T, refit_every))
    cal_w = torch.ones(S, len(starts), n, dtype=cal_x.dtype, device=cal_x.device)
    test_w = torch.ones(S, T, dtype=cal_x.dtype, device=cal_x.device)
    beta = None
    for r_i, r in enumerate(starts):
        inside = (j[None, :] >= adapt_start[:, None]) & (
            j[None, :] < r
        )  # (S, T) class-1 members
        m = inside.sum(1)  # (S,)
        ok = m >= min_fit
        if not bool(ok.any()):
            continue
        w1 = inside.to(cal_x.dtype) / m.clamp_min(1)[:, None]  # each class has mass 1
        wt = torch.cat(
            [torch.full((S, n), 1.0 / n, dtype=cal_x.dtype, device=cal_x.device), w1], 1
        )
        beta = _fit_logistic(
            xs[:, : n + r], ys[:, : n + r], wt[:, : n + r], l2, 8, beta
        )  # (S, d+1)
        beta = torch.where(
            ok[:, None], beta, torch.zeros_like(beta)
        )  # warm start only fitted streams
        lw_cal = _log_density_ratio(beta, cx)  # (S, n)
        lw_test = _log_density_ratio(beta, tx[:, r : r + refit_every])  # (S, k)
        shift = lw_cal.max(1, keepdim=True).values  # rescale: only ratios matter
        cal_w[:, r_i] = torch.where(
            ok[:, None], torch.exp(lw_cal - shift), cal_w[:, r_i]
        )
        test_w[:, r : r + refit_every] = torch.where(
            ok[:, None], torch.exp(lw_test - shift), test_w[:, r : r + refit_every]
        )
    block = torch.div(j, refit_every, rounding_mode="floor")  # (T,)
    return cal_w, test_w, block


# --------------------------------------------------------------------------------------
# The official choice: a small MLP classifier, refitted at every step (batched here)
# --------------------------------------------------------------------------------------
def mlp_init(
    S: int, d: int, hidden: int, generator: torch.Generator, dtype=torch.float32
) -> dict:
    """Parameters of ``S`` one-hidden-layer classifiers ``x -> logit`` (sigmoid hidden
    units, Glorot-uniform start as in scikit-learn's ``MLPClassifier``), drawn on the
    CPU."""
    check_int("S", S, 1)
    check_int("d", d, 1)
    check_int("hidden", hidden, 1)
    if not isinstance(generator, torch.Generator):
        raise TypeError(
            f"generator: expected a torch.Generator, got {type(generator).__name__}"
        )
    b1, b2 = (6.0 / (d + hidden)) ** 0.5, (6.0 / (hidden + 1)) ** 0.5

    def unif(shape, b):
        return (2 * torch.rand(shape, generator=generator, dtype=dtype) - 1) * b

    return {
        "W1": unif((S, d, hidden), b1),
        "b1": unif((S, hidden), b1),
        "w2": unif((S, hidden), b2),
        "b2": unif((S,), b2),
    }


def mlp_logit(params: dict, x: torch.Tensor) -> torch.Tensor:
    """``logit p(test | x)`` of the classifiers of :func:`mlp_init`; ``x`` (S, M, d) ->
    (S, M), clamped to ±30."""
    if not isinstance(params, dict) or set(params) != {"W1", "b1", "w2", "b2"}:
        raise TypeError("params: expected the dict of mlp_init (W1, b1, w2, b2)")
    S, d, _ = params["W1"].shape
    check_tensor("x", x, shape=(S, None, d), floating=True, finite=True)
    return _mlp_logit(params, x)


def _mlp_logit(p, x):
    h = torch.sigmoid(x.to(p["W1"].dtype) @ p["W1"] + p["b1"][:, None, :])
    out = (h * p["w2"][:, None, :]).sum(-1) + p["b2"][:, None]
    return out.clamp(-MAX_LOGIT, MAX_LOGIT)


def _mlp_fit(p, state, x, y, wt, l2, iters, lr, n_fit=None):
    """``iters`` Adam steps on the balanced cross-entropy plus ``l2/2 |W|² / N`` (the
    penalty of scikit-learn's ``alpha``), per stream, with hand-written gradients; ``p``
    and ``state`` (Adam moments and step count, per stream) are returned updated."""
    x, y, wt = x.to(p["W1"].dtype), y.to(p["W1"].dtype), wt.to(p["W1"].dtype)
    N = (wt > 0).sum(1).clamp_min(1).to(wt.dtype) if n_fit is None else n_fit.to(wt)
    b1, b2, eps = 0.9, 0.999, 1e-8
    xt = x.transpose(1, 2)  # (S, d, N)
    for _ in range(iters):
        h = torch.sigmoid(x @ p["W1"] + p["b1"][:, None, :])  # (S, N, H)
        z = (h * p["w2"][:, None, :]).sum(-1) + p["b2"][:, None]  # (S, N)
        dz = wt * (torch.sigmoid(z) - y)  # d loss / d logit
        da = dz[..., None] * p["w2"][:, None, :] * h * (1 - h)  # (S, N, H)
        grads = {
            "W1": xt @ da + l2 * p["W1"] / N[:, None, None],
            "b1": da.sum(1),
            "w2": (dz[..., None] * h).sum(1) + l2 * p["w2"] / N[:, None],
            "b2": dz.sum(1),
        }
        state["k"] = state["k"] + 1
        for k, g in grads.items():
            m = state["m"][k] = b1 * state["m"][k] + (1 - b1) * g
            s = state["v"][k] = b2 * state["v"][k] + (1 - b2) * g * g
            kk = state["k"].view((-1,) + (1,) * (g.ndim - 1))
            step = lr * (m / (1 - b1**kk)) / ((s / (1 - b2**kk)).sqrt() + eps)
            p[k] = p[k] - step
    return p, state


def adam_state(params: dict) -> dict:
    """Zero Adam moments for the classifiers of :func:`mlp_init`."""
    S = params["b2"].shape[0]
    return {
        "m": {k: torch.zeros_like(v) for k, v in params.items()},
        "v": {k: torch.zeros_like(v) for k, v in params.items()},
        "k": torch.zeros(S, dtype=params["b2"].dtype, device=params["b2"].device),
    }
