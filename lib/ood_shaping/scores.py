"""Post-hoc OOD scores on penultimate features, batched in torch, and the two metrics.

Every score takes features ``h`` of shape (N, D) (after the ReLU) and the classifier
head ``W`` (C, D), ``b`` (C,), and returns one number per sample, *higher = more
in-distribution*. The shaping methods change ``h`` elementwise (or the head) and then
use the energy score, as in Zhao et al.'s benchmark (repository
``Qinyu-Allen-Zhao/OptFSOOD``), whose implementations we read to get each rule right.
Fitted quantities (thresholds, masks, bins) come from ID *training* features only.
"""

from __future__ import annotations

import math

import torch

from lib.common import check_finite, check_int, check_positive, check_tensor


# --- input checks ---------------------------------------------------------------------
def _check_head(h, W, b, h_name="h"):
    """Features ``h`` (N, D), head ``W`` (C, D) and ``b`` (C,), finite (a NaN would
    silently become a score)."""
    check_tensor(h_name, h, ndim=2, floating=True)
    check_tensor("W", W, ndim=2, floating=True)
    check_tensor("b", b, ndim=1, floating=True)
    if W.shape[1] != h.shape[1]:
        raise ValueError(
            f"W: expected shape (C, {h.shape[1]}) to match {h_name}'s feature "
            f"dimension, "
            f"got {tuple(W.shape)}"
        )
    if W.shape[0] < 1:
        raise ValueError(
            f"W: expected at least one class (row), got shape {tuple(W.shape)}"
        )
    if b.shape[0] != W.shape[0]:
        raise ValueError(
            f"b: expected shape ({W.shape[0]},) to match W, got {tuple(b.shape)}"
        )
    if h.shape[0] == 0:
        raise ValueError(f"{h_name}: expected at least one sample, got shape (0, D)")
    for name, t in ((h_name, h), ("W", W), ("b", b)):
        check_tensor(name, t, finite=True)


def _check_percentile(name, p):
    if isinstance(p, bool) or not isinstance(p, (int, float)):
        raise TypeError(
            f"{name}: expected a number in [0, 100], got {type(p).__name__} ({p!r})"
        )
    if not 0 <= p <= 100:
        raise ValueError(f"{name}: expected a number in [0, 100], got {p}")
    return float(p)


def logits(h: torch.Tensor, W: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Logits of the linear head, (N, C) = (N, D) @ (D, C) + (C,)."""
    return h @ W.T + b


# --- scores on the logits -------------------------------------------------------------
def msp(h, W, b):
    """Maximum softmax probability (Hendrycks & Gimpel): max_c softmax(Wh + b)_c."""
    _check_head(h, W, b)
    return torch.softmax(logits(h, W, b), dim=1).amax(dim=1)  # (N,)


def max_logit(h, W, b):
    """MaxLogit (Hendrycks et al.): max_c (Wh + b)_c."""
    _check_head(h, W, b)
    return logits(h, W, b).amax(dim=1)  # (N,)


def energy(h, W, b):
    """Negative free energy (Liu et al.), T = 1: E(h) = log Σ_c exp((Wh + b)_c)."""
    _check_head(h, W, b)
    return torch.logsumexp(logits(h, W, b), dim=1)  # (N,)


# --- fitted from ID training features -------------------------------------------------
def percentile_value(h_train: torch.Tensor, p: float) -> float:
    """The p-th percentile of all ID training activations (flattened), as ReAct/VRA
    use."""
    check_tensor("h_train", h_train, ndim=2, floating=True, nonempty=True, finite=True)
    p = _check_percentile("p", p)
    flat = h_train.flatten()
    if (
        flat.numel() > 2**24
    ):  # torch.quantile's input limit; a strided subsample suffices
        flat = flat[:: math.ceil(flat.numel() / 2**24)]
    return float(torch.quantile(flat.double(), p / 100.0))


def percentile_values(h_train: torch.Tensor, ps) -> list:
    """:func:`percentile_value` for several percentiles ``ps`` with one sort."""
    check_tensor("h_train", h_train, ndim=2, floating=True, nonempty=True, finite=True)
    if isinstance(ps, (str, bytes)) or not hasattr(ps, "__len__") or not len(ps):
        raise TypeError(f"ps: expected a non-empty sequence of percentiles, got {ps!r}")
    qs = [_check_percentile(f"ps[{i}]", p) / 100.0 for i, p in enumerate(ps)]
    flat = h_train.flatten()
    if flat.numel() > 2**24:
        flat = flat[:: math.ceil(flat.numel() / 2**24)]
    q = torch.tensor(qs, dtype=torch.float64, device=flat.device)
    return [float(v) for v in torch.quantile(flat.double(), q)]


def react(h, W, b, threshold: float):
    """ReAct (Sun et al.): energy of the clipped features, g(x) = min(x, c)."""
    _check_head(h, W, b)
    check_finite("threshold", threshold)
    return energy(h.clamp(max=threshold), W, b)


def _keep_top(h, p):
    """Zero all but the k = D - round(D p / 100) largest entries of each row; (N, D) and
    the mask."""
    D = h.shape[1]
    k = D - int(round(D * p / 100.0))
    if k <= 0:
        return torch.zeros_like(h), torch.zeros_like(h, dtype=torch.bool)
    idx = h.topk(k, dim=1).indices  # (N, k)
    mask = torch.zeros_like(h, dtype=torch.bool).scatter_(1, idx, True)
    return h * mask, mask


def ash_p(h, W, b, percentile: float = 65):
    """ASH-P (Djurisic et al.): keep each sample's top (100 - p)% activations, zero the
    rest; energy."""
    _check_head(h, W, b)
    p = _check_percentile("percentile", percentile)
    return energy(_keep_top(h, p)[0], W, b)


def ash_s(h, W, b, percentile: float = 65):
    """ASH-S: prune as ASH-P, then scale by exp(s1 / s2), s1 / s2 the row sums before /
    after."""
    _check_head(h, W, b)
    p = _check_percentile("percentile", percentile)
    pruned, _ = _keep_top(h, p)
    s1, s2 = h.sum(dim=1), pruned.sum(dim=1)  # (N,), (N,)
    scale = torch.exp(s1 / s2.clamp_min(1e-12))
    return energy(pruned * scale[:, None], W, b)


def dice_mask(
    h_train: torch.Tensor, W: torch.Tensor, percentile: float = 70
) -> torch.Tensor:
    """DICE (Sun & Li) weight mask: keep w_cj where the mean contribution m_j w_cj is
    above the p-th percentile of all contributions; (C, D) boolean."""
    check_tensor("h_train", h_train, ndim=2, floating=True, nonempty=True, finite=True)
    check_tensor(
        "W",
        W,
        shape=(None, h_train.shape[1]),
        floating=True,
        nonempty=True,
        finite=True,
    )
    p = _check_percentile("percentile", percentile)
    contrib = h_train.mean(dim=0)[None, :] * W  # (C, D)
    thresh = torch.quantile(contrib.flatten().double(), p / 100.0)
    return contrib > thresh.to(contrib.dtype)


def dice(h, W, b, mask: torch.Tensor):
    """DICE score: energy with the sparsified head W ⊙ mask."""
    _check_head(h, W, b)
    check_tensor("mask", mask, shape=tuple(W.shape))
    return energy(h, W * mask, b)


def vra_p(h, W, b, x1: float, x2: float):
    """VRA-P (Xu et al., as in OptFSOOD's ``vra.py``): clip at x2, then zero everything
    <= x1."""
    _check_head(h, W, b)
    check_finite("x1", x1)
    check_finite("x2", x2)
    if not x1 < x2:
        raise ValueError(f"x1, x2: expected x1 < x2, got x1={x1}, x2={x2}")
    hc = h.clamp(max=x2)
    return energy(hc * (hc > x1), W, b)


def optfs_fit(
    h_train: torch.Tensor, W: torch.Tensor, b: torch.Tensor, n_bins: int = 100
):
    """OptFS (Zhao et al.) closed form from ID data only: bins of equal width on
    [q_0.001, q_0.999] and θ_k = E_ID[Σ_j w_{ŷ,j} h_j 1{h_j ∈ bin k}] (the mean logit
    contribution of bin k, ŷ the predicted class), normalised to unit norm. Returns
    ``(left_edges (K,), width, theta (K,))``."""
    _check_head(h_train, W, b, "h_train")
    n_bins = check_int("n_bins", n_bins, 1)
    flat = h_train.flatten().double()
    if flat.numel() > 2**24:
        flat = flat[:: math.ceil(flat.numel() / 2**24)]
    lo, hi = (float(torch.quantile(flat, q)) for q in (1e-3, 1 - 1e-3))
    width = (hi - lo) / n_bins
    left = lo + width * torch.arange(
        n_bins, dtype=h_train.dtype, device=h_train.device
    )  # (K,)
    pred = logits(h_train, W, b).argmax(dim=1)  # (N,)
    contrib = W[pred] * h_train  # (N, D)
    k, inside = _bin_index(h_train, left, width)  # (N, D)
    theta = torch.zeros(n_bins, dtype=torch.float64, device=h_train.device)
    theta.index_add_(0, k[inside], contrib[inside].double())
    theta = theta / h_train.shape[0]  # E over samples of the per-bin sum over units
    theta = theta / theta.norm().clamp_min(1e-12)
    return left, width, theta.to(h_train.dtype)


def _bin_index(h, left, width):
    """Bin k with left_k <= x < left_k + width (the reference's test, so edges agree
    exactly)."""
    k = (torch.bucketize(h, left, right=True) - 1).clamp(0, left.shape[0] - 1)  # (N, D)
    inside = (h >= left[k]) & (h < left[k] + width)
    return k, inside


def _check_bins(left, width, theta) -> None:
    check_tensor("left", left, ndim=1, floating=True, nonempty=True, finite=True)
    if left.numel() > 1 and not bool((left[1:] > left[:-1]).all()):
        raise ValueError(
            "left: expected increasing left bin edges, got an unsorted tensor"
        )
    check_positive("width", width)
    check_tensor("theta", theta, shape=tuple(left.shape), floating=True, finite=True)


def optfs_shape(h, left, width, theta):
    """g(x) = θ_k x on bin k; 0 outside [left_0, left_K + width) (as the reference
    does)."""
    check_tensor("h", h, floating=True, nonempty=True, finite=True)
    _check_bins(left, width, theta)
    k, inside = _bin_index(h, left, width)  # (N, D)
    return torch.where(inside, theta[k] * h, torch.zeros_like(h))


def optfs(h, W, b, left, width, theta):
    """OptFS score as in the reference's default ("vanilla"): w_ŷ · g(h), ŷ = argmax of
    the unshaped logits."""
    _check_head(h, W, b)
    _check_bins(left, width, theta)
    pred = logits(h, W, b).argmax(dim=1)  # (N,)
    return (W[pred] * optfs_shape(h, left, width, theta)).sum(dim=1)  # (N,)


def shaped_energy(h, W, b, knots: torch.Tensor, values: torch.Tensor):
    """Energy after an elementwise piecewise-linear shaping g (knots ascending, flat
    outside)."""
    _check_head(h, W, b)
    return energy(interp(h, knots, values), W, b)


def interp(x: torch.Tensor, knots: torch.Tensor, values: torch.Tensor) -> torch.Tensor:
    """Piecewise-linear interpolation of (knots, values) at x, constant beyond the end
    knots."""
    check_tensor("x", x, floating=True, nonempty=True, finite=True)
    check_tensor("knots", knots, ndim=1, floating=True)
    if knots.shape[0] < 2:
        raise ValueError(f"knots: expected at least 2 knots, got {knots.shape[0]}")
    check_tensor("knots", knots, finite=True)
    if not bool((knots[1:] > knots[:-1]).all()):
        raise ValueError(
            "knots: expected strictly increasing knots, got an unsorted tensor"
        )
    check_tensor("values", values, shape=(knots.shape[0],), floating=True, finite=True)
    xc = x.clamp(float(knots[0]), float(knots[-1]))
    i = torch.searchsorted(knots, xc.contiguous(), right=True).clamp(
        1, knots.shape[0] - 1
    )
    x0, x1, y0, y1 = knots[i - 1], knots[i], values[i - 1], values[i]
    t = (xc - x0) / (x1 - x0)
    return y0 + t * (y1 - y0)


# --- metrics --------------------------------------------------------------------------
def _check_scores(score_id, score_ood) -> None:
    """Two non-empty 1-d score vectors without NaN (±inf rank fine; a NaN would silently
    rank)."""
    for name, s in (("score_id", score_id), ("score_ood", score_ood)):
        check_tensor(name, s, ndim=1, floating=True)
    if score_id.numel() == 0 or score_ood.numel() == 0:
        raise ValueError(
            "score_id, score_ood: expected non-empty score vectors, got an empty one"
        )
    for name, s in (("score_id", score_id), ("score_ood", score_ood)):
        if bool(torch.isnan(s).any()):
            raise ValueError(f"{name}: expected scores without NaN, got NaN")


def auroc(score_id: torch.Tensor, score_ood: torch.Tensor) -> float:
    """Area under the ROC curve with ID as the positive class: P(s_ID > s_OOD) + ½
    P(tie)."""
    _check_scores(score_id, score_ood)
    s = torch.cat([score_id, score_ood]).double().cpu()
    order = torch.argsort(s, stable=True)
    ranks = torch.empty_like(s)
    ranks[order] = torch.arange(1, s.numel() + 1, dtype=s.dtype)
    sorted_s = s[order]  # average ranks over ties (Mann–Whitney)
    uniq, inv, counts = torch.unique_consecutive(
        sorted_s, return_inverse=True, return_counts=True
    )
    ends = torch.cumsum(counts, 0).double()
    avg = ends - (counts.double() - 1) / 2
    ranks[order] = avg[inv]
    n1, n0 = score_id.numel(), score_ood.numel()
    return float((ranks[:n1].sum() - n1 * (n1 + 1) / 2) / (n1 * n0))


def fpr_at_95_tpr(
    score_id: torch.Tensor, score_ood: torch.Tensor, tpr: float = 0.95
) -> float:
    """FPR95: the fraction of OOD scores ≥ the largest threshold that keeps ≥ 95 % of ID
    samples."""
    _check_scores(score_id, score_ood)
    if isinstance(tpr, bool) or not isinstance(tpr, (int, float)) or not 0 < tpr <= 1:
        raise ValueError(f"tpr: expected a true-positive rate in (0, 1], got {tpr!r}")
    s_id = torch.sort(score_id.double().cpu(), descending=True).values
    k = math.ceil(tpr * s_id.numel() - 1e-9)  # need k ID samples at or above t
    t = s_id[k - 1]
    return float((score_ood.double().cpu() >= t).double().mean())
