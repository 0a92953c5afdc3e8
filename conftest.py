"""Root pytest plugin for chapters run under nbval.

- With BOOK_NBVAL_STATUS=1 (``make nbval``) it records each notebook's wall time and outcome in
  _build/nbval_status.json (untracked); ``make status`` copies them to the status page. Under
  pytest-xdist (``make nbval NBVAL_JOBS=2``) each worker records its own notebooks (the file is updated
  under a lock) and marks them with the number of workers: such runtimes share the CPU with another
  notebook, so ``make status`` does not copy them.
- The CPU's numeric kernels are pinned to AVX2 (lib/cpu_pins.py) for this process and the kernels it
  starts, so stored outputs compare equal on AMD (AVX2) and Intel (AVX-512) machines.
- Progress bars are switched off (TQDM_DISABLE=1) for every kernel nbval starts, so a plain
  ``pytest --nbval book/`` without ``make`` compares the same outputs as ``make nbval``.
"""

import datetime as _dt
import fcntl
import json
import os
import pathlib
import platform
import time

import pytest

from lib.cpu_pins import pin as _pin_cpu_kernels

_STATUS = pathlib.Path(__file__).parent / "_build" / "nbval_status.json"
# kernels started by nbval inherit this process's environment
os.environ.setdefault("TQDM_DISABLE", "1")
# ... and the same AVX2 kernels on every machine kind (lib/cpu_pins.py)
_pin_cpu_kernels()
_runs: dict = {}
_controller = False  # the pytest-xdist controller (its workers run the cells)


def pytest_configure(config):
    global _controller
    _controller = bool(getattr(config.option, "numprocesses", None)) and not hasattr(
        config, "workerinput"
    )


def pytest_collection_modifyitems(config, items):
    """Under pytest-xdist (``make html`` with JOBS > 1, ``--dist loadgroup``), the browser
    checks of one page run in one worker, which probes the page once (test_html caches
    each page's probe per process)."""
    if not config.pluginmanager.hasplugin("xdist"):
        return
    for item in items:
        params = getattr(getattr(item, "callspec", None), "params", {})
        page = params.get("chapter") or params.get("page")
        if item.nodeid.startswith("tests/test_html.py") and page:
            item.add_marker(pytest.mark.xdist_group(str(page)))


def _notebook(nodeid: str):
    path = nodeid.split("::", 1)[0]
    return path if path.endswith(".ipynb") else None


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    nb = _notebook(item.nodeid)
    t0 = time.perf_counter()
    yield
    if nb:
        run = _runs.setdefault(nb, {"seconds": 0.0, "cells": 0, "failed": 0})
        run["seconds"] += time.perf_counter() - t0
        run["cells"] += 1


def pytest_runtest_logreport(report):
    nb = _notebook(report.nodeid)
    if nb and report.failed and not _controller:
        _runs.setdefault(nb, {"seconds": 0.0, "cells": 0, "failed": 0})["failed"] += 1


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    """After failed notebooks, say whether their outputs were stored on another kind of
    CPU (``metadata.book.executed_on``, written by scripts/execute.py): then differing
    digits are expected and the fix is to re-execute them, not to edit the outputs."""
    failed = sorted({
        nb for r in terminalreporter.stats.get("failed", [])
        if (nb := _notebook(r.nodeid))
    })  # fmt: skip
    if not failed:
        return
    try:
        import torch

        here = f"{torch.backends.cpu.get_cpu_capability()} {platform.machine()}"
    except Exception:  # noqa: BLE001 - a hint only
        return
    lines = []
    for nb in failed:
        try:
            meta = json.loads(pathlib.Path(nb).read_text())["metadata"]
        except (OSError, ValueError, KeyError):
            continue
        there = meta.get("book", {}).get("executed_on", "unknown")
        if there != here:
            lines.append(f"  {nb}: outputs stored on {there}, this CPU runs {here}")
    if lines:
        terminalreporter.write_line(
            "Failed notebooks executed on another kind of CPU (their last digits may "
            "differ for that reason alone; re-execute here: make execute SLUG=...):"
        )
        for line in lines:
            terminalreporter.write_line(line)


def pytest_sessionfinish(session, exitstatus):
    if not _runs or os.environ.get("BOOK_NBVAL_STATUS", "0") in ("", "0"):
        return
    _STATUS.parent.mkdir(parents=True, exist_ok=True)
    jobs = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    with open(_STATUS.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # xdist workers finish at about the same time
        _write_status(jobs)


def _write_status(jobs: int):
    data = json.loads(_STATUS.read_text()) if _STATUS.exists() else {}
    now = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
    for nb, run in _runs.items():
        slug = pathlib.Path(nb).stem
        data[slug] = {
            "seconds": round(run["seconds"], 1),
            "cells": run["cells"],
            "passed": run["failed"] == 0,
            "date": now,
            "machine": f"{os.cpu_count()}-core {platform.machine()} CPU",
        }
        if jobs > 1:
            data[slug]["jobs"] = jobs
    _STATUS.write_text(json.dumps(dict(sorted(data.items())), indent=1) + "\n")
