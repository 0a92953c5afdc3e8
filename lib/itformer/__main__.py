"""``python -m lib.itformer --preset FULL`` writes results/itformer.json
(``--preset SMOKE`` for a check)."""

import sys

from lib.common import run_preset_cli

from . import FULL, SMOKE, run_experiment

if __name__ == "__main__":
    sys.exit(run_preset_cli("itformer", {"SMOKE": SMOKE, "FULL": FULL}, run_experiment))
