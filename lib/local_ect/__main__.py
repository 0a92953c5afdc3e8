"""``python -m lib.local_ect --preset FULL`` -> results/local_ect.json (no Jupyter
needed)."""

import sys

from lib.common import run_preset_cli
from lib.local_ect import FULL, SMOKE, run_experiment

if __name__ == "__main__":
    sys.exit(
        run_preset_cli("local_ect", {"SMOKE": SMOKE, "FULL": FULL}, run_experiment)
    )
