"""lib.gsm: our HAC (Kruskal single linkage restricted to the graph's edges) against
SciPy's single linkage on the same affinities (the same merge tree: tested in
tests/test_gsm.py), and the Hillis–Steele parallel scan against the sequential loop
(the same output, tested)."""

import pathlib
import sys

import numpy as np
import torch
from scipy.cluster.hierarchy import linkage
from scipy.spatial.distance import squareform

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

from harness import compare  # noqa: E402

from lib import gsm as G  # noqa: E402


def main():
    rng = np.random.default_rng(0)
    graphs = [G.make_graph("connectivity", 16, rng) for _ in range(50)]
    dists = [G.affinity_distances(g["adj"]) for g in graphs]

    def ours():
        return [G.hac_linkage(d) for d in dists]

    def scipy_single():
        out = []
        for d in dists:
            full = np.where(np.isfinite(d), d, 1e6)
            np.fill_diagonal(full, 0)
            out.append(linkage(squareform(full), method="single"))
        return out

    g = torch.Generator().manual_seed(0)
    a = torch.rand(8, 64, 16, 32, 4, generator=g)
    b = torch.randn(8, 64, 16, 32, 4, generator=g)
    return [
        compare(
            "HAC tree of 50 graphs, n = 16 (ours vs scipy single linkage)",
            ours,
            scipy_single,
            repeats=3,
        ),
        compare(
            "selective scan, (8, 64, T=16, 32, 4) (parallel vs sequential)",
            lambda: G.scan_parallel(a, b),
            lambda: G.scan_sequential(a, b),
            repeats=5,
        ),
    ]


if __name__ == "__main__":
    from harness import table

    torch.set_num_threads(1)
    print(table(main()))
