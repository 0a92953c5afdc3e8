"""lib.clip_icm: the ICM matrix and its top-k basis (two matmuls and one eigh) against
the outer-product loop of lib/clip_icm/reference.py, the batched interventions against
the per-image numpy loop, and the scikit-learn probe against the same objective by
torch's L-BFGS, on the same inputs."""

import pathlib
import sys

import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

from harness import compare  # noqa: E402

from lib import clip_icm as Ci  # noqa: E402
from lib.clip_icm.data import H, W  # noqa: E402
from lib.clip_icm.reference import (  # noqa: E402
    augment_naive,
    fit_probe_naive,
    invariant_basis_naive,
)


def main():
    g = torch.Generator().manual_seed(0)
    z = torch.randn(2000, 64, generator=g, dtype=torch.float64)
    d = torch.randn(1000, 64, generator=g, dtype=torch.float64)
    x = torch.rand(500, 3, H, W, generator=g)
    zp = torch.randn(3000, 32, generator=g, dtype=torch.float64)
    yp = zp[:, :10].argmax(1)
    return [
        compare(
            "ICM basis, 2000 + 1000 rows × 64 (matmul + eigh vs outer-product loop)",
            lambda: Ci.invariant_basis(z, d, 10.0, 16),
            lambda: invariant_basis_naive(z, d, 10.0, 16),
            repeats=3,
        ),
        compare(
            "interventions, 500 images (batched vs per-image numpy)",
            lambda: Ci.augment(x, torch.Generator().manual_seed(1)),
            lambda: augment_naive(x, torch.Generator().manual_seed(1)),
            repeats=3,
        ),
        compare(
            "linear probe, 3000 × 32, 10 classes (scikit-learn vs torch L-BFGS)",
            lambda: Ci.fit_probe(zp, yp, 0.3),
            lambda: fit_probe_naive(zp, yp, 0.3),
            repeats=3,
        ),
    ]


if __name__ == "__main__":
    from harness import table

    torch.set_num_threads(1)
    print(table(main()))
