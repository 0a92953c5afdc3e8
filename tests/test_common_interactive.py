"""Tests of what a reader meets when running chapters live: Explore widgets (errors
shown, defaults checked), show_source after a module changed under the kernel, and
``make lab``."""

import importlib
import os
import pathlib
import shutil
import signal
import socket
import subprocess
import sys
import textwrap
import time
import urllib.error
import urllib.request

import pytest

from lib.common import display as D
from lib.common import live_controls, show_source

ROOT = pathlib.Path(__file__).resolve().parent.parent


# --- live_controls: errors in a redraw ------------------------------------------------
class _FakeShell:
    """Stands in for IPython's shell, so figures become display data without starting a
    kernel."""

    class display_formatter:  # noqa: N801 — mirrors the attribute name IPython uses
        @staticmethod
        def format(fig):
            return {"image/png": "PNG", "text/plain": repr(fig)}, {}


def _controls_and_output(monkeypatch, draw, **controls):
    """Call live_controls and return (controls, the Output widget it displayed)."""
    import IPython
    import IPython.display
    import matplotlib.pyplot as plt

    plt.close(
        plt.figure()
    )  # pyplot picks its backend (and asks get_ipython) before the stand-in
    monkeypatch.setattr(IPython, "get_ipython", lambda: _FakeShell())
    shown = []
    monkeypatch.setattr(
        IPython.display, "display", lambda *objs, **kw: shown.extend(objs)
    )
    live_controls(draw, controls)
    (box,) = shown
    return controls, box.children[1]


def test_redraw_error_is_shown_in_the_output_area(monkeypatch):
    w = pytest.importorskip("ipywidgets")
    import matplotlib.pyplot as plt

    def draw(k=1):
        if k == 3:
            raise RuntimeError("no figure for k=3")
        plt.plot([0, k])

    controls, out = _controls_and_output(
        monkeypatch, draw, k=w.IntSlider(value=1, min=0, max=5)
    )
    assert [o["data"] for o in out.outputs] == [{"image/png": "PNG"}]
    controls["k"].value = 3  # as if the reader moved the slider
    text = "".join(o.get("text", "") for o in out.outputs)
    assert out.outputs[0]["name"] == "stderr"
    assert "RuntimeError: no figure for k=3" in text and "draw(k=3)" in text
    assert (
        "in draw" in text and "_figure_output" not in text
    )  # starts at the reader's function
    assert not any("data" in o for o in out.outputs)  # the stale figure is gone
    assert plt.get_fignums() == []  # the half-drawn figure was closed
    controls["k"].value = 2
    assert [o["data"] for o in out.outputs] == [{"image/png": "PNG"}]


def test_first_draw_error_is_raised(monkeypatch):
    w = pytest.importorskip("ipywidgets")

    def draw(k=1):
        raise ZeroDivisionError("first")

    with pytest.raises(ZeroDivisionError, match="first"):
        _controls_and_output(monkeypatch, draw, k=w.IntSlider(value=1))


# --- live_controls: controls must be able to hold draw's defaults ---------------------
def test_controls_matching_their_defaults_pass(monkeypatch):
    w = pytest.importorskip("ipywidgets")

    def draw(r=0.3, D=3, n=600, mu=0.5, scale=100.0, problem=0, start=24, *, kind="a"):
        pass

    _controls_and_output(
        monkeypatch,
        draw,
        r=w.FloatSlider(
            value=0.3, min=0.1, max=0.8, step=0.05
        ),  # 0.1 + 4 * 0.05, to rounding
        D=w.Dropdown(options=[2, 3, 10], value=3),
        mu=w.SelectionSlider(options=[0.0, 0.5, 1.0], value=0.5),
        scale=w.FloatLogSlider(value=100.0, base=10, min=0, max=3, step=0.5),
        problem=w.Dropdown(options=[("first", 0), ("second", 1)], value=0),
        start=w.IntSlider(value=24, min=0, max=300, step=12),
        kind=w.ToggleButtons(options=["a", "b"], value="a"),
    )

    def free(x, **rest):  # no default to compare with; **rest takes any name
        pass

    _controls_and_output(
        monkeypatch, free, x=w.IntSlider(value=7, max=9), other=w.Checkbox(value=True)
    )


@pytest.mark.parametrize(
    "make, match",
    [
        (
            lambda w: w.IntSlider(value=150, max=100),
            r"controls\['n'\]: starts at 100, but draw declares n=150",
        ),
        (
            lambda w: w.IntSlider(value=7, max=100),
            r"controls\['n'\]: starts at 7, but draw declares n=150",
        ),
        (
            lambda w: w.FloatLogSlider(value=150.0, base=10, min=0, max=3, step=0.25),
            r"controls\['n'\]: cannot return to its value 150.0: .*log10",
        ),
        (
            lambda w: w.FloatSlider(value=150.0, min=0, max=200, step=20),
            r"controls\['n'\]: .* steps of 20",
        ),
        (
            lambda w: w.IntSlider(value=150, min=1, max=200, step=2),
            r"controls\['n'\]: .* steps of 2",
        ),
        (lambda w: w.Dropdown(options=[100, 200]), r"controls\['n'\]: starts at 100"),
    ],
)
def test_controls_that_cannot_hold_the_default_are_refused(monkeypatch, make, match):
    w = pytest.importorskip("ipywidgets")

    def draw(n=150):
        pass

    with pytest.raises(ValueError, match=match):
        _controls_and_output(monkeypatch, draw, n=make(w))


def test_control_names_must_be_parameters(monkeypatch):
    w = pytest.importorskip("ipywidgets")
    with pytest.raises(
        ValueError, match=r"controls\['m'\]: draw\(n=1\) has no keyword parameter 'm'"
    ):
        _controls_and_output(
            monkeypatch, lambda n=1: None, n=w.IntSlider(value=1), m=w.IntSlider()
        )
    with pytest.raises(ValueError, match=r"draw needs \['k'\]"):
        _controls_and_output(monkeypatch, lambda n, k: None, n=w.IntSlider())


def test_a_chapter_log_slider_off_its_grid_is_named(monkeypatch):
    """The shape of ood_shaping's Explore call: β = 2 and σ = 0.05 are not positions of
    their sliders."""
    w = pytest.importorskip("ipywidgets")

    def draw(beta=2.0, sigma=0.05):
        pass

    with pytest.raises(ValueError) as err:
        _controls_and_output(
            monkeypatch,
            draw,
            beta=w.FloatLogSlider(value=2.0, base=10, min=-1.5, max=1.5, step=0.25),
            sigma=w.FloatLogSlider(value=0.05, base=10, min=-2, max=-0.5, step=0.25),
        )
    assert "controls['beta']" in str(err.value) and "controls['sigma']" in str(
        err.value
    )


# --- show_source after the file changed -----------------------------------------------
_V1 = '''\
"""A module that will change under a running kernel."""


def target(x):
    """Doubles."""
    return 2 * x


class Box:
    def method(self):
        return "method body"

    @staticmethod
    def helper():
        return "helper body"


def outer():
    def inner():
        return "inner body"
    return inner
'''

_ABOVE = '''\
import math

PADDING = [
    1,
    2,
    3,
]


def decoy(x):
    return "decoy body"

'''


@pytest.fixture
def changing_module(tmp_path, monkeypatch):
    """A fresh module ``_ss_probe`` in tmp_path; returns (module, path)."""
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    monkeypatch.syspath_prepend(str(tmp_path))
    path = tmp_path / "_ss_probe.py"
    path.write_text(_V1)
    importlib.invalidate_caches()
    sys.modules.pop("_ss_probe", None)
    mod = importlib.import_module("_ss_probe")
    yield mod, path
    sys.modules.pop("_ss_probe", None)


def _code(md) -> str:
    return md.data


def test_show_source_follows_a_reloaded_module(changing_module):
    mod, path = changing_module
    old_target, old_method, old_inner = mod.target, mod.Box.method, mod.outer()
    path.write_text(_ABOVE + _V1.replace("return 2 * x", "return 3 * x"))
    importlib.reload(mod)
    for fn in (
        mod.target,
        old_target,
    ):  # the new function, and one a notebook still holds
        text = _code(show_source(fn))
        assert (
            "def target(x):" in text and "return 3 * x" in text and "decoy" not in text
        ), text
    for meth in (mod.Box.method, old_method, mod.Box().method):
        text = _code(show_source(meth))
        assert (
            "def method(self):" in text
            and "method body" in text
            and "helper" not in text
        ), text
    text = _code(show_source(mod.Box.helper))
    assert (
        "@staticmethod" in text and "helper body" in text and "method body" not in text
    ), text
    text = _code(show_source(old_inner))
    assert (
        "def inner():" in text and "inner body" in text and "return inner" not in text
    ), text
    text = _code(show_source(mod.Box))
    assert (
        text.count("class Box") == 1
        and "helper body" in text
        and "def target" not in text
    ), text


def test_show_source_with_a_first_line_of_1(changing_module):
    """What autoreload can leave behind: a function whose code claims to start on line
    1."""
    mod, _ = changing_module
    fn = mod.target
    fn.__code__ = fn.__code__.replace(co_firstlineno=1)
    import inspect

    assert inspect.getsource(fn).startswith(
        '"""A module'
    )  # the bug: the file's first lines
    text = _code(show_source(fn))
    assert (
        "def target(x):" in text and "return 2 * x" in text and "A module" not in text
    ), text
    assert "Doubles" not in _code(show_source(fn, include_docstring=False))


def test_show_source_falls_back_to_inspect():
    square = lambda x: x * x  # noqa: E731 — a lambda has no name to look up
    assert "lambda x: x * x" in _code(show_source(square))
    assert D._source_by_name(square) is None
    assert "def fmt(" in _code(show_source(D.fmt))


# --- make lab -------------------------------------------------------------------------
def test_make_lab_command_line():
    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    cmd = subprocess.run(
        ["make", "-n", "-o", "setup", "lab", "LAB_ARGS=--no-browser"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert (
        f'PYTHONPATH="{ROOT}' in cmd
        and "--no-browser book/" in cmd
        and "--allow-root" in cmd
    )


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_make_lab_serves_the_book(tmp_path):
    if not (ROOT / ".venv" / "bin" / "jupyter-lab").exists():
        pytest.skip("jupyter-lab is not installed in .venv")
    port = _free_port()
    args = (
        f"--no-browser --ip=127.0.0.1 --port={port} --ServerApp.port_retries=0 "
        "--IdentityProvider.token="
    )
    env = dict(os.environ, JUPYTER_RUNTIME_DIR=str(tmp_path / "runtime"))
    log = tmp_path / "lab.log"
    # -o setup: the venv is what this test runs in; do not (re)install from inside a
    # test
    with open(log, "w") as f:
        proc = subprocess.Popen(
            ["make", "-o", "setup", "lab", f"LAB_ARGS={args}"],
            cwd=ROOT,
            env=env,
            stdout=f,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        status, deadline = None, time.monotonic() + 120
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                with urllib.request.urlopen(
                    f"http://127.0.0.1:{port}/lab/tree/intro.md", timeout=5
                ) as r:
                    status = r.status
                    break
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                time.sleep(1)
        assert status == 200, (
            f"no JupyterLab page (exit code {proc.poll()}):\n{log.read_text()[-3000:]}"
        )
    finally:
        if proc.poll() is None:
            os.killpg(
                proc.pid, signal.SIGTERM
            )  # make and the server it started, nothing else
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
