"""Small-classifier training: Adam on cross-entropy, minibatches from the caller's own
generator.

Three chapters train a small classifier on MNIST-sized data (consistency_gc's feature
network for the Fréchet distance, wctm's CNN scores, ood_shaping's network whose
features the detectors shape). They differ in how they seed, so the two pieces are
separate:

- :func:`seeded_init` builds a model with the CPU default generator seeded for the call
  only, then
  restores it: a chapter's weights follow from its seed without disturbing anyone else's
  stream;
- :func:`fit_classifier` runs the loop. Minibatch indices come from ``generator`` (CPU)
  alone, so
  the global random state is neither read nor changed by the loop.
"""

from __future__ import annotations

from typing import Callable

import torch
import torch.nn as nn

from .checks import check_int, check_positive, check_tensor
from .seed import make_generator

__all__ = ["seeded_init", "fit_classifier"]


def seeded_init(build: Callable[[], nn.Module], seed: int) -> nn.Module:
    """``build()`` run with torch's CPU default generator seeded with ``seed``; its
    state is restored afterwards. The weights equal those of ``torch.manual_seed(seed);
    build()`` (for a module built on the CPU), but later global draws and CUDA's
    generators are left as they were."""
    if not callable(build):
        raise TypeError(
            f"build: expected a callable returning an nn.Module, got "
            f"{type(build).__name__}"
        )
    seed = check_int("seed", seed, 0)
    with torch.random.fork_rng(devices=[]):
        torch.random.default_generator.manual_seed(seed)
        model = build()
    if not isinstance(model, nn.Module):
        raise TypeError(
            f"build: expected it to return an nn.Module, got {type(model).__name__}"
        )
    return model


def _generator(generator) -> torch.Generator:
    if isinstance(generator, torch.Generator):
        if generator.device.type != "cpu":
            raise ValueError(
                f"generator: expected a CPU torch.Generator, got one on "
                f"{generator.device}"
            )
        return generator
    if isinstance(generator, int) and not isinstance(generator, bool):
        return make_generator(check_int("generator", generator, 0))
    raise TypeError(
        f"generator: expected a CPU torch.Generator or an int seed, got "
        f"{type(generator).__name__}"
    )


def fit_classifier(
    model: nn.Module,
    x: torch.Tensor,
    y: torch.Tensor,
    *,
    generator,
    batch_size: int,
    lr: float,
    epochs: int | None = None,
    steps: int | None = None,
    weight_decay: float = 0.0,
    device=None,
) -> list[float]:
    """Train ``model`` in place with Adam on the cross-entropy of ``model(x[b])``
    against ``y[b]``.

    Exactly one of:

    - ``epochs``: each epoch shuffles the rows (``torch.randperm`` from ``generator``)
      and visits them
      in minibatches of ``batch_size`` (the last one may be smaller);
    - ``steps``: each step draws ``batch_size`` row indices with replacement
      (``torch.randint``).

    ``generator`` is a CPU ``torch.Generator`` (its stream continues, so the caller may
    keep drawing from it) or an int seed for a fresh one. Indices are drawn on the CPU
    and moved to the data, so a run is the same on every device up to kernel rounding.
    ``x`` and ``y`` move to ``device`` (default: where ``x`` is). A model returning a
    tuple has its first element taken as the logits. The model is left in eval mode;
    returns the loss of every step.
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"model: expected an nn.Module, got {type(model).__name__}")
    check_tensor("x", x)
    if x.ndim < 1 or x.shape[0] < 1:
        raise ValueError(f"x: expected at least one row, got shape {tuple(x.shape)}")
    check_tensor("y", y, shape=(x.shape[0],))
    if y.dtype != torch.int64:
        raise TypeError(f"y: expected int64 class labels, got dtype {y.dtype}")
    batch_size = check_int("batch_size", batch_size, 1)
    lr = check_positive("lr", lr)
    if (epochs is None) == (steps is None):
        raise ValueError(
            f"epochs: expected exactly one of epochs and steps, got epochs={epochs!r}, "
            f"steps={steps!r}"
        )
    if epochs is not None:
        epochs = check_int("epochs", epochs, 1)
    else:
        steps = check_int("steps", steps, 1)
    if (
        isinstance(weight_decay, bool)
        or not isinstance(weight_decay, (int, float))
        or weight_decay < 0
    ):
        raise ValueError(f"weight_decay: expected a number >= 0, got {weight_decay!r}")
    g = _generator(generator)
    dev = torch.device(device) if device is not None else x.device
    x, y = x.to(dev), y.to(dev)
    n = x.shape[0]

    if epochs is not None:

        def batches():
            for _ in range(epochs):
                order = torch.randperm(n, generator=g).to(dev)  # (n,)
                for i in range(0, n, batch_size):
                    yield order[i : i + batch_size]
    else:

        def batches():
            for _ in range(steps):
                yield torch.randint(n, (batch_size,), generator=g).to(
                    dev
                )  # (batch_size,)

    opt = torch.optim.Adam(model.parameters(), lr=lr, weight_decay=weight_decay)
    model.train()
    losses = []
    for b in batches():
        out = model(x[b])
        logits = out[0] if isinstance(out, tuple) else out  # (B, classes)
        loss = nn.functional.cross_entropy(logits, y[b])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        losses.append(loss.detach())
    model.eval()
    return torch.stack(losses).tolist()
