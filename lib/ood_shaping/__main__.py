"""``python -m lib.ood_shaping --preset FULL`` writes ``results/ood_shaping.json``."""

import sys

from lib.common import run_preset_cli

from . import FULL, SMOKE, run_experiment

if __name__ == "__main__":
    sys.exit(
        run_preset_cli("ood_shaping", {"SMOKE": SMOKE, "FULL": FULL}, run_experiment)
    )
