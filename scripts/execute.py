"""Re-run chapters top to bottom in a fresh kernel, in place, storing outputs and widget
state.

Usage: python scripts/execute.py book/<slug>.ipynb [...]   (the Makefile's `make execute
[SLUG=...]`) The kernel is this interpreter's (the project's venv); the working
directory is the notebook's.
"""

import os
import pathlib
import sys
import time

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellTimeoutError

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
from lib.cpu_pins import pin as pin_cpu_kernels  # noqa: E402

# No chapter cell may take this long (a whole chapter has a 3-minute budget); a cell
# that does is
# the client stalling on a reply it missed (jupyter/nbclient#312), and the notebook is
# re-run once.
CELL_TIMEOUT_S = 400


def execute(path: pathlib.Path, attempts: int = 2) -> float:
    for attempt in range(1, attempts + 1):
        try:
            return _execute_once(path)
        except CellTimeoutError:
            if attempt == attempts:
                raise
            print(
                f"{path}: a cell timed out after {CELL_TIMEOUT_S} s; re-running the "
                f"notebook",
                file=sys.stderr,
            )
    raise AssertionError("unreachable")


def _execute_once(path: pathlib.Path) -> float:
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(
        nb,
        timeout=CELL_TIMEOUT_S,
        kernel_name="python3",
        allow_errors=False,
        store_widget_state=True,
        resources={"metadata": {"path": str(path.parent)}},
    )
    t0 = time.perf_counter()
    client.execute()
    wall = time.perf_counter() - t0
    # the CPU kernels the outputs came from (AVX2 and AVX-512 kernels round differently,
    # so strict nbval on the other kind of CPU fails; conftest.py names it when it does)
    nb.metadata.setdefault("book", {})["executed_on"] = cpu_kind()
    nbformat.write(nb, path)
    return wall


def cpu_kind() -> str:
    """``"<torch CPU capability> <machine>"``, e.g. ``"AVX512 x86_64"``."""
    import platform

    import torch

    return f"{torch.backends.cpu.get_cpu_capability()} {platform.machine()}"


def main(paths):
    os.environ.setdefault("TQDM_DISABLE", "1")
    pin_cpu_kernels()  # before cpu_kind imports torch; kernels inherit it
    if not paths:
        print("execute.py: no notebooks given", file=sys.stderr)
        return 2
    for p in map(pathlib.Path, paths):
        if not p.exists():
            print(f"execute.py: {p} does not exist", file=sys.stderr)
            return 2
        wall = execute(p)
        print(f"executed {p} in {wall:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
