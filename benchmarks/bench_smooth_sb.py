"""lib.smooth_sb: the propagation step and the chain solver against the naive
references of lib/smooth_sb/reference.py (explicit joint kernel, loops), the
exponential-domain step against the plain log-sum-exp contraction at the chapter's 2-D
size, and the two-marginal case against the textbook Sinkhorn iteration, on the same
inputs. (POT,
the official code's OT library, is not installed in this project.)"""

import pathlib
import sys

import numpy as np
import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

from harness import compare  # noqa: E402

from lib import smooth_sb as S  # noqa: E402
from lib.smooth_sb.reference import (  # noqa: E402
    chain_bruteforce,
    propagate_naive,
    sinkhorn_naive,
)
from lib.smooth_sb.solver import ExpKernel, _propagate_lse  # noqa: E402


def main():
    rows = []
    for d, n, M in ((1, 10, 6), (2, 6, 3)):
        tr = S.simulate_tracks(n, 3, d, ell=1.0, seed=0)
        lk, _ = S.smooth_log_kernels(tr.obs, tr.times, 2.0, 1.0, M=M, sub=2)
        f = torch.randn((n,) + (M,) * d, dtype=torch.float64)
        fn, kn = f.numpy(), lk[0].numpy()
        rows.append(
            compare(
                f"one message step, d={d}, n={n}, M={M}",
                lambda: S.propagate(f, lk[0]),
                lambda: propagate_naive(fn, kn),
                repeats=3,
            )
        )
    # the chapter's 2-D size: exponential-domain batched products vs log-sum-exp
    tr = S.simulate_tracks(25, 1, 2, ell=1.3, seed=0)
    lk, _ = S.smooth_log_kernels(tr.obs, tr.times, 3.0, 1.0, M=12, sub=2, width=5.0)
    ker = ExpKernel.build(lk[0])
    f = torch.randn((25, 12, 12), dtype=torch.float64)
    rows.append(
        compare(
            "one message step, d=2, n=25, M=12: exp-domain matmul vs log-sum-exp",
            lambda: S.propagate(f, ker),
            lambda: torch.logsumexp(_propagate_lse(f, lk[0]), 0),
            repeats=3,
        )
    )
    tr = S.simulate_tracks(3, 2, 1, ell=1.0, seed=1)
    lk, lp = S.smooth_log_kernels(tr.obs, tr.times, 1.0, 1.0, M=2, sub=2)
    rows.append(
        compare(
            "chain solver vs path enumeration, n=3, K=3, M=2 (200 sweeps)",
            lambda: S.chain_sinkhorn(lk, lp, sweeps=200, tol=1e-300),
            lambda: chain_bruteforce(lk.numpy(), lp.numpy(), sweeps=200),
            repeats=1,
        )
    )
    tr = S.simulate_tracks(200, 1, 1, ell=1.0, seed=2)
    lk, lp = S.brownian_log_kernels(tr.obs, tr.times, 3.0)
    Kmat, a = np.exp(lk[0, 0, :, 0, :, 0].numpy()), np.ones(200) / 200
    rows.append(
        compare(
            "two marginals, n=200: chain solver (log) vs Sinkhorn (prob.), 200 sweeps",
            lambda: S.chain_sinkhorn(lk, lp, sweeps=200, tol=1e-300),
            lambda: sinkhorn_naive(Kmat, a, a, iters=200),
            repeats=3,
        )
    )
    return rows


if __name__ == "__main__":
    from harness import table

    torch.set_num_threads(1)
    print(table(main()))
