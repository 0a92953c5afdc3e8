"""The chapter's experiment: pass rate against the query budget for hammer-only, DSP,
ProofAug, ProofAug without its root call, ProofAug+ERP and ERP's control on the same
sampled proposals (common random numbers), on test theorems the hammer alone cannot
prove (and a few it can), plus the noisy-oracle ablation."""

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
    sketch_examples,
    train_proposer,
)
from .search import dsp, hammer_only, proof_aug
from .tactics import Prover

METHODS = ("dsp", "proofaug", "proofaug_noroot", "proofaug_erp")
#: the methods and ERP's negative control (re-queries that return ``sorry``)
ALL_METHODS = METHODS + ("erp_control",)


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
                    root=m != "proofaug_noroot",
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


def hard_split(problems: list, prover, n_test: int, n_easy: int) -> tuple:
    """Walk the (shuffled) pool, label each theorem by the hammer on the whole theorem
    (callATP within its limit), until ``n_test`` theorems the hammer fails on and
    ``n_easy`` it proves are found. Returns (train, hard test, easy test): every other
    theorem trains the proposer."""
    _check_prover(prover, atp=True)
    check_int("n_test", n_test, 1)
    check_int("n_easy", n_easy, 0)
    hard, easy, train = [], [], []
    for p in problems:
        if len(hard) >= n_test and len(easy) >= n_easy:
            train.append(p)
            continue
        solved = hammer_only(p.stmt, prover).success
        if not solved and len(hard) < n_test:
            hard.append(p)
        elif solved and len(easy) < n_easy:
            easy.append(p)
        else:
            train.append(p)
    if len(hard) < n_test:
        raise ValueError(
            f"n_test: expected at most {len(hard)} hammer-hard theorems in a pool of "
            f"{len(problems)}, got {n_test}"
        )
    return train, hard, easy


def setup(cfg, device="cpu"):
    """Problems, the prover and the trained proposer (model, vocab, training losses).

    The test theorems are ones the hammer alone cannot prove (``hard``), plus a few it
    can (``easy``, to show where root-level successes come from); the proposer trains on
    the rest: gold proofs, the claims inside them (for ERP) and, with ``cfg.sketch``,
    DSP-style sketches of the gold proofs (``by hammer`` holes)."""
    _check_cfg(cfg)
    prover = Prover(cfg.rlimit_builtin, cfg.rlimit_hammer)
    problems = make_problems(cfg.n_pool, cfg.seed, prover)
    random.Random(cfg.seed).shuffle(problems)  # a random split
    train, test, easy = hard_split(problems, prover, cfg.n_test, cfg.n_easy)
    pairs = [e for p in train for e in claim_examples(p.stmt, p.gold, prover)]
    if cfg.sketch:
        pairs += sketch_examples(train)
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
        "easy": easy,
        "pairs": pairs,
        "vocab": vocab,
        "model": model,
        "losses": losses,
    }


class _Useless:
    """The negative control of ERP: a re-query that returns nothing usable."""

    def __call__(self, stmt):
        return "sorry"


def _budgets(cfg) -> list:
    return [2**i for i in range(int(np.log2(cfg.n_samples)) + 1)]


def _eval_set(problems, prover, prop, cfg, erp_control: bool) -> dict:
    names = ALL_METHODS if erp_control else METHODS
    res = {m: {"success": [], "cost": [], "stage": []} for m in names}
    for p in problems:
        texts = prop.proposals(p.stmt, cfg.n_samples)
        r = run_methods(p, texts, prover, prop)
        if erp_control:
            useless = _Useless()
            o = [proof_aug(p.stmt, t, prover, propose=useless) for t in texts]
            r["erp_control"] = {
                "success": [x.success for x in o],
                "cost": [1 + x.extra_calls for x in o],
                "stage": [x.stage for x in o],
            }
        for m in names:
            for key in ("success", "cost", "stage"):
                res[m][key].append(r[m][key])
    return res


def seed_run(cfg, env: dict, seed: int) -> dict:
    """One sampling seed: every method on the same proposals for the hard and the easy
    test theorems (pass rate per budget, stages), and the noisy oracle on the hard
    ones at ``cfg.oracle_rate``. Plain numbers."""
    _check_cfg(cfg)
    _check_env(env, ("prover", "test", "easy", "model", "vocab"))
    check_int("seed", seed, 0)
    budgets, prover = _budgets(cfg), env["prover"]
    out = {"seed": seed, "budgets": budgets}
    for name in ("hard", "easy"):
        probs = env["test"] if name == "hard" else env["easy"]
        if not probs:
            continue
        prop = NeuralProposer(
            env["model"],
            env["vocab"],
            cfg.temperature,
            seed=10_000 + 2 * seed + (name == "easy"),
        )
        res = _eval_set(probs, prover, prop, cfg, erp_control=name == "hard")
        block = {
            "hammer": float(
                np.mean([hammer_only(p.stmt, prover).success for p in probs])
            )
        }
        for m, r in res.items():
            block[m] = {
                "curve": budget_curve(
                    np.array(r["success"]), np.array(r["cost"]), budgets
                ).tolist(),
                "per_proposal": float(np.mean(r["success"])),
                "stages": _count([s for row in r["stage"] for s in row]),
            }
        out[name] = block
    rng = random.Random(20_000 + seed)
    ok = {"dsp": [], "proofaug": []}
    for p in env["test"]:
        text = corrupt(p.gold, cfg.oracle_rate, rng)
        ok["dsp"].append(dsp(p.stmt, text, prover).success)
        ok["proofaug"].append(proof_aug(p.stmt, text, prover, root=False).success)
    out["oracle"] = {m: float(np.mean(v)) for m, v in ok.items()}
    return out


def _count(stages) -> dict:
    out = {}
    for s in stages:
        if s is not None:
            out[s] = out.get(s, 0) + 1
    return dict(sorted(out.items()))


def main_experiment(cfg, env: dict, seeds=None) -> dict:
    """:func:`seed_run` for every sampling seed (default ``cfg.seeds`` seeds from
    ``cfg.seed``), and the mean curves."""
    _check_cfg(cfg)
    seeds = [cfg.seed + s for s in range(cfg.seeds)] if seeds is None else list(seeds)
    runs = [seed_run(cfg, env, s) for s in seeds]
    return {"runs": runs, "mean": mean_runs(runs)}


def mean_runs(runs: list) -> dict:
    """Mean over seeds of the curves, per-proposal rates and summed stage counts."""
    if not isinstance(runs, list) or not runs:
        raise ValueError("runs: expected a non-empty list of seed_run results")
    out = {"budgets": runs[0]["budgets"]}
    for name in ("hard", "easy"):
        if name not in runs[0]:
            continue
        block = {"hammer": float(np.mean([r[name]["hammer"] for r in runs]))}
        for m in [m for m in ALL_METHODS if m in runs[0][name]]:
            rows = [r[name][m] for r in runs]
            st: dict = {}
            for row in rows:
                for k, v in row["stages"].items():
                    st[k] = st.get(k, 0) + v
            c = np.array([row["curve"] for row in rows])  # (seeds, K)
            block[m] = {
                "curve": c.mean(0).round(4).tolist(),
                "per_proposal": float(np.mean([row["per_proposal"] for row in rows])),
                "stages": dict(sorted(st.items())),
            }
        out[name] = block
    out["oracle"] = {
        m: float(np.mean([r["oracle"][m] for r in runs])) for m in ("dsp", "proofaug")
    }
    return out


def ablation(cfg, env: dict) -> dict:
    """Noisy oracle on the hard test theorems: pass@1 of DSP, ProofAug below the root
    and ProofAug against the per-line corruption rate."""
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
    main = main_experiment(cfg, env)
    from .claims import claims_from_runs

    res = {
        "main": main,
        "claims": claims_from_runs(main["runs"]),
        "ablation": ablation(cfg, env),
        "final_loss": round(float(np.mean(env["losses"][-20:])), 3),
        "n_pairs": len(env["pairs"]),
    }
    res["seconds"] = round(time.perf_counter() - t0, 1)
    return res
