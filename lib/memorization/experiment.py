"""The chapter's runs: train every variant of every seed as one ensemble, sample with
Heun at each checkpoint, and score copies and quality.

A **variant** is ``(name, σ_n, clean_low)``: ``edm`` (σ_n = 0, which is also the
method's σ_n → 0 limit), ``ambient_<σ_n>`` (clean data below σ_n, one fixed noisy copy
per image above) and ``fully_ambient`` (no clean image at any σ: σ is drawn above σ_n
and sampling stops at σ_n with the x₀ prediction).
"""

from __future__ import annotations

import torch

from lib.common import check_int, check_tensor
from lib.common.claims import seed_list

from .data import (
    frechet_distance,
    load_digits_split,
    nearest_similarity,
    nn_ratio,
    train_feature_net,
)
from .diffusion import EnsembleMLP, heun_sample, sampling_sigmas, train_ensemble


def variants(cfg) -> list:
    """The variants each seed trains: [(name, σ_n, clean_low, fresh)]: EDM, the method
    at each σ_n of ``cfg.sigma_ns``, (``cfg.fresh_control``) the method at
    ``cfg.sigma_n`` with a fresh noisy copy at every step instead of one fixed copy
    per image (the ablation of the fixed copy), and (``cfg.fully_ambient``) the fully
    ambient model at ``cfg.sigma_n``."""
    _check_cfg(cfg)
    out = [("edm", 0.0, True, False)]
    out += [(f"ambient_{s:g}", float(s), True, False) for s in cfg.sigma_ns]
    if cfg.fresh_control:
        out.append((f"fresh_{cfg.sigma_n:g}", cfg.sigma_n, True, True))
    if cfg.fully_ambient:
        out.append(("fully_ambient", cfg.sigma_n, False, False))
    return out


def checkpoints(cfg) -> tuple:
    """Steps at which every model is sampled (the early-stopping curve)."""
    _check_cfg(cfg)
    return tuple(sorted({max(1, round(cfg.steps * f)) for f in cfg.stop_fractions}))


def _check_cfg(cfg):
    from . import Config

    if not isinstance(cfg, Config):
        raise TypeError(
            f"cfg: expected a lib.memorization.Config, got {type(cfg).__name__}"
        )


def prepare_seed(cfg, seed: int, n_train: int | None = None) -> dict:
    """Data split, feature net, training set, decoy set and the calibrated threshold of
    one seed."""
    _check_cfg(cfg)
    n = cfg.n_train if n_train is None else check_int("n_train", n_train, 2)
    return _prepare(cfg, seed, (n,))[n]


_SPLITS: dict = {}  # (seed, n_pool, n_heldout, clf_steps) -> (data split, feature net)


def _prepare(cfg, seed: int, sizes: tuple) -> dict:
    """:func:`prepare_seed` for several training-set sizes of one seed ({N: prep}):
    one data split and one feature net; the training set of size N is the first N
    images of the pool, the decoy set the next N."""
    if 2 * max(sizes) > cfg.n_pool:
        raise ValueError(
            f"n_train: expected <= n_pool/2 = {cfg.n_pool // 2}, got {max(sizes)}"
        )
    key = (seed, cfg.n_pool, cfg.n_heldout, cfg.clf_steps)
    if key not in _SPLITS:  # the split and feature net of a seed, computed once
        if len(_SPLITS) >= 32:
            _SPLITS.clear()
        d = load_digits_split(seed, n_pool=cfg.n_pool, n_heldout=cfg.n_heldout)
        fnet = train_feature_net(d["clf"], d["clf_y"], 20_000 + seed, cfg.clf_steps)
        _SPLITS[key] = (d, fnet)
    d, fnet = _SPLITS[key]
    f_held, q, out = fnet.features(d["heldout"]), cfg.quantile, {}
    for n in sizes:
        train, decoy = d["pool"][:n], d["pool"][n : 2 * n]  # disjoint real sets of N
        f_train, f_decoy = fnet.features(train), fnet.features(decoy)
        out[n] = {  # copies: a caller editing them must not reach the cached split
            "train": train.clone(),
            "decoy": decoy.clone(),
            "heldout": d["heldout"].clone(),
            "fnet": fnet,
            "f_train": f_train,
            "f_decoy": f_decoy,
            "f_held": f_held,
            # 99th percentile of held-out → train nearest similarity: a generalising
            # model's samples exceed it 1 % of the time
            "thr": float(torch.quantile(nearest_similarity(f_held, f_train), q)),
            "thr_decoy": float(torch.quantile(nearest_similarity(f_held, f_decoy), q)),
        }
    return out


def score(samples: torch.Tensor, prep: dict) -> dict:
    """Copy rate (features), copy rate against the decoy set (the control), pixel
    copy rate (d₁/d₂ < 1/3), mean nearest similarity and the Fréchet distance."""
    check_tensor("samples", samples, shape=(None, 64), floating=True, finite=True)
    if len(samples) < 2:
        raise ValueError(f"samples: expected >= 2 rows, got {tuple(samples.shape)}")
    keys = ("fnet", "f_train", "f_decoy", "f_held", "train", "thr", "thr_decoy")
    if not isinstance(prep, dict) or any(k not in prep for k in keys):
        raise TypeError(
            f"prep: expected the dict of prepare_seed, got {type(prep).__name__}"
        )
    samples = samples.cpu()
    f = prep["fnet"].features(samples)
    sim = nearest_similarity(f, prep["f_train"])
    return {
        "copy": float((sim > prep["thr"]).float().mean()),
        "copy_decoy": float(
            (nearest_similarity(f, prep["f_decoy"]) > prep["thr_decoy"]).float().mean()
        ),
        "pixel_copy": float((nn_ratio(samples, prep["train"]) < 1 / 3).float().mean()),
        "sim": float(sim.mean()),
        "fd": frechet_distance(f, prep["f_held"]),
    }


def run_seeds(
    cfg, seeds, device="cpu", n_train: int | None = None, keep_samples: bool = False
) -> dict:
    """Train all variants of all ``seeds`` as one ensemble and score them.

    Returns ``{"variants": [...], "checkpoints": [...], "scores": {seed: {variant:
    {step: score dict}}}}``, plus ``"samples"`` ({seed: {variant: {step: (16, 64)
    samples}}}) and ``"train"`` ({seed: (N, 64)}) when ``keep_samples``.
    """
    _check_cfg(cfg)
    seeds = seed_list(seeds)
    var = variants(cfg)
    preps = {s: prepare_seed(cfg, s, n_train) for s in seeds}
    models = []
    for s in seeds:
        g = torch.Generator().manual_seed(30_000 + s)
        eta = torch.randn(preps[s]["train"].shape, generator=g)  # one fixed copy each
        models += [(preps[s], eta, v, 100 * s + j) for j, v in enumerate(var)]
    cps, sc, smp = _train_and_score(cfg, models, seeds[0], device)
    res = {"variants": var, "checkpoints": list(cps), "scores": {}}
    for i, s in enumerate(seeds):
        ms = range(i * len(var), (i + 1) * len(var))
        res["scores"][s] = {v[0]: sc[m] for v, m in zip(var, ms)}
        if keep_samples:  # 16 samples per checkpoint (the widget's)
            res.setdefault("samples", {})[s] = {v[0]: smp[m] for v, m in zip(var, ms)}
            res.setdefault("train", {})[s] = preps[s]["train"]
    return res


def _train_and_score(cfg, models: list, seed0: int, device) -> tuple:
    """Train ``models`` [(prep, η (N_m, 64), variant, init seed)] as one ensemble
    (training sets zero-padded to the largest N_m) and score each at every checkpoint.
    Returns (checkpoints, [{step: score}], [{step: (16, 64) samples}]) per model."""
    cps = checkpoints(cfg)
    sizes = [len(p["train"]) for p, *_ in models]
    pad = [(0, 0, 0, max(sizes) - n) for n in sizes]  # zero rows below each set
    x = torch.stack(
        [torch.nn.functional.pad(p["train"], q) for (p, *_), q in zip(models, pad)]
    ).to(device)  # (M, N_max, 64)
    y = torch.stack(
        [
            torch.nn.functional.pad(p["train"] + v[1] * eta, q)  # y = x + σ_n η, (3)
            for (p, eta, v, _), q in zip(models, pad)
        ]
    ).to(device)  # (M, N_max, 64)
    sn = [v[1] for _, _, v, _ in models]
    clean = [v[2] for _, _, v, _ in models]
    init = [i for *_, i in models]
    model = EnsembleMLP(init, width=cfg.width, depth=cfg.depth).to(device)
    g = torch.Generator().manual_seed(40_000 + seed0)
    _, saved = train_ensemble(
        model, x, y, sn, clean, steps=cfg.steps, batch=cfg.batch, lr=cfg.lr,
        generator=g, ema=cfg.ema, checkpoints=cps,
        fresh=[v[3] for _, _, v, _ in models], sizes=sizes,
    )  # fmt: skip
    stop = [0.002 if cl else max(sig, 0.002) for sig, cl in zip(sn, clean)]
    sig = sampling_sigmas(cfg.sample_steps, stop, device=device)  # (M, steps + 1)
    gz = torch.Generator().manual_seed(50_000 + seed0)
    z = (
        torch.randn(len(sn), cfg.n_samples, 64, generator=gz).to(device)
        * sig[:, :1, None]
    )
    scores, samples = [{} for _ in models], [{} for _ in models]
    ema = EnsembleMLP(init, width=cfg.width, depth=cfg.depth).to(device)
    for k in cps:
        ema.load_state_dict(saved[k])
        out = heun_sample(ema.denoise, z, sig)  # (M, n, 64)
        for m, (prep, *_) in enumerate(models):
            scores[m][k] = score(out[m], prep)
            samples[m][k] = out[m, :16].cpu()
    return cps, scores, samples


def run_sizes(cfg, seed: int, sizes, device="cpu") -> dict:
    """The training-set-size sweep of one seed: EDM, the method at ``cfg.sigma_n`` and
    the fully ambient model at ``cfg.sigma_n``, each on training sets of every N in
    ``sizes`` (nested: the first N images of the seed's pool), trained together as one
    ensemble and scored as in :func:`run_seeds`.

    Returns ``{N: run_seeds-like result}`` with samples kept, plus ``"prep"`` ({seed:
    the :func:`prepare_seed` dict at N}). A variant starts from the same weights at
    every N. The batches differ from the main run's, so the run at N = ``cfg.n_train``
    differs from it as another training seed would.
    """
    import dataclasses

    _check_cfg(cfg)
    seed = check_int("seed", seed, 0)
    if not isinstance(sizes, (list, tuple)) or not sizes:
        raise TypeError(f"sizes: expected a non-empty tuple of ints, got {sizes!r}")
    sizes = tuple(check_int("sizes", n, 2) for n in sizes)
    if len(set(sizes)) != len(sizes):
        raise ValueError(f"sizes: expected distinct sizes, got {sizes!r}")
    if max(sizes) > cfg.n_pool // 2:
        raise ValueError(
            f"sizes: expected sizes <= n_pool/2 = {cfg.n_pool // 2}, got {max(sizes)}"
        )
    sweep = dataclasses.replace(
        cfg, sigma_ns=(cfg.sigma_n,), fresh_control=False, fully_ambient=True
    )
    var, preps = variants(sweep), _prepare(sweep, seed, sizes)
    models = []
    for n in sizes:
        g = torch.Generator().manual_seed(30_000 + seed)
        eta = torch.randn(preps[n]["train"].shape, generator=g)  # as run_seeds at N
        models += [(preps[n], eta, v, 100 * seed + j) for j, v in enumerate(var)]
    cps, sc, smp = _train_and_score(sweep, models, seed, device)
    out = {}
    for i, n in enumerate(sizes):
        ms = range(i * len(var), (i + 1) * len(var))
        out[n] = {
            "variants": var,
            "checkpoints": list(cps),
            "scores": {seed: {v[0]: sc[m] for v, m in zip(var, ms)}},
            "samples": {seed: {v[0]: smp[m] for v, m in zip(var, ms)}},
            "train": {seed: preps[n]["train"]},
            "prep": {seed: preps[n]},
        }
    return out


def run_experiment(cfg, device=None) -> dict:
    """The FULL/SMOKE entry point: :func:`run_seeds` on ``cfg.claim_seeds`` and the
    claim statistics, as plain JSON-able numbers."""
    from lib.common import device as pick_device

    from .claims import measure_from_runs

    _check_cfg(cfg)
    device = pick_device() if device is None else device
    runs = run_seeds(cfg, cfg.claim_seeds, device)
    return {
        "scores": {str(s): v for s, v in runs["scores"].items()},
        "claims": measure_from_runs(runs, cfg),
    }
