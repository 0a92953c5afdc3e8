"""Results files (lib.common.cache): one file per preset, atomic locked writes, .bak,
non-finite numbers, raw fallback for values JSON cannot hold, and clear errors for
damaged files."""

import dataclasses
import json
import math
import os
import pathlib
import signal
import subprocess
import sys
import threading
import time

import numpy as np
import pytest
import torch

import lib.common as C
from lib.common import cache

REPO = pathlib.Path(__file__).resolve().parents[1]


@dataclasses.dataclass(frozen=True)
class _Cfg:
    n: int = 3
    seed: int = 0


class Opaque:
    """An object JSON cannot hold (module level so that torch.save can pickle it)."""

    def __init__(self, value):
        self.value = value


@pytest.fixture
def results_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("BOOK_RESULTS_DIR", str(tmp_path))
    monkeypatch.delenv(cache._WRITE_DELAY_ENV, raising=False)
    return tmp_path


def _save(slug, results, preset="FULL", cfg=_Cfg()):
    return C.save_results(
        slug, results, config=cfg, preset=preset, dev="cpu", wall_time_s=0.5
    )


def test_round_trip(results_dir):
    assert C.load_results("toy") is None
    path = _save(
        "toy",
        {
            "x": torch.tensor([1.0, 2.0]),
            "y": np.float32(0.5),
            "n": np.int64(3),
            "nested": {"a": [1, (2, 3)], 4: "four"},
        },
    )
    assert path == results_dir / "toy.json"
    data = C.load_results("toy")
    assert data["results"] == {
        "x": [1.0, 2.0],
        "y": 0.5,
        "n": 3,
        "nested": {"a": [1, [2, 3]], "4": "four"},
    }
    assert (
        data["preset"] == "FULL"
        and data["slug"] == "toy"
        and data["config"] == {"n": 3, "seed": 0}
    )
    assert set(cache.PROVENANCE_FIELDS) <= set(data["provenance"])
    assert data["provenance"]["nonfinite"] == []
    assert C.load_results_or_note("toy") == (data, "ok")
    # no temporary files are left behind
    assert not list(results_dir.glob("*.tmp")) and not list(results_dir.glob(".*.tmp"))


def test_simple_conversions(results_dir):
    _save(
        "toy",
        {
            "s": {3, 1, 2},
            "p": pathlib.Path("a/b.txt"),
            "d": torch.device("cpu"),
            "t": torch.float16,
        },
    )
    assert C.load_results("toy")["results"] == {
        "s": [1, 2, 3],
        "p": "a/b.txt",
        "d": "cpu",
        "t": "torch.float16",
    }


def test_presets_have_their_own_files(results_dir):
    _save("toy", {"v": "full"}, preset="FULL")
    smoke = _save("toy", {"v": "smoke"}, preset="SMOKE")
    assert smoke == results_dir / "toy.smoke.json" == C.results_path("toy", "SMOKE")
    assert C.load_results("toy")["results"] == {"v": "full"}
    assert C.load_results("toy", preset="SMOKE")["results"] == {"v": "smoke"}
    assert C.load_results("other") is None and C.load_results("other", "SMOKE") is None


def test_wrong_preset_in_file_is_an_error(results_dir):
    _save("toy", {"v": 1}, preset="SMOKE")
    # a SMOKE file copied (or written by an older version) where the FULL file belongs
    (results_dir / "toy.json").write_text((results_dir / "toy.smoke.json").read_text())
    with pytest.raises(ValueError, match=r"toy\.json.*SMOKE"):
        C.load_results("toy", preset="FULL")
    data, note = C.load_results_or_note("toy")
    assert data is None and note.startswith("unreadable:") and "toy.json" in note


def test_run_preset_cli_smoke_leaves_full_alone(results_dir):
    presets = {"SMOKE": _Cfg(n=1), "FULL": _Cfg(n=5)}

    def run(cfg, dev):
        return {"total": cfg.n * 2}

    assert (
        C.run_preset_cli("toy", presets, run, ["--preset", "FULL", "--device", "cpu"])
        == 0
    )
    assert (
        C.run_preset_cli("toy", presets, run, ["--preset", "SMOKE", "--device", "cpu"])
        == 0
    )
    assert C.load_results("toy")["results"] == {"total": 10}
    assert C.load_results("toy", "SMOKE")["results"] == {"total": 2}


@pytest.mark.parametrize(
    "text", ["{\"slug\": \"toy\", \"results\": {", "", "[1, 2]", "\xff\xfe"]
)
def test_corrupt_file_names_the_path(results_dir, text):
    path = results_dir / "toy.json"
    path.write_bytes(text.encode("latin-1"))
    with pytest.raises(ValueError, match=str(path).replace(".", r"\.")):
        C.load_results("toy")
    data, note = C.load_results_or_note("toy")
    assert data is None and note.startswith("unreadable:") and str(path) in note


def test_not_yet_run_note(results_dir):
    assert C.load_results_or_note("toy") == (None, "not yet run")
    assert C.load_results_or_note("toy", "SMOKE") == (None, "not yet run")


def test_nonfinite_round_trip_and_listed(results_dir):
    path = _save(
        "toy",
        {
            "loss": [1.0, float("nan"), float("inf")],
            "best": -math.inf,
            "t": torch.tensor([0.0, float("nan")]),
            "ok": 2.5,
        },
    )
    text = path.read_text()
    assert "NaN" in text and "Infinity" in text
    json.loads(
        text, parse_constant=lambda c: pytest.fail(f"bare {c} in the file")
    )  # strict JSON
    data = C.load_results("toy")
    r = data["results"]
    assert (
        math.isnan(r["loss"][1]) and r["loss"][2] == math.inf and r["best"] == -math.inf
    )
    assert (
        r["loss"][0] == 1.0
        and r["t"][0] == 0.0
        and math.isnan(r["t"][1])
        and r["ok"] == 2.5
    )
    assert data["provenance"]["nonfinite"] == [
        "results.loss[1]",
        "results.loss[2]",
        "results.best",
        "results.t[1]",
    ]


def test_unencodable_saves_raw_and_raises(results_dir):
    _save("toy", {"v": 1})
    before = (results_dir / "toy.json").read_text()
    with pytest.raises(TypeError, match=r"results\.model\[1\].*Opaque.*toy\.raw\.pt"):
        _save("toy", {"v": 2, "model": [0, Opaque(7)]})
    assert (
        results_dir / "toy.json"
    ).read_text() == before  # the JSON file is untouched
    raw = torch.load(results_dir / "toy.raw.pt", weights_only=False)
    assert raw["results"]["v"] == 2 and raw["results"]["model"][1].value == 7
    assert raw["preset"] == "FULL" and raw["config"] == _Cfg()
    with pytest.raises(TypeError, match=r"toy\.smoke\.raw\.pt"):
        _save("toy", {"v": Opaque(1)}, preset="SMOKE")
    assert (results_dir / "toy.smoke.raw.pt").exists()
    data, note = C.load_results_or_note("toy", "SMOKE")
    assert data is None and "not yet run" in note and "toy.smoke.raw.pt" in note


def test_bak_keeps_previous_file(results_dir):
    _save("toy", {"v": 1})
    assert not (results_dir / "toy.json.bak").exists()
    _save("toy", {"v": 2})
    assert json.loads((results_dir / "toy.json.bak").read_text())["results"] == {"v": 1}
    _save("toy", {"v": 3})
    assert json.loads((results_dir / "toy.json.bak").read_text())["results"] == {"v": 2}
    assert C.load_results("toy")["results"] == {"v": 3}


def test_errors(results_dir):
    with pytest.raises(ValueError, match="preset"):
        C.results_path("toy", "../x")
    with pytest.raises(ValueError, match="slug"):
        C.load_results("Bad Slug")


def test_writers_are_serialised(results_dir):
    path = C.results_path("toy")
    path.parent.mkdir(parents=True, exist_ok=True)
    import fcntl

    with open(path.with_name(f".{path.name}.lock"), "a") as fh:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        done = threading.Event()
        t = threading.Thread(target=lambda: (_save("toy", {"v": 1}), done.set()))
        t.start()
        time.sleep(0.5)
        assert not done.is_set() and not path.exists()  # waiting for the lock
        fcntl.flock(fh.fileno(), fcntl.LOCK_UN)
    t.join(timeout=60)
    assert done.is_set() and C.load_results("toy")["results"] == {"v": 1}


_WRITER = """
import sys
from lib.common import save_results
big = {"v": "new", "big": list(range(100000))}
save_results("toy", big, config={"n": 1}, preset="FULL", dev="cpu", wall_time_s=1.0)
"""


def test_killed_writer_leaves_previous_file(results_dir):
    _save("toy", {"v": "old"})
    env = dict(
        os.environ, BOOK_RESULTS_DIR=str(results_dir), **{cache._WRITE_DELAY_ENV: "60"}
    )
    proc = subprocess.Popen([sys.executable, "-c", _WRITER], cwd=REPO, env=env)
    try:
        deadline = time.monotonic() + 120
        # the temporary file is complete once it is this large; the writer then sleeps
        # in the hook
        while not any(
            p.stat().st_size > 100000 for p in results_dir.glob(".toy.json.*.tmp")
        ):
            assert proc.poll() is None, "writer exited before it was killed"
            assert time.monotonic() < deadline, "writer never wrote its temporary file"
            time.sleep(0.05)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert C.load_results("toy")["results"] == {"v": "old"}
    # the next write cleans up the leftover temporary file and is not blocked by the
    # dead writer's lock
    _save("toy", {"v": "next"})
    assert C.load_results("toy")["results"] == {"v": "next"}
    assert not list(results_dir.glob(".toy.json.*.tmp"))
