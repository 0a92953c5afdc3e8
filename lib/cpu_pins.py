"""Pin the CPU's numeric kernels to AVX2, so that stored chapter outputs do not depend
on the machine kind.

Training arithmetic depends on which vector kernels a CPU gets: the same chapter printed
different last digits (and, on one seed, a different outcome) on Intel machines with
AVX-512 than on AMD machines with AVX2. :func:`pin` asks torch's own kernels
(``ATEN_CPU_CAPABILITY``), MKL (``MKL_CBWR``, its conditional numerical reproducibility
mode) and oneDNN (``ONEDNN_MAX_CPU_ISA``) for their AVX2 code paths, which every x86-64
machine of the last decade has; on an AVX2 machine nothing changes. The settings are
read when torch first runs an operation, so :func:`pin` must run before
``import torch``: the root ``conftest.py`` (pytest and the kernels nbval starts),
``scripts/execute.py``, ``scripts/run_claims.py`` and the Makefile do it. This module
imports nothing heavy.
A value already in the environment wins (set ``ATEN_CPU_CAPABILITY=avx512`` for speed
when digits do not matter).
"""

import os
from collections.abc import MutableMapping

PINS = {"ATEN_CPU_CAPABILITY": "avx2", "MKL_CBWR": "AVX2", "ONEDNN_MAX_CPU_ISA": "AVX2"}


def pin(env: MutableMapping | None = None) -> dict:
    """Set each of :data:`PINS` in ``env`` (default ``os.environ``) unless it is already
    set; return the values now in force."""
    env = os.environ if env is None else env
    if not isinstance(env, MutableMapping):
        raise TypeError(f"env: expected a mutable mapping, got {type(env).__name__}")
    for key, value in PINS.items():
        env.setdefault(key, value)
    return {key: env[key] for key in PINS}
