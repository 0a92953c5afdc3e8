"""WATCH: our batched weighted p-value + Composite Jumper pipeline (all streams at once)
against a naive per-step loop (re-normalise and re-scan the calibration set each step,
numpy) and against
``online-cp``'s jumpers fed the same p-values.

Usage: python benchmarks/bench_wctm.py   (or `make bench`, which collects every
bench_*.py)
"""

from __future__ import annotations

import math
import pathlib
import sys

import numpy as np
import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
from harness import compare, table  # noqa: E402

from lib.wctm import JUMPS, composite_jumper, weighted_pvalues  # noqa: E402
from lib.wctm.reference import naive_jumper, naive_weighted  # noqa: E402


def inputs(S=20, n=500, T=500, R=50, seed=0):
    g = torch.Generator().manual_seed(seed)
    cal = torch.rand(S, n, generator=g, dtype=torch.float64)
    test = torch.rand(S, T, generator=g, dtype=torch.float64) * 1.2
    cal_w = torch.rand(S, R, n, generator=g, dtype=torch.float64) + 0.5
    test_w = torch.rand(S, T, generator=g, dtype=torch.float64) + 0.5
    u = torch.rand(S, T, generator=g, dtype=torch.float64)
    block = torch.div(torch.arange(T), T // R, rounding_mode="floor").clamp(max=R - 1)
    return cal, cal_w, test, test_w, u, block


def ours(cal, cal_w, test, test_w, u, block, alpha=0.1):
    return composite_jumper(weighted_pvalues(cal, cal_w, test, test_w, u, alpha, block))


def naive_pvalues(cal, cal_w, test, test_w, u, block, alpha=0.1):
    """The definition, one stream and one step at a time (lib/wctm/reference.py)."""
    return np.stack(
        [
            naive_weighted(cal[s], cal_w[s, block], test[s], test_w[s], u[s], alpha)
            for s in range(test.shape[0])
        ]
    )


def naive(cal, cal_w, test, test_w, u, block):
    return naive_jumper(naive_pvalues(cal, cal_w, test, test_w, u, block))


def online_cp_jumpers(p):
    from online_cp.martingale import SimpleJumper

    out = np.empty_like(p)
    for s in range(p.shape[0]):
        js = [
            SimpleJumper(J=J, E=[-1.0, 0.0, 1.0], store_p_values=False) for J in JUMPS
        ]
        for t in range(p.shape[1]):
            for m in js:
                m.update(float(p[s, t]))
            out[s, t] = np.logaddexp.reduce([m.logM for m in js]) - math.log(len(js))
    return out


def main():
    torch.set_num_threads(1)
    args = inputs()
    np_args = tuple(a.numpy() for a in args)
    ref = naive(*np_args)
    got = ours(*args).numpy()
    assert np.allclose(got, ref, atol=1e-8), (
        "batched pipeline disagrees with the naive loop"
    )
    rows = [
        compare(
            "weighted p-values + Composite Jumper, 20 streams x 500 steps, n_cal = "
            "500: vs naive loop",
            ours,
            naive,
            args=args,
            ref_args=np_args,
            repeats=3,
        )
    ]
    p = weighted_pvalues(*args[:5], 0.1, args[5])
    try:
        oc = online_cp_jumpers(p.numpy())
        assert np.allclose(oc, composite_jumper(p).numpy(), atol=1e-8)
        rows.append(
            compare(
                "Composite Jumper only, 20 streams x 500 p-values: vs online-cp "
                "SimpleJumpers",
                composite_jumper,
                online_cp_jumpers,
                args=(p,),
                ref_args=(p.numpy(),),
                repeats=3,
            )
        )
    except ImportError:
        pass
    return rows


if __name__ == "__main__":
    print(table(main()))
