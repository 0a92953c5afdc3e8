"""lib.effort: the rank-based AUC against scikit-learn's roc_auc_score and the
all-pairs loop, the batched block DCT against scipy's per-block dctn, and the
effective rank (one SVD) against numpy's covariance eigh, on the same inputs."""

import pathlib
import sys

import numpy as np
import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

from harness import compare  # noqa: E402

from lib import effort as E  # noqa: E402
from lib.effort.reference import (  # noqa: E402
    auc_pairs,
    dct_fake_scipy,
    effective_rank_eig,
)


def main():
    from sklearn.metrics import roc_auc_score

    g = torch.Generator().manual_seed(0)
    s = torch.randn(4000, generator=g)
    y = (torch.rand(4000, generator=g) < 0.5).long()
    x = torch.rand(200, 1, 16, 16, generator=g)
    f = torch.randn(3000, 32, generator=g)
    return [
        compare(
            "AUC, 4000 scores (rank statistic vs scikit-learn)",
            lambda: E.auc(s, y),
            lambda: roc_auc_score(y.numpy(), s.numpy()),
            repeats=5,
        ),
        compare(
            "AUC, 4000 scores (rank statistic vs all pairs)",
            lambda: E.auc(s, y),
            lambda: auc_pairs(s, y),
            repeats=3,
        ),
        compare(
            "JPEG-style DCT, 200 patches 16×16 (batched vs scipy per block)",
            lambda: E.dct_fake(x, 30),
            lambda: dct_fake_scipy(x, 30),
            repeats=3,
        ),
        compare(
            "effective rank, 3000 × 32 (SVD vs numpy cov + eigh)",
            lambda: E.effective_rank(f),
            lambda: effective_rank_eig(np.asarray(f)),
            repeats=5,
        ),
    ]


if __name__ == "__main__":
    from harness import table

    torch.set_num_threads(1)
    print(table(main()))
