"""lib.cpu_pins: the AVX2 pin is set before torch runs, and an explicit setting wins."""

import platform
import subprocess
import sys

import pytest

from lib.cpu_pins import PINS, pin


def test_pin_sets_missing_and_keeps_existing():
    env = {"MKL_CBWR": "COMPATIBLE"}
    got = pin(env)
    assert got["MKL_CBWR"] == "COMPATIBLE"
    assert got["ATEN_CPU_CAPABILITY"] == PINS["ATEN_CPU_CAPABILITY"]
    assert env["ONEDNN_MAX_CPU_ISA"] == "AVX2"


def test_pin_rejects_non_mapping():
    with pytest.raises(TypeError, match="env: expected a mutable mapping, got tuple"):
        pin(("a", "b"))


@pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64"), reason="x86-64 pins")
def test_this_process_runs_avx2_kernels():
    # the root conftest pinned the kernels before torch was imported
    import torch

    assert torch.backends.cpu.get_cpu_capability() == "AVX2"


@pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64"), reason="x86-64 pins")
def test_a_child_process_inherits_the_pin():
    code = "import torch; print(torch.backends.cpu.get_cpu_capability())"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out == "AVX2"
