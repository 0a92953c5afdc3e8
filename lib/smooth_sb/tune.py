"""``python -m lib.smooth_sb.tune`` chooses, per dimension, the smooth SB's ℓ and
velocity-grid half-width and the Brownian SB's c on the tuning seeds, and writes
lib/smooth_sb/tuning.json (read by the chapter). ``--clouds`` adds the N-body and
hold-out grids (:func:`~lib.smooth_sb.clouds.tune_clouds`). ``--check`` then adds a
convergence check of the numerical settings at the chosen values: the same tuning seeds
with more velocity cells and twice the sweeps."""

import dataclasses
import json
import pathlib
import sys
import time

import numpy as np

from lib.common import set_threads

from . import SMOKE, TUNING_SEEDS, tune, tuned_config
from .clouds import tune_clouds
from .experiment import make_tracks, method_kwargs
from .tracking import correct_rates, track

TUNING_FILE = pathlib.Path(__file__).resolve().parent / "tuning.json"


def convergence(cfg, seeds) -> dict:
    """Mean 5-step and whole rates of the smooth SB on ``seeds`` at ``cfg``'s numerical
    settings and at finer ones (1.5× the cells, 2× the sweeps), per dimension."""
    finer = dataclasses.replace(
        cfg, M1=cfg.M1 * 3 // 2, M2=cfg.M2 * 3 // 2, sweeps=2 * cfg.sweeps
    )
    out = {}
    for d in (1, 2):
        row = {}
        for name, c in (("smoke", cfg), ("finer", finer)):
            rates = []
            for s in seeds:
                tr = make_tracks(c, d, s)
                kw = method_kwargs(c, "smooth_sb", d)
                rates.append(
                    correct_rates(
                        track(tr, "smooth_sb", seed=10 * s + 5 + d, **kw), tr.labels
                    )
                )
            row[name] = {
                m: float(np.mean([r[m] for r in rates])) for m in ("5-step", "whole")
            }
            row[name]["M"] = c.M1 if d == 1 else c.M2
            row[name]["sweeps"] = c.sweeps
        out[str(d)] = row
    return out


def main(argv) -> int:
    set_threads(1)
    t0 = time.perf_counter()
    if "--check" in argv:
        new = {"convergence": convergence(tuned_config(SMOKE, _read()), TUNING_SEEDS)}
        new["check_seconds"] = time.perf_counter() - t0
    elif "--clouds" in argv:
        new = {"clouds": tune_clouds(SMOKE, TUNING_SEEDS)}
        new["clouds"]["seconds"] = time.perf_counter() - t0
    else:
        new = tune(SMOKE, TUNING_SEEDS)
        new["seconds"] = time.perf_counter() - t0
    out = _read()  # read at the end: the three parts may run at the same time
    out.update(new)
    TUNING_FILE.write_text(json.dumps(out, indent=1) + "\n")
    return 0


def _read() -> dict:
    return json.loads(TUNING_FILE.read_text()) if TUNING_FILE.exists() else {}


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
