"""Naive versions for the tests and the benchmark: loops, one model, one sample, one
training image at a time."""

from __future__ import annotations

import math

import torch


def optimal_denoiser_naive(x: torch.Tensor, sigma: float, train: torch.Tensor):
    """D*(x, σ) for each row of x (B, D), with explicit loops and a max-shifted
    softmax."""
    out = torch.empty_like(x)
    for b in range(len(x)):
        logw = [-float(((x[b] - t) ** 2).sum()) / (2 * sigma**2) for t in train]
        top = max(logw)
        w = [math.exp(v - top) for v in logw]
        z = sum(w)
        acc = torch.zeros_like(x[b])
        for wi, t in zip(w, train):
            acc = acc + (wi / z) * t
        out[b] = acc
    return out


def ambient_loss_naive(denoise_one, x, y, sigma, sigma_n, eps):
    """The loss of one model, sample by sample: ``denoise_one(x (D,), σ float)``."""
    out = []
    for xb, yb, s, e in zip(x, y, sigma.tolist(), eps):
        w = (s**2 + 0.25) / (s * 0.5) ** 2
        if s < sigma_n:
            xs = xb + s * e
            err = denoise_one(xs, s) - xb
        else:
            xs = yb + math.sqrt(s**2 - sigma_n**2) * e
            yhat = (s**2 - sigma_n**2) / s**2 * denoise_one(
                xs, s
            ) + sigma_n**2 / s**2 * xs
            err = yhat - yb
        out.append(w * float((err**2).mean()))
    return torch.tensor(out)


def ensemble_forward_naive(model, x, c_noise):
    """Model by model, with plain matmuls: x (M, B, D), c_noise (M, B)."""
    from .diffusion import noise_embedding

    outs = []
    for m in range(model.M):
        h, emb = x[m], noise_embedding(c_noise[m])
        for w, b in zip(model.weights[:-1], model.biases[:-1]):
            h = torch.nn.functional.silu(torch.cat([h, emb], -1) @ w[m] + b[m])
        outs.append(h @ model.weights[-1][m] + model.biases[-1][m])
    return torch.stack(outs)
