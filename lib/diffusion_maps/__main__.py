"""``python -m lib.diffusion_maps --preset FULL`` writes results/diffusion_maps.json."""

import sys

from lib.common import run_preset_cli
from lib.diffusion_maps import FULL, SMOKE, run_experiment

if __name__ == "__main__":
    sys.exit(
        run_preset_cli("diffusion_maps", {"SMOKE": SMOKE, "FULL": FULL}, run_experiment)
    )
