"""The chapter's runs: GP particle tracking in 1-D and 2-D, every method on the same
point clouds, over several seeds; the tuning grid; the FULL entry point."""

from __future__ import annotations

import time

import numpy as np
import torch

from lib.common import check_choice, check_instance, check_int
from lib.common.claims import seed_list

from .model import Tracks, simulate_tracks
from .tracking import METHODS, correct_rates, track

METRICS = ("one-step", "3-step", "5-step", "whole")


def _check_cfg(cfg) -> None:
    from . import Config

    check_instance("cfg", cfg, Config)


def _check_dim(name: str, dim) -> int:
    if isinstance(dim, bool) or dim not in (1, 2) or not isinstance(dim, int):
        raise ValueError(f"{name}: expected 1 or 2, got {dim!r}")
    return dim


def _check_names(name: str, values, choices) -> tuple:
    if isinstance(values, (str, bytes)) or not isinstance(values, (list, tuple)):
        raise TypeError(
            f"{name}: expected a list or tuple, got {type(values).__name__}"
        )
    if not values:
        raise ValueError(f"{name}: expected at least one value, got {values!r}")
    for i, v in enumerate(values):
        check_choice(f"{name}[{i}]", v, choices)
    return tuple(values)


def make_tracks(cfg, dim: int, seed: int, device="cpu", noise=None) -> Tracks:
    """The ``dim``-dimensional GP set of ``cfg`` for one seed (generator
    10·seed + dim)."""
    _check_cfg(cfg)
    _check_dim("dim", dim)
    check_int("seed", seed, 0)
    n, ell = (cfg.n1, cfg.data_ell1) if dim == 1 else (cfg.n2, cfg.data_ell2)
    return simulate_tracks(
        n,
        cfg.steps,
        dim,
        cfg.t_end,
        cfg.data_nu,
        ell,
        1.0,
        cfg.noise if noise is None else noise,
        seed=10 * seed + dim,
        device=device,
    )


def method_kwargs(cfg, method: str, dim: int, ell=None, c=None, width=None) -> dict:
    """The settings each method runs with in ``dim`` dimensions (smooth SB: ℓ, c, the
    velocity grid; Brownian SB: c), from ``cfg`` unless given."""
    _check_cfg(cfg)
    check_choice("method", method, METHODS)
    _check_dim("dim", dim)
    if method == "smooth_sb":
        return dict(
            ell=getattr(cfg, f"ell{dim}") if ell is None else ell,
            c=cfg.c if c is None else c,
            M=cfg.M1 if dim == 1 else cfg.M2,
            sub=cfg.sub,
            width=getattr(cfg, f"width{dim}") if width is None else width,
            sweeps=cfg.sweeps,
            per_start=cfg.per_start,
        )
    if method == "brownian_sb":
        return dict(
            c=getattr(cfg, f"bsb_c{dim}") if c is None else c,
            sweeps=cfg.bsb_sweeps,
            per_start=cfg.per_start,
        )
    if method == "oracle":
        return dict(
            truth=(cfg.data_nu, cfg.data_ell1 if dim == 1 else cfg.data_ell2, 1.0)
        )
    return {}


def run_tracking(cfg, tracks: Tracks, dim: int, methods=METHODS, seed: int = 0):
    """Correct rates and wall times of each method on one set: {method: {metric: v}}."""
    _check_cfg(cfg)
    check_instance("tracks", tracks, Tracks)
    _check_dim("dim", dim)
    methods = _check_names("methods", methods, METHODS)
    check_int("seed", seed, 0)
    out = {}
    for m in methods:
        t0 = time.perf_counter()
        paths = track(tracks, m, seed=10 * seed + 5 + dim, **method_kwargs(cfg, m, dim))
        rates = correct_rates(paths, tracks.labels.cpu())
        rates["seconds"] = time.perf_counter() - t0
        out[m] = rates
    return out


def run_seeds(cfg, seeds, device="cpu", dims=(1, 2), methods=METHODS) -> dict:
    """{seed: {dim: {method: rates}}} on each seed's fresh 1-D and 2-D sets."""
    _check_cfg(cfg)
    seeds = seed_list(seeds)
    dims = _check_names("dims", dims, (1, 2))
    methods = _check_names("methods", methods, METHODS)
    return {
        s: {
            d: run_tracking(cfg, make_tracks(cfg, d, s, device), d, methods, s)
            for d in dims
        }
        for s in seeds
    }


def tune(cfg, seeds, device="cpu", dims=(1, 2), metric: str = "5-step") -> dict:
    """The tuning grid on ``seeds``, per dimension: mean ``metric`` of the smooth SB
    for every (ℓ, width) in ``cfg.ell_grid`` × ``cfg.width_grid`` and of the Brownian
    SB for every c in ``cfg.bsb_grid`` (the same number of values: equal budget), and
    the best value of each (the first in grid order on ties)."""
    _check_cfg(cfg)
    seeds = seed_list(seeds)
    dims = _check_names("dims", dims, (1, 2))
    check_choice("metric", metric, METRICS)
    smooth = [(e, w) for e in cfg.ell_grid for w in cfg.width_grid]
    grid = {"smooth_sb": {}, "brownian_sb": {}}
    chosen = {"smooth_sb": {}, "brownian_sb": {}}
    for d in dims:
        sets = {s: make_tracks(cfg, d, s, device) for s in seeds}
        for method, values in (("smooth_sb", smooth), ("brownian_sb", cfg.bsb_grid)):
            scores = {}
            for v in values:
                kw = (
                    method_kwargs(cfg, method, d, ell=v[0], width=v[1])
                    if method == "smooth_sb"
                    else method_kwargs(cfg, method, d, c=v)
                )
                vals = []
                for s, tr in sets.items():
                    paths = track(tr, method, seed=10 * s + 5 + d, **kw)
                    vals.append(correct_rates(paths, tr.labels.cpu())[metric])
                scores[v] = float(np.mean(vals))
            best = max(values, key=lambda v: scores[v])  # first maximum
            key = (lambda v: f"{v[0]:g},{v[1]:g}") if method == "smooth_sb" else str
            grid[method][str(d)] = {key(v): scores[v] for v in values}
            chosen[method][str(d)] = list(best) if method == "smooth_sb" else best
    return {"metric": metric, "seeds": list(seeds), "grid": grid, "chosen": chosen}


def tuned_config(cfg, tuning: dict):
    """``cfg`` with the values chosen by :func:`tune` (``tuning`` its output)."""
    import dataclasses

    _check_cfg(cfg)
    try:
        ch = tuning["chosen"]
        _ = ch["smooth_sb"].items(), ch["brownian_sb"].items()
    except (TypeError, KeyError, AttributeError):
        raise TypeError(
            f"tuning: expected the dict written by tune(), got {type(tuning).__name__}"
        ) from None
    kw = {}
    for d, (ell, width) in ch["smooth_sb"].items():
        kw[f"ell{d}"], kw[f"width{d}"] = float(ell), float(width)
    for d, c in ch["brownian_sb"].items():
        kw[f"bsb_c{d}"] = float(c)
    if "clouds" in tuning:  # N-body: the best mean 5-step rate; hold-out: the least W1
        cl = tuning["clouds"]
        nb, ho = cl["nbody"], cl["holdout"]
        kw["nb_c"] = float(max(nb["smooth_sb"], key=nb["smooth_sb"].get))
        kw["nb_bsb_c"] = float(max(nb["brownian_sb"], key=nb["brownian_sb"].get))
        ell, c = min(ho["smooth_sb"], key=ho["smooth_sb"].get).split(",")
        kw["cl_ell"], kw["cl_c"] = float(ell), float(c)
        kw["cl_bsb_c"] = float(min(ho["brownian_sb"], key=ho["brownian_sb"].get))
    return dataclasses.replace(cfg, **kw)


def summarise(runs: dict, dim: int, metric: str) -> dict:
    """{method: (mean, s.d.)} of ``metric`` (or ``"seconds"``) over the seeds of
    :func:`run_seeds`."""
    if not isinstance(runs, dict) or not runs:
        raise TypeError(
            f"runs: expected the non-empty dict of run_seeds, got {type(runs).__name__}"
        )
    _check_dim("dim", dim)
    if any(dim not in r for r in runs.values()):
        raise ValueError(f"dim: expected a dimension present in runs, got {dim}")
    check_choice("metric", metric, METRICS + ("seconds",))
    methods = next(iter(runs.values()))[dim].keys()
    out = {}
    for m in methods:
        v = np.array([runs[s][dim][m][metric] for s in runs])
        out[m] = (float(v.mean()), float(v.std(ddof=1)) if len(v) > 1 else 0.0)
    return out


def run_experiment(cfg, device=None) -> dict:
    """The FULL (or SMOKE) run: every method on ``cfg.claim_seeds``, plus the claims'
    statistics, as plain numbers."""
    from lib.common import device as pick_device

    from .claims import measure_claims, run_extra
    from .clouds import summarise_extra

    _check_cfg(cfg)
    device = pick_device() if device is None else device
    t0 = time.perf_counter()
    runs = run_seeds(cfg, cfg.claim_seeds, device)
    table = {str(d): {m: summarise(runs, d, m) for m in METRICS} for d in (1, 2)}
    extra = {s: run_extra(cfg, s, device) for s in cfg.claim_seeds}
    return {
        "tracking": table,
        **summarise_extra(extra),
        "claims": measure_claims(cfg, cfg.claim_seeds, device, runs, extra),
        "seconds": time.perf_counter() - t0,
    }
