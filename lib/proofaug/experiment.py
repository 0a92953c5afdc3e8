"""The chapter's experiment: pass rate against the query budget for hammer-only, DSP,
ProofAug and ProofAug+ERP on the same sampled proposals (common random numbers), plus
the noisy-oracle ablation."""

from __future__ import annotations

import random
import time

import numpy as np
import torch

from lib.common import check_int, check_numbers, device as pick_device
from lib.common.claims import seed_list

from .language import _check_prover
from .problems import Problem

from .problems import make_problems
from .proposers import (
    NeuralProposer,
    build_vocab,
    claim_examples,
    corrupt,
    encode_pair,
    sketch_examples,
    train_proposer,
)
from .search import dsp, hammer_only, proof_aug
from .tactics import Prover

METHODS = ("dsp", "proofaug", "proofaug_erp")
#: every variant a claim seed measures: the methods, ProofAug without its root call,
#: ProofAug without coarsening, and ERP's negative control: ERP whose re-queries return
#: nothing usable (each costs a query and closes no hole)
VARIANTS = (*METHODS, "proofaug_noroot", "proofaug_nocoarse", "erp_control")
#: the same on the hammer-hard test set (kept as a name: the variants no longer differ)
HARD_VARIANTS = VARIANTS


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


def hard_split(problems: list, prover, n_test: int) -> tuple:
    """Walk ``problems`` (already shuffled) and label each by the hammer on the whole
    theorem (callATP within its limit) until ``n_test`` theorems it fails on are found:
    they are the test set. Every other theorem, labelled or not, trains the proposer.
    Returns (train, test, number of hammer-proved theorems met on the way)."""
    if isinstance(problems, (str, bytes)) or not isinstance(problems, (list, tuple)):
        raise TypeError(
            f"problems: expected a list of Problem, got {type(problems).__name__}"
        )
    if not problems:
        raise ValueError("problems: expected at least one Problem, got none")
    for i, p in enumerate(problems):
        if not isinstance(p, Problem):
            raise TypeError(
                f"problems[{i}]: expected a Problem, got {type(p).__name__}"
            )
    _check_prover(prover, atp=True)
    check_int("n_test", n_test, 1)
    train, test, easy = [], [], 0
    for p in problems:
        if len(test) < n_test:
            if not hammer_only(p.stmt, prover).success:
                test.append(p)
                continue
            easy += 1
        train.append(p)
    if len(test) < n_test:
        raise ValueError(
            f"n_test: expected at most the {len(test)} theorems the hammer fails on in "
            f"a pool of {len(problems)}, got {n_test}"
        )
    return train, test, easy


def setup(cfg, device="cpu"):
    """Problems, the prover and the trained proposer (model, vocab, training losses).

    Default: ``cfg.n_train + cfg.n_test`` template theorems in a random split (each
    claim seed then draws its own test theorems, :func:`fresh_problems`). With
    ``cfg.hard``: ``cfg.n_pool`` theorems from the wider templates, shuffled with
    ``cfg.seed``; the test set is the first ``cfg.n_test`` that the hammer alone
    cannot prove (:func:`hard_split`) and every other theorem trains the proposer.
    The proposer learns gold proofs, the claims inside them (for ERP) and, with
    ``cfg.sketch``, DSP-style sketches (every ``by TAC`` a ``by hammer`` hole)."""
    _check_cfg(cfg)
    prover = Prover(cfg.rlimit_builtin, cfg.rlimit_hammer)
    n_easy = None
    if cfg.hard:
        problems = make_problems(cfg.n_pool, cfg.seed, prover, wide=True)
        random.Random(cfg.seed).shuffle(problems)  # a random order for the split
        train, test, n_easy = hard_split(problems, prover, cfg.n_test)
    else:
        problems = make_problems(cfg.n_train + cfg.n_test, cfg.seed, prover)
        random.Random(cfg.seed).shuffle(problems)  # a random held-out split
        train, test = problems[: cfg.n_train], problems[cfg.n_train :]
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
        "n_easy": n_easy,
        "hard": cfg.hard,
        "pairs": pairs,
        "vocab": vocab,
        "model": model,
        "losses": losses,
    }


#: the hammer's resource limits the HARD run also tries alone (the chapter's is 1000)
HAMMER_RLIMITS = (1000, 3000, 10000, 30000)
#: the order in which seed_run checks each proposal (CPU time is charged in this order)
_RUN_ORDER = ("dsp", "proofaug", "proofaug_nocoarse", "proofaug_erp", "erp_control")


class _Useless:
    """ERP's negative control: a re-query that returns nothing usable (``sorry``)."""

    def __call__(self, stmt):
        return "sorry"


def fresh_problems(env: dict, n: int, seed: int) -> list:
    """``n`` test theorems for one claim seed, drawn at random (with ``seed``) from the
    pool of theorems the proposer was not trained on: the templates' distinct
    theorems whose gold proofs check (:func:`make_problems` asked for 200 at seed
    50 000), minus the training theorems and those with a constant the proposer has
    never seen. The templates yield only a few hundred distinct theorems, so the pool
    holds about 50 and the seeds' test sets overlap: the seeds differ by which theorems
    they draw and, above all, by the proposals sampled."""
    _check_env(env, ("prover", "train", "vocab"))
    check_int("n", n, 1)
    check_int("seed", seed, 0)
    train = {p.stmt for p in env["train"]}
    pool = []
    for p in make_problems(200, 50_000, env["prover"]):
        if p.stmt in train:
            continue
        try:
            env["vocab"].encode(encode_pair(p.stmt, None))
        except ValueError:  # a constant the proposer has never seen
            continue
        pool.append(p)
    if len(pool) < n:
        raise ValueError(
            f"n: expected at most the {len(pool)} unseen theorems of the pool, got {n}"
        )
    return random.Random(seed).sample(pool, n)


def seed_run(cfg, env: dict, seed: int) -> dict:
    """One claim seed: ``cfg.n_test`` fresh theorems, ``cfg.n_samples`` proposals each
    from the proposer sampled with its own seed, every method on the same proposals,
    and the noisy oracle at ``cfg.oracle_rate``.

    Per theorem and budget k (the largest, ``cfg.n_samples``): solved by DSP, ProofAug,
    ProofAug without its root call (a success staged ``root_atp`` does not count),
    ProofAug without coarsening (also without a root-level success), ProofAug + ERP,
    the hammer alone, and DSP or the hammer. The stages count every successful
    proposal, ERP's control (re-queries that return ``sorry``) runs beside ERP. With
    ``cfg.hard`` the seed runs every theorem of the hammer-hard test set
    (``env["test"]``)."""
    _check_cfg(cfg)
    _check_env(env, ("prover", "train", "model", "vocab"))
    seed = check_int("seed", seed, 0)
    prover, k = env["prover"], cfg.n_samples
    calls0 = prover.calls
    budgets = [2**i for i in range(int(np.log2(k)) + 1)]
    test = env["test"] if cfg.hard else fresh_problems(env, cfg.n_test, seed)
    variants = VARIANTS
    prop = NeuralProposer(
        env["model"], env["vocab"], cfg.temperature, seed=70_000 + seed
    )
    hammer = np.array([hammer_only(p.stmt, prover).success for p in test])  # (P,)
    succ = {m: [] for m in variants}  # each (P, n)
    cost = {m: [] for m in variants}
    stages = {m: {} for m in variants}
    beyond_dsp = {m: {} for m in variants}  # stages of successes DSP does not have
    # CPU seconds of this process: sampling, and each method's checking in the order
    # run (DSP first, so later methods find some tactic calls already cached)
    cpu = {"sampling": 0.0, **{m: 0.0 for m in _RUN_ORDER}}
    for p in test:
        t0 = time.process_time()
        texts = prop.proposals(p.stmt, k)
        cpu["sampling"] += time.process_time() - t0
        row = {m: [] for m in variants}
        crow = {m: [] for m in variants}
        for text in texts:
            runs = {
                "dsp": lambda: dsp(p.stmt, text, prover),
                "proofaug": lambda: proof_aug(p.stmt, text, prover),
                "proofaug_nocoarse": lambda: proof_aug(
                    p.stmt, text, prover, coarsen=False
                ),
                "proofaug_erp": lambda: proof_aug(p.stmt, text, prover, propose=prop),
            }
            runs["erp_control"] = lambda: proof_aug(
                p.stmt, text, prover, propose=_Useless()
            )
            outs = {}
            for m, run in runs.items():
                t0 = time.process_time()
                outs[m] = run()
                cpu[m] += time.process_time() - t0
            # below the root: the same searches, a root-level success not counted (a
            # proposal whose semi-proof is one hole on the whole theorem reaches the
            # root even without coarsening)
            for m, src in (("proofaug_noroot", "proofaug"), ("proofaug_nocoarse",) * 2):
                o = outs[src]
                outs[m] = o if o.stage != "root_atp" else None
            for m in variants:
                o = outs[m]
                row[m].append(bool(o is not None and o.success))
                crow[m].append(1 + (o.extra_calls if o is not None else 0))
                if o is not None and o.stage is not None:
                    stages[m][o.stage] = stages[m].get(o.stage, 0) + 1
                    if o.success and not outs["dsp"].success:
                        beyond_dsp[m][o.stage] = beyond_dsp[m].get(o.stage, 0) + 1
        for m in variants:
            succ[m].append(row[m])
            cost[m].append(crow[m])
    curves = {
        m: budget_curve(np.array(succ[m]), np.array(cost[m]), budgets).round(4).tolist()
        for m in variants
    }
    solved = {  # (P,) solved within the largest budget
        m: np.array(
            [
                any(ok and c <= k for ok, c in zip(r, np.cumsum(cr)))
                for r, cr in zip(succ[m], cost[m])
            ]
        )
        for m in variants
    }
    # the noisy oracle: gold proofs with each line corrupted with probability ρ
    rng = random.Random(90_000 + seed)
    ora = {m: [] for m in ("dsp", "proofaug_noroot", "proofaug_nocoarse")}
    for p in test:
        for _ in range(cfg.oracle_samples):
            text = corrupt(p.gold, cfg.oracle_rate, rng)
            pa = proof_aug(p.stmt, text, prover)
            ora["dsp"].append(dsp(p.stmt, text, prover).success)
            ora["proofaug_noroot"].append(pa.success and pa.stage != "root_atp")
            nc = proof_aug(p.stmt, text, prover, coarsen=False)
            ora["proofaug_nocoarse"].append(nc.success and nc.stage != "root_atp")
    return {
        "seed": seed,
        "budgets": budgets,
        "curves": curves,
        "hammer": float(hammer.mean()),
        "dsp_or_hammer": float((solved["dsp"] | hammer).mean()),
        "beyond_hammer": {
            m: float((solved[m] & ~hammer).mean()) for m in ("dsp", "proofaug")
        },
        "stages": stages,
        "stages_beyond_dsp": beyond_dsp,
        "cpu_seconds": {
            m: round(v, 2) for m, v in cpu.items() if m in runs or m == "sampling"
        },
        "per_proposal": {m: float(np.mean(succ[m])) for m in variants},
        "oracle": {m: float(np.mean(v)) for m, v in ora.items()},
        "families": [p.family for p in test],
        "atp_calls": prover.calls - calls0,
    }


def _one_thread() -> None:
    """Worker initialiser: torch on one thread (z3 and the checker run on one)."""
    torch.set_num_threads(1)


def main_experiment(cfg, env: dict, seeds=None, processes: int = 1) -> dict:
    """:func:`seed_run` for each claim seed (default ``cfg.claim_seeds``): the pass
    rate against the budget (mean and standard error over seeds), the stages, and the
    per-seed records the claims read.

    ``processes > 1`` runs the seeds in that many worker processes (z3 and the
    checker are single-threaded). Each seed's record is the same either way; only the
    count of computed tactic calls grows, as every worker starts from the set-up's
    cache. From a script, call it under ``if __name__ == "__main__":``."""
    _check_cfg(cfg)
    _check_env(env, ("prover", "train", "model", "vocab"))
    seeds = seed_list(cfg.claim_seeds if seeds is None else seeds)
    processes = check_int("processes", processes, 1)
    if processes > 1 and len(seeds) > 1:
        import multiprocessing as mp

        ctx = mp.get_context("spawn")  # no fork after torch's thread pools started
        # one torch thread per worker: several multi-threaded samplers on two cores
        # spin against each other (the HARD run took over three times as long)
        with ctx.Pool(min(processes, len(seeds)), initializer=_one_thread) as pool:
            runs = pool.starmap(seed_run, [(cfg, env, s) for s in seeds])
    else:
        runs = [seed_run(cfg, env, s) for s in seeds]
    budgets = runs[0]["budgets"]
    variants = tuple(runs[0]["curves"])  # VARIANTS
    stages = {m: {} for m in variants}
    for r in runs:
        for m in variants:
            for st, n in r["stages"][m].items():
                stages[m][st] = stages[m].get(st, 0) + n
    out = {
        "budgets": budgets,
        "seeds": list(seeds),
        "hammer": float(np.mean([r["hammer"] for r in runs])),
        "curves": {},
        "stages": stages,
        "per_proposal": {
            m: float(np.mean([r["per_proposal"][m] for r in runs])) for m in variants
        },
        "n_test": cfg.n_test,
        "atp_calls": sum(r["atp_calls"] for r in runs),
        "runs": runs,
    }
    for m in variants:
        c = np.array([r["curves"][m] for r in runs])  # (seeds, K)
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


def hammer_budget(problems: list, rlimit_builtin: int, rlimits) -> dict:
    """The hammer alone on ``problems`` at each hammer resource limit in ``rlimits``
    (the built-in tactics keep ``rlimit_builtin``), each limit with a fresh prover (no
    cache): the pass rate and the CPU seconds per theorem. The baseline that gives the
    hammer the compute a search spends, instead of one call at the chapter's limit."""
    if not isinstance(problems, (list, tuple)) or not all(
        isinstance(p, Problem) for p in problems
    ):
        raise TypeError(f"problems: expected a list of Problem, got {problems!r:.60}")
    if not problems:
        raise ValueError("problems: expected at least one Problem, got none")
    check_int("rlimit_builtin", rlimit_builtin, 1)
    rlimits = list(check_numbers("rlimits", rlimits, lambda n, v: check_int(n, v, 1)))
    out = {"rlimits": rlimits, "pass": [], "cpu_s_per_theorem": []}
    for r in rlimits:
        prover = Prover(rlimit_builtin, r)
        t0 = time.process_time()
        ok = [hammer_only(p.stmt, prover).success for p in problems]
        out["pass"].append(round(float(np.mean(ok)), 4))
        out["cpu_s_per_theorem"].append(
            round((time.process_time() - t0) / len(problems), 4)
        )
    return out


def run_experiment(cfg, device=None) -> dict:
    """Everything the chapter reports, as plain numbers (the same keys for SMOKE and
    FULL), computed on ``device`` (default :func:`lib.common.device`)."""
    _check_cfg(cfg)
    device = pick_device() if device is None else torch.device(device)
    check_int("cfg.n_samples", cfg.n_samples, 1)
    t0 = time.perf_counter()
    from .claims import measure_claims

    env = setup(cfg, device)
    # the hammer-hard run (every test theorem on every seed): a worker process per seed
    main = main_experiment(cfg, env, processes=len(cfg.claim_seeds) if cfg.hard else 1)
    res = {
        "main": main,
        "claims": measure_claims(cfg, cfg.claim_seeds, main=main),
        "ablation": ablation(cfg, env),
        "final_loss": round(float(np.mean(env["losses"][-20:])), 3),
        "n_pairs": len(env["pairs"]),
    }
    if cfg.hard:
        res["hammer_budget"] = hammer_budget(
            env["test"], cfg.rlimit_builtin, HAMMER_RLIMITS
        )
        res["split"] = {
            "n_train": len(env["train"]),
            "n_test": len(env["test"]),
            "n_easy": env["n_easy"],
            "test_families": {
                f: sum(p.family == f for p in env["test"])
                for f in sorted({p.family for p in env["test"]})
            },
        }
    res["seconds"] = round(time.perf_counter() - t0, 1)
    return res
