"""``python -m lib.misuse_combos --preset FULL`` writes results/misuse_combos.json
(``--preset SMOKE`` for a check)."""

import sys

from lib.common import run_preset_cli

from . import FULL, SMOKE, run_experiment

if __name__ == "__main__":
    sys.exit(
        run_preset_cli("misuse_combos", {"SMOKE": SMOKE, "FULL": FULL}, run_experiment)
    )
