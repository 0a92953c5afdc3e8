"""The chapter's experiment: pretrain a small CLIP, then leave each domain out in turn
(DomainBed-style) and compare raw CLIP with CLIP-ICM, zero-shot and with a linear
probe.

Per seed (:func:`prepare_seed`): disjoint MNIST digits for a pretraining pool (style
independent of the class, captions naming class, colour and marker) and the four
domains of :mod:`.data`; each domain split 80/20 into a training part and a held-out
part (the official code's ``holdout=0.2``). The CLIP is trained on the pool only and
then frozen. For each left-out domain (:func:`run_fold`): the invariant basis is
estimated from intervention pairs of the source domains' training parts; probes are
fitted there; ID accuracy is on the source domains' held-out parts, OOD accuracy on
the left-out domain's held-out part. A readout set (:func:`.data.make_readout`:
MNIST test digits, colour and marker independent of the class) says how well a
linear probe still reads each style factor from a subspace (:func:`style_readout`).

:func:`run_experiment` is what the notebook (SMOKE) and ``python -m lib.clip_icm``
(FULL) call; it returns plain numbers, so the saved JSON has the SMOKE keys.
"""

from __future__ import annotations

import dataclasses

import torch

from lib.common import (
    check_int,
    check_nonnegative,
    check_numbers,
    check_positive,
    check_record,
    make_generator,
)
from lib.common.claims import seed_list

from .data import (
    AUGMENTATIONS,
    DOMAINS,
    Domain,
    augment,
    class_prompts,
    make_domain,
    make_readout,
    pooled_digits,
)
from .icm import (
    _check_basis,
    accuracy,
    fit_probe,
    invariant_basis,
    probe_predict,
    zero_shot_logits,
)
from .model import embed_images, embed_text, train_clip

#: the pretraining pool: colour and marker independent of the class
PRETRAIN = Domain("pretrain", 0.1, 0, 0.1, 0)
#: the arms a fold reports (probe and zero-shot accuracies)
ARMS = ("raw", "icm", "bottom", "pca", "aug", "aug_pca", "icm_all", "seen")
#: what each arm reports: probe and zero-shot accuracy, ID and OOD, and how well a
#: linear probe reads the colour and the marker from its features (readout set)
SCORES = ("id", "ood", "zs_id", "zs_ood", "colour", "marker")


def _check_cfg(cfg):
    from . import Config

    if not isinstance(cfg, Config):
        raise TypeError(
            f"cfg: expected a lib.clip_icm.Config (e.g. SMOKE or FULL), got "
            f"{type(cfg).__name__}"
        )
    return cfg


def _check_prep(prep) -> dict:
    return check_record(
        "prep", prep, ("parts", "order", "text", "readout"), "prepare_seed's dict"
    )


#: what probe_scores reads from a fold (fold_data's dict)
_FOLD_KEYS = ("z", "y", "z_id", "y_id", "z_ood", "y_ood", "text")


def _split(d: dict, holdout: float, g: torch.Generator) -> tuple[dict, dict]:
    n = len(d["y"])
    p = torch.randperm(n, generator=g)
    n_out = int(holdout * n)
    return {k: v[p[n_out:]] for k, v in d.items()}, {
        k: v[p[:n_out]] for k, v in d.items()
    }


def _text_table(cfg, text_table):
    """The MiniLM caption table a ``"minilm"`` run needs (computed when None);
    None for ``"bow"``."""
    if cfg.text_tower == "minilm" and text_table is None:
        from .minilm import caption_table

        return caption_table()
    return text_table


def prepare_seed(cfg, seed: int, device="cpu", text_table=None) -> dict:
    """One seed's data, its trained CLIP and every embedding the folds need.
    ``text_table``: the frozen MiniLM caption embeddings when ``cfg.text_tower`` is
    ``"minilm"`` (:func:`.minilm.caption_table`; None: computed here), else None."""
    _check_cfg(cfg)
    seed = check_int("seed", seed, 0)
    text_table = _text_table(cfg, text_table)
    g = make_generator(seed)
    digits, y = pooled_digits("train")
    need = cfg.n_pretrain + len(DOMAINS) * cfg.n_per_domain
    idx = torch.randperm(len(y), generator=g)[:need]
    pre_i, dom_i = idx[: cfg.n_pretrain], idx[cfg.n_pretrain :].view(len(DOMAINS), -1)
    pre = make_domain(digits[pre_i], y[pre_i], PRETRAIN, g, cfg.hue_jitter)
    doms = [make_domain(digits[i], y[i], d, g) for i, d in zip(dom_i, DOMAINS)]
    splits = [_split(d, cfg.holdout, g) for d in doms]
    model = train_clip(
        pre["x"].to(device), pre["y"], pre["colour"], pre["marker"], seed=seed,
        steps=cfg.steps, batch=cfg.batch, lr=cfg.lr, dim=cfg.dim, width=cfg.width,
        p_style=cfg.p_style, device=device, text_tower=cfg.text_tower,
        text_table=text_table,
    )  # fmt: skip
    emb = lambda x: embed_images(model, x.to(device)).cpu()  # noqa: E731
    parts = []
    for tr, te in splits:
        x_cov, _ = augment(tr["x"], g, cfg.kinds)  # interventions the method uses
        x_all, _ = augment(tr["x"], g, AUGMENTATIONS)  # all seven (an ablation)
        parts.append({
            "z": emb(tr["x"]), "y": tr["y"], "z_aug": emb(x_cov),
            "z_aug_all": emb(x_all), "z_out": emb(te["x"]), "y_out": te["y"],
            "colour": tr["colour"], "marker": tr["marker"],
            "colour_out": te["colour"], "marker_out": te["marker"],
        })  # fmt: skip
    order = torch.randperm(10**6, generator=g)  # pair subsampling order
    ro = make_readout(cfg.n_readout, g)  # style independent of the class
    half = cfg.n_readout // 2
    readout = {
        "z": emb(ro["x"]), "y": ro["y"], "colour": ro["colour"], "marker": ro["marker"],
        "fit": torch.arange(cfg.n_readout) < half,  # probes fit on the first half
    }  # fmt: skip
    return {
        "seed": seed,
        "parts": parts,
        "text": embed_text(model, class_prompts()).cpu(),  # (10, D)
        "order": order,
        "readout": readout,
        "model": model,
    }


def fold_data(prep: dict, test: int, n_pairs: int | None = None) -> dict:
    """The embeddings of the fold that leaves domain ``test`` out; Δ from
    ``n_pairs`` intervention pairs of the sources (all of them when None)."""
    _check_prep(prep)
    test = check_int("test", test, 0)
    if test >= len(prep["parts"]):
        raise ValueError(
            f"test: expected a domain index < {len(prep['parts'])}, got {test}"
        )
    src = [p for i, p in enumerate(prep["parts"]) if i != test]
    cat = lambda key: torch.cat([p[key] for p in src])  # noqa: E731
    z, z_aug, z_all = cat("z"), cat("z_aug"), cat("z_aug_all")
    n = z.shape[0]
    m = n if n_pairs is None else check_int("n_pairs", n_pairs, 1)
    if m > n:
        raise ValueError(
            f"n_pairs: expected at most {n} (the sources' images), got {m}"
        )
    pick = prep["order"][prep["order"] < n][:m]  # a fixed subsample per seed
    t = prep["parts"][test]
    return {
        "z": z, "y": cat("y"), "z_aug": z_aug,
        "delta": z[pick] - z_aug[pick],  # (m, D): Δ = f(x) − f(x̃)
        "delta_all": z[pick] - z_all[pick],
        "z_id": cat("z_out"), "y_id": cat("y_out"),
        "z_ood": t["z_out"], "y_ood": t["y_out"], "colour_ood": t["colour_out"],
        "z_tgt": t["z"], "y_tgt": t["y"], "text": prep["text"],
        "readout": prep["readout"],
    }  # fmt: skip


def probe_scores(f: dict, basis: torch.Tensor | None, C: float) -> dict:
    """ID/OOD accuracy of a probe (and of zero-shot) in the span of ``basis`` (None:
    the raw embedding)."""
    check_record("f", f, _FOLD_KEYS, "fold_data's dict")
    if basis is not None:
        _check_basis("basis", basis, f["z"].shape[1])
    check_positive("C", C)
    proj = (lambda q: q) if basis is None else (lambda q: q @ basis)
    probe = fit_probe(proj(f["z"]), f["y"], C)
    zs = lambda q: zero_shot_logits(q, f["text"], basis).argmax(1)  # noqa: E731
    return {
        "id": accuracy(probe_predict(proj(f["z_id"]), probe), f["y_id"]),
        "ood": accuracy(probe_predict(proj(f["z_ood"]), probe), f["y_ood"]),
        "zs_id": accuracy(zs(f["z_id"]), f["y_id"]),
        "zs_ood": accuracy(zs(f["z_ood"]), f["y_ood"]),
    }


def style_readout(f: dict, basis: torch.Tensor | None, C: float) -> dict:
    """How well a linear probe (inverse regularisation ``C``) reads the colour and the
    marker from the span of ``basis`` (None: the raw embedding): fitted on one half of
    the readout set, its accuracy on the other half (chance 0.1). ``f`` is
    :func:`fold_data`'s output (or any dict with its ``"readout"`` entry)."""
    if not isinstance(f, dict) or "readout" not in f:
        raise ValueError(
            "f: expected fold_data's dict, with a 'readout' entry, got "
            f"{type(f).__name__} without one"
        )
    r = f["readout"]
    z = r["z"]
    check_positive("C", C)
    if basis is not None:
        _check_basis("basis", basis, z.shape[1])
        z = z @ basis  # (N, k)
    fit, test = r["fit"], ~r["fit"]
    out = {}
    for factor in ("colour", "marker"):
        probe = fit_probe(z[fit], r[factor][fit], C)
        out[factor] = accuracy(probe_predict(z[test], probe), r[factor][test])
    return out


def run_fold(cfg, prep: dict, test: int) -> dict:
    """Every arm of one left-out domain: raw CLIP; ICM (top-k of M); the official
    code's bottom-k; λ = 0 (top-k principal directions, no interventions); a probe
    trained on the embeddings of the augmented images too, in the raw space and in
    the λ = 0 subspace; ICM with all seven augmentations; and a probe that has seen
    the target domain's training part. Each arm also reports :func:`style_readout`
    of its features."""
    _check_cfg(cfg)
    f = fold_data(prep, test, cfg.n_pairs)
    basis = lambda d, order="top", lam=cfg.lam: invariant_basis(  # noqa: E731
        f["z"], d, lam, cfg.k, order
    )
    bases = {
        "icm": basis(f["delta"]),
        "bottom": basis(f["delta"], "bottom"),
        "pca": basis(f["delta"], lam=0.0),
        "icm_all": basis(f["delta_all"]),
    }
    out = {"raw": probe_scores(f, None, cfg.C)}
    out.update({arm: probe_scores(f, b, cfg.C) for arm, b in bases.items()})
    aug = dict(f, z=torch.cat([f["z"], f["z_aug"]]), y=torch.cat([f["y"], f["y"]]))
    out["aug"] = probe_scores(aug, None, cfg.C_aug)
    out["aug_pca"] = probe_scores(aug, bases["pca"], cfg.C_aug_pca)
    seen = dict(f, z=torch.cat([f["z"], f["z_tgt"]]), y=torch.cat([f["y"], f["y_tgt"]]))
    out["seen"] = probe_scores(seen, None, cfg.C)
    read = {arm: style_readout(f, b, cfg.C) for arm, b in bases.items()}
    read["raw"] = style_readout(f, None, cfg.C)
    space = {"aug": "raw", "seen": "raw", "aug_pca": "pca"}  # the features they use
    for arm in out:
        out[arm].update(read[space.get(arm, arm)])
    return {arm: out[arm] for arm in ARMS}


def run_seed(cfg, seed: int, device="cpu", text_table=None) -> dict:
    """``{domain name: run_fold(...)}`` for one seed (``text_table``: as in
    :func:`prepare_seed`)."""
    prep = prepare_seed(cfg, seed, device, text_table)
    return {d.name: run_fold(cfg, prep, i) for i, d in enumerate(DOMAINS)}


def run_seeds(cfg, seeds, device="cpu") -> dict:
    """``{seed: run_seed(...)}`` (MiniLM's caption table, when the text tower needs
    it, computed once for all seeds)."""
    _check_cfg(cfg)
    seeds = seed_list(seeds)
    table = _text_table(cfg, None)
    return {int(s): run_seed(cfg, int(s), device, table) for s in seeds}


def sweep(cfg, prep: dict, test: int, lams=(), ks=(), n_pairs=()) -> dict:
    """OOD/ID probe and zero-shot accuracy along one knob at a time, the others at
    the preset's values (fold ``test``)."""
    _check_cfg(cfg)
    check_numbers("lams", lams, check_nonnegative, allow_empty=True)
    for name, values in (("ks", ks), ("n_pairs", n_pairs)):
        check_numbers(name, values, lambda n, v: check_int(n, v, 1), allow_empty=True)
    out = {"lam": {}, "k": {}, "n_pairs": {}}
    f = fold_data(prep, test, cfg.n_pairs)
    for lam in lams:
        out["lam"][lam] = probe_scores(
            f, invariant_basis(f["z"], f["delta"], lam, cfg.k), cfg.C
        )
    for k in ks:
        out["k"][k] = probe_scores(
            f, invariant_basis(f["z"], f["delta"], cfg.lam, k), cfg.C
        )
    for m in n_pairs:
        fm = fold_data(prep, test, m)
        out["n_pairs"][m] = probe_scores(
            fm, invariant_basis(fm["z"], fm["delta"], cfg.lam, cfg.k), cfg.C
        )
    return out


def run_experiment(cfg, device=None) -> dict:
    """The FULL/SMOKE entry point: every fold of every seed in ``cfg.claim_seeds``,
    the claim statistics, and the sweeps on the first seed."""
    from lib.common import device as pick_device

    from .claims import measure_from_runs

    _check_cfg(cfg)
    device = pick_device() if device is None else device
    runs = run_seeds(cfg, cfg.claim_seeds, device)
    return {
        "runs": {str(s): v for s, v in runs.items()},
        "claims": measure_from_runs(runs),
        "config": dataclasses.asdict(cfg),
    }
