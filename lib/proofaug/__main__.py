"""``python -m lib.proofaug --preset FULL`` writes results/proofaug.json (``--preset
SMOKE`` for a check; ``--preset HARD``, the hammer-hard test set, writes
results/proofaug.hard.json)."""

import sys

from lib.common import run_preset_cli

from . import FULL, HARD, SMOKE, run_experiment

if __name__ == "__main__":
    sys.exit(
        run_preset_cli(
            "proofaug",
            {"SMOKE": SMOKE, "FULL": FULL, "HARD": HARD},
            run_experiment,
        )
    )
