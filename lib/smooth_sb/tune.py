"""``python -m lib.smooth_sb.tune`` chooses ℓ (smooth SB) and c (Brownian SB) on the
tuning seeds and writes lib/smooth_sb/tuning.json (read by the chapter)."""

import json
import pathlib
import sys
import time

from lib.common import set_threads

from . import SMOKE, TUNING_SEEDS, tune

TUNING_FILE = pathlib.Path(__file__).resolve().parent / "tuning.json"


def main() -> int:
    set_threads(1)
    t0 = time.perf_counter()
    out = tune(SMOKE, TUNING_SEEDS)
    out["seconds"] = time.perf_counter() - t0
    TUNING_FILE.write_text(json.dumps(out, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
