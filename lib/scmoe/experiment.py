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
from .parallel import measure_cuda_streams, measure_speed, pick_backend
from .timeline import flop_components, program, simulate, speedup_curve


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


def n_experts_for(variant: str, cfg) -> int:
    """Experts of ``variant`` under ``cfg``: with ``match_params`` the variants without
    a shared expert (top-2, top-1) get one expert more, so every variant holds the same
    number of FFNs (ScMoE: E experts + the shared expert; top-2: E + 1 experts) and
    top-2 and ScMoE also pass each token through two FFNs (equal parameters and equal
    FFN compute)."""
    if variant not in _VARIANTS:
        raise ValueError(f"variant: expected one of {_VARIANTS}, got {variant!r}")
    _check_cfg(cfg)
    extra = cfg.match_params and variant in ("top2", "top1")
    return cfg.n_experts + int(extra)


def train_variant(variant: str, cfg, data: dict, seed: int, device) -> dict:
    """Train one variant from ``seed`` and return its validation bits per character,
    its training losses (nats per character, one per step) and its parameter counts."""
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
        n_experts_for(variant, cfg),
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
        "train_losses": [float(v) for v in losses],  # nats per character, per step
        "active_ffn_params": active_ffn_params(model),
        "params": sum(p.numel() for p in model.parameters()),
    }


def _train_job(job) -> dict:
    """One (variant, seed) training run in a worker process (one thread)."""
    variant, seed, cfg, device = job
    torch.set_num_threads(1)
    data = corpus_splits(cfg.block, cfg.val_windows)
    return train_variant(variant, cfg, data, seed, torch.device(device))


def train_many(cfg, jobs, device) -> list[dict]:
    """:func:`train_variant` for every (variant, seed) of ``jobs``, in order; on the CPU
    ``cfg.workers`` processes at a time (each one thread), else one after another."""
    _check_cfg(cfg)
    if isinstance(jobs, (str, bytes)) or not isinstance(jobs, (list, tuple)):
        raise TypeError(
            f"jobs: expected a list of (variant, seed) pairs, got "
            f"{type(jobs).__name__} ({jobs!r})"
        )
    if not jobs:
        raise ValueError(
            f"jobs: expected at least one (variant, seed) pair, got an empty "
            f"{type(jobs).__name__}"
        )
    for job in jobs:
        if not isinstance(job, (list, tuple)) or len(job) != 2:
            raise TypeError(f"jobs: expected (variant, seed) pairs, got {job!r}")
    jobs = [(v, check_int("seed", s, 0)) for v, s in jobs]
    for v, _ in jobs:
        if v not in _VARIANTS:
            raise ValueError(f"jobs: expected variants from {_VARIANTS}, got {v!r}")
    device = torch.device(device)
    if device.type != "cpu" or cfg.workers == 1 or len(jobs) == 1:
        data = corpus_splits(cfg.block, cfg.val_windows)
        return [
            train_variant(v, cfg, data, s, device)
            for v, s in progress(jobs, desc="quality")
        ]
    import concurrent.futures as cf
    import multiprocessing as mp

    ctx = mp.get_context("spawn")
    with cf.ProcessPoolExecutor(cfg.workers, mp_context=ctx) as pool:
        args = [(v, s, cfg, "cpu") for v, s in jobs]
        return list(pool.map(_train_job, args))


def quality_experiment(cfg, device, seeds=None, variants=VARIANTS) -> dict:
    """Every variant, every seed (default ``cfg.seeds``), the same data order and steps:
    validation bits per character."""
    _check_cfg(cfg)
    seeds = list(cfg.seeds if seeds is None else seeds)
    variants = list(variants)
    jobs = [(v, s) for s in seeds for v in variants]
    runs = train_many(cfg, jobs, device)
    out = {"variants": variants, "seeds": seeds, "bpc": {v: [] for v in variants}}
    for (v, _), r in zip(jobs, runs):
        out["bpc"][v].append(r["bpc"])
        out.setdefault("active_ffn_params", {})[v] = r["active_ffn_params"]
        out.setdefault("params", {})[v] = r["params"]
    out["mean"] = {v: float(np.mean(b)) for v, b in out["bpc"].items()}
    return out


def speed_spec(
    cfg, backend: str | None = None, seeds=None, rhos=None, copies=None
) -> dict:
    """The measurement's settings: the sizes of ``cfg.speed`` on NCCL (one GPU per
    rank), of ``cfg.speed_gloo`` on gloo (two CPU processes: a GPU-sized block would
    take hours there), both explicit in the preset; ``sizes`` names the one used."""
    _check_cfg(cfg)
    if backend is not None and backend not in ("gloo", "nccl"):
        raise ValueError(f"backend: expected 'gloo', 'nccl' or None, got {backend!r}")
    backend = backend or pick_backend(cfg.world_size)
    name = "speed" if backend == "nccl" else "speed_gloo"
    return {
        **dataclasses.asdict(getattr(cfg, name)),
        "repeats": cfg.sp_repeats,
        "rhos": list(cfg.sp_rhos if rhos is None else rhos),
        "copies": list(cfg.sp_copies if copies is None else copies),
        "seeds": [cfg.seed] if seeds is None else list(seeds),
        "backend": backend,
        "sizes": name,
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


def speed_experiment(cfg, seeds=None) -> dict:
    """Real 2-process timings (one entry per seed, default ``cfg.seed``) and the
    timeline model's predictions for them; on a single GPU also the CUDA-stream
    measurement (:func:`~lib.scmoe.parallel.measure_cuda_streams`)."""
    _check_cfg(cfg)
    spec = speed_spec(cfg, seeds=seeds)
    meas = measure_speed(spec, world_size=cfg.world_size, timeout_s=cfg.timeout_s)
    out = {
        "spec": spec,
        "measured": meas,
        "predicted": [predict_measured(m) for m in meas],
    }
    if torch.cuda.is_available() and spec["backend"] == "gloo":
        gpu = dict(speed_spec(cfg, "nccl"), seeds=[cfg.seed])
        out["cuda_streams"] = measure_cuda_streams(gpu, "cuda")
    return out


def modelled_speedups(base: dict | None = None) -> dict:
    """MODELLED: the timeline's speed-ups of overlapped ScMoE over top-2 and over
    sequential ScMoE at ρ = 0.15 and 0.6, for training and inference, from assumed
    GPT-2-small FLOP counts (:func:`~lib.scmoe.timeline.flop_components`)."""
    base = flop_components() if base is None else base
    return {
        f"{mode}_{ref}_{rho}": speedup_curve(
            base, [rho], baseline=ref, training=mode == "train"
        )[0]
        for mode in ("infer", "train")
        for ref in ("top2", "scmoe_seq")
        for rho in (0.15, 0.6)
    }


def run_experiment(cfg, device=None) -> dict:
    """Quality (trained on ``device``, default :func:`lib.common.device`), speed (2
    processes: gloo on CPU, NCCL on ≥ 2 GPUs) and the modelled speed-ups."""
    _check_cfg(cfg)
    device = pick_device() if device is None else torch.device(device)
    if cfg.quality_only:  # the QUALITY preset: the language models alone
        return {"quality": quality_experiment(cfg, device, variants=cfg.variants)}
    return {
        "quality": quality_experiment(cfg, device, variants=cfg.variants),
        "speed": speed_experiment(cfg),
        "modelled": modelled_speedups(),
    }
