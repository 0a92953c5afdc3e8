"""``python -m lib.self_inf_n --preset FULL`` writes results/self_inf_n.json (``--preset
SMOKE`` for a check)."""

import sys

from lib.common import run_preset_cli

from . import FULL, SMOKE, run_experiment

if __name__ == "__main__":
    sys.exit(
        run_preset_cli("self_inf_n", {"SMOKE": SMOKE, "FULL": FULL}, run_experiment)
    )
