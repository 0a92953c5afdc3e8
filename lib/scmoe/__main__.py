"""``python -m lib.scmoe --preset FULL`` writes results/scmoe.json (``--preset SMOKE``
for a check; ``--preset QUALITY``, the long quality run, writes
results/scmoe.quality.json)."""

import sys

from lib.common import run_preset_cli

from . import FULL, QUALITY, SMOKE, run_experiment

if __name__ == "__main__":
    sys.exit(
        run_preset_cli(
            "scmoe", {"SMOKE": SMOKE, "FULL": FULL, "QUALITY": QUALITY}, run_experiment
        )
    )
