"""``python -m lib.egf --preset FULL`` writes results/egf.json (``--preset SMOKE`` for a
check); ``python -m lib.egf quakes`` writes the stored earthquake run the chapter reads
(:mod:`lib.egf.quakes`) and ``python -m lib.egf rl`` the RL toy's (:mod:`lib.egf.rl`),
with the book's AVX2 kernels pinned (:mod:`lib.cpu_pins`)."""

import os
import sys

from lib.cpu_pins import PINS, pin

if __name__ == "__main__":
    if sys.argv[1:] in (["quakes"], ["rl"]):
        if any(k not in os.environ for k in PINS):
            # the package (and torch) loaded before this file ran: start again with the
            # kernels pinned, so that the stored numbers do not depend on the machine
            pin()
            os.execv(sys.executable, [sys.executable, "-m", "lib.egf", *sys.argv[1:]])
        if sys.argv[1] == "quakes":
            from .quakes import main

            print(f"egf: earthquake record -> {main()}")
        else:
            from .rl import main

            print(f"egf: RL toy record -> {main()}")
        sys.exit(0)
    from lib.common import run_preset_cli

    from . import FULL, SMOKE, run_experiment

    sys.exit(run_preset_cli("egf", {"SMOKE": SMOKE, "FULL": FULL}, run_experiment))
