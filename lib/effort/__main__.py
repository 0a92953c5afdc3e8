"""``python -m lib.effort --preset FULL`` writes results/effort.json (``--preset
SMOKE`` for a check); ``python -m lib.effort pretrain`` re-trains the stored
foundation model (results/effort_foundation.pt, under a minute on a 2-core CPU)."""

import sys

from lib.common import run_preset_cli


def _pretrain(argv) -> int:
    import argparse
    import time

    from lib.common import device, provenance, set_threads

    from .pretrain import FOUNDATION_FILE, PRETRAIN, pretrain, save_foundation

    parser = argparse.ArgumentParser(prog="python -m lib.effort pretrain")
    parser.add_argument("--out", default=str(FOUNDATION_FILE))
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args(argv)
    set_threads(1)
    dev = device(args.device)
    t0 = time.perf_counter()
    state = pretrain(PRETRAIN, dev)
    path = save_foundation(state, args.out, provenance(dev, time.perf_counter() - t0))
    sys.stderr.write(  # the command's status line (the CLI, not library output)
        f"effort: foundation model -> {path} (pretext accuracy "
        f"{state['pretext_accuracy']:.3f}, AE mse {state['ae_mse']:.4f})\n"
    )
    return 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["pretrain"]:
        sys.exit(_pretrain(sys.argv[2:]))
    from . import FULL, SMOKE, run_experiment

    sys.exit(run_preset_cli("effort", {"SMOKE": SMOKE, "FULL": FULL}, run_experiment))
