"""Our ℓ-ECT against the PyPI package ``ect`` (exact, numba), on the same ego graphs
and directions. The exact forms must agree exactly (checked before timing).

The package's kernels are numba-parallel (``prange``) and use every core by default;
on a shared machine that measured its thread contention more than its code, so both
sides run on one thread: ``NUMBA_NUM_THREADS=1`` is set before numba is imported (and
``numba.set_num_threads(1)`` after), and torch uses one thread.

What is timed (one thread, median of ``repeats`` runs after a warm-up): the exact
``edges`` ECT images, 64 directions × 64 thresholds, unnormalised, of the k-hop ego
graphs of all 1000 nodes of a cSBM graph (k = 1, 2). Two comparisons per k:

- **kernel**: the images from ego graphs already cut out. Ours: one batched
  :func:`lib.local_ect.ect` call on the disjoint union (``ego_batch``); the package: one
  ``ECT.calculate`` per prebuilt ``EmbeddedComplex`` (its API).
- **from the graph**: the images from (x, edge_index). Ours: :func:`local_ect`, ego
  extraction included; the package: the same vectorised ego extraction (``ego_batch``),
  building the 1000 ``EmbeddedComplex`` objects, then ``calculate`` on each.

    python benchmarks/bench_local_ect.py     # also writes results/local_ect_bench.json
"""

from __future__ import annotations

import os

os.environ["NUMBA_NUM_THREADS"] = "1"  # before numba (imported by ect) is loaded

import pathlib  # noqa: E402
import sys

import numpy as np  # noqa: E402
import torch  # noqa: E402

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


def _build_and_calculate(calc, xb, eb, batch, num):
    return [
        np.asarray(calc.calculate(cx))
        for cx in _reference_complexes(xb, eb, batch, num)
    ]


def main(
    num_egos: int = 1000, num_dirs: int = 64, num_thresh: int = 64, repeats: int = 5
) -> list[dict]:
    import ect as ect_pkg
    import numba

    numba.set_num_threads(1)
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

        def reference_from_graph():
            xb2, eb2, b2 = le.ego_batch(x, ei, k)
            return _build_and_calculate(calc, xb2, eb2, b2, num_egos)

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
            compare(
                f"kernel (ego graphs given): {size}", ours, reference, repeats=repeats
            )
        )
        rows.append(
            compare(
                f"from (x, edge_index), inputs built: {size}",
                ours_local,
                reference_from_graph,
                repeats=repeats,
            )
        )
    return rows


if __name__ == "__main__":
    import json
    import platform

    rows = main()
    print(table(rows))
    out = pathlib.Path(__file__).resolve().parents[1] / "results"
    (out / "local_ect_bench.json").write_text(
        json.dumps(
            {
                "what": "exact edges ECT, 64x64, of the k-hop ego graphs of all 1000 "
                "nodes of a cSBM graph; one thread for torch and for the package's "
                "numba kernels (NUMBA_NUM_THREADS=1); median of 5 runs",
                "numba_threads": __import__("numba").get_num_threads(),
                "machine": platform.processor() or platform.machine(),
                "torch": torch.__version__,
                "rows": rows,
            },
            indent=1,
            ensure_ascii=False,
        )
        + "\n"
    )
