"""Real image patches that ship offline, and the "generators" that fake them.

Real images: grey versions of scikit-image's bundled photographs and textures and
scikit-learn's two sample photographs, each halved by 2×2 averaging (which also
breaks the JPEG block grid of the photographs that were stored as JPEG). Each image
is cut into three horizontal bands: the top 60 % for the foundation model's
pretraining, the next 20 % for the detector's training and validation patches, and
the bottom 20 % for its test patches, so no test pixel was ever seen in training.

A **generator** maps real 16×16 patches (values in [0, 1]) to fakes with the same
content and a generator-specific trace, the way the paper's fakes come from
different generative families:

- ``nearest``: 2× down-sampling (area), nearest-neighbour up-sampling (the
  checkerboard of transposed convolutions in miniature);
- ``bilinear``: the same down-sampling, bilinear up-sampling;
- ``dct``: 8×8 block DCT with JPEG-style quantisation;
- ``pca``: projection on the top principal components of real patches;
- ``blend``: a real patch blended into another through a smooth mask (face swap);
- ``ae``: the reconstruction of a small convolutional autoencoder trained on real
  patches (a learned generator).
"""

from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from lib.common import (
    check_choice,
    check_generator,
    check_instance,
    check_int,
    check_tensor,
)

GENERATORS = ("nearest", "bilinear", "dct", "pca", "blend", "ae")
_SKIMAGE = (
    "astronaut", "brick", "camera", "cat", "cell", "chelsea", "clock", "coffee",
    "coins", "grass", "gravel", "hubble_deep_field", "immunohistochemistry", "moon",
    "page", "retina", "rocket", "text",
)  # fmt: skip
_BANDS = {"pretrain": (0.0, 0.6), "train": (0.6, 0.8), "test": (0.8, 1.0)}
PATCH = 16
_CACHE: dict = {}


def _grey(img: np.ndarray) -> np.ndarray:
    img = np.asarray(img, dtype=np.float64)
    if img.max() > 1.5:
        img = img / 255.0
    if img.ndim == 3:
        img = img[..., :3] @ np.array([0.299, 0.587, 0.114])
    h, w = (img.shape[0] // 2) * 2, (img.shape[1] // 2) * 2
    img = img[:h, :w].reshape(h // 2, 2, w // 2, 2).mean(axis=(1, 3))  # halve
    return img.astype(np.float32)


def real_images() -> list:
    """The grey, halved real images (a list of 2-D float32 arrays in [0, 1])."""
    if "images" not in _CACHE:
        import skimage.data as skd
        from sklearn.datasets import load_sample_images

        imgs = [_grey(getattr(skd, name)()) for name in _SKIMAGE]
        imgs += [_grey(im) for im in load_sample_images().images]
        _CACHE["images"] = imgs
    return _CACHE["images"]


def sample_patches(
    n: int, band: str, generator: torch.Generator, size: int = PATCH
) -> tuple:
    """``n`` random ``size``×``size`` patches from one band of every real image.

    Returns ``(x, source)``: x (n, 1, size, size) in [0, 1] and the index of the image
    each patch came from (n,). Images are drawn uniformly, positions uniformly inside
    the band.
    """
    n = check_int("n", n, 1)
    check_choice("band", band, tuple(_BANDS))
    size = check_int("size", size, 4)
    check_generator("generator", generator)
    imgs = real_images()
    src = torch.randint(len(imgs), (n,), generator=generator)
    u = torch.rand(n, 2, generator=generator)
    out = np.empty((n, 1, size, size), np.float32)
    lo, hi = _BANDS[band]
    for i in range(n):
        im = imgs[int(src[i])]
        r0, r1 = int(lo * im.shape[0]), int(hi * im.shape[0]) - size
        r = r0 + int(float(u[i, 0]) * (r1 - r0 + 1))
        c = int(float(u[i, 1]) * (im.shape[1] - size + 1))
        out[i, 0] = im[r : r + size, c : c + size]
    return torch.from_numpy(out), src


# ---------------------------------------------------------------- the generators


def upsample_fake(x: torch.Tensor, mode: str = "nearest") -> torch.Tensor:
    """2× area down-sampling then up-sampling by ``mode`` ("nearest", "bilinear")."""
    check_tensor("x", x, ndim=4, floating=True, nonempty=True, finite=True)
    check_choice("mode", mode, ("nearest", "bilinear", "bicubic"))
    small = F.avg_pool2d(x, 2)  # (B, 1, H/2, W/2)
    kw = {} if mode == "nearest" else {"align_corners": False}
    return F.interpolate(small, scale_factor=2, mode=mode, **kw).clamp(0, 1)


def dct_matrix(n: int = 8) -> torch.Tensor:
    """The orthonormal DCT-II matrix D (n, n): coefficients = D @ block @ Dᵀ."""
    check_int("n", n, 1)
    k = torch.arange(n, dtype=torch.float64)[:, None]
    i = torch.arange(n, dtype=torch.float64)[None, :]
    d = torch.cos(math.pi * (2 * i + 1) * k / (2 * n)) * math.sqrt(2 / n)
    d[0] /= math.sqrt(2)
    return d.float()


#: the JPEG standard's luminance quantisation table (quality 50), in [0, 255] units
_JPEG_Q = torch.tensor(
    [
        [16, 11, 10, 16, 24, 40, 51, 61], [12, 12, 14, 19, 26, 58, 60, 55],
        [14, 13, 16, 24, 40, 57, 69, 56], [14, 17, 22, 29, 51, 87, 80, 62],
        [18, 22, 37, 56, 68, 109, 103, 77], [24, 35, 55, 64, 81, 104, 113, 92],
        [49, 64, 78, 87, 103, 121, 120, 101], [72, 92, 95, 98, 112, 100, 103, 99],
    ],
    dtype=torch.float32,
)  # fmt: skip


def dct_fake(x: torch.Tensor, quality: int = 30) -> torch.Tensor:
    """8×8 block DCT quantised with the JPEG table at ``quality`` (1–100), inverted."""
    check_tensor("x", x, ndim=4, floating=True, nonempty=True, finite=True)
    quality = check_int("quality", quality, 1)
    if quality > 100 or x.shape[-1] % 8 or x.shape[-2] % 8:
        raise ValueError(
            f"quality, x: expected quality in [1, 100] and sides divisible by 8, got "
            f"{quality} and shape {tuple(x.shape)}"
        )
    scale = 5000 / quality if quality < 50 else 200 - 2 * quality
    q = ((_JPEG_Q * scale + 50) // 100).clamp(min=1) / 255.0  # (8, 8)
    d = dct_matrix(8).to(x)
    b, c, h, w = x.shape
    blocks = x.reshape(b, c, h // 8, 8, w // 8, 8).transpose(3, 4)  # (B,C,h,w,8,8)
    coef = d @ (blocks - 0.5) @ d.T
    coef = torch.round(coef / q.to(x)) * q.to(x)  # quantise
    out = (d.T @ coef @ d + 0.5).transpose(3, 4).reshape(b, c, h, w)
    return out.clamp(0, 1)


def pca_basis(x: torch.Tensor, k: int) -> tuple:
    """Mean (D,) and the top-``k`` principal directions (D, k) of flattened patches
    x (B, C, H, W); all min(B, D) of them when k is larger."""
    check_tensor("x", x, ndim=4, floating=True, nonempty=True, finite=True)
    check_int("k", k, 1)
    flat = x.flatten(1)
    mean = flat.mean(0)
    _, _, vh = torch.linalg.svd(flat - mean, full_matrices=False)
    return mean, vh[:k].T


def pca_fake(x: torch.Tensor, mean: torch.Tensor, basis: torch.Tensor) -> torch.Tensor:
    """Projection of each patch on the affine PCA subspace ``mean + span(basis)``:
    x (B, C, H, W), mean (D,) and basis (D, k) with D = C·H·W."""
    check_tensor("x", x, ndim=4, floating=True, nonempty=True, finite=True)
    d = x[0].numel()
    check_tensor("mean", mean, shape=(d,), floating=True, finite=True)
    check_tensor("basis", basis, shape=(d, None), floating=True, finite=True)
    flat = x.flatten(1) - mean  # (B, D)
    return ((flat @ basis) @ basis.T + mean).reshape(x.shape).clamp(0, 1)


def blend_fake(
    x: torch.Tensor, donor: torch.Tensor, generator: torch.Generator
) -> torch.Tensor:
    """Blend ``donor`` into ``x`` through a smooth elliptical mask (a face-swap
    analogue); the mask's centre, radii and softness are random per patch."""
    check_tensor("x", x, ndim=4, floating=True, nonempty=True, finite=True)
    check_tensor("donor", donor, shape=tuple(x.shape), floating=True, finite=True)
    check_generator("generator", generator)
    b, _, h, w = x.shape
    u = torch.rand(b, 5, generator=generator)
    yy = torch.linspace(0, 1, h)[None, :, None]
    xx = torch.linspace(0, 1, w)[None, None, :]
    cy, cx = (0.3 + 0.4 * u[:, 0])[:, None, None], (0.3 + 0.4 * u[:, 1])[:, None, None]
    ry, rx = (0.2 + 0.2 * u[:, 2])[:, None, None], (0.2 + 0.2 * u[:, 3])[:, None, None]
    soft = (0.05 + 0.1 * u[:, 4])[:, None, None]
    dist = ((yy - cy) / ry) ** 2 + ((xx - cx) / rx) ** 2  # (B, H, W)
    mask = torch.sigmoid((1 - dist) / soft)[:, None].to(x)  # (B, 1, H, W)
    return mask * donor + (1 - mask) * x


class PatchAE(nn.Module):
    """A small convolutional autoencoder (16×16 → 4×4×c → 16×16), the learned
    generator."""

    def __init__(self, c: int = 8):
        super().__init__()
        check_int("c", c, 1)
        self.enc = nn.Sequential(
            nn.Conv2d(1, 16, 3, 2, 1), nn.GELU(), nn.Conv2d(16, c, 3, 2, 1)
        )
        self.dec = nn.Sequential(
            nn.ConvTranspose2d(c, 16, 4, 2, 1), nn.GELU(),
            nn.ConvTranspose2d(16, 1, 4, 2, 1), nn.Sigmoid(),
        )  # fmt: skip

    def forward(self, x):
        return self.dec(self.enc(x))


def train_ae(
    x: torch.Tensor, steps: int, generator: torch.Generator, batch: int = 64
) -> PatchAE:
    """Fit :class:`PatchAE` to real patches x (B, 1, H, W), H and W multiples of 4, by
    mean squared error (Adam, 3e-3)."""
    check_tensor("x", x, ndim=4, floating=True, nonempty=True, finite=True)
    if x.shape[1] != 1 or x.shape[2] % 4 or x.shape[3] % 4:
        raise ValueError(
            f"x: expected grey patches (B, 1, H, W) with H and W multiples of 4, got "
            f"{tuple(x.shape)}"
        )
    steps = check_int("steps", steps, 1)
    check_generator("generator", generator)
    check_int("batch", batch, 1)
    torch.manual_seed(int(torch.randint(2**31, (1,), generator=generator)))
    ae = PatchAE().to(x.device)
    opt = torch.optim.Adam(ae.parameters(), lr=3e-3)
    for _ in range(steps):
        idx = torch.randint(len(x), (batch,), generator=generator).to(x.device)
        loss = F.mse_loss(ae(x[idx]), x[idx])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    return ae.eval()


def make_fakes(
    name: str, x: torch.Tensor, donor: torch.Tensor, tools: dict, generator
) -> torch.Tensor:
    """Fakes of generator ``name`` built from real patches ``x`` (``donor``: other real
    patches for ``blend``; ``tools``: the fitted ``pca`` basis and ``ae``)."""
    check_choice("name", name, GENERATORS)
    check_instance("tools", tools, dict, "a dict of the fitted generators")
    check_generator("generator", generator)
    if name == "pca" and "pca" not in tools:
        raise ValueError("tools: expected the key 'pca' (mean, basis), got none")
    if name == "ae":
        if not callable(tools.get("ae")):
            raise ValueError("tools: expected the key 'ae' (a PatchAE), got none")
        check_tensor("x", x, ndim=4, floating=True, nonempty=True, finite=True)
    with torch.no_grad():
        if name in ("nearest", "bilinear"):
            return upsample_fake(x, name)
        if name == "dct":
            return dct_fake(x, tools.get("quality", 30))
        if name == "pca":
            return pca_fake(x, *tools["pca"])
        if name == "blend":
            return blend_fake(x, donor, generator)
        return tools["ae"](x)
