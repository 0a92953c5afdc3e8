"""Results files in ``results/``, one per preset, with provenance, written so that no
data is lost.

Where each preset goes::

    FULL          -> results/<slug>.json            (what the chapters read)
    SMOKE, other  -> results/<slug>.<preset>.json
        (preset in lower case, e.g. brokerage.smoke.json)

A results file is a JSON object::

    {"slug": ..., "preset": "FULL", "config": {...}, "results": {...},
     "provenance": {"device": ..., "device_type": ..., "torch": ..., "python": ...,
                    "git_sha": ..., "wall_time_s": ..., "created": ..., "nonfinite":
                    [...]}}

How a write is kept safe (:func:`save_results`):

- the JSON goes to a temporary file in the same folder, is flushed and fsync'ed, then
  moved over the old file with ``os.replace`` (atomic on POSIX): a reader sees the old
  file or the new one, never half of one, and a writer killed midway leaves the old file
  as it was;
- writers of the same file take an exclusive ``fcntl.flock`` on ``.<name>.lock`` next to
  it, so two runs of the same slug and preset do not interleave;
- the file being replaced is kept as ``<name>.bak`` (one generation);
- JSON has no NaN or infinity. They are written as the tagged objects ``{"__float__":
  "NaN"}``, ``{"__float__": "Infinity"}`` and ``{"__float__": "-Infinity"}``, which
  :func:`load_results` turns back into floats, and the places they occurred are listed
  in ``provenance["nonfinite"]`` as paths such as ``results.loss[3]``;
- sets become lists (sorted when possible); ``pathlib`` paths, ``torch.device`` and
  ``torch.dtype`` become strings. Any other object that JSON cannot hold makes
  :func:`save_results` first keep everything with ``torch.save`` in
  ``<slug>[.<preset>].raw.pt`` (so the compute is not lost), then raise ``TypeError``
  naming where the object sits.

Besides these, the folder may hold ``.<name>.lock`` files and, after a killed writer,
``.<name>.*.tmp`` leftovers (removed by the next write of that file).
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as _dt
import json
import math
import os
import pathlib
import platform
import re
import subprocess
import tempfile
import time

import torch

try:
    import fcntl
except (
    ImportError
):  # not POSIX: writes are still atomic, only not serialised between processes
    fcntl = None

PROVENANCE_FIELDS = (
    "device",
    "device_type",
    "torch",
    "python",
    "git_sha",
    "wall_time_s",
    "created",
)
_SLUG = re.compile(r"^[a-z][a-z0-9_]*$")
_PRESET = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")
_FLOAT_TAG = "__float__"
_NONFINITE_NAMES = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}
# Test hook: seconds to wait between writing the temporary file and moving it into
# place, so that a test can kill a writer at exactly that point. Unset (the default)
# means no wait.
_WRITE_DELAY_ENV = "BOOK_RESULTS_TEST_WRITE_DELAY_S"


def _repo_root() -> pathlib.Path:
    return pathlib.Path(__file__).resolve().parents[2]


def _results_dir() -> pathlib.Path:
    return pathlib.Path(
        os.environ.get("BOOK_RESULTS_DIR") or (_repo_root() / "results")
    )


def _check_slug_preset(slug, preset) -> str:
    if not isinstance(slug, str) or not _SLUG.match(slug):
        raise ValueError(
            f"slug: expected a lowercase identifier such as 'brokerage', got {slug!r}"
        )
    if not isinstance(preset, str) or not _PRESET.match(preset):
        raise ValueError(
            f"preset: expected a name such as 'FULL' or 'SMOKE', got {preset!r}"
        )
    return preset.upper()


def results_path(slug: str, preset: str = "FULL") -> pathlib.Path:
    """Path of the results file: ``results/<slug>.json`` for FULL,
    ``results/<slug>.<preset>.json`` (preset in lower case) for any other preset.
    ``BOOK_RESULTS_DIR`` overrides the folder."""
    preset = _check_slug_preset(slug, preset)
    name = f"{slug}.json" if preset == "FULL" else f"{slug}.{preset.lower()}.json"
    return _results_dir() / name


def raw_results_path(slug: str, preset: str = "FULL") -> pathlib.Path:
    """Where :func:`save_results` keeps results that JSON could not hold:
    ``<slug>[.<preset>].raw.pt``."""
    path = results_path(slug, preset)
    return path.with_name(path.name[: -len(".json")] + ".raw.pt")


def _git_sha() -> str:
    try:
        root = _repo_root()
        sha = subprocess.run(
            ["git", "rev-parse", "HEAD"],
            cwd=root,
            capture_output=True,
            text=True,
            timeout=10,
        ).stdout.strip()
        if not sha:
            return "unknown"
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=root,
            capture_output=True,
            text=True,
            timeout=10,
        ).stdout.strip()
        return sha + ("+dirty" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def provenance(dev: torch.device | str, wall_time_s: float) -> dict:
    """Where and how a result was produced: device name, torch/python versions, git sha,
    time."""
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


# --- encoding -------------------------------------------------------------------------
class _Unencodable(Exception):
    def __init__(self, where: str, obj):
        super().__init__(where)
        self.where, self.obj = where, obj


_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def _child(where: str, key) -> str:
    if isinstance(key, int):
        return f"{where}[{key}]"
    return f"{where}.{key}" if _IDENT.match(key) else f"{where}[{json.dumps(key)}]"


def _encode(obj, where: str, nonfinite: list):
    """``obj`` as plain JSON values; non-finite floats tagged and their paths appended
    to ``nonfinite``."""
    if obj is None or isinstance(obj, (bool, str)):
        return obj
    if isinstance(obj, int):
        return int(obj)
    if isinstance(obj, float):
        if math.isfinite(obj):
            return float(obj)
        nonfinite.append(where)
        return {
            _FLOAT_TAG: "NaN"
            if obj != obj
            else ("Infinity" if obj > 0 else "-Infinity")
        }
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        # field by field (dataclasses.asdict would deep-copy every value first)
        return {
            f.name: _encode(getattr(obj, f.name), _child(where, f.name), nonfinite)
            for f in dataclasses.fields(obj)
        }
    if isinstance(obj, dict):
        return {
            str(k): _encode(v, _child(where, str(k)), nonfinite) for k, v in obj.items()
        }
    if isinstance(obj, (list, tuple)):
        return [_encode(v, _child(where, i), nonfinite) for i, v in enumerate(obj)]
    if isinstance(obj, (set, frozenset)):
        try:
            items = sorted(obj)
        except TypeError:
            items = list(obj)
        return [_encode(v, _child(where, i), nonfinite) for i, v in enumerate(items)]
    if isinstance(obj, torch.Tensor):
        return _encode(obj.detach().cpu().tolist(), where, nonfinite)
    if isinstance(obj, (pathlib.PurePath, torch.device, torch.dtype)):
        return str(obj)
    if hasattr(obj, "tolist") and callable(obj.tolist):  # numpy arrays and scalars
        value = obj.tolist()
        if value is not obj:
            return _encode(value, where, nonfinite)
    raise _Unencodable(where, obj)


def _decode_tag(obj: dict):
    if len(obj) == 1 and obj.get(_FLOAT_TAG) in _NONFINITE_NAMES:
        return _NONFINITE_NAMES[obj[_FLOAT_TAG]]
    return obj


# --- writing --------------------------------------------------------------------------
@contextlib.contextmanager
def _locked(path: pathlib.Path):
    """Exclusive lock on ``.<name>.lock`` beside ``path`` (released when the holder
    exits or dies)."""
    if fcntl is None:
        yield
        return
    lock = path.with_name(f".{path.name}.lock")
    with open(lock, "a") as fh:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


def _fsync_dir(folder: pathlib.Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _glob_escape(text: str) -> str:
    """``text`` with glob metacharacters escaped (slugs and presets have none, but be
    safe)."""
    return re.sub(r"([*?\[])", r"[\1]", text)


def _replace_atomically(path: pathlib.Path, write, keep_backup: bool) -> None:
    """Write ``path`` through a temporary file in the same folder; caller holds the
    lock.

    ``write(fh)`` fills the binary file handle. The old ``path`` (if any) is kept as
    ``<name>.bak``.
    """
    folder = path.parent
    prefix = f".{path.name}."
    for stale in folder.glob(
        f"{_glob_escape(prefix)}*.tmp"
    ):  # left by a writer that was killed
        with contextlib.suppress(OSError):
            stale.unlink()
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=prefix, suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            write(fh)
            fh.flush()
            os.fsync(fh.fileno())
        delay = os.environ.get(_WRITE_DELAY_ENV)
        if delay:
            time.sleep(float(delay))
        if keep_backup and path.exists():
            bak = path.with_name(path.name + ".bak")
            # a hard link keeps the old bytes without a copy and without ever removing
            # ``path``
            bak_tmp = path.with_name(f"{prefix}bak.tmp")
            with contextlib.suppress(FileNotFoundError):
                bak_tmp.unlink()
            try:
                os.link(path, bak_tmp)
            except OSError:  # file system without hard links
                import shutil

                shutil.copy2(path, bak_tmp)
            os.replace(bak_tmp, bak)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    _fsync_dir(folder)


def save_results(
    slug: str, results: dict, *, config, preset: str, dev, wall_time_s: float
) -> pathlib.Path:
    """Write the results file of ``slug`` at ``preset`` with ``results``, ``config`` and
    provenance.

    FULL goes to ``results/<slug>.json``, any other preset to
    ``results/<slug>.<preset>.json``; the write is atomic and locked, and the previous
    file is kept as ``.bak`` (see the module notes). Raises ``TypeError`` (after saving
    everything to ``<...>.raw.pt``) if a value cannot be JSON.
    """
    if not isinstance(results, dict):
        raise TypeError(f"results: expected a dict, got {type(results).__name__}")
    path = results_path(slug, preset)
    preset = preset.upper()
    path.parent.mkdir(parents=True, exist_ok=True)
    nonfinite: list[str] = []
    try:
        enc_config = _encode(config, "config", nonfinite)
        enc_results = _encode(results, "results", nonfinite)
    except _Unencodable as err:
        raw = raw_results_path(slug, preset)
        kind = f"{type(err.obj).__module__}.{type(err.obj).__qualname__}"
        what = f"{err.where}: cannot store a {kind} in JSON"
        try:
            with _locked(raw):
                _replace_atomically(
                    raw,
                    lambda fh: torch.save(
                        {
                            "slug": slug,
                            "preset": preset,
                            "config": config,
                            "results": results,
                            "wall_time_s": wall_time_s,
                        },
                        fh,
                    ),
                    keep_backup=False,
                )
        except Exception as save_err:  # noqa: BLE001 - report both failures together
            raise TypeError(
                f"{what}; saving the raw results to {raw} failed too: {save_err!r}"
            ) from err
        raise TypeError(
            f"{what} (convert it to a number, string, list or dict); the raw results "
            f"were saved to {raw} (torch.load(path, weights_only=False))"
        ) from None
    prov = provenance(dev, wall_time_s)
    prov["nonfinite"] = nonfinite
    payload = {
        "slug": slug,
        "preset": preset,
        "config": enc_config,
        "provenance": prov,
        "results": enc_results,
    }
    text = json.dumps(payload, indent=1, sort_keys=False, allow_nan=False) + "\n"
    with _locked(path):
        _replace_atomically(
            path, lambda fh: fh.write(text.encode("utf-8")), keep_backup=True
        )
    return path


# --- reading --------------------------------------------------------------------------
def load_results(slug: str, preset: str = "FULL") -> dict | None:
    """The saved results of ``slug`` at ``preset`` (the whole JSON object), or ``None``
    if none.

    Non-finite numbers come back as ``float('nan')`` / ``±inf``. A file that cannot be
    read or parsed, lacks config/results/provenance, or holds another slug or preset
    raises ``ValueError`` naming it.
    """
    path = results_path(slug, preset)
    preset = preset.upper()
    if not path.exists():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"), object_hook=_decode_tag)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise ValueError(
            f"{path}: unreadable results file ({type(err).__name__}: {err}); re-run "
            f"the {preset} preset, or restore {path.name}.bak if it is there"
        ) from err
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected a JSON object, got {type(data).__name__}")
    prov = data.get("provenance")
    missing = [
        f for f in PROVENANCE_FIELDS if not isinstance(prov, dict) or f not in prov
    ]
    if missing or "config" not in data or "results" not in data:
        raise ValueError(
            f"{path}: expected provenance fields {PROVENANCE_FIELDS} plus config and "
            f"results, missing {missing or ['config/results']}"
        )
    if str(data.get("preset", "")).upper() != preset:
        raise ValueError(
            f"{path}: holds preset {data.get('preset')!r}, expected {preset!r}"
        )
    if "slug" in data and data["slug"] != slug:
        raise ValueError(f"{path}: holds slug {data['slug']!r}, expected {slug!r}")
    return data


def load_results_or_note(slug: str, preset: str = "FULL") -> tuple[dict | None, str]:
    """``(data, "ok")``, or ``(None, note)`` with note ``"not yet run"`` or
    ``"unreadable: <reason>"``.

    For a chapter's results cell: a missing or damaged file is shown as such instead of
    raising.
    """
    try:
        data = load_results(slug, preset)
    except ValueError as err:
        return None, f"unreadable: {err}"
    if data is None:
        raw = raw_results_path(slug, preset)
        if raw.exists():
            return (
                None,
                f"not yet run (a run's raw results could not be stored as JSON; see "
                f"{raw})",
            )
        return None, "not yet run"
    return data, "ok"
