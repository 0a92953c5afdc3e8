"""lib.egf: the batched closed-form star inflow and the binned FFT kernel density
estimate against the naive references of lib/egf/reference.py (a loop over points and
maps; a loop over points, centres and periodic images), on the same inputs."""

import pathlib
import sys

import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

from harness import compare  # noqa: E402

from lib import egf as E  # noqa: E402
from lib.egf.experiment import binned_kde  # noqa: E402
from lib.egf.reference import kde_naive, star_inflow_naive  # noqa: E402


def main():
    torch.manual_seed(0)
    model = E.EGF(E.make_maps("sl2"), width=32, depth=3)
    x = torch.rand(
        200, 2, dtype=torch.float64, generator=torch.Generator().manual_seed(0)
    )
    c = E.sample_target("mixture", 200, torch.Generator().manual_seed(1))
    g = E.grid_points(32)

    def fast_inflow():
        with torch.no_grad():
            return model.star_inflow(x)

    return [
        compare(
            "star inflow, 4 maps × 200 points (closed form, batched)",
            fast_inflow,
            lambda: star_inflow_naive(model, x),
            repeats=3,
        ),
        compare(
            "wrapped KDE, 200 samples on a 32² grid (binned FFT vs loop)",
            lambda: binned_kde(c, 0.05, 32),
            lambda: kde_naive(g.numpy(), c.numpy(), 0.05),
            repeats=1,
        ),
    ]


if __name__ == "__main__":
    from harness import table

    torch.set_num_threads(1)
    print(table(main()))
