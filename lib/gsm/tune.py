"""Choosing the learning rate on the tuning seeds, before the claims are judged.

``python -m lib.gsm.tune`` trains the chapter's whole grid (:data:`~lib.gsm.SPECS`)
on :data:`~lib.gsm.claims.TUNING_SEEDS` at each rate of :data:`RATES` (the same rate
for every model), prints the mean test accuracy over the grid per rate and, at the
best rate, each claim's verdict on the tuning seeds; ``--write`` stores both in
``lib/gsm/tuning.json``, which :mod:`lib.gsm.claims` reads (the rate the presets use
and the verdicts the claims expect).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import pathlib
import sys
import time

import numpy as np

from lib.common import check_instance, check_numbers, check_positive, set_threads
from lib.common.claims import seed_list

#: the learning rates tried (the same for every model)
RATES = (1e-3, 3e-3, 1e-2, 3e-2)
TUNING_FILE = pathlib.Path(__file__).with_name("tuning.json")


def tune(cfg, seeds, rates=RATES, device="cpu") -> dict:
    """Mean test accuracy over the grid for each rate on ``seeds``, the best rate,
    and the claims' verdicts on ``seeds`` at that rate."""
    from . import Config
    from .claims import judge, measure_from_grid
    from .experiment import run_grid

    check_instance("cfg", cfg, Config, "a lib.gsm.Config")
    seeds = list(seed_list(seeds))
    check_numbers("rates", rates, check_positive)
    scores, grids = {}, {}
    for lr in rates:
        grid = run_grid(cfg, seeds, device=device, lr=lr)
        grids[lr] = grid
        scores[lr] = float(
            np.mean([v for per in grid["acc"].values() for v in per.values()])
        )
        sys.stderr.write(f"lr {lr:g}: {scores[lr]:.4f}\n")
    best = max(scores, key=scores.get)
    results = judge(measure_from_grid(grids[best]["acc"]))
    return {
        "seeds": seeds,
        "scores": {f"{lr:g}": round(v, 4) for lr, v in scores.items()},
        "lr": best,
        "verdicts": {r.claim.id: r.verdict for r in results if r.summary is not None},
    }


def main(argv=None) -> int:
    from . import SMOKE
    from .claims import TUNING_SEEDS

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--write", action="store_true", help="store lib/gsm/tuning.json")
    args = ap.parse_args(argv)
    set_threads(1)  # the small stacked models train fastest on one thread
    t0 = time.perf_counter()
    out = tune(dataclasses.replace(SMOKE), TUNING_SEEDS)
    out["seconds"] = round(time.perf_counter() - t0, 1)
    text = json.dumps(out, indent=1)
    sys.stdout.write(text + "\n")
    if args.write:
        TUNING_FILE.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
