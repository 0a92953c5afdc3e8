"""``python -m lib.smooth_sb.tune`` chooses ℓ (smooth SB) and c (Brownian SB) on the
tuning seeds and writes results/smooth_sb_tuning.json."""

import json
import pathlib
import sys
import time

from lib.common import set_threads

from . import SMOKE, TUNING_SEEDS, tune


def main() -> int:
    set_threads(1)
    t0 = time.perf_counter()
    out = tune(SMOKE, TUNING_SEEDS)
    out["seconds"] = time.perf_counter() - t0
    path = pathlib.Path(__file__).resolve().parents[2] / "results/smooth_sb_tuning.json"
    path.write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps(out["chosen"]), f"{out['seconds']:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
