"""The chapter's experiments: model quality of the four variants, and real vs modelled
speed.

:func:`run_experiment` is what the notebook (SMOKE) and ``python -m lib.scmoe`` (FULL)
call; it returns plain lists, dicts and floats, so FULL results saved as JSON have the
SMOKE keys.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import torch

from lib.common import check_int, device as pick_device, progress

from .model import VARIANTS as _VARIANTS
from lib.common.gpt import fit_lm

from .model import (
    VARIANTS,
    MoEGPT,
    active_ffn_params,
    bits_per_char,
    char_vocab,
    load_corpus,
    make_windows,
)
from .parallel import measure_speed, pick_backend
from .timeline import SCHEDULES, components, program, simulate, speedup_curve, step_time


def _check_cfg(cfg):
    from . import Config

    if not isinstance(cfg, Config):
        raise TypeError(
            f"cfg: expected a lib.scmoe.Config (e.g. SMOKE or FULL), got "
            f"{type(cfg).__name__}"
        )
    return cfg


def corpus_splits(block: int, val_windows: int, device=None) -> dict:
    """The character corpus as (inputs, targets) windows: the first 90 % for training,
    the first ``val_windows`` windows of the last 10 % for validation."""
    block, val_windows = (
        check_int("block", block, 2),
        check_int("val_windows", val_windows, 1),
    )
    text = load_corpus()
    vocab = char_vocab(text)
    ids = torch.tensor(vocab.encode(text), dtype=torch.long)
    cut = int(0.9 * ids.numel())
    x, y = make_windows(ids[:cut], block)
    xv, yv = make_windows(ids[cut:], block)
    return {
        "vocab": vocab,
        "train": (x, y),
        "val": (xv[:val_windows], yv[:val_windows]),
        "chars": int(ids.numel()),
    }


def train_variant(variant: str, cfg, data: dict, seed: int, device) -> dict:
    """Train one variant from ``seed`` and return its validation bits per character and
    more."""
    if variant not in _VARIANTS:
        raise ValueError(f"variant: expected one of {_VARIANTS}, got {variant!r}")
    _check_cfg(cfg)
    if not isinstance(data, dict) or any(
        k not in data for k in ("vocab", "train", "val")
    ):
        raise TypeError(
            f"data: expected the dict of corpus_splits, got {type(data).__name__}"
        )
    check_int("seed", seed, 0)
    torch.manual_seed(seed)
    model = MoEGPT(
        len(data["vocab"]),
        cfg.block,
        variant,
        cfg.n_pairs,
        cfg.d_model,
        cfg.n_head,
        cfg.n_experts,
        cfg.capacity_factor,
        cfg.aux_weight,
    ).to(device)
    gen = torch.Generator().manual_seed(seed)
    losses = fit_lm(
        model,
        *data["train"],
        steps=cfg.steps,
        batch_size=cfg.batch,
        lr=cfg.lr,
        generator=gen,
        device=device,
    )
    bpc = bits_per_char(model, *data["val"])
    return {
        "bpc": bpc,
        "final_train_loss": float(np.mean(losses[-20:])),
        "active_ffn_params": active_ffn_params(model),
        "params": sum(p.numel() for p in model.parameters()),
    }


def quality_experiment(cfg, device) -> dict:
    """Every variant, every seed, the same data order and steps: validation bits per
    character."""
    _check_cfg(cfg)
    data = corpus_splits(cfg.block, cfg.val_windows)
    out = {
        "variants": list(VARIANTS),
        "seeds": list(cfg.seeds),
        "bpc": {v: [] for v in VARIANTS},
    }
    jobs = [(s, v) for s in cfg.seeds for v in VARIANTS]
    for seed, variant in progress(jobs, desc="quality"):
        r = train_variant(variant, cfg, data, seed, device)
        out["bpc"][variant].append(r["bpc"])
        out.setdefault("active_ffn_params", {})[variant] = r["active_ffn_params"]
        out.setdefault("params", {})[variant] = r["params"]
    out["mean"] = {v: float(np.mean(b)) for v, b in out["bpc"].items()}
    out["chars"] = data["chars"]
    return out


def speed_spec(cfg, backend: str | None = None) -> dict:
    """The measurement's settings. On NCCL (one GPU per rank) the config's ``sp_*``
    sizes; on gloo the CPU-sized defaults of :class:`~lib.scmoe.Config`, whatever the
    preset (a GPU-sized block on two single-threaded CPU processes would take hours)."""
    _check_cfg(cfg)
    if backend is not None and backend not in ("gloo", "nccl"):
        raise ValueError(f"backend: expected 'gloo', 'nccl' or None, got {backend!r}")
    backend = backend or pick_backend(cfg.world_size)
    src = (
        cfg
        if backend == "nccl"
        else {f.name: f.default for f in dataclasses.fields(cfg)}
    )
    get = (lambda k: getattr(src, k)) if backend == "nccl" else src.__getitem__
    return {
        "d_model": get("sp_d_model"),
        "n_head": get("sp_n_head"),
        "batch": get("sp_batch"),
        "seq": get("sp_seq"),
        "n_experts": get("sp_n_experts"),
        "capacity_factor": get("sp_capacity_factor"),
        "repeats": cfg.sp_repeats,
        "rhos": list(cfg.sp_rhos),
        "seed": cfg.seed,
        "backend": backend,
    }


def predict_measured(meas: dict) -> list[dict]:
    """The timeline model's prediction for each measured run, from the measured
    components and the measured All-to-All times of that run (no fitted constant)."""
    if not isinstance(meas, dict) or "components_ms" not in meas or "runs" not in meas:
        raise TypeError(
            f"meas: expected the dict of measure_speed, got {type(meas).__name__}"
        )
    out = []
    for run in meas["runs"]:
        c = dict(meas["components_ms"], a2a1=run["a2a1"], a2a2=run["a2a2"])
        out.append(
            {
                s: simulate(program(s, c))[1]
                for s in ("top2", "scmoe_seq", "scmoe_overlap")
            }
        )
    return out


def speed_experiment(cfg) -> dict:
    """Real 2-process timings, the model's predictions for them, and the modelled ρ
    sweeps."""
    _check_cfg(cfg)
    spec = speed_spec(cfg)
    meas = measure_speed(spec, world_size=cfg.world_size, timeout_s=cfg.timeout_s)
    base = meas["components_ms"]
    rhos = [round(float(r), 4) for r in np.linspace(0.0, 0.9, 46)]
    curves = {
        f"{mode}_{ref}": speedup_curve(
            base, rhos, baseline=ref, training=mode == "train"
        )
        for mode in ("infer", "train")
        for ref in ("top2", "scmoe_seq")
    }
    at = {}
    for rho in (0.15, 0.6):
        c = components(base, rho)
        at[str(rho)] = {
            f"{mode}_{s}": step_time(s, c, mode == "train")
            for mode in ("infer", "train")
            for s in SCHEDULES
        }
    return {
        "spec": spec,
        "measured": meas,
        "predicted": predict_measured(meas),
        "rhos": rhos,
        "curves": curves,
        "at": at,
    }


def run_experiment(cfg, device=None) -> dict:
    """Quality (trained on ``device``, default :func:`lib.common.device`) and speed (2
    processes: gloo on CPU, NCCL on ≥ 2 GPUs)."""
    _check_cfg(cfg)
    device = pick_device() if device is None else torch.device(device)
    return {"quality": quality_experiment(cfg, device), "speed": speed_experiment(cfg)}
