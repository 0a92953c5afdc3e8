"""Re-run chapters top to bottom in a fresh kernel, in place, storing outputs and widget state.

Usage: python scripts/execute.py book/<slug>.ipynb [...]   (the Makefile's `make execute [SLUG=...]`)
The kernel is this interpreter's (the project's venv); the working directory is the notebook's.
"""
import os
import pathlib
import sys
import time

import nbformat
from nbclient import NotebookClient


def execute(path: pathlib.Path) -> float:
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(nb, timeout=900, kernel_name="python3", allow_errors=False,
                            store_widget_state=True,
                            resources={"metadata": {"path": str(path.parent)}})
    t0 = time.perf_counter()
    client.execute()
    wall = time.perf_counter() - t0
    nbformat.write(nb, path)
    return wall


def main(paths):
    os.environ.setdefault("TQDM_DISABLE", "1")
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
