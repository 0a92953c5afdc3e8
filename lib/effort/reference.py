"""Naive versions of the chapter's kernels, for the tests and the benchmark."""

from __future__ import annotations

import math

import numpy as np
import torch


def auc_pairs(scores, labels) -> float:
    """AUC by comparing every positive with every negative (ties count ½)."""
    s, y = np.asarray(scores, float), np.asarray(labels)
    pos, neg = s[y == 1], s[y == 0]
    total = 0.0
    for p in pos:
        total += np.sum(p > neg) + 0.5 * np.sum(p == neg)
    return float(total / (len(pos) * len(neg)))


def svd_residual_weight(w: torch.Tensor, keep: int) -> tuple:
    """``(W_main, W_residual)`` as sums of rank-one outer products σ_i u_i v_iᵀ: the
    top ``keep`` triplets and the rest."""
    u, s, vh = np.linalg.svd(w.double().numpy())
    main = sum(s[i] * np.outer(u[:, i], vh[i]) for i in range(keep))
    rest = sum(s[i] * np.outer(u[:, i], vh[i]) for i in range(keep, len(s)))
    return torch.from_numpy(np.asarray(main)), torch.from_numpy(np.asarray(rest))


def effective_rank_eig(features) -> float:
    """exp(entropy) of the normalised covariance eigenvalues, by numpy's eigh."""
    z = np.asarray(features, float)
    lam = np.clip(np.linalg.eigvalsh(np.cov(z, rowvar=False)), 0, None)
    p = lam / lam.sum()
    p = p[p > 1e-15]
    return float(np.exp(-(p * np.log(p)).sum()))


def dct_fake_scipy(x: torch.Tensor, quality: int) -> torch.Tensor:
    """JPEG-style 8×8 quantisation with scipy's orthonormal DCT, block by block."""
    from scipy.fft import dctn, idctn

    from .data import _JPEG_Q

    scale = 5000 / quality if quality < 50 else 200 - 2 * quality
    q = np.maximum(np.floor((_JPEG_Q.numpy() * scale + 50) / 100), 1) / 255.0
    a = x.double().numpy().copy()
    for idx in np.ndindex(*a.shape[:2]):
        img = a[idx]
        for r in range(0, img.shape[0], 8):
            for c in range(0, img.shape[1], 8):
                coef = dctn(img[r : r + 8, c : c + 8] - 0.5, norm="ortho")
                coef = np.round(coef / q) * q
                img[r : r + 8, c : c + 8] = idctn(coef, norm="ortho") + 0.5
    return torch.from_numpy(np.clip(a, 0, 1)).to(x.dtype)


def attention_loops(x: torch.Tensor, attn) -> torch.Tensor:
    """Multi-head attention of :class:`.model.Attention` with an explicit softmax,
    head by head."""
    b, t, d = x.shape
    h = attn.heads
    dh = d // h
    q, k, v = attn.q(x), attn.k(x), attn.v(x)
    outs = []
    for i in range(h):
        sl = slice(i * dh, (i + 1) * dh)
        scores = q[..., sl] @ k[..., sl].transpose(1, 2) / math.sqrt(dh)
        outs.append(torch.softmax(scores, -1) @ v[..., sl])
    return attn.o(torch.cat(outs, -1))


def principal_angles_scipy(a: torch.Tensor, b: torch.Tensor, k: int) -> np.ndarray:
    """scipy's subspace angles between the top-``k`` left singular vectors
    (ascending)."""
    from scipy.linalg import subspace_angles

    ua = np.linalg.svd(a.double().numpy())[0][:, :k]
    ub = np.linalg.svd(b.double().numpy())[0][:, :k]
    return np.sort(subspace_angles(ua, ub))
