"""Device selection and CPU thread count."""

from __future__ import annotations

import os

import torch


def device(name: str | torch.device | None = None) -> torch.device:
    """Return the device chapters compute on.

    Order: the explicit ``name`` (a str, or a ``torch.device`` passed through after the
    CUDA check); else the ``BOOK_DEVICE`` environment variable (``cpu``, ``cuda``,
    ``cuda:1`` …); else CUDA when available; else the CPU.
    """
    if isinstance(name, torch.device):
        name = str(name)
    if name is None:
        name = os.environ.get("BOOK_DEVICE") or (
            "cuda" if torch.cuda.is_available() else "cpu"
        )
    if not isinstance(name, str):
        raise TypeError(
            f"name: expected a str such as 'cpu' or 'cuda', got {type(name).__name__}"
        )
    dev = torch.device(name)
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"name: device {name!r} requested but CUDA is not available")
    return dev


def set_threads(n: int | None = None) -> int:
    """Set torch's intra-op CPU threads (``BOOK_THREADS`` overrides ``n``); return the
    count in use.

    Small models on this 2-core machine run several times faster on one thread (see the
    house style), so chapters call this once in their setup cell with the measured best
    value.
    """
    env = os.environ.get("BOOK_THREADS")
    if env:
        n = int(env)
    if n is not None:
        if not isinstance(n, int) or isinstance(n, bool) or n < 1:
            raise ValueError(f"n: expected a positive int, got {n!r}")
        torch.set_num_threads(n)
    return torch.get_num_threads()
