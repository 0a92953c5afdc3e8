"""``python -m lib.wctm --preset FULL`` writes ``results/wctm.json``."""

import sys

from lib.common import run_preset_cli

from . import FULL, SMOKE, run_experiment

if __name__ == "__main__":
    sys.exit(run_preset_cli("wctm", {"SMOKE": SMOKE, "FULL": FULL}, run_experiment))
