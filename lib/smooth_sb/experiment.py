"""The chapter's runs: GP particle tracking in 1-D and 2-D, every method on the same
point clouds, over several seeds; the tuning grid; the FULL entry point."""

from __future__ import annotations

import time

import numpy as np
import torch

from lib.common.claims import seed_list

from .model import Tracks, simulate_tracks
from .tracking import METHODS, correct_rates, track

METRICS = ("one-step", "3-step", "5-step", "whole")


def make_tracks(cfg, dim: int, seed: int, device="cpu", noise=None) -> Tracks:
    """The ``dim``-dimensional GP set of ``cfg`` for one seed (generator
    10·seed + dim)."""
    if dim not in (1, 2):
        raise ValueError(f"dim: expected 1 or 2, got {dim!r}")
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


def method_kwargs(cfg, method: str, dim: int, ell=None, c=None) -> dict:
    """The settings each method runs with (smooth SB: ℓ, c, M; Brownian SB: c)."""
    if method == "smooth_sb":
        return dict(
            ell=cfg.ell if ell is None else ell,
            c=cfg.c if c is None else c,
            M=cfg.M1 if dim == 1 else cfg.M2,
            sub=cfg.sub,
            sweeps=cfg.sweeps,
            per_start=cfg.per_start,
        )
    if method == "brownian_sb":
        return dict(
            c=cfg.bsb_c if c is None else c, sweeps=cfg.sweeps, per_start=cfg.per_start
        )
    if method == "oracle":
        return dict(
            truth=(cfg.data_nu, cfg.data_ell1 if dim == 1 else cfg.data_ell2, 1.0)
        )
    return {}


def run_tracking(cfg, tracks: Tracks, dim: int, methods=METHODS, seed: int = 0):
    """Correct rates and wall times of each method on one set: {method: {metric: v}}."""
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
    seeds = seed_list(seeds)
    return {
        s: {
            d: run_tracking(cfg, make_tracks(cfg, d, s, device), d, methods, s)
            for d in dims
        }
        for s in seeds
    }


def tune(cfg, seeds, device="cpu", dims=(1, 2), metric: str = "5-step") -> dict:
    """The tuning grid on ``seeds``: mean ``metric`` of smooth SB for each ℓ in
    ``cfg.ell_grid`` and of Brownian SB for each c in ``cfg.bsb_grid`` (same budget:
    three values each), per dimension, and the chosen values (best mean over both
    dimensions)."""
    seeds = seed_list(seeds)
    grid = {"smooth_sb": {}, "brownian_sb": {}}
    for method, values in (("smooth_sb", cfg.ell_grid), ("brownian_sb", cfg.bsb_grid)):
        for v in values:
            per_dim = {}
            for d in dims:
                vals = []
                for s in seeds:
                    tr = make_tracks(cfg, d, s, device)
                    kw = method_kwargs(
                        cfg,
                        method,
                        d,
                        ell=v if method == "smooth_sb" else None,
                        c=v if method == "brownian_sb" else None,
                    )
                    paths = track(tr, method, seed=10 * s + 5 + d, **kw)
                    vals.append(correct_rates(paths, tr.labels.cpu())[metric])
                per_dim[d] = float(np.mean(vals))
            grid[method][v] = per_dim
    chosen = {
        m: max(g, key=lambda v: float(np.mean(list(g[v].values()))))
        for m, g in grid.items()
    }
    return {"metric": metric, "seeds": list(seeds), "grid": grid, "chosen": chosen}


def summarise(runs: dict, dim: int, metric: str) -> dict:
    """{method: (mean, s.d.)} of ``metric`` over the seeds of :func:`run_seeds`."""
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

    from .claims import measure_claims

    device = pick_device() if device is None else device
    t0 = time.perf_counter()
    runs = run_seeds(cfg, cfg.claim_seeds, device)
    table = {str(d): {m: summarise(runs, d, m) for m in METRICS} for d in (1, 2)}
    return {
        "tracking": table,
        "claims": measure_claims(cfg, cfg.claim_seeds, device, runs=runs),
        "seconds": time.perf_counter() - t0,
    }
