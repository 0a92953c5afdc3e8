"""Naive versions of the chapter's kernels, for the tests: loops and explicit sums
where the library vectorises."""

from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn.functional as F

from .data import AUGMENTATIONS, H, W, hue_rgb


def icm_matrix_naive(z, delta, lam):
    """M as a sum of outer products, one row at a time."""
    d = z.shape[1]
    a = torch.zeros(d, d, dtype=torch.float64)
    for row in z.double():
        a += torch.outer(row, row)
    b = torch.zeros(d, d, dtype=torch.float64)
    for row in delta.double():
        b += torch.outer(row, row)
    return a / len(z) - lam * b / len(delta)


def invariant_basis_naive(z, delta, lam, k, order="top"):
    """numpy's eigh, eigenvalues sorted explicitly (descending for "top")."""
    val, vec = np.linalg.eigh(icm_matrix_naive(z, delta, lam).numpy())
    idx = np.argsort(-val)[:k] if order == "top" else np.argsort(val)[:k]
    return torch.as_tensor(vec[:, idx])


def clip_loss_naive(img, txt, logit_scale):
    """The symmetric InfoNCE, row by row and column by column."""
    img, txt = F.normalize(img, dim=1), F.normalize(txt, dim=1)
    s = float(min(math.exp(float(logit_scale)), 100.0))
    n = len(img)
    total = 0.0
    for i in range(n):
        row = [s * float(img[i] @ txt[j]) for j in range(n)]
        col = [s * float(img[j] @ txt[i]) for j in range(n)]
        total += -row[i] + math.log(sum(math.exp(r) for r in row))
        total += -col[i] + math.log(sum(math.exp(c) for c in col))
    return total / (2 * n)


def render_naive(digits, colour, marker, hue_jitter=None):
    """One image at a time."""
    out = torch.zeros(len(digits), 3, H, W)
    for i in range(len(digits)):
        h = float(colour[i]) / 10 + (
            0.0 if hue_jitter is None else float(hue_jitter[i])
        )
        rgb = hue_rgb(torch.tensor([h % 1]))[0]
        for c in range(3):
            out[i, c, 2:16] = digits[i] * rgb[c]
        m = int(marker[i])
        r, col = (0 if m < 5 else 16), 3 * (m % 5)
        out[i, :, r : r + 2, col : col + 2] = 1.0
    return out


def _hue_one(theta):
    c, s = math.cos(theta), math.sin(theta)
    u = np.full(3, 1 / math.sqrt(3))
    cross = np.array([[0, -u[2], u[1]], [u[2], 0, -u[0]], [-u[1], u[0], 0]])
    return c * np.eye(3) + s * cross + (1 - c) * np.outer(u, u)


def augment_naive(x, generator, kinds=AUGMENTATIONS):
    """The same random draws as :func:`lib.clip_icm.data.augment`, applied one image
    at a time with numpy."""
    n = len(x)
    pick = torch.randint(len(kinds), (n,), generator=generator)
    theta = torch.rand(n, generator=generator) * 2 * math.pi
    sigma = 0.3 + 0.9 * torch.rand(n, generator=generator)
    perm = torch.argsort(torch.rand(n, 3, generator=generator), 1)
    out = np.zeros(tuple(x.shape), np.float32)
    for i in range(n):
        a = x[i].double().numpy()
        kind = kinds[int(pick[i])]
        if kind == "hue":
            r = np.clip(np.einsum("ij,jhw->ihw", _hue_one(float(theta[i])), a), 0, 1)
        elif kind == "grayscale":
            r = np.repeat(a.mean(0, keepdims=True), 3, 0)
        elif kind == "blur":
            w = np.exp(-np.array([1.0, 0.0, 1.0]) / (2 * float(sigma[i]) ** 2))
            w /= w.sum()
            p = np.pad(a, ((0, 0), (1, 1), (1, 1)), mode="edge")
            r = np.zeros_like(a)
            for dy in range(3):
                for dx in range(3):
                    r += w[dy] * w[dx] * p[:, dy : dy + H, dx : dx + W]
        elif kind == "invert":
            r = 1 - a
        elif kind == "posterize":
            r = np.floor(a * 4) / 4
        elif kind == "solarize":
            r = np.where(a >= 0.5, 1 - a, a)
        else:  # channels
            r = a[perm[i].numpy()]
        out[i] = r
    return torch.as_tensor(out)


def fit_probe_naive(z, y, C, n_classes=10, max_iter=500):
    """scikit-learn's multinomial objective, C·Σ CE + ‖W‖²/2, by torch's L-BFGS."""
    zd = z.double()
    w = torch.zeros(n_classes, z.shape[1] + 1, dtype=torch.float64, requires_grad=True)
    opt = torch.optim.LBFGS(
        [w], lr=1, max_iter=max_iter, tolerance_grad=1e-10, tolerance_change=1e-14,
        history_size=20, line_search_fn="strong_wolfe",
    )  # fmt: skip

    def closure():
        opt.zero_grad()
        logits = zd @ w[:, :-1].T + w[:, -1]
        loss = (
            C * F.cross_entropy(logits, y, reduction="sum") + (w[:, :-1] ** 2).sum() / 2
        )
        (loss / len(y)).backward()
        return loss

    opt.step(closure)
    w = w.detach()
    return w[:, :-1], w[:, -1]


def zero_shot_naive(img, txt, basis=None):
    """Per image, the class with the largest score (cosine without a basis)."""
    preds = []
    for v in img.double():
        scores = []
        for t in txt.double():
            t = t / t.norm()
            if basis is None:
                scores.append(float(v @ t / v.norm()))
            else:
                b = basis.double()
                scores.append(float((v @ b) @ (t @ b)))
        preds.append(int(np.argmax(scores)))
    return torch.tensor(preds)
