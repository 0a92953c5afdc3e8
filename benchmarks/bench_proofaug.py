"""lib.proofaug: the vectorised budget curve against its naive loop, and the cached
prover against an uncached one on the same ProofAug runs."""

import pathlib
import sys

import numpy as np
import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

from harness import compare  # noqa: E402

from lib import proofaug as PA  # noqa: E402
from lib.proofaug.reference import budget_curve_naive  # noqa: E402


def main():
    rng = np.random.default_rng(0)
    s, c = rng.random((500, 64)) < 0.05, rng.integers(1, 3, (500, 64))
    budgets = [1, 2, 4, 8, 16, 32, 64]
    probs = PA.make_problems(10, 0, PA.Prover(600, 1000))
    texts = [p.gold.replace("by algebra", "by sos") for p in probs]

    def run(prover):
        return [PA.proof_aug(p.stmt, t, prover).success for p, t in zip(probs, texts)]

    cached = PA.Prover(600, 1000)
    run(cached)
    return [
        compare(
            "budget curve, 500 problems x 64 proposals",
            lambda: PA.budget_curve(s, c, budgets),
            lambda: budget_curve_naive(s, c, budgets),
            repeats=3,
        ),
        compare(
            "ProofAug on 10 corrupted gold proofs: cached prover vs fresh",
            lambda: run(cached),
            lambda: run(PA.Prover(600, 1000)),
            repeats=3,
        ),
    ]


if __name__ == "__main__":
    from harness import table

    torch.set_num_threads(1)
    print(table(main()))
