"""Print the chapter notebooks given, longest recorded nbval runtime first.

`make nbval` hands the chapters to pytest-xdist workers in this order, so that with two
workers the long chapters start first and the short ones fill the gaps at the end (a
chapter with no recorded runtime counts as the longest). Runtimes come from the status
page's data, book/_data/nbval_status.json. Standard library only: it runs before the
venv exists.
"""

from __future__ import annotations

import json
import pathlib
import sys

STATUS = (
    pathlib.Path(__file__).resolve().parent.parent
    / "book"
    / "_data"
    / "nbval_status.json"
)


def order(paths: list[str], status: dict) -> list[str]:
    """Sort notebook paths by recorded seconds, descending; unknown chapters first."""

    def seconds(path: str) -> float:
        rec = status.get(pathlib.Path(path).stem) or {}
        return float(rec.get("seconds", float("inf")))

    return sorted(paths, key=lambda p: (-seconds(p), p))


if __name__ == "__main__":
    try:
        data = json.loads(STATUS.read_text())
    except (OSError, ValueError):
        data = {}
    print(" ".join(order(sys.argv[1:], data)))
