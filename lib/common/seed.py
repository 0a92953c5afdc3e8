"""One tested place for determinism (random, numpy, torch CPU and CUDA)."""

from __future__ import annotations

import os
import random

import numpy as np
import torch


def seed_everything(seed: int, deterministic: bool = True) -> torch.Generator:
    """Seed Python, NumPy and torch (all devices); return a CPU ``torch.Generator``
    seeded alike.

    With ``deterministic=True`` cuDNN autotuning and TF32 are switched off and torch is
    asked for deterministic kernels (``warn_only`` so that an op without a deterministic
    variant still runs). Draw random data on the CPU with the returned generator, then
    move it, so CPU and GPU runs see the same data.
    """
    if not isinstance(seed, int) or isinstance(seed, bool):
        raise TypeError(f"seed: expected an int, got {type(seed).__name__}")
    if seed < 0:
        raise ValueError(f"seed: expected a non-negative int, got {seed}")
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)  # also seeds every CUDA device
    if deterministic:
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
        torch.backends.cudnn.benchmark = False
        torch.backends.cudnn.deterministic = True
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        torch.use_deterministic_algorithms(True, warn_only=True)
    return make_generator(seed)


def make_generator(seed: int, device: str | torch.device = "cpu") -> torch.Generator:
    """A fresh ``torch.Generator`` on ``device`` seeded with ``seed``."""
    if not isinstance(seed, int) or isinstance(seed, bool):
        raise TypeError(f"seed: expected an int, got {type(seed).__name__}")
    g = torch.Generator(device=device)
    g.manual_seed(seed)
    return g
