"""Choose each arm's learning rate on the tuning seeds (lib.effort.TUNING_SEEDS):
the same grid for every arm, the lowest validation loss on the seen generator.

    python benchmarks/effort_tuning.py            # both tuning seeds
    python benchmarks/effort_tuning.py --seed 0   # one seed (prints its table)
    python benchmarks/effort_tuning.py --arms effort_reg   # some arms only
    python benchmarks/effort_tuning.py --apply    # also write the chosen rates into
                                                  # lib/effort/__init__.py (LRS)
"""

from __future__ import annotations

import argparse
import pathlib
import re

from lib.common import set_threads
from lib.effort import ARMS, SMOKE, TUNING_SEEDS, load_foundation, tune

GRID = (1e-3, 3e-3, 1e-2, 3e-2, 1e-1)


def main(argv=None):
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--arms", nargs="+", default=list(ARMS), choices=ARMS)
    parser.add_argument("--apply", action="store_true")
    args = parser.parse_args(argv)
    set_threads(1)
    seeds = TUNING_SEEDS if args.seed is None else (args.seed,)
    best, table = tune(SMOKE, seeds, load_foundation(), GRID, arms=args.arms)
    print("validation loss (seen generator), mean over seeds", seeds)
    print(f"{'arm':11s}" + "".join(f"{lr:>9g}" for lr in GRID) + "   chosen")
    for arm in args.arms:
        row = "".join(f"{table[arm][lr]:9.4f}" for lr in GRID)
        print(f"{arm:11s}{row}   {best[arm]:g}")
    if args.apply:
        path = pathlib.Path(__file__).resolve().parents[1] / "lib/effort/__init__.py"
        lrs = dict(SMOKE.lrs, **best)
        body = ", ".join(f'"{a}": {lrs[a]:g}' for a in ARMS)
        src = re.sub(
            r"LRS = \{.*?\}  # fmt: skip",
            "LRS = {\n    " + body + ",\n}  # fmt: skip",
            path.read_text(),
            flags=re.S,
        )
        path.write_text(src)


if __name__ == "__main__":
    main()
