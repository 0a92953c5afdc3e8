"""Our batched ECT against the PyPI package ``ect`` (exact, numba), on the same ego
graphs and directions. The exact forms must agree exactly (checked before timing); the
rows report the median times and the ratio reference / ours (> 1: ours is faster).

    python benchmarks/bench_local_ect.py          # or: make bench (all benchmarks)

The reference loops over the ego graphs (one ``ECT.calculate`` call per graph, the
package's API); building its ``EmbeddedComplex`` objects is done once, outside the
timing.
"""

from __future__ import annotations

import pathlib
import sys

import numpy as np
import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

from harness import compare, table  # noqa: E402

import lib.local_ect as le  # noqa: E402


def _ego_graphs(num_egos: int, k: int, seed: int = 0):
    """``num_egos`` k-hop ego graphs of a cSBM graph, as one batch (x_b, edges_b,
    batch)."""
    g = torch.Generator().manual_seed(seed)
    graph = le.csbm(num_egos, 0.3, degree=6.0, dim=2, generator=g)
    x = graph.x.double()
    return le.ego_batch(x, graph.edge_index, k) + (x, graph.edge_index)


def _reference_complexes(xb, eb, batch, num):
    import ect as ect_pkg

    xs, es = xb.numpy(), eb.numpy()
    b = batch.numpy()
    starts = np.searchsorted(b, np.arange(num))
    owner = b[es[0]]
    out = []
    for i in range(num):
        cx = ect_pkg.EmbeddedComplex()
        lo, hi = starts[i], (starts[i + 1] if i + 1 < num else len(b))
        for j in range(lo, hi):
            cx.add_node(j - lo, xs[j])
        for a, c in es[:, owner == i].T:
            cx.add_edge(int(a - lo), int(c - lo))
        out.append(cx)
    return out


def main(
    num_egos: int = 1000, num_dirs: int = 64, num_thresh: int = 64, repeats: int = 5
) -> list[dict]:
    import ect as ect_pkg

    torch.set_num_threads(1)
    rows = []
    for k in (1, 2):
        xb, eb, batch, x, ei = _ego_graphs(num_egos, k)
        v = le.random_directions(
            2, num_dirs, generator=torch.Generator().manual_seed(1), dtype=torch.float64
        )
        dirs = ect_pkg.Directions.from_vectors(v.T.numpy())
        v = torch.from_numpy(
            dirs.vectors.T.copy()
        )  # the package's (renormalised) copy: same directions
        t = le.thresholds(num_thresh, dtype=torch.float64)
        calc = ect_pkg.ECT(directions=dirs, thresholds=t.numpy())
        complexes = _reference_complexes(xb, eb, batch, num_egos)

        def ours():
            return le.ect(xb, v, t, edge_index=eb, batch=batch, num_graphs=num_egos)

        def ours_local():
            return le.local_ect(x, ei, k, v, t, ect_type="edges", normalize=False)

        def reference():
            return [np.asarray(calc.calculate(cx)) for cx in complexes]

        got, ref = ours(), np.stack(reference())  # (B, T, K) and (B, K, T)
        assert np.array_equal(got.numpy(), ref.transpose(0, 2, 1)), "exact ECTs differ"
        assert torch.equal(ours_local(), got), (
            "ℓ-ECT (sparse product) differs from the batched ECT"
        )
        size = (
            f"{num_egos} {k}-hop ego graphs ({xb.shape[0]} vertices, "
            f"{eb.shape[1]} edges), {num_dirs}×{num_thresh}"
        )
        rows.append(
            compare(f"exact ECT, batched: {size}", ours, reference, repeats=repeats)
        )
        rows.append(
            compare(
                f"ℓ-ECT from the whole graph: {size}",
                ours_local,
                reference,
                repeats=repeats,
            )
        )
    return rows


if __name__ == "__main__":
    print(table(main()))
