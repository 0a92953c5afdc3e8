"""The benchmark harness times both functions on the same inputs and reports the
ratio."""

import sys
import pathlib

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "benchmarks"))
import harness  # noqa: E402


def test_compare_reports_ratio():
    calls = []
    row = harness.compare(
        "toy",
        lambda x: calls.append(("ours", x)),
        lambda x: calls.append(("ref", x)),
        args=(3,),
        repeats=2,
    )
    assert set(row) == {"benchmark", "ours_ms", "reference_ms", "speedup"}
    assert (
        calls.count(("ours", 3)) == 3 and calls.count(("ref", 3)) == 3
    )  # warm-up + 2 repeats
    assert "| toy |" in harness.table([row])


def test_time_fn_errors():
    with pytest.raises(TypeError, match="fn"):
        harness.time_fn(3)
    with pytest.raises(ValueError, match="repeats"):
        harness.time_fn(lambda: None, repeats=0)
