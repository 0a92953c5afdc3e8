"""The notebook seeds' weak models, trained once by the chapter's own code and stored.

Training the three models of each of the three notebook seeds takes the chapter over
its three-minute budget on a 2-core CPU; the weak model is the longest of the three
(its examples are twice as long). ``python -m lib.misuse_combos weak-models`` trains
the weak model of every notebook seed with :func:`.models.train_model` (nothing else
changes: the same seeds, examples, steps and checkpoints) and writes
``results/misuse_combos.weak.pt``: the checkpoints' state dicts, the configuration
fields that training reads, a fingerprint of the training code and the run's
provenance. The notebook loads it and trains the strong and unaligned models live;
``make claims`` trains every model of the held-out seeds itself.

The stored checkpoints are bit-identical to a fresh training on an x86-64 CPU with
the book's AVX2 pin (checked when the file was written); the tests check that the
command still reproduces the training at a shrunk size and that the training code has
not changed since the file was written.
"""

from __future__ import annotations

import os
import pathlib
import time

import torch

from lib.common import check_instance, check_int
from lib.common.claims import seed_list

from .models import _check_cfg, make_model, train_model
from .tasks import build_vocab

WEAK_FILE = (
    pathlib.Path(__file__).resolve().parents[2] / "results" / "misuse_combos.weak.pt"
)
COMMAND = "python -m lib.misuse_combos weak-models"
#: the Config fields the weak model's training reads
WEAK_FIELDS = (
    "max_digits",
    "block_size",
    "weak_d",
    "weak_layers",
    "weak_steps",
    "weak_sum_digits",
    "n_train_weak",
    "batch_size",
    "lr",
    "weak_checkpoints",
)


def training_code_digest() -> str:
    """sha256 of the code that trains a weak model (this chapter's tasks and models,
    the book's GPT), layout, comments and docstrings excluded."""
    import hashlib

    from lib.common.claims import _code_fingerprint

    root = pathlib.Path(__file__).resolve().parents[2]
    h = hashlib.sha256()
    for rel in ("lib/misuse_combos/tasks.py", "lib/misuse_combos/models.py",
                "lib/common/gpt.py"):  # fmt: skip
        h.update(rel.encode() + b"\0" + _code_fingerprint((root / rel).read_bytes()))
    return h.hexdigest()


def _weak_settings(cfg) -> dict:
    return {
        f: list(getattr(cfg, f)) if f == "weak_checkpoints" else getattr(cfg, f)
        for f in WEAK_FIELDS
    }


def train_weak_models(cfg, seeds, device="cpu", processes: int = 1) -> dict:
    """``{seed: {step: state_dict}}``: the weak model of each seed, trained by
    :func:`.models.train_model` (``processes > 1``: in spawned workers, one thread
    each; the states are the same either way)."""
    from .experiment import _pool_map, _train_worker

    _check_cfg(cfg)
    seeds = seed_list(seeds)
    processes = check_int("processes", processes, 1)
    if processes > 1 and str(device) == "cpu":
        jobs = [(cfg, s, "weak", device) for s in seeds]
        models = _pool_map(_train_worker, jobs, processes)
    else:
        models = [train_model("weak", cfg, build_vocab(), s, device) for s in seeds]
    return {s: states for s, (_, states) in zip(seeds, models)}


def save_weak_models(states: dict, cfg, path=WEAK_FILE, provenance=None):
    """Write ``states`` (from :func:`train_weak_models`) with the settings, the code
    fingerprint, the command and ``provenance``."""
    import json

    _check_cfg(cfg)
    check_instance("states", states, dict, "{seed: {step: state_dict}}")
    if not states:
        raise ValueError("states: expected at least one seed, got none")
    check_instance("path", path, (str, os.PathLike), "a path")
    prov = json.loads(json.dumps(provenance or {}, default=str))  # plain types only
    blob = {
        "states": {int(s): v for s, v in states.items()},
        "settings": _weak_settings(cfg),
        "code": training_code_digest(),
        "command": COMMAND,
        "provenance": prov,
    }
    path = pathlib.Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save(blob, path)
    return path


def load_weak_models(cfg, seeds, path=WEAK_FILE, device="cpu") -> dict:
    """The stored weak models of ``seeds`` as :func:`run_seeds`' ``pretrained``
    argument: ``{seed: {"weak": (model, {step: state_dict})}}``. Raises when the file
    is missing, lacks a seed, or was trained with other settings than ``cfg``'s."""
    _check_cfg(cfg)
    seeds = seed_list(seeds)
    check_instance("path", path, (str, os.PathLike), "a path")
    path = pathlib.Path(path)
    if not path.is_file():
        raise FileNotFoundError(
            f"path: no stored weak models at {path}; run `{COMMAND}`"
        )
    blob = torch.load(path, map_location="cpu", weights_only=True)
    want = _weak_settings(cfg)
    if blob["settings"] != want:
        diff = {k: (blob["settings"].get(k), v) for k, v in want.items()
                if blob["settings"].get(k) != v}  # fmt: skip
        raise ValueError(
            f"cfg: the stored weak models were trained with other settings "
            f"(field: (stored, cfg)) {diff}; run `{COMMAND}`"
        )
    missing = [s for s in seeds if s not in blob["states"]]
    if missing:
        raise ValueError(
            f"seeds: expected seeds among the stored {sorted(blob['states'])}, got "
            f"{missing}"
        )
    vocab = build_vocab()
    out = {}
    for s in seeds:
        states = blob["states"][s]
        model = make_model(
            vocab, cfg.weak_d, cfg.weak_layers, cfg.block_size, torch.Generator()
        )
        model.load_state_dict(states[max(states)])
        out[s] = {"weak": (model.to(device), states)}
    return out


def main(argv=None) -> int:
    """The command: train the notebook seeds' weak models, write :data:`WEAK_FILE`."""
    import argparse
    import sys

    from lib.common import provenance
    from lib.cpu_pins import pin

    from . import SMOKE

    pin()  # before the workers start: they load torch with the book's AVX2 pin

    parser = argparse.ArgumentParser(prog=COMMAND)
    parser.add_argument("--out", default=str(WEAK_FILE))
    # > 1: training runs in spawned workers, which see the pin; 1: in this process,
    # whose kernels were fixed when torch loaded (set ATEN_CPU_CAPABILITY yourself)
    parser.add_argument("--processes", type=int, default=2)
    args = parser.parse_args(argv)
    t0 = time.perf_counter()
    states = train_weak_models(SMOKE, SMOKE.claim_seeds, "cpu", args.processes)
    path = save_weak_models(
        states, SMOKE, args.out, provenance("cpu", time.perf_counter() - t0)
    )
    sys.stderr.write(
        f"misuse_combos: weak models of seeds {list(states)} -> {path}\n"
    )
    return 0
