"""A progress bar for a person; silent under nbval, ``make execute`` and
``TQDM_DISABLE=1``."""

from __future__ import annotations

import os


def progress(iterable, total: int | None = None, desc: str | None = None):
    """Wrap ``iterable`` in a tqdm bar unless ``TQDM_DISABLE`` is set (the Makefile sets
    it for nbval and execution, so stored outputs stay stable)."""
    if os.environ.get("TQDM_DISABLE", "") not in ("", "0"):
        return iterable
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return iterable
    return tqdm(iterable, total=total, desc=desc, leave=False)
