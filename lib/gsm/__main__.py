"""``python -m lib.gsm --preset FULL`` writes results/gsm.json (``--preset SMOKE`` for a
check); ``python -m lib.gsm mnist-models`` re-trains the stored MNIST models of the
notebook seeds (results/gsm.mnist.pt, about two and a half minutes on a 2-core CPU)."""

import os
import sys

from lib.cpu_pins import PINS, pin

if __name__ == "__main__":
    if sys.argv[1:2] == ["mnist-models"]:
        if any(k not in os.environ for k in PINS):
            # the package (and torch) loaded before this file ran: start again with
            # the book's AVX2 kernels pinned, so that the stored weights do not
            # depend on the machine kind
            pin()
            os.execv(sys.executable, [sys.executable, "-m", "lib.gsm", *sys.argv[1:]])
        from .pretrained import main

        sys.exit(main(sys.argv[2:]))
    from lib.common import run_preset_cli

    from . import FULL, SMOKE, run_experiment

    sys.exit(run_preset_cli("gsm", {"SMOKE": SMOKE, "FULL": FULL}, run_experiment))
