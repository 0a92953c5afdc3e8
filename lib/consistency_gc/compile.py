"""``torch.compile`` where it helps, skipped with ``LIB_NO_COMPILE=1``."""

from __future__ import annotations

import os

import torch


def maybe_compile(fn, **kwargs):
    """Return ``torch.compile(fn, **kwargs)``, or ``fn`` itself when
    ``LIB_NO_COMPILE=1``.

    Compiled code must match eager: every use is covered by a test that compares the
    two.
    """
    if not callable(fn):
        raise TypeError(f"fn: expected a callable, got {type(fn).__name__}")
    if os.environ.get("LIB_NO_COMPILE", "0") not in ("", "0"):
        return fn
    return torch.compile(fn, **kwargs)
