"""The chapter's experiments: the exact 2-D toy (CD / IC / GC) and a small MNIST run (IC
/ GC)."""

from __future__ import annotations

import dataclasses
import importlib
from typing import TYPE_CHECKING

import numpy as np
import torch

from lib.common import check_bool, check_tensor, device as pick_device, make_generator
from lib.common.claims import seed_list

from .diagnostics import flow_diagnostics
from .images import frechet_distance, mnist_data, train_classifier
from .toy import pf_ode_map, two_gaussians
from .training import Trainer

if TYPE_CHECKING:
    from . import Config

#: the toy's methods: name -> (GC fraction μ, CD?)
TOY_METHODS = {
    "CD": (0.0, True),
    "IC": (0.0, False),
    "GC": (0.5, False),
    "GC μ=1": (1.0, False),
}


def __getattr__(name: str):
    """``Config`` lives in the package's ``__init__`` (house rule); the old path still
    imports it."""
    if name == "Config":
        return importlib.import_module(__package__).Config
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _check_cfg(cfg):
    from . import Config

    if not isinstance(cfg, Config):
        raise TypeError(
            f"cfg: expected a lib.consistency_gc.Config (e.g. SMOKE or FULL), got "
            f"{type(cfg).__name__}"
        )
    return cfg


#: the toy's negative control: GC (μ = 0.5) whose endpoints x̂ come from the frozen,
# untrained initial network instead of the EMA model
CONTROL = "GC untrained"


def toy_seeds(cfg: Config, seeds=None) -> tuple:
    """The toy's seeds: ``seeds`` when given, else cfg.seed, cfg.seed + 1, … (n_seeds
    of them)."""
    _check_cfg(cfg)
    if seeds is None:
        return tuple(cfg.seed + k for k in range(cfg.n_seeds))
    return seed_list(seeds)


def toy_members(cfg: Config, seeds=None, ablation: bool = True):
    """(names, μ, cd, seed) per member: CD, IC, GC and the :data:`CONTROL` per seed,
    then the ablation's GC μ = 1 and the extra widget μ's (first seed only).
    ``ablation=False`` leaves out GC μ = 1 and the widget μ's (what the claims need)."""
    names, mu, cd, seed = [], [], [], []
    seeds = toy_seeds(cfg, seeds)
    check_bool("ablation", ablation)
    methods = [
        *((n, v) for n, v in TOY_METHODS.items() if n != "GC μ=1"),
        (CONTROL, (0.5, False)),
    ]
    for s in seeds:
        for name, (m, c) in methods:
            names.append(name), mu.append(m), cd.append(c), seed.append(s)
        if s == seeds[0] and ablation:
            names.append("GC μ=1"), mu.append(1.0), cd.append(False), seed.append(s)
            for m in cfg.widget_mus:
                names.append(f"μ={m:g}"), mu.append(float(m)), cd.append(False)
                seed.append(s)
    return names, mu, cd, seed


def _stream(seed: int, k: int) -> torch.Generator:
    # seed s uses generators 10 s + k (k = 0 data, 1 test noises, 2 diagnostics): the
    # streams of different seeds never coincide, and a seed's run depends on it alone
    return make_generator(10 * seed + k)


def toy_experiment(
    cfg: Config, device: str | torch.device = "cpu", seeds=None, ablation: bool = True
) -> dict:
    """Train every toy member of every seed side by side in one ensemble; return
    metrics per member, the test noises and exact ODE map of every seed, and the
    widget's frames.

    Seed s draws its data, test noises and diagnostics from its own generators (10 s +
    k) and initialises its members from 1000 s, so its result does not depend on the
    other seeds trained beside it. ``ablation=False``: without GC μ = 1 and the widget
    μ's (see :func:`toy_members`).
    """
    _check_cfg(cfg)
    seeds = toy_seeds(cfg, seeds)
    gmm, tc = two_gaussians(), cfg.toy
    names, mu, cd, seed = toy_members(cfg, seeds, ablation)
    stream = torch.tensor([seeds.index(t) for t in seed])  # (M,) member -> seed index
    trainer = Trainer(
        tc,
        2,
        mu,
        cd,
        stream,
        denoiser=gmm.denoise,
        device=device,
        init_generator=[n == CONTROL for n in names],
        stream_seeds=seeds,
    )
    z_test = torch.stack(
        [torch.randn(cfg.n_test, 2, generator=_stream(s, 1)) for s in seeds]
    )  # (S, N, 2)
    target = pf_ode_map(
        gmm, tc.sigma_max * z_test, tc.sigma_max, tc.sigma_min, cfg.ode_steps
    )  # (S, N, 2)
    frames, steps = [], []

    def on_checkpoint(step, ema):
        steps.append(step)
        frames.append(trainer.one_step(z_test[stream], ema).cpu())  # (M, N, 2)

    gens = [_stream(s, 0) for s in seeds]
    trainer.fit(gmm.sample, gens, on_checkpoint, desc="toy")
    samples = torch.stack(frames)  # (C, M, N, 2)
    ode_err = (samples - target[stream]).norm(dim=-1).mean(-1)  # (C, M) map error
    sample_err = gmm.nearest_mode_distance(samples).mean(-1)  # (C, M)

    # per-σ diagnostics: IC flow (x*), each member's GC flow (x̂ from its own EMA model)
    # and the decoupled flow (x̂ from an independent noise z', the coupling removed)
    draws = []
    for s in seeds:
        g = _stream(s, 2)
        x0 = gmm.sample(cfg.n_diag, g)
        draws.append((x0, *(torch.randn(cfg.n_diag, 2, generator=g) for _ in "zz")))
    x0, z, z2 = (torch.stack(t)[stream].to(device) for t in zip(*draws))  # (M, N, 2)
    diag = {"ic": [], "gc": [], "dec": []}
    den, gen = gmm.denoise, trainer.ema
    for sg in cfg.diag_sigmas:
        diag["ic"].append(flow_diagnostics(x0, z, sg, den))
        diag["gc"].append(flow_diagnostics(x0, z, sg, den, generator_fn=gen))
        diag["dec"].append(
            flow_diagnostics(x0, z, sg, den, generator_fn=gen, generator_z=z2)
        )
    per_sigma = {
        f"{k}_{q}": torch.stack([d[q] for d in v]).cpu()  # (S_σ, M)
        for k, v in diag.items()
        for q in ("transport", "endpoint_error")
    }
    return {
        "names": names,
        "mu": mu,
        "cd": cd,
        "seed": seed,
        "seeds": list(seeds),
        "steps": steps,
        "z_test": z_test,
        "target": target,
        "samples": samples,
        "ode_err": ode_err,
        "sample_err": sample_err,
        "per_sigma": per_sigma,
        "sigmas": list(cfg.diag_sigmas),
        "means": gmm.means,
    }


def by_method(values: torch.Tensor, names: list[str]) -> dict:
    """Average a (..., M) tensor over the members of each method (i.e. over seeds) ->
    name: (...)."""
    check_tensor("values", values, floating=True, nonempty=True)
    if (
        isinstance(names, (str, bytes))
        or not isinstance(names, (list, tuple))
        or not all(isinstance(n, str) for n in names)
    ):
        raise TypeError(
            f"names: expected a list of member names (str), got {type(names).__name__}"
        )
    if values.ndim < 1 or len(names) != values.shape[-1]:
        raise ValueError(
            f"names: expected one name per member (values' last dimension, "
            f"{values.shape[-1] if values.ndim else 0}), got {len(names)}"
        )
    out = {}
    for name in dict.fromkeys(names):
        idx = [i for i, n in enumerate(names) if n == name]
        out[name] = values[..., idx].mean(-1)
    return out


def image_experiment(cfg: Config, device: str | torch.device = "cpu") -> dict:
    """IC vs GC on MNIST at ``cfg.image_size``: one-step Fréchet distances in a
    classifier's features."""
    _check_cfg(cfg)
    try:
        x_train, y_train = mnist_data("train", cfg.image_size)
        x_test, y_test = mnist_data("test", cfg.image_size)
    except FileNotFoundError as err:
        return {"skipped": f"MNIST not available ({err})"}
    # seed s draws from generators 10 s + 5, 6, 7 (classifier, data, test noises):
    # disjoint from every other seed's and from the toy's 10 s + 0, 1, 2
    g = _stream(cfg.seed, 5)
    clf = train_classifier(
        x_train.to(device), y_train.to(device), cfg.classifier_steps, g
    )
    d = x_train.shape[1]

    def sample_data(n, gen):
        return x_train[torch.randint(len(x_train), (n,), generator=gen)]

    # members: IC, GC and the negative control (GC whose x̂ come from the frozen,
    # untrained network), on paired data streams and identical initial weights
    mu = cfg.image_mu
    trainer = Trainer(
        cfg.image,
        d,
        [0.0, mu, mu],
        seed=cfg.seed,
        device=device,
        init_generator=[False, False, True],
    )
    trainer.fit(sample_data, _stream(cfg.seed, 6), desc="mnist")
    z = torch.randn(cfg.n_fd, d, generator=_stream(cfg.seed, 7))
    with torch.no_grad():
        gen = trainer.one_step(z).clamp(-1, 1)  # (3, n_fd, d)
        real = clf.features(x_test[: cfg.n_fd].to(device))
        feats = [clf.features(gen[k]) for k in range(3)]
        acc = (clf(x_test.to(device)).argmax(1) == y_test.to(device)).float().mean()
        ref = clf.features(x_train[: cfg.n_fd].to(device))
    return {
        "fd": {
            name: frechet_distance(f, real)
            for name, f in zip(("IC", "GC", CONTROL), feats)
        },
        "fd_real": frechet_distance(ref, real),
        "classifier_acc": float(acc),
        "samples": gen[:2, :64].cpu(),
    }


def summarise(toy: dict, images: dict) -> dict:
    """The JSON-able main results (same keys at every preset)."""
    if not isinstance(toy, dict) or "names" not in toy:
        raise TypeError(
            f"toy: expected the dict of toy_experiment, got {type(toy).__name__}"
        )
    if not isinstance(images, dict):
        raise TypeError(
            f"images: expected the dict of image_experiment, got "
            f"{type(images).__name__}"
        )
    names = toy["names"]
    last_ode = by_method(toy["ode_err"][-1], names)
    last_sample = by_method(toy["sample_err"][-1], names)
    conv = by_method(toy["ode_err"], names)
    ps = {k: by_method(v, names) for k, v in toy["per_sigma"].items()}
    ic, gc = "IC", "GC"
    out = {
        "toy": {
            "ode_map_error": {k: float(v) for k, v in last_ode.items()},
            "ode_map_error_per_seed": {
                k: toy["ode_err"][-1][
                    [i for i, n in enumerate(names) if n == k]
                ].tolist()
                for k in TOY_METHODS
            },
            "sample_error": {k: float(v) for k, v in last_sample.items()},
            "checkpoints": list(toy["steps"]),
            "convergence": {k: v.tolist() for k, v in conv.items()},
            "sigmas": toy["sigmas"],
            "transport_ic": ps["ic_transport"][ic].tolist(),
            "transport_gc": ps["gc_transport"][gc].tolist(),
            "endpoint_error_ic": ps["ic_endpoint_error"][ic].tolist(),
            "endpoint_error_gc": ps["gc_endpoint_error"][gc].tolist(),
        },
        "images": {k: v for k, v in images.items() if k != "samples"},
    }
    return out


def run_experiment(cfg: Config, device=None) -> dict:
    """Both experiments at a preset on ``device`` (default :func:`lib.common.device`);
    the main results as a JSON-able dict (see :func:`summarise`)."""
    _check_cfg(cfg)
    device = pick_device() if device is None else torch.device(device)
    toy = toy_experiment(cfg, device)
    if not cfg.images:
        return summarise(toy, {"skipped": "images switched off in the config"})
    runs = [
        image_experiment(dataclasses.replace(cfg, seed=cfg.seed + k), device)
        for k in range(cfg.image_seeds)
    ]
    images = {k: v for k, v in runs[0].items()}
    if "skipped" not in images:
        # the first seed's first 36 one-step samples of IC and GC, for the chapter
        images["sample_grid"] = [
            [[round(x, 3) for x in img] for img in member[:36].tolist()]
            for member in runs[0]["samples"]
        ]
        images["fd_per_seed"] = {m: [r["fd"][m] for r in runs] for m in ("IC", "GC")}
        images["image_seeds"] = [cfg.seed + k for k in range(cfg.image_seeds)]
    return summarise(toy, images)


def gc_transport_ratio(results: dict) -> np.ndarray:
    """GC / IC transport cost per σ from :func:`summarise`'s output."""
    if not isinstance(results, dict) or "toy" not in results:
        raise TypeError(
            f"results: expected the dict of summarise / run_experiment, got "
            f"{type(results).__name__}"
        )
    t = results["toy"]
    return np.asarray(t["transport_gc"]) / np.asarray(t["transport_ic"])
