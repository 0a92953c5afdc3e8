"""WATCH after adaptation starts, as in the official code: weighted conformal p-values
and intervals over the reference set *calibration + test points seen before adaptation*,
with density-ratio weights from a classifier refitted online (a small MLP at every step
by default; L2 logistic regression every ``refit_every`` steps as an option).

One loop over test steps, batched over the streams that have started adapting; each
step re-weights the reference set once (``O(n + t)`` per stream) and sorts it once for
the interval.
"""

from __future__ import annotations

import torch

from lib.common import (
    check_choice,
    check_int,
    check_positive,
    check_probability,
    check_tensor,
)

from .density_ratio import (
    _fit_logistic,
    _log_density_ratio,
    _mlp_fit,
    _mlp_logit,
    adam_state,
    mlp_init,
)
from .martingales import _check_log_stat, first_alarm, shiryaev_roberts

#: density-ratio classifiers: the official MLP, or our earlier logistic regression
RATIOS = ("mlp", "logistic")
#: reference sets after adaptation: official (cal + pre-adaptation tests) or cal only
REFERENCES = ("cal+pre", "cal")
#: adaptation triggers of the official code (src/main.py, fixed_cal_dyn)
TRIGGERS = ("ville", "sr")


def adaptation_start(
    log_m_x: torch.Tensor, trigger: str, ville_threshold: float, sr_threshold: float
) -> torch.Tensor:
    """Test index at which WATCH starts adapting, per stream (``T`` = never).

    ``trigger="ville"`` (official, synthetic data): the first step where the X-CTM's
    Composite Jumper reaches ``ville_threshold``; ``"sr"`` (official, real data): the
    first step where the X-CTM's Shiryaev–Roberts statistic reaches ``sr_threshold``,
    provided it comes before the X-CTM's Ville alarm (otherwise no adaptation). The
    alarm step itself is the first adapted one, as in the official code.
    """
    _check_log_stat("log_m_x", log_m_x)
    check_tensor("log_m_x", log_m_x, finite=True)
    check_choice("trigger", trigger, TRIGGERS)
    check_positive("ville_threshold", ville_threshold)
    check_positive("sr_threshold", sr_threshold)
    T = log_m_x.shape[1]
    ville = first_alarm(log_m_x, ville_threshold)
    if trigger == "ville":
        start = ville
    else:
        sr = first_alarm(shiryaev_roberts(log_m_x), sr_threshold)
        start = torch.where((sr >= 0) & ((ville < 0) | (sr < ville)), sr, -1)
    return torch.where(start >= 0, start, torch.full_like(start, T))


def adaptive_pvalues(
    cal_scores: torch.Tensor,
    test_scores: torch.Tensor,
    cal_x: torch.Tensor,
    test_x: torch.Tensor,
    u: torch.Tensor,
    adapt: torch.Tensor,
    alpha: float = 0.1,
    ratio: str = "mlp",
    reference: str = "cal+pre",
    refit_every: int = 1,
    min_fit: int = 10,
    l2: float = 1e-2,
    hidden: int = 20,
    mlp_l2: float = 0.1,
    mlp_lr: float = 0.05,
    mlp_iters: int = 1,
    mlp_init_iters: int = 100,
    mlp_batch: int = 128,
    anticonservative: bool = True,
    seed: int = 0,
) -> dict:
    """Weighted p-values (eqs. wcp, wcp-anti) ``p``, the same without the
    anticonservative rule ``p_rand``, interval radii (eq. wq) ``q`` and normalised test
    weights ``w_test`` for ``t >= adapt`` (NaN before), shapes ``(S, T)``.

    At step ``t`` of a stream adapting since ``a``, the classifier separates the
    calibration set (label 0) from the test points ``a <= j < t`` (label 1, balanced
    class weights; the current point is never in its own fit); streams with fewer than
    ``min_fit`` such points use unit weights. The reference set is the calibration set
    plus the test points ``j < a`` (``reference="cal+pre"``, official) or the
    calibration set alone (``"cal"``). ``anticonservative=False`` keeps the randomised
    tie term always (the negative control of the extreme-shift claim).
    """
    check_tensor(
        "cal_scores", cal_scores, ndim=2, floating=True, finite=True, nonempty=True
    )
    S, n = cal_scores.shape
    check_tensor(
        "test_scores", test_scores, shape=(S, None), floating=True, finite=True
    )
    T = test_scores.shape[1]
    check_tensor("cal_x", cal_x, shape=(S, n, None), floating=True, finite=True)
    d = cal_x.shape[2]
    check_tensor("test_x", test_x, shape=(S, T, d), floating=True, finite=True)
    check_tensor("u", u, shape=(S, T), floating=True)
    if not bool(((u >= 0) & (u <= 1)).all()):
        raise ValueError("u: expected uniforms in [0, 1], got values outside (or NaN)")
    check_tensor("adapt", adapt, shape=(S,), integer=True)
    if bool((adapt < 0).any()):
        raise ValueError(f"adapt: expected test indices >= 0, got {adapt.tolist()}")
    check_probability("alpha", alpha)
    if not 0 < float(alpha) < 1:
        raise ValueError(f"alpha: expected a level in (0, 1), got {alpha}")
    check_choice("ratio", ratio, RATIOS)
    check_choice("reference", reference, REFERENCES)
    for name, v in (
        ("refit_every", refit_every),
        ("min_fit", min_fit),
        ("hidden", hidden),
        ("mlp_iters", mlp_iters),
        ("mlp_init_iters", mlp_init_iters),
        ("mlp_batch", mlp_batch),
    ):
        check_int(name, v, 1)
    for name, v in (("l2", l2), ("mlp_l2", mlp_l2), ("mlp_lr", mlp_lr)):
        check_positive(name, v)
    if not isinstance(anticonservative, bool):
        raise TypeError(
            f"anticonservative: expected a bool, got {type(anticonservative).__name__}"
        )
    check_int("seed", seed, 0)
    dev, dt = cal_scores.device, cal_scores.dtype
    mu = cal_x.mean(1, keepdim=True)
    sd = cal_x.std(1, keepdim=True).clamp_min(1e-8)
    xs = torch.cat([(cal_x - mu) / sd, (test_x - mu) / sd], 1)  # (S, n+T, d)
    ss = torch.cat([cal_scores, test_scores], 1)  # (S, n+T)
    j = torch.arange(n + T, device=dev)
    nan = torch.full((S, T), float("nan"), dtype=dt, device=dev)
    p_out, q_out, w_out = nan.clone(), nan.clone(), nan.clone()
    p_rand = nan.clone()  # the same weights, the tie term always kept
    g = torch.Generator().manual_seed(seed)
    if ratio == "mlp":
        params = {k: v.to(dev) for k, v in mlp_init(S, d, hidden, g).items()}
        state = adam_state(params)
        state = {
            "m": {k: v.to(dev) for k, v in state["m"].items()},
            "v": {k: v.to(dev) for k, v in state["v"].items()},
            "k": state["k"].to(dev),
        }
    else:
        beta = torch.zeros(S, d + 1, dtype=dt, device=dev)
    ref_end = (n + adapt) if reference == "cal+pre" else torch.full_like(adapt, n)
    # the reference set is fixed once adaptation starts: sort it once per stream
    in_ref_all = j[None, :] < ref_end[:, None]  # (S, n+T)
    s_sorted, order = torch.sort(
        torch.where(in_ref_all, ss, torch.full_like(ss, float("inf"))), 1
    )
    x_sorted = torch.gather(xs, 1, order[..., None].expand(-1, -1, d))
    ref_sorted = torch.gather(in_ref_all, 1, order)  # (S, n+T) bool
    t0 = int(adapt.min()) if adapt.numel() else T
    for t in range(t0, T):
        ia = (adapt <= t).nonzero()[:, 0]  # streams adapting at t
        if ia.numel() == 0:
            continue
        m1 = t - adapt[ia]  # test points available to the classifier
        ok = m1 >= min_fit
        due = ok & (torch.remainder(m1 - min_fit, refit_every) == 0)
        if bool(due.any()):
            rows = ia[due]
            x_fit = xs[rows, : n + t]  # cal + tests before t
            lab = (j[: n + t] >= n).to(dt).expand(rows.numel(), -1)
            in1 = (j[None, : n + t] >= n + adapt[rows, None]) & (
                j[None, : n + t] < n + t
            )
            wt = torch.where(
                j[None, : n + t] < n,
                torch.full_like(lab, 0.5 / n),
                in1.to(dt) * 0.5 / m1[due].to(dt)[:, None],
            )
            if ratio == "mlp":
                first = m1[due] == min_fit
                for sel, iters in ((first, mlp_init_iters), (~first, mlp_iters)):
                    if not bool(sel.any()):
                        continue
                    r = rows[sel]
                    sub = {k: v[r] for k, v in params.items()}
                    if iters == mlp_init_iters:  # a first fit: all points, fresh Adam
                        sst = adam_state(sub)
                        xf, yf, wf = x_fit[sel], lab[sel], wt[sel]
                        nf = None
                    else:  # a warm-started update on a balanced minibatch
                        sst = {
                            "m": {k: v[r] for k, v in state["m"].items()},
                            "v": {k: v[r] for k, v in state["v"].items()},
                            "k": state["k"][r],
                        }
                        A, B = r.numel(), mlp_batch
                        i0 = torch.randint(0, n, (A, B), generator=g).to(dev)
                        m_r = (t - adapt[r]).to(dt)
                        off = (
                            torch.rand(A, B, generator=g, dtype=dt).to(dev)
                            * m_r[:, None]
                        ).long()
                        i1 = (
                            n + adapt[r, None] + off.clamp(max=(t - adapt[r, None] - 1))
                        )
                        idx = torch.cat([i0, i1], 1)  # (A, 2B)
                        xf = torch.gather(xs[r], 1, idx[..., None].expand(-1, -1, d))
                        yf = torch.cat([torch.zeros(A, B), torch.ones(A, B)], 1).to(xf)
                        wf = torch.full_like(yf, 0.5 / B)
                        nf = (n + m_r).to(xf.dtype)
                    sub, sst = _mlp_fit(sub, sst, xf, yf, wf, mlp_l2, iters, mlp_lr, nf)
                    for k in params:
                        params[k][r] = sub[k]
                        state["m"][k][r] = sst["m"][k]
                        state["v"][k][r] = sst["v"][k]
                    state["k"][r] = sst["k"]
            else:
                b0 = beta[rows]
                fresh = (m1[due] == min_fit)[:, None]
                b0 = torch.where(fresh, torch.zeros_like(b0), b0)
                beta[rows] = _fit_logistic(x_fit, lab, 2 * wt, l2, 8, b0)
        # log-weights of the (sorted) reference points and of the current point
        L = int(ref_end[ia].max())
        xr = torch.cat([x_sorted[ia, :L], xs[ia, n + t][:, None]], 1)  # (A, L+1, d)
        if ratio == "mlp":
            lw = _mlp_logit({k: v[ia] for k, v in params.items()}, xr).to(dt)
        else:
            lw = _log_density_ratio(beta[ia], xr)
        lw = torch.where(ok[:, None], lw, torch.zeros_like(lw))
        in_ref = ref_sorted[ia, :L]
        lw_ref = torch.where(in_ref, lw[:, :-1], torch.full_like(lw[:, :-1], -1e300))
        top = torch.maximum(lw_ref.max(1).values, lw[:, -1])
        w_ref = torch.exp(lw_ref - top[:, None]) * in_ref  # (A, L), sorted by score
        w_t = torch.exp(lw[:, -1] - top)
        cum = torch.nn.functional.pad(torch.cumsum(w_ref, 1), (1, 0))  # (A, L+1)
        s_ref = s_sorted[ia, :L].contiguous()
        s_t = ss[ia, n + t][:, None].contiguous()
        lo = torch.searchsorted(s_ref, s_t, right=False)  # (A, 1)
        hi = torch.searchsorted(s_ref, s_t, right=True)
        total = cum[:, -1]
        c_lo, c_hi = torch.gather(cum, 1, lo)[:, 0], torch.gather(cum, 1, hi)[:, 0]
        z = total + w_t
        greater = (total - c_hi) / z
        tied = (c_hi - c_lo + w_t) / z
        rand = greater + u[ia, t] * tied
        p_t = torch.where(tied < alpha, rand, greater) if anticonservative else rand
        p_out[ia, t] = p_t
        p_rand[ia, t] = rand
        w_out[ia, t] = w_t / z
        need = ((1 - alpha) * z * (1 - 1e-12))[:, None]
        k = torch.searchsorted(cum[:, 1:].contiguous(), need)[:, 0]
        q = torch.gather(s_ref, 1, k.clamp(max=L - 1)[:, None])[:, 0]
        q_out[ia, t] = torch.where(k < L, q, torch.full_like(q, float("inf")))
    return {
        "p": p_out.clamp(0, 1),
        "p_rand": p_rand.clamp(0, 1),
        "q": q_out,
        "w_test": w_out,
    }
