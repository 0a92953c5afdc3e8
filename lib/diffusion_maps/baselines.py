"""The paper's other methods on the same data: LTSA (scikit-learn) and a small VAE
(torch)."""

from __future__ import annotations

import math

import torch
from torch import nn

from lib.common import check_int, check_positive, check_tensor


def _check_points(x) -> None:
    check_tensor("x", x, ndim=2, floating=True)
    if x.shape[0] < 1 or x.shape[1] < 1:
        raise ValueError(
            f"x: expected at least one point with at least one coordinate, got shape "
            f"{tuple(x.shape)}"
        )
    check_tensor("x", x, finite=True)


def circular_correlation(a: torch.Tensor, b: torch.Tensor) -> float:
    """|rho_T|, the Fisher-Lee (1983) circular correlation of two angle samples a, b
    (n,):

    rho_T = det(X^T Y) / sqrt(det(X^T X) det(Y^T Y)),
        X = [cos a, sin a], Y = [cos b, sin b],
    i.e. sum_{i<j} sin(a_i - a_j) sin(b_i - b_j) normalised. Unlike Jammalamadaka's
    coefficient it needs no circular mean (undefined for uniform angles) and is
    invariant to rotating either sample; the absolute value also forgives a reflection.
    1 = the same circular order.
    """
    check_tensor("a", a, ndim=1, floating=True)
    check_tensor("b", b, ndim=1, floating=True)
    if a.shape != b.shape or a.numel() < 2:
        raise ValueError(
            f"a, b: expected two angle samples of one length >= 2, got "
            f"{tuple(a.shape)} and {tuple(b.shape)}"
        )
    check_tensor("a", a, finite=True)
    check_tensor("b", b, finite=True)
    x = torch.stack([torch.cos(a.double()), torch.sin(a.double())], 1)  # (n, 2)
    y = torch.stack([torch.cos(b.double()), torch.sin(b.double())], 1)  # (n, 2)
    num = torch.linalg.det(x.T @ y)
    den = torch.sqrt(torch.linalg.det(x.T @ x) * torch.linalg.det(y.T @ y)).clamp(
        min=1e-300
    )
    return float((num / den).abs())


def embedding_angle(y: torch.Tensor) -> torch.Tensor:
    """The angle of a 2-D embedding (n, 2) around its mean: atan2 of the centred
    coordinates."""
    check_tensor("y", y, shape=(None, 2), floating=True, nonempty=True, finite=True)
    y = y - y.mean(0)
    return torch.atan2(y[:, 1], y[:, 0])


def ltsa_embedding(
    x: torch.Tensor, n_neighbors: int = 20, seed: int = 0
) -> torch.Tensor:
    """LTSA (scikit-learn ``LocallyLinearEmbedding(method='ltsa')``) in 2-D, shape (n,
    2)."""
    from sklearn.manifold import LocallyLinearEmbedding

    _check_points(x)
    check_int("n_neighbors", n_neighbors, 1)
    if n_neighbors >= x.shape[0]:
        raise ValueError(
            f"n_neighbors: expected fewer than the {x.shape[0]} points, got "
            f"{n_neighbors}"
        )
    check_int("seed", seed, 0)
    lle = LocallyLinearEmbedding(
        n_neighbors=n_neighbors,
        n_components=2,
        method="ltsa",
        eigen_solver="dense",
        random_state=seed,
    )
    y = lle.fit_transform(x.detach().cpu().double().numpy())
    return torch.from_numpy(y).to(x.device)


class VAE(nn.Module):
    """A small MLP VAE with a 2-D Gaussian latent: q(z|x) = N(mu(x), diag sigma^2(x)),
    p(z) = N(0, I)."""

    def __init__(self, dim: int, hidden: int = 64, latent: int = 2):
        super().__init__()
        check_int("dim", dim, minimum=1)
        check_int("hidden", hidden, minimum=1)
        check_int("latent", latent, minimum=1)
        self.enc = nn.Sequential(
            nn.Linear(dim, hidden),
            nn.SiLU(),
            nn.Linear(hidden, hidden),
            nn.SiLU(),
            nn.Linear(hidden, 2 * latent),
        )
        self.dec = nn.Sequential(
            nn.Linear(latent, hidden),
            nn.SiLU(),
            nn.Linear(hidden, hidden),
            nn.SiLU(),
            nn.Linear(hidden, dim),
        )
        self.log_sigma2 = nn.Parameter(torch.zeros(()))  # decoder variance

    def forward(
        self, x: torch.Tensor, noise: torch.Tensor, beta: float = 1.0
    ) -> torch.Tensor:
        """The negative ELBO (Gaussian decoder N(dec(z), sigma^2 I)) with the KL term
        weighted by ``beta`` (warm-up against posterior collapse), averaged over the
        batch (B, dim)."""
        mu, logvar = self.enc(x).chunk(2, dim=1)  # (B, 2), (B, 2)
        z = mu + torch.exp(0.5 * logvar) * noise  # reparametrisation
        d = x.shape[1]
        rec = 0.5 * (
            ((self.dec(z) - x) ** 2).sum(1) / self.log_sigma2.exp()
            + d * self.log_sigma2
        )  # -log p(x|z) + const
        kl = 0.5 * (mu**2 + logvar.exp() - 1.0 - logvar).sum(1)  # KL(q || N(0, I))
        return (rec + beta * kl).mean()

    @torch.no_grad()
    def encode(self, x: torch.Tensor) -> torch.Tensor:
        """Posterior means mu(x), shape (n, 2)."""
        return self.enc(x).chunk(2, dim=1)[0]


def train_vae(
    x: torch.Tensor,
    steps: int = 1500,
    batch: int = 256,
    lr: float = 3e-3,
    hidden: int = 64,
    seed: int = 0,
) -> VAE:
    """Fit :class:`VAE` on the rows of ``x`` (n, D) with Adam, on centred data scaled by
    one global standard deviation (per-feature scaling would blow the pure-noise
    coordinates up); the KL weight grows linearly from 0 to 1 over the first half of
    training."""
    _check_points(x)
    check_int("steps", steps, minimum=1)
    check_int("batch", batch, minimum=1)
    check_positive("lr", lr)
    check_int("hidden", hidden, minimum=1)
    check_int("seed", seed, minimum=0)
    g = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    x = _standardise(x)  # (n, D)
    model = VAE(x.shape[1], hidden).to(x.device)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    n = x.shape[0]
    for step in range(steps):
        idx = torch.randint(n, (min(batch, n),), generator=g).to(x.device)
        eps = torch.randn(idx.shape[0], 2, generator=g).to(x.device)
        loss = model(x[idx], eps, beta=min(1.0, 2.0 * step / steps))  # KL warm-up
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    model.eval()
    return model


def _standardise(x: torch.Tensor) -> torch.Tensor:
    x = x.float() - x.float().mean(0)
    return x / x.pow(2).mean().sqrt().clamp(min=1e-6)  # unit mean variance


def vae_embedding(
    x: torch.Tensor, steps: int = 1500, seed: int = 0, hidden: int = 64
) -> torch.Tensor:
    """Train :func:`train_vae` and return the posterior means of the standardised data,
    (n, 2)."""
    model = train_vae(x, steps=steps, seed=seed, hidden=hidden)
    return model.encode(_standardise(x))
