"""The chapter's experiment: build the small world, score the benign pool, attack with
each selection over several seeds, evaluate; and the length-bias check on SmolLM2-135M.
"""

from __future__ import annotations

import collections
import copy
import dataclasses

import torch

from lib.common import check_int, check_tensor, device as pick_device

from .attack import _check_model, evaluate, eval_sets, new_model, train
from .influence import select_random, select_top, self_inf_n, self_influence, spearman
from .world import (
    _check_samples,
    _check_world,
    alignment_set,
    answer_lengths,
    benign_pool,
    encode,
    is_trivial,
    make_world,
    pretrain_corpus,
)

SELECTIONS = ("self_inf_n", "self_inf", "random", "bottom", "longest", "full")


def _check_cfg(cfg):
    from . import Config

    if not isinstance(cfg, Config):
        raise TypeError(
            f"cfg: expected a lib.self_inf_n.Config (e.g. SMOKE or FULL), got "
            f"{type(cfg).__name__}"
        )
    return cfg


_SCORE_KEYS = ("self_inf", "self_inf_n", "length", "trivial", "family")


def _check_scores(scores) -> None:
    if not isinstance(scores, dict) or any(k not in scores for k in _SCORE_KEYS):
        raise TypeError(
            f"scores: expected the dict of score_pool (keys {_SCORE_KEYS}), got "
            f"{type(scores).__name__}"
        )


def _check_idx(idx, n: int) -> None:
    check_tensor("idx", idx, ndim=1, integer=True, nonempty=True)
    if not bool(((idx >= 0) & (idx < n)).all()):
        raise ValueError(
            f"idx: expected pool indices in [0, {n}), got values in "
            f"[{int(idx.min())}, {int(idx.max())}]"
        )


def build_world(cfg, device="cpu") -> dict:
    """Pretrain and align the small GPT; draw the benign pool. Returns the world, the
    aligned model, the pool, the evaluation sets and the evaluations of the pretrained
    and aligned models."""
    _check_cfg(cfg)
    w = make_world(cfg.seed)
    g = torch.Generator().manual_seed(cfg.seed)
    pre = pretrain_corpus(w, cfg.n_pretrain, g)
    ali = alignment_set(
        w,
        cfg.n_align,
        g,
        refusal_share=cfg.refusal_share,
        decline_share=cfg.decline_share,
    )
    pool = benign_pool(w, cfg.pool_size, g, new_share=cfg.new_share)
    sets = eval_sets(w, cfg.n_benign_eval, cfg.seed)
    model = new_model(
        w, cfg.block, cfg.n_layer, cfg.d_model, cfg.n_head, cfg.seed, device
    )
    train(
        model,
        w,
        pre,
        epochs=cfg.pretrain_epochs,
        batch_size=64,
        lr=cfg.pretrain_lr,
        seed=cfg.seed,
        answer_only=False,
        device=device,
    )
    pretrained = evaluate(model, w, sets, device)
    base = copy.deepcopy(model)
    train(
        model,
        w,
        ali,
        epochs=cfg.align_epochs,
        batch_size=64,
        lr=cfg.align_lr,
        seed=cfg.seed,
        answer_only=True,
        device=device,
    )
    aligned = evaluate(model, w, sets, device)
    return {
        "world": w,
        "model": model,
        "pool": pool,
        "sets": sets,
        "pretrained": pretrained,
        "aligned": aligned,
        "base": base,
    }


def align_without_declines(wd: dict, cfg, device="cpu"):
    """The control: the same pretrained model aligned on an alignment set without the
    declines of unknown items (drawn afresh, same size and refusal share). Returns the
    model and its evaluation."""
    if not isinstance(wd, dict) or any(k not in wd for k in ("base", "world", "sets")):
        raise TypeError(
            f"wd: expected the dict of build_world, got {type(wd).__name__}"
        )
    _check_cfg(cfg)
    model = copy.deepcopy(wd["base"])
    g = torch.Generator().manual_seed(cfg.seed + 104729)
    ali = alignment_set(
        wd["world"], cfg.n_align, g, refusal_share=cfg.refusal_share, decline_share=0.0
    )
    train(
        model,
        wd["world"],
        ali,
        epochs=cfg.align_epochs,
        batch_size=64,
        lr=cfg.align_lr,
        seed=cfg.seed,
        answer_only=True,
        device=device,
    )
    return model, evaluate(model, wd["world"], wd["sets"], device)


def score_pool(model, w, pool, block: int, chunk: int = 32) -> dict:
    """Self-Inf (eq. 1) and Self-Inf-N (eq. 2) of every pool sample on the aligned
    model."""
    _check_model(model)
    _check_world(w)
    if isinstance(pool, (str, bytes)) or not isinstance(pool, (list, tuple)):
        raise TypeError(
            f"pool: expected a list of (family, prompt, answer) samples, got "
            f"{type(pool).__name__}"
        )
    if not pool:
        raise ValueError("pool: expected at least one sample, got none")
    x, y, m = encode(w, pool, block)
    si = self_influence(model, x, y, m, chunk=chunk).cpu().double()
    lengths = answer_lengths(pool)
    return {
        "self_inf": si,
        "self_inf_n": self_inf_n(si, lengths),
        "length": lengths,
        "trivial": is_trivial(pool),
        "family": [f for f, _, _ in pool],
    }


def selections(scores: dict, k: int, seed: int) -> dict:
    """The compared selections of ``k`` samples (indices into the pool): Self-Inf-N,
    vanilla Self-Inf, random, bottom-k by Self-Inf-N, longest answers, and the full
    pool."""
    _check_scores(scores)
    check_int("seed", seed, 0)
    triv, n = scores["trivial"], len(scores["family"])
    return {
        "self_inf_n": select_top(scores["self_inf_n"], k, triv),
        "self_inf": select_top(scores["self_inf"], k, triv),
        "random": select_random(n, k, torch.Generator().manual_seed(seed + 1), triv),
        "bottom": select_top(scores["self_inf_n"], k, triv, largest=False),
        "longest": select_top(scores["length"].double(), k, triv),
        "full": torch.arange(n),
    }


def selection_stats(scores: dict, idx: torch.Tensor) -> dict:
    """Answer lengths and family counts of a selection."""
    _check_scores(scores)
    _check_idx(idx, len(scores["family"]))
    lengths = scores["length"][idx].double()
    fams = collections.Counter(scores["family"][i] for i in idx.tolist())
    return {
        "median_length": float(lengths.median()),
        "mean_length": float(lengths.mean()),
        "short_share": float((lengths <= 2).double().mean()),
        "families": dict(sorted(fams.items(), key=lambda kv: (-kv[1], kv[0]))),
    }


def attack(
    aligned, w, pool, sets, idx: torch.Tensor, seed: int, cfg, device="cpu"
) -> dict:
    """Fine-tune a copy of the aligned model on ``pool[idx]`` (the paper's recipe scaled
    down: ``cfg.attack_epochs`` epochs, batch ``cfg.attack_batch``, AdamW) and evaluate
    it."""
    _check_model(aligned, "aligned")
    _check_world(w)
    if (
        isinstance(pool, (str, bytes))
        or not isinstance(pool, (list, tuple))
        or not pool
    ):
        raise TypeError(
            f"pool: expected a non-empty list of (family, prompt, answer) samples, "
            f"got {pool!r:.60}"
        )
    if not isinstance(sets, dict):
        raise TypeError(
            f"sets: expected the dict of eval_sets, got {type(sets).__name__}"
        )
    _check_idx(idx, len(pool))
    check_int("seed", seed, 0)
    _check_cfg(cfg)
    model = copy.deepcopy(aligned)
    train(
        model,
        w,
        [pool[i] for i in idx.tolist()],
        epochs=cfg.attack_epochs,
        batch_size=cfg.attack_batch,
        lr=cfg.attack_lr,
        seed=seed,
        answer_only=True,
        device=device,
    )
    return evaluate(model, w, sets, device)


def _mean(rows: list, key: tuple) -> float:
    vals = []
    for r in rows:
        v = r
        for k in key:
            v = v[k]
        vals.append(v)
    return sum(vals) / len(vals)


def summarise(runs: list) -> dict:
    """Mean (and spread) over seeds of the metrics the chapter reports."""
    if (
        isinstance(runs, (str, bytes))
        or not isinstance(runs, (list, tuple))
        or not all(isinstance(r, dict) for r in runs)
    ):
        raise TypeError(
            f"runs: expected a list of evaluate() dicts, got {type(runs).__name__}"
        )
    if not runs:
        raise ValueError("runs: expected at least one run, got none")
    keys = {
        "harmful": ("held", "harmful"),
        "exact": ("held", "exact"),
        "refusal": ("held", "refusal"),
        "hazard_content": ("held", "hazard_content"),
        "length": ("held", "length"),
        "harmful_seen": ("seen", "harmful"),
        "refusal_seen": ("seen", "refusal"),
        "benign_acc": ("benign_acc",),
        "benign_length": ("benign_length",),
    }
    out = {k: _mean(runs, path) for k, path in keys.items()}
    h = [r["held"]["harmful"] for r in runs]
    out["harmful_min"], out["harmful_max"] = min(h), max(h)
    return out


def run_small_world(cfg, device="cpu") -> dict:
    """Everything on the small GPT: pretrain and align, score the pool, attack with
    every selection over ``cfg.seeds``, the learning-rate sweep, and (when the alignment
    has declines) the control aligned without them, attacked with the selections
    ``cfg.control``. Returns plain numbers (JSON-ready)."""
    _check_cfg(cfg)
    wd = build_world(cfg, device)
    w, model, pool, sets = wd["world"], wd["model"], wd["pool"], wd["sets"]
    sc = score_pool(model, w, pool, cfg.block)
    sel = selections(sc, cfg.k, cfg.seed)
    runs = {}
    for name in SELECTIONS:
        seeds = cfg.seeds if name != "full" else cfg.seeds[: cfg.full_seeds]
        runs[name] = [
            attack(model, w, pool, sets, sel[name], s, cfg, device) for s in seeds
        ]
    control = {}
    if cfg.control and cfg.decline_share > 0:
        cm, c_aligned = align_without_declines(wd, cfg, device)
        c_sel = selections(score_pool(cm, w, pool, cfg.block), cfg.k, cfg.seed)
        c_runs = {
            name: [
                attack(cm, w, pool, sets, c_sel[name], s, cfg, device)
                for s in cfg.seeds
            ]
            for name in cfg.control
        }
        control = {
            "aligned": c_aligned,
            "summary": {k: summarise(v) for k, v in c_runs.items()},
        }
    sweep = {}
    for lr in cfg.lr_sweep:
        c = dataclasses.replace(cfg, attack_lr=lr)
        sweep[str(lr)] = {
            name: attack(model, w, pool, sets, sel[name], cfg.seeds[0], c, device)
            for name in ("self_inf_n", "random")
        }
    return {
        "pretrained": wd["pretrained"],
        "aligned": wd["aligned"],
        "scores": {
            "self_inf": sc["self_inf"].tolist(),
            "self_inf_n": sc["self_inf_n"].tolist(),
            "length": sc["length"].tolist(),
            "family": sc["family"],
            "trivial": sc["trivial"].tolist(),
            "answers": [" ".join(a) for _, _, a in pool],
            "prompts": [" ".join(p) for _, p, _ in pool],
        },
        "spearman": {
            "self_inf": spearman(sc["self_inf"], sc["length"].double()),
            "self_inf_n": spearman(sc["self_inf_n"], sc["length"].double()),
        },
        "selections": {k: v.tolist() for k, v in sel.items() if k != "full"},
        "selection_stats": {k: selection_stats(sc, v) for k, v in sel.items()},
        "runs": runs,
        "summary": {k: summarise(v) for k, v in runs.items()},
        "lr_sweep": sweep,
        "control_no_declines": control,
    }


def run_experiment(cfg, device=None) -> dict:
    """The FULL/SMOKE entry point: the small world and the SmolLM2 length-bias check, on
    ``device`` (default :func:`lib.common.device`)."""
    _check_cfg(cfg)
    device = pick_device() if device is None else torch.device(device)
    from .smollm import smollm_length_bias

    out = {"small_world": run_small_world(cfg, device)}
    out["other_worlds"] = {}
    for seed in cfg.other_worlds:
        r = run_small_world(dataclasses.replace(cfg, seed=seed, lr_sweep=()), device)
        out["other_worlds"][str(seed)] = {
            k: r[k]
            for k in (
                "aligned",
                "spearman",
                "selection_stats",
                "summary",
                "control_no_declines",
            )
        }
    if cfg.smol_samples > 0:
        out["smollm"] = smollm_length_bias(
            cfg.smol_samples, cfg.smol_blocks, cfg.seed, device=device
        )
    return out
