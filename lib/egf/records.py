"""Stored runs the chapter reads (the earthquake fits, the RL toy): one JSON file each,
written by the chapter's own code with the command that wrote it, the settings, the
seeds, the code fingerprint (:func:`lib.common.claims.lib_hash` of ``lib/egf``) and the
machine. Reading refuses a missing file or other settings and marks a file whose code
changed since as stale."""

from __future__ import annotations

import json
import os
import pathlib
import platform
import time

from lib.common import check_instance
from lib.common.claims import lib_hash


def write_record(
    path, command: str, settings: dict, seeds, key: str, data: dict, device, t0: float
) -> pathlib.Path:
    """Write ``data`` (``{name: {seed: value}}``, seeds as str keys) under ``key`` with
    the provenance; ``t0`` is the run's start (``time.perf_counter()``)."""
    import torch

    check_instance("path", path, (str, os.PathLike), "a path")
    blob = {
        "command": command,
        "lib_hash": lib_hash("egf"),
        "settings": settings,
        "seeds": list(seeds),
        key: {k: {str(s): r for s, r in v.items()} for k, v in data.items()},
        "provenance": {
            "machine": platform.machine(),
            "torch": torch.__version__,
            "device": str(device),
            "wall_time_s": round(time.perf_counter() - t0, 1),
        },
    }
    path = pathlib.Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(blob, ensure_ascii=False) + "\n", encoding="utf-8")
    return path


def read_record(path, command: str, settings: dict, key: str, argname: str) -> dict:
    """The record at ``path`` with integer seeds under ``key`` and ``"stale"``; raises
    FileNotFoundError (naming ``command``) when it is missing and ValueError (naming
    ``argname``) when its settings are not ``settings``."""
    check_instance("path", path, (str, os.PathLike), "a path")
    path = pathlib.Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing: run `{command}`")
    blob = json.loads(path.read_text(encoding="utf-8"))
    if blob["settings"] != settings:
        raise ValueError(
            f"{argname}: expected the settings {path.name} was written with "
            f"({blob['settings']}), got {settings}; run `{command}`"
        )
    blob[key] = {k: {int(s): r for s, r in v.items()} for k, v in blob[key].items()}
    blob["stale"] = blob["lib_hash"] != lib_hash("egf")
    return blob
