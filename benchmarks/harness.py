"""A small benchmark harness: our kernel and its reference, same inputs, same process.

    from harness import compare
    row = compare("ect, 1000 ego graphs", ours, ref, args=(x, dirs), repeats=20)

Each function is warmed up once, then timed ``repeats`` times; a row reports both
medians and the ratio reference/ours (> 1 means ours is faster). Absolute times are only
meaningful on the machine that produced them (CUDA work is synchronised before each
clock read).
"""

from __future__ import annotations

import statistics
import time

import torch


def _sync():
    if torch.cuda.is_available():
        torch.cuda.synchronize()


def time_fn(fn, args=(), kwargs=None, repeats: int = 10, warmup: int = 1) -> float:
    """Median wall time of ``fn(*args, **kwargs)`` in seconds."""
    if not callable(fn):
        raise TypeError(f"fn: expected a callable, got {type(fn).__name__}")
    if not isinstance(repeats, int) or repeats < 1:
        raise ValueError(f"repeats: expected a positive int, got {repeats!r}")
    kwargs = kwargs or {}
    for _ in range(warmup):
        fn(*args, **kwargs)
    times = []
    for _ in range(repeats):
        _sync()
        t0 = time.perf_counter()
        fn(*args, **kwargs)
        _sync()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def compare(
    name: str,
    ours,
    reference,
    args=(),
    kwargs=None,
    repeats: int = 10,
    ref_args=None,
    ref_kwargs=None,
) -> dict:
    """Time ``ours`` and ``reference`` on the same inputs; return a row with medians and
    the ratio."""
    t_ours = time_fn(ours, args, kwargs, repeats)
    t_ref = time_fn(
        reference,
        args if ref_args is None else ref_args,
        kwargs if ref_kwargs is None else ref_kwargs,
        repeats,
    )
    return {
        "benchmark": name,
        "ours_ms": 1e3 * t_ours,
        "reference_ms": 1e3 * t_ref,
        "speedup": t_ref / t_ours if t_ours > 0 else float("inf"),
    }


def table(rows: list[dict]) -> str:
    """A markdown table of ``compare`` rows."""
    lines = [
        "| benchmark | ours (ms) | reference (ms) | reference / ours |",
        "|---|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['benchmark']} | {r['ours_ms']:.2f} | {r['reference_ms']:.2f} | "
            f"{r['speedup']:.2f}× |"
        )
    return "\n".join(lines)
