"""Naive references for the tests and the benchmark: one sample at a time, plain
autograd."""

from __future__ import annotations

import torch

from lib.common.gpt import lm_loss


def self_influence_loop(
    model: torch.nn.Module,
    inputs: torch.Tensor,
    targets: torch.Tensor,
    mask: torch.Tensor,
    param_names=None,
) -> torch.Tensor:
    """Self-Inf of every row by a Python loop: forward, backward, sum of squared
    gradients (as the official code does with batch size 1), each row cut to its own
    length (no padding computed)."""
    dev = next(model.parameters()).device
    named = dict(model.named_parameters())
    params = (
        list(named.values()) if param_names is None else [named[n] for n in param_names]
    )
    was_training = model.training
    model.eval()
    out = []
    for i in range(inputs.shape[0]):
        T = int(mask[i].nonzero().max()) + 1  # last answer target
        x, y, m = (t[i : i + 1, :T].to(dev) for t in (inputs, targets, mask))
        loss = lm_loss(model(x), y, m)
        grads = torch.autograd.grad(loss, params)
        out.append(sum(g.pow(2).sum() for g in grads).detach())
    model.train(was_training)
    return torch.stack(out)


def self_inf_n_loop(self_inf, lengths) -> list[float]:
    """Self-Inf-N, one sample at a time with ``math.log``."""
    import math

    return [
        math.log(float(s) + 1) + math.log(int(n) + 1) for s, n in zip(self_inf, lengths)
    ]
