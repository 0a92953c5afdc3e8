"""lib.brokerage: the vectorised brokers (all runs and learners in one loop over rounds)
against the naive per-run, per-round references of lib/brokerage/reference.py, on the
same markets."""

import pathlib
import sys

import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

from harness import compare  # noqa: E402

from lib import brokerage as B  # noqa: E402
from lib.brokerage.reference import ridge_broker_naive, running_mean_naive  # noqa: E402


def main():
    runs, T, d = 32, 500, 5
    mk = B.make_market(runs, T, d, 2.0, "uniform", seed=0)
    learners = [
        B.Learner("full"),
        B.two_bit_learner(d, 2.0, T),
        B.two_bit_learner(d, 2.0, T, False),
        B.Learner("eps_greedy"),
        B.Learner("greedy"),
    ]
    arrays = [x.numpy() for x in (mk.contexts, mk.V, mk.W, mk.U, mk.coin)]

    def naive_brokers():
        return [
            ridge_broker_naive(*(a[r] for a in arrays), l.kind, l.tau)
            for l in learners
            for r in range(runs)
        ]

    def naive_mean():
        return [running_mean_naive(arrays[1][r], arrays[2][r]) for r in range(runs)]

    rows = [
        compare(
            f"5 ridge brokers × {runs} runs × {T} rounds (d={d})",
            lambda: B.simulate(mk, learners),
            naive_brokers,
            repeats=3,
        ),
        compare(
            f"non-contextual running mean, {runs} runs × {T} rounds",
            lambda: B.running_mean(mk.V, mk.W),
            naive_mean,
            repeats=3,
        ),
    ]
    return rows


if __name__ == "__main__":
    from harness import table

    torch.set_num_threads(1)
    print(table(main()))
