"""Fixtures shared by the chapters' tests."""

import json
import os
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]


@pytest.fixture
def smoke_cli(tmp_path):
    """``run(slug, tiny)``: ``python -m lib.<slug> --preset SMOKE --device cpu`` in a
    fresh process with the chapter's SMOKE replaced by ``tiny`` (a shrunk Config, so
    the test stays fast) and results written under ``tmp_path``. Checks that it exits
    cleanly and never writes the FULL file; returns the SMOKE results file's JSON."""

    def run(slug: str, tiny, timeout: int = 120) -> dict:
        code = (
            f"import runpy, sys, lib.{slug} as b; "
            f"b.SMOKE = b.{tiny!r}; "
            f"sys.argv = ['lib.{slug}', '--preset', 'SMOKE', '--device', 'cpu']; "
            f"runpy.run_module('lib.{slug}', run_name='__main__', alter_sys=True)"
        )
        env = os.environ | {"BOOK_RESULTS_DIR": str(tmp_path), "TQDM_DISABLE": "1"}
        out = subprocess.run(
            [sys.executable, "-c", code],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        assert out.returncode == 0, out.stderr
        assert not (tmp_path / f"{slug}.json").exists()  # SMOKE never replaces FULL
        return json.loads((tmp_path / f"{slug}.smoke.json").read_text())

    return run
