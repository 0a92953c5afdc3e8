"""The plain entry point behind ``python -m lib.<slug> --preset FULL`` (no Jupyter
needed)."""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time

from .cache import save_results
from .device import device as pick_device
from .seed import seed_everything


def run_preset_cli(slug: str, presets: dict, run, argv=None) -> int:
    """Parse ``--preset/--device/--seed``, run ``run(cfg, device) -> dict`` and save the
    results.

    ``presets`` maps names (``SMOKE``, ``FULL``) to config dataclass instances with a
    ``seed``. Each preset has its own file (see :func:`lib.common.cache.results_path`):
    FULL writes
    ``results/<slug>.json``, which the chapter reads; SMOKE writes
    ``results/<slug>.smoke.json`` and leaves the FULL file alone.
    """
    parser = argparse.ArgumentParser(
        prog=f"python -m lib.{slug}",
        description=f"Run the {slug} chapter's experiment at a preset "
        f"and write results/{slug}.json (FULL) or "
        f"results/{slug}.<preset>.json (any other preset).",
    )
    parser.add_argument("--preset", choices=sorted(presets), default="FULL")
    parser.add_argument(
        "--device",
        default=None,
        help="cpu, cuda, cuda:1 … (default: BOOK_DEVICE, "
        "else cuda if available, else cpu)",
    )
    parser.add_argument(
        "--seed", type=int, default=None, help="override the preset's seed"
    )
    args = parser.parse_args(argv)
    cfg = presets[args.preset]
    if args.seed is not None:
        cfg = dataclasses.replace(cfg, seed=args.seed)
    dev = pick_device(args.device)
    seed_everything(cfg.seed)
    t0 = time.perf_counter()
    results = run(cfg, dev)
    if dev.type == "cuda":
        import torch

        torch.cuda.synchronize(dev)
    wall = time.perf_counter() - t0
    path = save_results(
        slug, results, config=cfg, preset=args.preset, dev=dev, wall_time_s=wall
    )
    print(
        f"{slug}: preset {args.preset} on {dev} in {wall:.1f} s -> {path}",
        file=sys.stderr,
    )
    return 0
