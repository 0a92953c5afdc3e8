"""The sphere experiments: the volcano and the earthquake catalogues on S², a small EGF
on six rotations against an equally small Moser Flow and a von Mises–Fisher mixture, by
negative log-likelihood on a held-out test split (the same settings for both data sets:
chosen on the volcanoes' tuning seeds, not re-tuned for the earthquakes).

Densities are with respect to the surface measure of the unit sphere (area 4π), in
nats: the uniform density scores log 4π ≈ 2.53. A network's density is f̂⁺
normalised by Fibonacci-lattice quadrature (``cfg.sphere_quad`` points) and floored at
1e-4 per steradian in the log."""

from __future__ import annotations

import math
import time

import torch

from lib.common import check_choice, check_int, check_positive, make_generator

from .models import EGF, MoserFlow, _terminal_chunks
from .sphere import (
    fibonacci_sphere,
    fit_vmf_mixture,
    load_earthquakes,
    load_volcanoes,
    lonlat_grid,
    make_rotations,
    split_points,
    uniform_sphere,
    vmf_mixture_logpdf,
)

#: the networks of the sphere comparison (egf_pi2: the control, rotations by π/2)
SPHERE_MODELS = ("egf", "moser", "egf_pi2")
#: the longitude × latitude grid of the drawn maps
MAP_SHAPE = (90, 45)
#: the density floor in the log (per steradian; the uniform density is 0.0796)
NLL_FLOOR = 1e-4


#: the data sets on the sphere
DATASETS = ("volcano", "earthquake")


def event_split(dataset: str, seed: int, device="cpu") -> tuple:
    """A data set of :data:`DATASETS` split 70 / 10 / 20 % into (train, val, test) by
    ``seed`` (split seed 10 000 + seed, as the torus data)."""
    dataset = check_choice("dataset", dataset, DATASETS)
    seed = check_int("seed", seed, 0)
    load = load_volcanoes if dataset == "volcano" else load_earthquakes
    return split_points(load(device), 10_000 + seed)


def volcano_split(seed: int, device="cpu") -> tuple:
    """The volcanoes' (train, val, test) split of ``seed`` (:func:`event_split`)."""
    return event_split("volcano", seed, device)


def build_sphere_model(name: str, cfg, seed: int, device="cpu"):
    """A freshly initialised network (seeded by ``seed``) of the sphere comparison."""
    name = check_choice("name", name, SPHERE_MODELS)
    torch.manual_seed(seed)
    w, d = cfg.sphere_width, cfg.sphere_depth
    if name == "moser":
        return MoserFlow(w, d, space="sphere").to(device)
    kind = "pi4" if name == "egf" else "pi2"
    return EGF(make_rotations(kind), w, d).to(device)


@torch.no_grad()
def normaliser(model, cfg, device="cpu") -> tuple:
    """(∫f̂⁺, ∫(f̂)⁻) by quadrature on ``cfg.sphere_quad`` Fibonacci points."""
    f = _terminal_chunks(model, fibonacci_sphere(cfg.sphere_quad, device=device))
    area = 4 * math.pi
    return float(f.clamp_min(0).mean()) * area, float((-f).clamp_min(0).mean()) * area


@torch.no_grad()
def sphere_nll(model, x: torch.Tensor, norm: float) -> float:
    """NLL (nats, mean over the rows of ``x``) under q = f̂⁺ / ``norm``, floored at
    :data:`NLL_FLOOR`."""
    q = _terminal_chunks(model, x).clamp_min(0) / norm
    return float(-q.clamp_min(NLL_FLOOR).log().mean())


def fit_sphere(
    name: str, cfg, seed: int, lr=None, device="cpu", dataset: str = "volcano"
) -> tuple:
    """Train network ``name`` on the training split of seed ``seed`` of ``dataset``
    with the KL-weakFM loss; returns (model, metrics: test and validation NLL,
    negative mass, parameters, loss curve, wall time, and the normalised density on
    the :data:`MAP_SHAPE` longitude–latitude grid)."""
    from .experiment import _check_cfg, train

    _check_cfg(cfg)
    name = check_choice("name", name, SPHERE_MODELS)
    seed = check_int("seed", seed, 0)
    if lr is None:
        lr = cfg.lr_sphere_moser if name == "moser" else cfg.lr_sphere_egf
    lr = check_positive("lr", lr)
    tr, va, te = event_split(dataset, seed, device)
    model = build_sphere_model(name, cfg, seed, device)
    t0 = time.perf_counter()
    curve = train(
        model,
        tr,
        cfg,
        lr,
        seed,
        device,
        steps=cfg.sphere_steps,
        batch=cfg.sphere_batch,
        uniform=lambda n, g: uniform_sphere(n, g),
        b=cfg.sphere_b,
    )
    pos, neg = normaliser(model, cfg, device)
    with torch.no_grad():
        f = _terminal_chunks(model, lonlat_grid(*MAP_SHAPE, device=device))
    out = {
        "test_nll": sphere_nll(model, te, pos),
        "val_nll": sphere_nll(model, va, pos),
        "neg_mass": neg,
        "params": sum(w.numel() for w in model.parameters()),
        "curve": curve,
        "seconds": time.perf_counter() - t0,
        "density_map": (f.clamp_min(0) / pos).reshape(MAP_SHAPE[::-1]).tolist(),
    }
    return model, out


def fit_vmf(cfg, seed: int, device="cpu", dataset: str = "volcano") -> dict:
    """The vMF mixture on seed ``seed``'s training split of ``dataset``, its number of
    components chosen from ``cfg.vmf_components`` by validation likelihood; its test
    NLL."""
    from .experiment import _check_cfg

    _check_cfg(cfg)
    seed = check_int("seed", seed, 0)
    tr, va, te = event_split(dataset, seed, device)
    best = None
    for k in cfg.vmf_components:
        if k > len(tr):
            continue
        fit = fit_vmf_mixture(tr, k, cfg.vmf_iters, make_generator(seed))
        params = (fit["weights"], fit["means"], fit["kappas"])
        val = float(-vmf_mixture_logpdf(va, *params).mean())
        if best is None or val < best[0]:
            best = (val, k, params)
    val, k, params = best
    dens = vmf_mixture_logpdf(lonlat_grid(*MAP_SHAPE, device=device), *params).exp()
    return {
        "test_nll": float(-vmf_mixture_logpdf(te, *params).mean()),
        "val_nll": val,
        "k": k,
        "density_map": dens.reshape(MAP_SHAPE[::-1]).tolist(),
    }


def sphere_fit_metrics(
    name: str, cfg, seed: int, device="cpu", dataset: str = "volcano"
) -> dict:
    """The metrics of one sphere model (a network of :data:`SPHERE_MODELS`, without
    its loss curve, or ``"vmf"``) on seed ``seed`` of ``dataset``."""
    if name == "vmf":
        return fit_vmf(cfg, seed, device, dataset)
    m = fit_sphere(name, cfg, seed, device=device, dataset=dataset)[1]
    m.pop("curve")
    return m


def sphere_fits(cfg, seeds, device="cpu") -> dict:
    """Every network of :data:`SPHERE_MODELS` and the vMF mixture on each seed:
    {"nll": {model: {seed: test NLL}}, "detail": {model: {seed: metrics}}}; the
    density maps are kept for the first seed only."""
    out = {"nll": {}, "detail": {}}
    for name in (*SPHERE_MODELS, "vmf"):
        out["nll"][name], out["detail"][name] = {}, {}
        for i, s in enumerate(seeds):
            m = sphere_fit_metrics(name, cfg, s, device)
            if i > 0:
                m.pop("density_map")
            out["nll"][name][s] = m["test_nll"]
            out["detail"][name][s] = m
    return out


def tune_sphere_lr(cfg, seeds, lrs, device="cpu") -> dict:
    """The same budget for both networks: each learning rate of ``lrs`` on each seed;
    {model: {lr: mean validation NLL}} (validation split, never the test split)."""
    out = {}
    for name in ("egf", "moser"):
        out[name] = {}
        for lr in lrs:
            vals = [fit_sphere(name, cfg, s, lr, device)[1]["val_nll"] for s in seeds]
            out[name][lr] = sum(vals) / len(vals)
    return out
