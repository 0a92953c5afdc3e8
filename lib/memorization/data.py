"""The data (scikit-learn's 8×8 digits, offline) and the metrics: a small digit
classifier whose features play DINO's role, the copy rate, the pixel nearest-neighbour
ratio and the Fréchet distance."""

from __future__ import annotations

import torch

from lib.common import check_int, check_tensor, fit_classifier, seeded_init


def load_digits_split(seed: int, n_pool: int = 300, n_heldout: int = 500) -> dict:
    """The 1797 digits scaled to [−1, 1] (x/8 − 1), shuffled by ``seed`` and split into
    disjoint sets: ``pool`` (n_pool, 64; the diffusion training sets are its first N
    rows), ``heldout`` (n_heldout, 64; calibration and the Fréchet reference) and
    ``clf`` (the rest, with labels ``clf_y``; the feature classifier's data)."""
    from sklearn.datasets import load_digits

    seed = check_int("seed", seed, 0)
    n_pool, n_heldout = (
        check_int("n_pool", n_pool, 1),
        check_int("n_heldout", n_heldout, 1),
    )
    d = load_digits()
    x = torch.tensor(d.data, dtype=torch.float32) / 8 - 1  # (1797, 64) in [−1, 1]
    lab = torch.tensor(d.target)
    if n_pool + n_heldout > len(x) - 100:
        raise ValueError(
            f"n_pool, n_heldout: expected a sum <= {len(x) - 100}, got "
            f"{n_pool + n_heldout}"
        )
    perm = torch.randperm(
        len(x), generator=torch.Generator().manual_seed(10_000 + seed)
    )
    a, b = n_pool, n_pool + n_heldout
    return {
        "pool": x[perm[:a]],
        "pool_y": lab[perm[:a]],
        "heldout": x[perm[a:b]],
        "clf": x[perm[b:]],
        "clf_y": lab[perm[b:]],
    }


class DigitNet(torch.nn.Module):
    """64 → 256 → 128 → 10 ReLU MLP; :meth:`features` is the 128-d layer."""

    def __init__(self):
        super().__init__()
        self.body = torch.nn.Sequential(
            torch.nn.Linear(64, 256),
            torch.nn.ReLU(),
            torch.nn.Linear(256, 128),
            torch.nn.ReLU(),
        )
        self.head = torch.nn.Linear(128, 10)

    def features(self, x):
        return self.body(x)

    def forward(self, x):
        return self.head(self.body(x))


def train_feature_net(x, y, seed: int, steps: int = 800) -> DigitNet:
    """The DINO analogue: :class:`DigitNet` trained on (x, y) (data disjoint from the
    diffusion training sets), small pixel noise as augmentation-free regulariser."""
    check_tensor("x", x, shape=(None, 64), floating=True, finite=True, nonempty=True)
    check_tensor("y", y, shape=(len(x),), integer=True)
    if bool(((y < 0) | (y > 9)).any()):
        raise ValueError(f"y: expected labels in 0..9, got {y.min()}..{y.max()}")
    seed, steps = check_int("seed", seed, 0), check_int("steps", steps, 1)
    net = seeded_init(DigitNet, seed)
    g = torch.Generator().manual_seed(seed)
    xa = torch.cat([x, x + 0.1 * torch.randn(x.shape, generator=g)])  # (2n, 64)
    fit_classifier(
        net, xa, torch.cat([y, y]), generator=g, batch_size=128, lr=2e-3, steps=steps
    )
    return net.requires_grad_(False)


def _unit(f):
    return f / f.norm(dim=-1, keepdim=True).clamp_min(1e-12)


def _check_pair(qn: str, q, tn: str, t, min_rows: int = 1):
    """Queries (..., Q, F) and references (..., N, F): float, finite, same width."""
    check_tensor(qn, q, floating=True, finite=True, nonempty=True)
    check_tensor(tn, t, floating=True, finite=True, nonempty=True)
    if q.ndim < 2 or q.ndim != t.ndim or q.shape[:-2] != t.shape[:-2]:
        raise ValueError(
            f"{qn}, {tn}: expected shapes (..., Q, F) and (..., N, F), got "
            f"{tuple(q.shape)} and {tuple(t.shape)}"
        )
    if q.shape[-1] != t.shape[-1] or t.shape[-2] < min_rows:
        raise ValueError(
            f"{tn}: expected >= {min_rows} rows of width {q.shape[-1]}, got "
            f"{tuple(t.shape)}"
        )


def nearest_similarity(f_query: torch.Tensor, f_train: torch.Tensor) -> torch.Tensor:
    """Cosine similarity of each query's features to its nearest training image's:
    (..., Q, F) against (..., N, F) → (..., Q)."""
    _check_pair("f_query", f_query, "f_train", f_train)
    return (_unit(f_query) @ _unit(f_train).transpose(-1, -2)).amax(-1)


def nn_ratio(x_query: torch.Tensor, x_train: torch.Tensor) -> torch.Tensor:
    """d₁/d₂: pixel distance to the nearest training image over the distance to the
    second nearest, (..., Q)."""
    _check_pair("x_query", x_query, "x_train", x_train, min_rows=2)
    d = torch.cdist(x_query, x_train)  # (..., Q, N)
    two = d.topk(2, dim=-1, largest=False).values
    return two[..., 0] / two[..., 1].clamp_min(1e-12)


def frechet_distance(f1: torch.Tensor, f2: torch.Tensor) -> float:
    """‖μ₁ − μ₂‖² + tr(Σ₁ + Σ₂ − 2 (Σ₁^{1/2} Σ₂ Σ₁^{1/2})^{1/2}) between the rows of
    f1 (n₁, F) and f2 (n₂, F), in float64."""
    check_tensor("f1", f1, ndim=2, floating=True, finite=True)
    check_tensor("f2", f2, ndim=2, floating=True, finite=True)
    if f1.shape[1] != f2.shape[1] or min(len(f1), len(f2)) < 2:
        raise ValueError(
            f"f1, f2: expected >= 2 rows each and one width, got {tuple(f1.shape)} "
            f"and {tuple(f2.shape)}"
        )
    a, b = f1.double(), f2.double()
    mu1, mu2 = a.mean(0), b.mean(0)
    s1, s2 = torch.cov(a.T), torch.cov(b.T)

    def sqrtm(s):
        w, v = torch.linalg.eigh(s)
        return (v * w.clamp_min(0).sqrt()) @ v.T

    r = sqrtm(s1)
    cross = torch.linalg.eigvalsh(r @ s2 @ r).clamp_min(0).sqrt().sum()
    return float((mu1 - mu2).pow(2).sum() + s1.trace() + s2.trace() - 2 * cross)
