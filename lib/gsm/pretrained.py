"""The notebook seeds' MNIST models, trained once by the chapter's own code and stored.

Training the five MNIST models (:mod:`.images`) on the three notebook seeds takes about
two and a half minutes on a 2-core CPU, over the chapter's budget. ``python -m lib.gsm
mnist-models`` trains them with :func:`.images.run_images` (the SMOKE settings, the
notebook seeds, the CPU kernels pinned to AVX2) and writes ``results/gsm.mnist.pt``:
the stacked state dicts, their test accuracies, the settings that training reads, the
learning rates, a fingerprint of the training code and the run's provenance. The
notebook loads the file and tests the models; ``make claims`` trains every model of
the notebook and held-out seeds itself, so the ledger also checks that the stored
models are what the code trains. The tests check that the command still reproduces
the training at a shrunk size and that the training code has not changed since the
file was written.
"""

from __future__ import annotations

import hashlib
import os
import pathlib

import torch

from lib.common import check_instance
from lib.common.claims import seed_list

ROOT = pathlib.Path(__file__).resolve().parents[2]
IMG_FILE = ROOT / "results" / "gsm.mnist.pt"
COMMAND = "python -m lib.gsm mnist-models"
#: the Config fields that the MNIST training and testing read
IMG_FIELDS = ("img_train", "img_test", "img_steps", "img_batch", "d")
#: the code that tokenises the digits and trains the models
CODE = ("lib/gsm/graphs.py", "lib/gsm/models.py", "lib/gsm/images.py")


def training_code_digest() -> str:
    """sha256 of the code that builds and trains the MNIST models (layout, comments
    and docstrings excluded)."""
    from lib.common.claims import _code_fingerprint

    h = hashlib.sha256()
    for rel in CODE:
        h.update(rel.encode() + b"\0" + _code_fingerprint((ROOT / rel).read_bytes()))
    return h.hexdigest()


def _settings(cfg) -> dict:
    from .images import IMG_LR

    out = {f: getattr(cfg, f) for f in IMG_FIELDS}
    out["lr"] = dict(IMG_LR)
    return out


def _check_cfg(cfg):
    from . import Config

    check_instance("cfg", cfg, Config, "a lib.gsm.Config")


def save_image_models(run: dict, cfg, seeds, path=IMG_FILE, provenance=None):
    """Write ``run`` (from :func:`.images.run_images` on ``seeds``) with the settings,
    the code fingerprint, the command and ``provenance``."""
    import json

    _check_cfg(cfg)
    seeds = list(seed_list(seeds))
    if not isinstance(run, dict) or not {"states", "acc"} <= set(run):
        raise TypeError("run: expected the dict of run_images (states, acc)")
    check_instance("path", path, (str, os.PathLike), "a path")
    blob = {
        "seeds": seeds,
        "states": run["states"],
        "acc": {
            k: {int(s): float(a) for s, a in v.items()} for k, v in run["acc"].items()
        },
        "settings": _settings(cfg),
        "code": training_code_digest(),
        "command": COMMAND,
        "provenance": json.loads(json.dumps(provenance or {}, default=str)),
    }
    path = pathlib.Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save(blob, path)
    return path


def load_image_models(cfg, seeds, path=IMG_FILE) -> dict:
    """The stored models of ``seeds``: the file's dict (states, acc, settings, code,
    command, provenance). Raises when the file is missing, was trained on other seeds
    or with other settings than ``cfg``'s and the current learning rates."""
    _check_cfg(cfg)
    seeds = list(seed_list(seeds))
    check_instance("path", path, (str, os.PathLike), "a path")
    path = pathlib.Path(path)
    if not path.is_file():
        raise FileNotFoundError(
            f"path: no stored MNIST models at {path}; run `{COMMAND}`"
        )
    blob = torch.load(path, map_location="cpu", weights_only=True)
    want = _settings(cfg)
    if blob["settings"] != want:
        diff = {
            k: (blob["settings"].get(k), v)
            for k, v in want.items()
            if blob["settings"].get(k) != v
        }
        raise ValueError(
            f"cfg: the stored MNIST models were trained with other settings "
            f"(field: (stored, cfg)) {diff}; run `{COMMAND}`"
        )
    if blob["seeds"] != seeds:
        raise ValueError(
            f"seeds: expected the stored seeds {blob['seeds']}, got {seeds}"
        )
    return blob


def main(argv=None) -> int:
    """The command: train the notebook seeds' MNIST models, write :data:`IMG_FILE`."""
    import argparse
    import sys
    import time

    from lib.common import provenance, set_threads

    from . import SMOKE
    from .images import run_images

    parser = argparse.ArgumentParser(prog=COMMAND)
    parser.add_argument("--out", default=str(IMG_FILE))
    args = parser.parse_args(argv)
    set_threads(1)
    t0 = time.perf_counter()
    run = run_images(SMOKE, SMOKE.claim_seeds)
    path = save_image_models(
        run,
        SMOKE,
        SMOKE.claim_seeds,
        args.out,
        provenance("cpu", time.perf_counter() - t0),
    )
    sys.stderr.write(
        f"gsm: MNIST models of seeds {list(SMOKE.claim_seeds)} -> {path}\n"
    )
    return 0
