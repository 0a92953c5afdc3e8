"""lib.memorization: one training step of a 12-model ensemble with grouped weights
against 12 separate steps through the per-model loop of lib/memorization/reference.py,
and the vectorised optimal denoiser against its loop, on the same inputs."""

import pathlib
import sys

import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

from harness import compare  # noqa: E402

from lib import memorization as Mz  # noqa: E402
from lib.common.edm import precondition  # noqa: E402
from lib.memorization.reference import (  # noqa: E402
    ensemble_forward_naive,
    optimal_denoiser_naive,
)


def main():
    g = torch.Generator().manual_seed(0)
    M, B = 12, 64
    model = Mz.EnsembleMLP(list(range(M)))
    x = torch.rand(M, B, 64, generator=g) * 2 - 1
    sigma = Mz.sample_sigma((M, B), generator=g)
    eps = torch.randn(M, B, 64, generator=g)
    sn = torch.full((M,), 0.5)

    def grouped():
        model.zero_grad()
        Mz.ambient_loss(model.denoise, x, x, sigma, sn, eps).mean(1).sum().backward()

    def looped():  # the same network, one model at a time
        model.zero_grad()
        for m in range(M):

            def den(a, s, m=m):
                net = lambda u, c: ensemble_forward_naive(  # noqa: E731
                    _Slice(model, m), u, c
                )
                return precondition(net, a, s, 0.5, check=False)

            Mz.ambient_loss(
                den, x[m : m + 1], x[m : m + 1], sigma[m : m + 1], sn[m : m + 1],
                eps[m : m + 1],
            ).sum().backward()  # fmt: skip

    train = torch.rand(32, 64, generator=g) * 2 - 1
    q = torch.randn(50, 64, generator=g)
    return [
        compare(
            "ambient loss + backward, 12 models × 64 (grouped vs per-model loop)",
            grouped,
            looped,
            repeats=5,
        ),
        compare(
            "optimal denoiser, 50 queries × 32 images (softmax vs loop)",
            lambda: Mz.optimal_denoiser(q, torch.full((50,), 0.5), train),
            lambda: optimal_denoiser_naive(q, 0.5, train),
            repeats=3,
        ),
    ]


class _Slice:
    """Model m of an ensemble, seen as an ensemble of one (for the loop reference)."""

    def __init__(self, model, m):
        self.M = 1
        self.weights = [w[m : m + 1] for w in model.weights]
        self.biases = [b[m : m + 1] for b in model.biases]


if __name__ == "__main__":
    from harness import table

    torch.set_num_threads(1)
    print(table(main()))
