"""consistency_gc: the cost of generator-augmented (GC) pairs and of batching members.

Rows (ratio = reference / ours, > 1 means ours is faster):
1. a training step with GC pairs (μ = 0.5: one extra EMA forward) against an IC step —
   the ratio is
   IC / GC, so its inverse is GC's overhead;
2. one batched step of a 12-member ensemble against 12 single-member steps in a loop
   (same work);
3. the denoiser's forward under ``maybe_compile`` against eager (skipped where
   compilation fails).

Usage: python benchmarks/bench_consistency_gc.py   (or `make bench`, which collects
every bench_*.py)
"""

from __future__ import annotations

import pathlib
import sys

import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
from harness import compare, table  # noqa: E402

import lib.consistency_gc as cg  # noqa: E402
from lib.consistency_gc.compile import maybe_compile  # noqa: E402

TOY = cg.TrainConfig(hidden=64)
MNIST = cg.SMOKE.image


def _trainer(cfg, d, mu, seed=0):
    return cg.Trainer(cfg, d, mu, seed=seed)


def _stepper(trainer, sample):
    g = torch.Generator().manual_seed(0)
    batch = trainer.draw(sample, g)
    return lambda: trainer.step(batch)


def main(repeats: int = 30) -> list[dict]:
    gmm = cg.two_gaussians()
    x = torch.rand(2000, 196) * 2 - 1

    def mnist(n, g):
        return x[torch.randint(len(x), (n,), generator=g)]

    rows = []
    for name, cfg, d, sample in (
        ("toy MLP", TOY, 2, gmm.sample),
        ("MNIST 14×14 MLP", MNIST, 196, mnist),
    ):
        gc = _stepper(_trainer(cfg, d, [0.5]), sample)
        ic = _stepper(_trainer(cfg, d, [0.0]), sample)
        rows.append(
            compare(
                f"train step, {name}: GC μ=0.5 (ours) vs IC (ref); overhead = 1/ratio",
                gc,
                ic,
                repeats=repeats,
            )
        )
    ens = _stepper(_trainer(TOY, 2, [0.0, 0.5, 1.0] * 4), gmm.sample)
    singles = [_stepper(_trainer(TOY, 2, [m]), gmm.sample) for m in [0.0, 0.5, 1.0] * 4]
    rows.append(
        compare(
            "toy: one 12-member batched step (ours) vs 12 single steps (ref)",
            ens,
            lambda: [s() for s in singles],
            repeats=repeats,
        )
    )
    tr = _trainer(TOY, 2, [0.0, 0.5, 1.0] * 4)
    xb = torch.randn(12, 256, 2)
    sb = torch.full((12, 256), 0.5)
    try:
        fast = maybe_compile(tr.ema)
        fast(xb, sb)
        rows.append(
            compare(
                "toy denoiser forward, 12 members: maybe_compile (ours) vs eager (ref)",
                lambda: fast(xb, sb),
                lambda: tr.ema(xb, sb),
                repeats=repeats,
            )
        )
    # noqa: BLE001 — no C++ toolchain etc.: report and skip the row
    except Exception as err:
        print(f"compile row skipped: {type(err).__name__}: {err}", file=sys.stderr)
    return rows


if __name__ == "__main__":
    torch.set_num_threads(int(sys.argv[1]) if len(sys.argv) > 1 else 2)
    out = main()
    print(table(out))
    for r in out[:2]:
        print(
            f"GC overhead ({r['benchmark'].split(':')[0]}): {1 / r['speedup']:.2f}× an "
            f"IC step"
        )
