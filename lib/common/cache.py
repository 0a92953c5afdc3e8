"""FULL-preset results in ``results/<slug>.json``, with provenance.

A results file is a JSON object::

    {"slug": ..., "preset": "FULL", "config": {...}, "results": {...},
     "provenance": {"device": ..., "device_type": ..., "torch": ..., "python": ...,
                    "git_sha": ..., "wall_time_s": ..., "created": ...}}
"""
from __future__ import annotations

import dataclasses
import datetime as _dt
import json
import os
import pathlib
import platform
import re
import subprocess

import torch

PROVENANCE_FIELDS = ("device", "device_type", "torch", "python", "git_sha", "wall_time_s", "created")
_SLUG = re.compile(r"^[a-z][a-z0-9_]*$")


def _repo_root() -> pathlib.Path:
    return pathlib.Path(__file__).resolve().parents[2]


def results_path(slug: str) -> pathlib.Path:
    """Path of ``results/<slug>.json`` (``BOOK_RESULTS_DIR`` overrides the folder)."""
    if not isinstance(slug, str) or not _SLUG.match(slug):
        raise ValueError(f"slug: expected a lowercase identifier such as 'brokerage', got {slug!r}")
    folder = os.environ.get("BOOK_RESULTS_DIR") or (_repo_root() / "results")
    return pathlib.Path(folder) / f"{slug}.json"


def _git_sha() -> str:
    try:
        root = _repo_root()
        sha = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True,
                             text=True, timeout=10).stdout.strip()
        if not sha:
            return "unknown"
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root,
                               capture_output=True, text=True, timeout=10).stdout.strip()
        return sha + ("+dirty" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def provenance(dev: torch.device | str, wall_time_s: float) -> dict:
    """Where and how a result was produced: device name, torch/python versions, git sha, time."""
    dev = torch.device(dev)
    if dev.type == "cuda":
        name = torch.cuda.get_device_name(dev)
    else:
        name = platform.processor() or platform.machine() or "cpu"
    return {
        "device": name,
        "device_type": dev.type,
        "torch": torch.__version__,
        "python": platform.python_version(),
        "git_sha": _git_sha(),
        "wall_time_s": round(float(wall_time_s), 2),
        "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
    }


def _jsonable(obj):
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return _jsonable(dataclasses.asdict(obj))
    if isinstance(obj, dict):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_jsonable(v) for v in obj]
    if isinstance(obj, torch.Tensor):
        return _jsonable(obj.detach().cpu().tolist())
    if hasattr(obj, "tolist"):  # numpy arrays and scalars
        return _jsonable(obj.tolist())
    if isinstance(obj, float) and (obj != obj or obj in (float("inf"), float("-inf"))):
        return None
    return obj


def save_results(slug: str, results: dict, *, config, preset: str, dev, wall_time_s: float) -> pathlib.Path:
    """Write ``results/<slug>.json`` with ``results``, the ``config`` and full provenance."""
    if not isinstance(results, dict):
        raise TypeError(f"results: expected a dict, got {type(results).__name__}")
    path = results_path(slug)
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = {
        "slug": slug,
        "preset": str(preset),
        "config": _jsonable(config),
        "provenance": provenance(dev, wall_time_s),
        "results": _jsonable(results),
    }
    path.write_text(json.dumps(payload, indent=1, sort_keys=False) + "\n")
    return path


def load_results(slug: str) -> dict | None:
    """The saved results for ``slug`` (the whole JSON object), or ``None`` if there are none."""
    path = results_path(slug)
    if not path.exists():
        return None
    data = json.loads(path.read_text())
    missing = [f for f in PROVENANCE_FIELDS if f not in data.get("provenance", {})]
    if missing or "config" not in data or "results" not in data:
        raise ValueError(f"{path}: expected provenance fields {PROVENANCE_FIELDS} plus config and "
                         f"results, missing {missing or ['config/results']}")
    return data
