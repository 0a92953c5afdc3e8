"""Choosing the learning rate on the tuning seeds, before the claims are judged.

``python -m lib.gsm.tune`` trains the chapter's whole grid (:data:`~lib.gsm.SPECS`)
on :data:`~lib.gsm.claims.TUNING_SEEDS` at each rate of :data:`RATES` (the same rate
for every model), prints the mean test accuracy over the grid per rate and, at the
best rate, each claim's verdict on the tuning seeds; ``--write`` stores both in
``lib/gsm/tuning.json``, which :mod:`lib.gsm.claims` reads (the rate the presets use
and the verdicts the claims expect).

``python -m lib.gsm.tune --images`` does the same for the MNIST models
(:mod:`lib.gsm.images`): every model gets the same grid :data:`IMG_RATES`, trained on
the tuning seeds' training digits and scored on their *validation* digits (MNIST's
validation split, never the test digits); each model keeps its own best rate, and the
benchmarks claim's verdict on the tuning seeds' validation digits at those rates is the
verdict it expects (``--write``: ``lib/gsm/tuning_images.json``).
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
#: the learning rates tried for each MNIST model (the same grid for every model)
IMG_RATES = (3e-3, 1e-2, 3e-2)
IMG_TUNING_FILE = pathlib.Path(__file__).with_name("tuning_images.json")


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


def tune_images(cfg, seeds, rates=IMG_RATES, device="cpu") -> dict:
    """Each MNIST model's mean validation accuracy per rate on ``seeds``, its best
    rate, and the benchmarks claim's verdict on ``seeds``' validation digits at the
    best rates."""
    from . import Config
    from .claims import judge_images
    from .images import IMG_MODELS, evaluate_images, train_images

    check_instance("cfg", cfg, Config, "a lib.gsm.Config")
    seeds = list(seed_list(seeds))
    check_numbers("rates", rates, check_positive)
    scores, accs = {}, {}
    for name in IMG_MODELS:
        for lr in rates:
            res = train_images(name, cfg, seeds, lr=lr, device=device)
            acc = evaluate_images(name, res["state"], cfg, seeds, split="valid")["acc"]
            accs[name, lr] = dict(zip(seeds, acc))
            scores.setdefault(name, {})[f"{lr:g}"] = round(float(np.mean(acc)), 4)
            sys.stderr.write(f"{name} lr {lr:g}: {np.mean(acc):.4f}\n")
    best = {n: max(rates, key=lambda r: scores[n][f"{r:g}"]) for n in IMG_MODELS}
    result = judge_images({n: accs[n, best[n]] for n in IMG_MODELS})
    return {
        "seeds": seeds,
        "split": "valid",
        "scores": scores,
        "lr": best,
        "verdicts": {result.claim.id: result.verdict},
    }


def main(argv=None) -> int:
    from . import SMOKE
    from .claims import TUNING_SEEDS

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--write", action="store_true", help="store the tuning file")
    ap.add_argument(
        "--images", action="store_true", help="tune the MNIST models instead"
    )
    args = ap.parse_args(argv)
    set_threads(1)  # the small stacked models train fastest on one thread
    t0 = time.perf_counter()
    run = tune_images if args.images else tune
    out = run(dataclasses.replace(SMOKE), TUNING_SEEDS)
    out["seconds"] = round(time.perf_counter() - t0, 1)
    text = json.dumps(out, indent=1)
    sys.stdout.write(text + "\n")
    if args.write:
        (IMG_TUNING_FILE if args.images else TUNING_FILE).write_text(text + "\n")
    return 0


if __name__ == "__main__":
    import os

    from lib.cpu_pins import PINS, pin

    if any(k not in os.environ for k in PINS):
        # torch loaded before this file ran: start again with the book's AVX2 kernels
        # pinned, as make claims runs, so that the tuning verdicts do not depend on
        # the machine kind
        pin()
        os.execv(sys.executable, [sys.executable, "-m", "lib.gsm.tune", *sys.argv[1:]])
    sys.exit(main())
