"""JLDE, its ablations, the baselines, AUROC and the per-layer information estimate.

JLDE (the paper's Section 5 and the official ``jlde`` package): for each state H^(l)
(the input features included or not), a PCA fitted on *all* nodes keeps the leading
components that explain 95 % of the variance; the reduced states are concatenated; the
confidence of node v is −(mean distance to its k = 5 nearest *training* nodes)².
"""

from __future__ import annotations


import torch

from lib.common import check_bool, check_int, check_nonnegative, check_tensor

SCORES = (
    "msp",
    "entropy",
    "energy",
    "knn_input",
    "knn_layer1",
    "knn_last",
    "knn_input_layer1",
    "knn_input_last",
    "independent",
    "rank_sum",
    "jlde_no_input",
    "jlde_energy",
    "jlde",
)


def _check_states(states) -> list:
    if isinstance(states, torch.Tensor) or not isinstance(states, (list, tuple)):
        raise TypeError(
            f"states: expected a list of (n, d) tensors, got {type(states).__name__}"
        )
    if not states:
        raise ValueError("states: expected at least one state, got an empty list")
    n = None
    for i, s in enumerate(states):
        check_tensor(
            f"states[{i}]", s, ndim=2, floating=True, nonempty=True, finite=True
        )
        if n is not None and s.shape[0] != n:
            raise ValueError(
                f"states[{i}]: expected {n} rows like states[0], got {s.shape[0]}"
            )
        n = s.shape[0]
    return list(states)


def _check_mask(name: str, mask, n: int) -> torch.Tensor:
    check_tensor(name, mask, shape=(n,))
    if mask.dtype != torch.bool:
        raise TypeError(f"{name}: expected a bool tensor, got dtype {mask.dtype}")
    return mask


def pca_reduce(h: torch.Tensor, variance: float = 0.95) -> torch.Tensor:
    """Project the centred rows of ``h`` (n, d) on the fewest principal axes that
    explain at least ``variance`` of the total variance: (n, q).

    Exact SVD (the official code uses ``torch.pca_lowrank`` with q = d, which spans the
    same subspace); q = #{j : cumulative ratio_j < variance} + 1, as there.
    """
    check_tensor("h", h, ndim=2, floating=True, nonempty=True, finite=True)
    if isinstance(variance, bool) or not isinstance(variance, (int, float)):
        raise TypeError(f"variance: expected a number in (0, 1], got {variance!r}")
    if not 0 < variance <= 1:
        raise ValueError(f"variance: expected a number in (0, 1], got {variance}")
    z = h - h.mean(0)  # (n, d)
    _, S, Vh = torch.linalg.svd(z, full_matrices=False)  # S: (r,), Vh: (r, d)
    var = S**2
    if float(var.sum()) == 0.0:
        return z[:, :1] * 0  # a constant state carries no distance
    ratio = var.cumsum(0) / var.sum()
    q = min(int((ratio < variance).sum()) + 1, var.numel())
    return z @ Vh[:q].T  # (n, q)


def knn_confidence(
    values: torch.Tensor,
    train_mask: torch.Tensor,
    k: int = 5,
    train_energy: torch.Tensor | None = None,
) -> torch.Tensor:
    """−(mean Euclidean distance to the k nearest training rows)², for every row: (n,).

    With ``train_energy`` (the training nodes' logsumexp of logits, (n_train,)), each
    neighbour's distance is divided by softplus of its energy first (the official
    ``use_energy`` option).
    """
    check_tensor("values", values, ndim=2, floating=True, nonempty=True, finite=True)
    _check_mask("train_mask", train_mask, values.shape[0])
    k = check_int("k", k, 1)
    n_train = int(train_mask.sum())
    if k > n_train:
        raise ValueError(f"k: expected at most the {n_train} training nodes, got {k}")
    dist = torch.cdist(values, values[train_mask])  # (n, n_train)
    d, idx = dist.topk(k, dim=1, largest=False)  # (n, k)
    if train_energy is not None:
        check_tensor("train_energy", train_energy, shape=(n_train,), floating=True)
        d = d / torch.nn.functional.softplus(train_energy)[idx]
    return -(d.mean(1) ** 2)  # eq. (3)


def jlde_confidence(
    states,
    train_mask: torch.Tensor,
    k: int = 5,
    variance: float = 0.95,
    layers="all",
    independent: bool = False,
    logits: torch.Tensor | None = None,
) -> torch.Tensor:
    """JLDE confidence of every node, (n,): per-layer PCA, concatenation, KNN.

    ``layers``: ``"all"`` or a list of indices into ``states`` (``[-1]``: the last
    layer alone). ``independent=True`` scores each selected state on its own and sums
    the confidences (the ablation). ``logits`` (n, C) switches on the energy weighting.
    """
    states = _check_states(states)
    n = states[0].shape[0]
    _check_mask("train_mask", train_mask, n)
    independent = check_bool("independent", independent)
    if isinstance(layers, str):
        if layers != "all":
            raise ValueError(
                f"layers: expected 'all' or a list of ints, got {layers!r}"
            )
        layers = list(range(len(states)))
    if not isinstance(layers, (list, tuple)) or not layers:
        raise TypeError(f"layers: expected 'all' or a non-empty list, got {layers!r}")
    for i in layers:
        check_int("layers[i]", i)
        if not -len(states) <= i < len(states):
            raise ValueError(
                f"layers: expected indices in [-{len(states)}, {len(states)}), got {i}"
            )
    energy = None
    if logits is not None:
        check_tensor("logits", logits, ndim=2, floating=True, finite=True)
        if logits.shape[0] != n:
            raise ValueError(f"logits: expected {n} rows, got {logits.shape[0]}")
        energy = torch.logsumexp(logits[train_mask], 1)
    reduced = [pca_reduce(states[i], variance) for i in layers]  # [(n, q_l)]
    if independent:
        return sum(knn_confidence(r, train_mask, k, energy) for r in reduced)
    return knn_confidence(torch.cat(reduced, 1), train_mask, k, energy)  # eq. (4)


def logit_confidences(logits: torch.Tensor) -> dict:
    """The softmax baselines' confidences: MSP, −entropy and the energy logsumexp."""
    check_tensor("logits", logits, ndim=2, floating=True, nonempty=True, finite=True)
    logp = torch.log_softmax(logits, 1)
    return {
        "msp": logp.exp().max(1).values,
        "entropy": (logp.exp() * logp).sum(1),  # −H(p)
        "energy": torch.logsumexp(logits, 1),
    }


def all_confidences(
    states, logits: torch.Tensor, train_mask: torch.Tensor, k: int = 5
) -> dict:
    """Every score of :data:`SCORES` (higher = more confident) for every node.

    ``states`` = [X, H^(1), …, H^(L)] (input first).
    """
    states = _check_states(states)
    if len(states) < 2:
        raise ValueError(
            f"states: expected the input and at least one layer, got {len(states)}"
        )
    out = logit_confidences(logits)
    out["knn_input"] = jlde_confidence(states, train_mask, k, layers=[0])
    out["knn_layer1"] = jlde_confidence(states, train_mask, k, layers=[1])
    out["knn_last"] = jlde_confidence(states, train_mask, k, layers=[-1])
    # JLDE on two blocks only: the input with the first, or with the last, layer
    out["knn_input_layer1"] = jlde_confidence(states, train_mask, k, layers=[0, 1])
    out["knn_input_last"] = jlde_confidence(states, train_mask, k, layers=[0, -1])
    out["independent"] = jlde_confidence(states, train_mask, k, independent=True)
    # the per-layer densities combined without their scales: the sum of their ranks
    out["rank_sum"] = sum(
        jlde_confidence(states, train_mask, k, layers=[i]).argsort().argsort().double()
        for i in range(len(states))
    )
    out["jlde_no_input"] = jlde_confidence(
        states, train_mask, k, layers=list(range(1, len(states)))
    )
    out["jlde_energy"] = jlde_confidence(states, train_mask, k, logits=logits)
    out["jlde"] = jlde_confidence(states, train_mask, k)
    return out


def auroc(pos: torch.Tensor, neg: torch.Tensor) -> float:
    """P(score of a positive > score of a negative) + ½ P(tie): the Mann–Whitney AUROC.

    Positives are the nodes that should get the higher confidence (in-distribution, or
    correctly classified).
    """
    for name, v in (("pos", pos), ("neg", neg)):
        check_tensor(name, v, ndim=1, nonempty=True, floating=True)
        if bool(torch.isnan(v.double()).any()):
            raise ValueError(f"{name}: expected scores without NaN, got NaN")
    s = torch.cat([pos, neg]).double().cpu()
    _, inv, counts = torch.unique(s, return_inverse=True, return_counts=True)
    ends = counts.cumsum(0).double()
    ranks = (ends - (counts.double() - 1) / 2)[inv]  # average ranks over ties
    n1, n0 = pos.numel(), neg.numel()
    return float((ranks[:n1].sum() - n1 * (n1 + 1) / 2) / (n1 * n0))


def probe_information(
    h: torch.Tensor,
    y: torch.Tensor,
    train_mask: torch.Tensor,
    test_mask: torch.Tensor,
    steps: int = 100,
    l2: float = 1e-3,
) -> float:
    """A variational lower bound on I(Y; H) in nats: H(Y) − cross-entropy of a linear
    (multinomial logistic) probe fitted on the training rows, measured on the test rows
    (Barber & Agakov). The features are standardised on the training rows."""
    check_tensor("h", h, ndim=2, floating=True, nonempty=True, finite=True)
    n = h.shape[0]
    check_tensor("y", y, shape=(n,), integer=True)
    _check_mask("train_mask", train_mask, n)
    _check_mask("test_mask", test_mask, n)
    if not bool(train_mask.any()) or not bool(test_mask.any()):
        raise ValueError("train_mask, test_mask: expected at least one node in each")
    steps = check_int("steps", steps, 1)
    l2 = check_nonnegative("l2", l2)
    h = h.double()
    mu, sd = h[train_mask].mean(0), h[train_mask].std(0).clamp_min(1e-8)
    z = (h - mu) / sd  # (n, d)
    C = int(y.max()) + 1
    W = torch.zeros(
        z.shape[1] + 1, C, dtype=z.dtype, device=z.device, requires_grad=True
    )
    zb = torch.cat([z, torch.ones(n, 1, dtype=z.dtype, device=z.device)], 1)
    opt = torch.optim.LBFGS([W], max_iter=steps, line_search_fn="strong_wolfe")
    ytr = y[train_mask]

    def closure():
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(zb[train_mask] @ W, ytr)
        loss = loss + l2 * W[:-1].pow(2).sum()
        loss.backward()
        return loss

    with torch.enable_grad():
        opt.step(closure)
    with torch.no_grad():
        ce = torch.nn.functional.cross_entropy(zb[test_mask] @ W, y[test_mask])
        p = torch.bincount(y[test_mask], minlength=C).double() / int(test_mask.sum())
        hy = -(p[p > 0] * p[p > 0].log()).sum()
    return float(hy - ce)


def entropy_nats(y: torch.Tensor) -> float:
    """H(Y) of the empirical label distribution, in nats."""
    check_tensor("y", y, ndim=1, integer=True, nonempty=True)
    p = torch.bincount(y).double() / y.numel()
    p = p[p > 0]
    return float(-(p * p.log()).sum())
