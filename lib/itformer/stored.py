"""The seven bridges of the first notebook seed at SMOKE's budget, trained once by this
chapter's code and committed as ``results/itformer_bridges.pt`` (about 0.7 MB),
because training them takes about five minutes on one CPU core, more than the page's
budget. Rebuild it with::

    python -m lib.itformer.stored

which trains them exactly as :func:`.experiment.run_seeds` does (and as ``make
claims`` does for the ledger, with the same pinned CPU kernels: :mod:`lib.cpu_pins`;
unpinned, 1000 steps of training drift far enough to move a score by 0.04), and
writes their weights, their scores, the config and the hash of ``lib/itformer/`` with
the provenance. :func:`load_runs` refuses a file
written with another config or another version of the code.
"""

from __future__ import annotations

import dataclasses
import pathlib
import sys
import time

import torch

from lib.common import check_int

ROOT = pathlib.Path(__file__).resolve().parents[2]
PATH = ROOT / "results" / "itformer_bridges.pt"


def _key(cfg, seed: int) -> dict:
    return dict(config=dataclasses.asdict(cfg), seed=int(seed))


def save_runs(runs: dict, cfg, seed: int, path=PATH, wall_s=None) -> None:
    """Write one seed of :func:`.experiment.run_seeds` (``keep=True``): each bridge's
    weights, the scores and the parameter counts."""
    from lib.common.claims import lib_hash

    check_int("seed", seed, 0)
    r = runs[seed]
    if "_bridges" not in r:
        raise ValueError("runs: expected run_seeds(..., keep=True)'s output")
    path = pathlib.Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    state = dict(
        key=_key(cfg, seed),
        lib_hash=lib_hash("itformer"),
        bridges={a: b.state_dict() for a, b in r["_bridges"].items()},
        scores={k: v for k, v in r.items() if not k.startswith("_")},
        params=r["_params"],
        lm_params=r["_lm_params"],
        provenance=dict(
            command="python -m lib.itformer.stored",
            torch=torch.__version__,
            wall_s=wall_s,
        ),
    )
    torch.save(state, path)


def load_runs(cfg, seed: int, device="cpu", path=PATH) -> dict | None:
    """``{seed: …}`` as :func:`.experiment.run_seeds` returns it with ``keep=True``,
    from the saved file (None if there is none, or it was written with another config,
    seed or version of ``lib/itformer/``)."""
    from lib.common.claims import lib_hash

    from .experiment import init_bridge, prepare_backbone, prepare_seed

    check_int("seed", seed, 0)
    path = pathlib.Path(path)
    if not path.exists():
        return None
    st = torch.load(path, map_location="cpu", weights_only=False)
    if st["key"] != _key(cfg, seed) or st["lib_hash"] != lib_hash("itformer"):
        return None
    prep = prepare_seed(cfg, seed, device, prepare_backbone(cfg, device))
    bridges = {}
    for arm, sd in st["bridges"].items():
        b = init_bridge(arm, cfg, prep, seed, device)
        b.load_state_dict(sd)
        bridges[arm] = b.eval().requires_grad_(False)
    out = dict(st["scores"], _params=st["params"], _lm_params=st["lm_params"])
    out.update(_bridges=bridges, _prep=prep, _provenance=st["provenance"])
    return {seed: out}


def main(argv=None) -> int:
    from lib.common import set_threads

    from . import NOTEBOOK_SEEDS, SMOKE
    from .experiment import run_seeds

    set_threads(1)
    seed = NOTEBOOK_SEEDS[0]
    t0 = time.perf_counter()
    runs = run_seeds(SMOKE, [seed], keep=True)
    wall = time.perf_counter() - t0
    save_runs(runs, SMOKE, seed, wall_s=wall)
    sys.stderr.write(f"itformer bridges (seed {seed}): {wall:.0f} s -> {PATH}\n")
    return 0


if __name__ == "__main__":
    import os

    from lib.cpu_pins import PINS, pin

    if any(k not in os.environ for k in PINS):
        # torch loaded (with the package) before this file ran: start again with the
        # book's AVX2 kernels pinned, as `make claims` runs, so that the stored
        # bridges are the ledger's bridges of this seed on any machine kind
        pin()
        os.execv(sys.executable, [sys.executable, "-m", "lib.itformer.stored"])
    sys.exit(main())
