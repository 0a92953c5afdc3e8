"""The chapter's experiment: pass rate against the query budget for hammer-only, DSP,
ProofAug and ProofAug+ERP on the same sampled proposals (common random numbers), plus
the noisy-oracle ablation."""

from __future__ import annotations

import random
import time

import numpy as np
import torch

from lib.common import check_int, device as pick_device

from .language import _check_prover
from .problems import Problem

from .problems import make_problems
from .proposers import (
    NeuralProposer,
    build_vocab,
    claim_examples,
    corrupt,
    train_proposer,
)
from .search import dsp, hammer_only, proof_aug
from .tactics import Prover

METHODS = ("dsp", "proofaug", "proofaug_erp")


def budget_curve(success: np.ndarray, cost: np.ndarray, budgets) -> np.ndarray:
    """Pass rate at each query budget k: a problem counts once some proposal j succeeds
    with cumulative cost (queries, ERP calls included) up to j at most k. ``success``,
    ``cost``: (P, n)."""
    try:
        success, cost = np.asarray(success, bool), np.asarray(cost, float)
    except (TypeError, ValueError):
        raise TypeError(
            f"success, cost: expected two (P, n) arrays of booleans and numbers, got "
            f"{type(success).__name__} and {type(cost).__name__}"
        ) from None
    if success.shape != cost.shape or success.ndim != 2:
        raise ValueError(
            f"success, cost: expected two (P, n) arrays, got {success.shape} and "
            f"{cost.shape}"
        )
    if not (np.isfinite(cost).all() and (cost >= 0).all()):
        raise ValueError(
            "cost: expected finite costs >= 0, got NaN, inf or a negative value"
        )
    if isinstance(budgets, (str, bytes)) or not isinstance(
        budgets, (list, tuple, range, np.ndarray)
    ):
        raise TypeError(
            f"budgets: expected a list of query budgets, got {type(budgets).__name__}"
        )
    try:
        b = np.asarray(budgets, float)
    except (TypeError, ValueError):
        raise TypeError(
            f"budgets: expected a list of numbers, got {budgets!r:.60}"
        ) from None
    if b.ndim != 1 or b.size == 0 or not (np.isfinite(b).all() and (b > 0).all()):
        raise ValueError(
            f"budgets: expected a non-empty list of finite budgets > 0, got "
            f"{budgets!r:.60}"
        )
    spent = np.cumsum(cost, axis=1)  # (P, n)
    first = np.where(success, spent, np.inf).min(axis=1)  # (P,) queries to solve
    return np.array([(first <= k).mean() for k in budgets])


def run_methods(problem, proposals: list, prover, proposer=None) -> dict:
    """Every method on every proposal of one problem: success, cost and stage arrays."""
    if not isinstance(problem, Problem):
        raise TypeError(f"problem: expected a Problem, got {type(problem).__name__}")
    if (
        isinstance(proposals, (str, bytes))
        or not isinstance(proposals, (list, tuple))
        or not all(isinstance(t, str) for t in proposals)
    ):
        raise TypeError(
            f"proposals: expected a list of proof texts, got {proposals!r:.60}"
        )
    _check_prover(prover, atp=True)
    if proposer is not None and not callable(proposer):
        raise TypeError(
            f"proposer: expected a callable proposer or None, got "
            f"{type(proposer).__name__}"
        )
    out = {m: {"success": [], "cost": [], "stage": []} for m in METHODS}
    for text in proposals:
        for m in METHODS:
            if m == "dsp":
                o = dsp(problem.stmt, text, prover)
            else:
                o = proof_aug(
                    problem.stmt,
                    text,
                    prover,
                    propose=proposer if m == "proofaug_erp" else None,
                )
            out[m]["success"].append(o.success)
            out[m]["cost"].append(1 + o.extra_calls)
            out[m]["stage"].append(o.stage)
    return out


def _check_cfg(cfg):
    from . import Config

    if not isinstance(cfg, Config):
        raise TypeError(
            f"cfg: expected a lib.proofaug.Config (e.g. SMOKE or FULL), got "
            f"{type(cfg).__name__}"
        )
    return cfg


def _check_env(env, keys) -> None:
    if not isinstance(env, dict) or any(k not in env for k in keys):
        raise TypeError(
            f"env: expected the dict of setup (keys {keys}), got {type(env).__name__}"
        )


def setup(cfg, device="cpu"):
    """Problems, the prover and the trained proposer (model, vocab, training losses)."""
    _check_cfg(cfg)
    prover = Prover(cfg.rlimit_builtin, cfg.rlimit_hammer)
    problems = make_problems(cfg.n_train + cfg.n_test, cfg.seed, prover)
    random.Random(cfg.seed).shuffle(problems)  # a random held-out split
    train, test = problems[: cfg.n_train], problems[cfg.n_train :]
    pairs = [e for p in train for e in claim_examples(p.stmt, p.gold, prover)]
    vocab = build_vocab(
        [p.stmt for p in problems] + [s for s, _ in pairs], [g for _, g in pairs]
    )
    model, losses = train_proposer(
        pairs,
        vocab,
        steps=cfg.train_steps,
        block_size=cfg.block_size,
        d_model=cfg.d_model,
        n_layer=cfg.n_layer,
        batch_size=cfg.batch_size,
        lr=cfg.lr,
        seed=cfg.seed,
        device=device,
    )
    return {
        "prover": prover,
        "train": train,
        "test": test,
        "pairs": pairs,
        "vocab": vocab,
        "model": model,
        "losses": losses,
    }


def main_experiment(cfg, env: dict) -> dict:
    """Pass rate vs budget, averaged over ``cfg.seeds`` sampling seeds, and the stage
    breakdown."""
    _check_cfg(cfg)
    _check_env(env, ("prover", "test", "model", "vocab"))
    budgets = [2**i for i in range(int(np.log2(cfg.n_samples)) + 1)]
    prover, test = env["prover"], env["test"]
    hammer = np.array([hammer_only(p.stmt, prover).success for p in test])
    curves = {m: [] for m in METHODS}
    stages = {m: {} for m in METHODS}
    per_proposal = {m: [] for m in METHODS}
    for s in range(cfg.seeds):
        prop = NeuralProposer(
            env["model"], env["vocab"], cfg.temperature, seed=cfg.seed + 1000 * (s + 1)
        )
        res = {m: {"success": [], "cost": []} for m in METHODS}
        for p in test:
            r = run_methods(p, prop.proposals(p.stmt, cfg.n_samples), prover, prop)
            for m in METHODS:
                res[m]["success"].append(r[m]["success"])
                res[m]["cost"].append(r[m]["cost"])
                per_proposal[m] += r[m]["success"]
                for st in r[m]["stage"]:
                    if st is not None:
                        stages[m][st] = stages[m].get(st, 0) + 1
        for m in METHODS:
            curves[m].append(
                budget_curve(
                    np.array(res[m]["success"]), np.array(res[m]["cost"]), budgets
                )
            )
    out = {
        "budgets": budgets,
        "hammer": float(hammer.mean()),
        "curves": {},
        "stages": stages,
        "per_proposal": {m: float(np.mean(v)) for m, v in per_proposal.items()},
        "n_test": len(test),
        "atp_calls": prover.calls,
    }
    for m in METHODS:
        c = np.array(curves[m])  # (seeds, K)
        out["curves"][m] = {
            "mean": c.mean(0).round(4).tolist(),
            "se": (c.std(0, ddof=1) / np.sqrt(len(c))).round(4).tolist()
            if len(c) > 1
            else [0.0] * len(budgets),
        }
    return out


def ablation(cfg, env: dict) -> dict:
    """Noisy oracle: pass@1 of DSP and ProofAug against the per-line corruption rate."""
    _check_cfg(cfg)
    _check_env(env, ("prover", "test"))
    prover, test, rng = env["prover"], env["test"], random.Random(cfg.seed)
    out = {"rates": list(cfg.noise_rates), "dsp": [], "proofaug": []}
    for rate in cfg.noise_rates:
        ok = {"dsp": [], "proofaug": []}
        for p in test:
            for _ in range(cfg.oracle_samples):
                text = corrupt(p.gold, rate, rng)
                ok["dsp"].append(dsp(p.stmt, text, prover).success)
                ok["proofaug"].append(proof_aug(p.stmt, text, prover).success)
        for m in ok:
            out[m].append(round(float(np.mean(ok[m])), 4))
    return out


def run_experiment(cfg, device=None) -> dict:
    """Everything the chapter reports, as plain numbers (the same keys for SMOKE and
    FULL), computed on ``device`` (default :func:`lib.common.device`)."""
    _check_cfg(cfg)
    device = pick_device() if device is None else torch.device(device)
    check_int("cfg.n_samples", cfg.n_samples, 1)
    t0 = time.perf_counter()
    env = setup(cfg, device)
    res = {
        "main": main_experiment(cfg, env),
        "ablation": ablation(cfg, env),
        "final_loss": round(float(np.mean(env["losses"][-20:])), 3),
        "n_pairs": len(env["pairs"]),
    }
    res["seconds"] = round(time.perf_counter() - t0, 1)
    return res
