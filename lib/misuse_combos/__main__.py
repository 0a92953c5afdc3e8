"""``python -m lib.misuse_combos --preset FULL`` writes results/misuse_combos.json
(``--preset SMOKE`` for a check); ``python -m lib.misuse_combos weak-models`` re-trains
the notebook seeds' stored weak models (results/misuse_combos.weak.pt, about a minute
and a half on a 2-core CPU)."""

import sys

from lib.common import run_preset_cli

from . import FULL, SMOKE, run_experiment

if __name__ == "__main__":
    if sys.argv[1:2] == ["weak-models"]:
        from .pretrained import main

        sys.exit(main(sys.argv[2:]))
    sys.exit(
        run_preset_cli("misuse_combos", {"SMOKE": SMOKE, "FULL": FULL}, run_experiment)
    )
