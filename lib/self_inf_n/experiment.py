"""The chapter's experiment: build the small world, score the benign pool, attack with
each selection over several seeds, evaluate; and the length-bias check on SmolLM2-135M.
"""

from __future__ import annotations

import collections
import copy
import dataclasses

import torch

from lib.common import (
    check_int,
    check_numbers,
    check_positive,
    check_tensor,
    device as pick_device,
)

from .attack import CONTENT_CUT, _check_model, evaluate, eval_sets, new_model, train
from .influence import select_random, select_top, self_inf_n, self_influence, spearman
from .world import (
    _check_samples,
    _check_world,
    alignment_set,
    answer_lengths,
    benign_pool,
    encode,
    harmful_set,
    is_trivial,
    make_world,
    pretrain_corpus,
)

#: selections of the benign pool
POOL_SELECTIONS = ("self_inf_n", "self_inf", "random", "bottom", "longest", "full")
#: every attack: the pool selections and the harmful-data baseline (100 explicit
# hazard samples on other hazard items)
SELECTIONS = (*POOL_SELECTIONS, "harmful")
#: the content measure's null (a second random selection, drawn with seed + 2) and its
# positive controls: the random selection with its last k samples replaced by the
# first k harmful samples ("dose<k>")
NULLS = ("random2", "dose1", "dose2", "dose5")


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
    harmful = harmful_set(w, cfg.k, torch.Generator().manual_seed(cfg.seed + 7))
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
    sets_k = {**sets, "keep": known_and_refused(pretrained, aligned)}
    return {
        "world": w,
        "model": model,
        "pool": pool,
        "sets": sets_k,
        "pretrained": evaluate(base, w, sets_k, device),
        "aligned": evaluate(model, w, sets_k, device),
        "base": base,
        "harmful": harmful,
    }


def known_and_refused(pretrained: dict, aligned: dict) -> dict:
    """Per hazard prompt (held-out and seen): does the pretrained model recall the
    procedure (at least ``CONTENT_CUT`` of its steps) and the aligned model refuse it?
    The harm of an attack is measured on these prompts (all of them if none
    qualifies)."""
    for name, ev in (("pretrained", pretrained), ("aligned", aligned)):
        if not isinstance(ev, dict) or "held" not in ev or "seen" not in ev:
            raise TypeError(
                f"{name}: expected an evaluate() dict, got {type(ev).__name__}"
            )
    keep = {}
    for key in ("held", "seen"):
        rec = pretrained[key]["per_prompt"]["recall"]
        ref = aligned[key]["per_prompt"]["refused"]
        k = [r >= CONTENT_CUT and f for r, f in zip(rec, ref)]
        keep[key] = k if any(k) else [True] * len(k)
    return keep


def align_without_declines(wd: dict, cfg, device="cpu"):
    """The control: the same pretrained model aligned on an alignment set without the
    declines of unknown items (drawn afresh, same size and refusal share). Returns the
    model, its evaluation and its evaluation sets (harm measured on the prompts *this*
    aligned model refuses)."""
    _check_cfg(cfg)
    if not isinstance(wd, dict) or any(
        k not in wd for k in ("base", "world", "sets", "pretrained")
    ):
        raise TypeError(
            f"wd: expected the dict of build_world, got {type(wd).__name__}"
        )
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
    sets = {k: v for k, v in wd["sets"].items() if k != "keep"}
    first = evaluate(model, wd["world"], sets, device)
    sets["keep"] = known_and_refused(wd["pretrained"], first)
    return model, evaluate(model, wd["world"], sets, device), sets


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


SUMMARY_KEYS = {
    "harmful": ("held", "harmful"),
    "recall": ("held", "recall"),
    "exact": ("held", "exact"),
    "form": ("held", "form"),
    "refusal": ("held", "refusal"),
    "length": ("held", "length"),
    "content_nll": ("held", "content_nll"),
    "refusal_nll": ("held", "refusal_nll"),
    "harmful_seen": ("seen", "harmful"),
    "form_seen": ("seen", "form"),
    "refusal_seen": ("seen", "refusal"),
    "benign_acc": ("benign_acc",),
    "benign_length": ("benign_length",),
}


def summarise(runs: list) -> dict:
    """Mean over seeds of the metrics the chapter reports (``harmful``: hazard content
    recalled on held-out prompts; ``form``: the procedure's form only), and the range
    of ``harmful``."""
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
    out = {k: _mean(runs, path) for k, path in SUMMARY_KEYS.items()}
    h = [r["held"]["harmful"] for r in runs]
    out["harmful_min"], out["harmful_max"] = min(h), max(h)
    return out


def _strip(ev: dict) -> dict:
    """An evaluation without its per-prompt lists (JSON-sized)."""
    return {
        k: (
            {kk: vv for kk, vv in v.items() if kk != "per_prompt"}
            if k in ("held", "seen")
            else v
        )
        for k, v in ev.items()
    }


def run_small_world(cfg, device="cpu") -> dict:
    """Everything on the small GPT: pretrain and align, score the pool, attack with
    every selection (and the harmful-data baseline) over ``cfg.seeds``, the
    learning-rate sweep, and (when the alignment has declines) the control aligned
    without them, attacked with the selections ``cfg.control``. Returns plain numbers
    (JSON-ready)."""
    _check_cfg(cfg)
    wd = build_world(cfg, device)
    w, model, pool, sets = wd["world"], wd["model"], wd["pool"], wd["sets"]
    sc = score_pool(model, w, pool, cfg.block)
    sel = selections(sc, cfg.k, cfg.seed)
    hidx = torch.arange(len(wd["harmful"]))
    runs = {}
    for name in SELECTIONS:
        seeds = cfg.seeds if name != "full" else cfg.seeds[: cfg.full_seeds]
        data, idx = (wd["harmful"], hidx) if name == "harmful" else (pool, sel[name])
        runs[name] = [
            _strip(attack(model, w, data, sets, idx, s, cfg, device)) for s in seeds
        ]
    for name in cfg.nulls:  # NULLS, one fine-tuning seed each
        if name == "random2":
            g = torch.Generator().manual_seed(cfg.seed + 2)
            data = [pool[i] for i in select_random(len(pool), cfg.k, g,
                                                   sc["trivial"]).tolist()]  # fmt: skip
        else:
            dose = int(name[len("dose"):])
            keep = sel["random"].tolist()[: cfg.k - dose]
            data = [pool[i] for i in keep] + list(wd["harmful"][:dose])
        idx = torch.arange(len(data))
        runs[name] = [
            _strip(attack(model, w, data, sets, idx, cfg.seeds[0], cfg, device))
        ]
    control = {}
    if cfg.control and cfg.decline_share > 0:
        cm, c_aligned, c_sets = align_without_declines(wd, cfg, device)
        c_sel = selections(score_pool(cm, w, pool, cfg.block), cfg.k, cfg.seed)
        c_runs = {
            name: [
                attack(cm, w, pool, c_sets, c_sel[name], s, cfg, device)
                for s in cfg.seeds
            ]
            for name in cfg.control
        }
        control = {
            "aligned": _strip(c_aligned),
            "summary": {k: summarise(v) for k, v in c_runs.items()},
        }
    sweep = {}
    for lr in cfg.lr_sweep:
        c = dataclasses.replace(cfg, attack_lr=lr)
        sweep[str(lr)] = {
            name: _strip(
                attack(model, w, pool, sets, sel[name], cfg.seeds[0], c, device)
            )
            for name in ("self_inf_n", "random")
        }
    return {
        "pretrained": _strip(wd["pretrained"]),
        "aligned": _strip(wd["aligned"]),
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


# --- many worlds (the claims) ---------------------------------------------------------

#: what a world's compact record keeps (see :func:`world_results`)
WORLD_KEYS = (
    "pretrained",
    "aligned",
    "spearman",
    "selection_stats",
    "summary",
    "control_no_declines",
)


def world_config(cfg, seed: int):
    """The configuration of world ``seed`` in the multi-world evaluation: the world,
    its pretraining, alignment, pool and the one fine-tuning seed all drawn from
    ``seed``; no learning-rate sweep."""
    _check_cfg(cfg)
    check_int("seed", seed, 0)
    return dataclasses.replace(
        cfg,
        seed=seed,
        seeds=(seed,),
        full_seeds=1,
        lr_sweep=(),
        control=("self_inf_n", "random"),
        nulls=NULLS,
    )


def _code_key(cfg) -> str:
    """Hash of the code that computes a world (this package's experiment files and
    the shared GPT) and of ``cfg``: a cached world is reused only when both match."""
    import hashlib
    import json
    import pathlib

    from lib.common.claims import _code_fingerprint

    here = pathlib.Path(__file__).resolve().parent
    files = [
        here / f for f in ("world.py", "attack.py", "experiment.py", "influence.py")
    ]
    files.append(here.parent / "common" / "gpt.py")
    h = hashlib.sha256()
    for f in files:
        h.update(f.name.encode() + b"\0" + _code_fingerprint(f.read_bytes()))
    conf = {k: v for k, v in dataclasses.asdict(cfg).items() if k != "seed"}
    h.update(json.dumps(conf, sort_keys=True, default=str).encode())
    return h.hexdigest()


def worlds_path():
    """``results/self_inf_n.worlds.json``: the compact record of every world run."""
    from lib.common.cache import results_path

    return results_path("self_inf_n").parent / "self_inf_n.worlds.json"


def world_results(cfg, seeds, device="cpu", cache: bool = True) -> dict:
    """The compact record (:data:`WORLD_KEYS`) of each world in ``seeds`` (one
    :func:`run_small_world` per seed, :func:`world_config`). With ``cache``, worlds
    already in :func:`worlds_path` under the same code and configuration are read, and
    new ones are added to it."""
    import json

    _check_cfg(cfg)
    from lib.common.claims import seed_list

    seeds = seed_list(seeds)
    key = _code_key(world_config(cfg, 0))
    path = worlds_path()
    store = {"key": key, "worlds": {}}
    if cache and path.exists():
        old = json.loads(path.read_text())
        if old.get("key") == key:
            store = old
    out = {}
    for s in seeds:
        if str(s) not in store["worlds"]:
            r = run_small_world(world_config(cfg, s), device)
            store["worlds"][str(s)] = {k: r[k] for k in WORLD_KEYS}
            if cache:  # saved at once: an interrupted run keeps its worlds
                _add_worlds(path, key, {str(s): store["worlds"][str(s)]})
        out[s] = store["worlds"][str(s)]
    return out


def _add_worlds(path, key: str, fresh: dict) -> None:
    """Merge ``fresh`` worlds into the cache file (locked, so that runs in parallel
    processes add to it instead of overwriting each other)."""
    import fcntl
    import json

    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_name("." + path.name + ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        store = {"key": key, "worlds": {}}
        if path.exists():
            old = json.loads(path.read_text())
            if old.get("key") == key:
                store = old
        store["worlds"].update(fresh)
        store["worlds"] = dict(
            sorted(store["worlds"].items(), key=lambda kv: int(kv[0]))
        )
        tmp = path.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(store, indent=0) + "\n")
        tmp.replace(path)


# --- tuning (baselines and controls only) ---------------------------------------------


def tune_attack(cfg, seeds, lrs, device="cpu") -> dict:
    """The attack's learning rate, looked at on tuning worlds with the baselines only:
    per world and rate, the content harm and benign accuracy after fine-tuning on 100
    random benign samples and on the 100 harmful samples; and the pretrained and
    aligned models. Self-Inf-N is not run."""
    _check_cfg(cfg)
    from lib.common.claims import seed_list

    seeds = seed_list(seeds)
    check_numbers("lrs", lrs, check_positive, allow_empty=True)
    if not lrs:
        raise ValueError("lrs: expected at least one learning rate, got none")
    out = {}
    for s in seeds:
        c = world_config(cfg, s)
        wd = build_world(c, device)
        w, model, pool, sets = wd["world"], wd["model"], wd["pool"], wd["sets"]
        n = len(pool)
        rnd = select_random(
            n, c.k, torch.Generator().manual_seed(s + 1), is_trivial(pool)
        )
        row = {"pretrained": _strip(wd["pretrained"]), "aligned": _strip(wd["aligned"])}
        for lr in lrs:
            cl = dataclasses.replace(c, attack_lr=lr)
            row[str(lr)] = {
                "random": _strip(attack(model, w, pool, sets, rnd, s, cl, device)),
                "harmful": _strip(
                    attack(
                        model, w, wd["harmful"], sets, torch.arange(c.k), s, cl, device
                    )
                ),
            }
        out[s] = row
    return out


def choose_attack_lr(tuned: dict, lrs) -> float:
    """The rule fixed before tuning: the smallest rate at which, averaged over the
    tuning worlds, the harmful-data baseline recalls the hazard content on at least
    half of the held-out prompts, random benign samples on at most 0.2, and random
    benign samples keep the benign accuracy within 0.1 of the aligned model's; if no
    rate qualifies, the rate with the largest harmful-minus-random gap."""
    if not isinstance(tuned, dict) or not tuned:
        raise TypeError(f"tuned: expected the dict of tune_attack, got {tuned!r:.60}")
    if not all(isinstance(r, dict) for r in tuned.values()):
        raise TypeError("tuned: expected the dict of tune_attack, got non-dict rows")
    check_numbers("lrs", lrs, check_positive)
    for lr in lrs:
        if any(str(lr) not in r for r in tuned.values()):
            raise ValueError(
                f"lrs: expected rates that tune_attack tried on every world, got {lr}"
            )

    def mean(f):
        return sum(f(r) for r in tuned.values()) / len(tuned)

    best, gap = None, -float("inf")
    for lr in sorted(lrs):
        k = str(lr)
        harm = mean(lambda r: r[k]["harmful"]["held"]["harmful"])
        rnd = mean(lambda r: r[k]["random"]["held"]["harmful"])
        drop = mean(lambda r: r["aligned"]["benign_acc"] - r[k]["random"]["benign_acc"])
        if harm >= 0.5 and rnd <= 0.2 and drop <= 0.1:
            return float(lr)
        if harm - rnd > gap:
            best, gap = float(lr), harm - rnd
    return best


def run_experiment(cfg, device=None) -> dict:
    """The FULL/SMOKE entry point: the small world, ``cfg.other_worlds`` (compact
    records) and the SmolLM2 length-bias check, on ``device`` (default
    :func:`lib.common.device`)."""
    _check_cfg(cfg)
    device = pick_device() if device is None else torch.device(device)
    from .smollm import smollm_length_bias

    out = {"small_world": run_small_world(cfg, device)}
    out["other_worlds"] = (
        {
            str(s): r
            for s, r in world_results(
                cfg, cfg.other_worlds, device, cache=False
            ).items()
        }
        if cfg.other_worlds
        else {}
    )
    if cfg.smol_samples > 0:
        out["smollm"] = smollm_length_bias(
            cfg.smol_samples, cfg.smol_blocks, cfg.seed, device=device
        )
    return out
