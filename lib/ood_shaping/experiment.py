"""The chapter's experiment: MNIST classifier, penultimate features, every detector,
FPR95/AUROC."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import torch
import torch.nn as nn

from lib.common import (
    check_choice,
    check_generator,
    check_int,
    check_nonnegative,
    check_tensor,
    device as pick_device,
    fit_classifier,
    load_mnist,
    make_generator,
    seeded_init,
)
from . import scores as S
from .data import OOD_SETS, load_fashion_mnist, ood_sets, validation_sets
from .variational import (
    histogram,
    make_grid,
    ood_law_samples,
    orient_and_scale,
    solve_shaping,
)

#: detectors in table order; the first is the paper's (our KL+IB solution)
METHODS = (
    "kl_ib",
    "msp",
    "max_logit",
    "energy",
    "react",
    "ash_p",
    "ash_s",
    "dice",
    "vra_p",
    "optfs",
)
#: the hand-designed shaping rules (the comparison the paper's claim is about)
SHAPING = ("react", "ash_p", "ash_s", "dice", "vra_p", "optfs")
_MEAN, _STD = 0.1307, 0.3081  # MNIST pixel statistics for input normalisation


class Net(nn.Module):
    """A small classifier whose penultimate layer (after ReLU) gives the features h (N,
    D)."""

    def __init__(self, arch: str = "mlp", width: int = 256):
        super().__init__()
        check_int("width", width, 1)
        if arch == "mlp":
            self.body = nn.Sequential(
                nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, width), nn.ReLU()
            )
        elif arch == "cnn":
            self.body = nn.Sequential(
                nn.Unflatten(1, (1, 28, 28)),
                nn.Conv2d(1, 32, 3, padding=1),
                nn.ReLU(),
                nn.MaxPool2d(2),
                nn.Conv2d(32, 64, 3, padding=1),
                nn.ReLU(),
                nn.MaxPool2d(2),
                nn.Flatten(),
                nn.Linear(64 * 7 * 7, width),
                nn.ReLU(),
            )
        else:
            raise ValueError(f"arch: expected 'mlp' or 'cnn', got {arch!r}")
        self.fc = nn.Linear(width, 10)

    def features(self, x):
        return self.body((x - _MEAN) / _STD)  # (N, 784) -> (N, D)

    def forward(self, x):
        return self.fc(self.features(x))  # (N, 10)


def _check_cfg(cfg):
    from . import Config

    if not isinstance(cfg, Config):
        raise TypeError(
            f"cfg: expected a lib.ood_shaping.Config (e.g. SMOKE or FULL), got "
            f"{type(cfg).__name__}"
        )
    return cfg


def _check_inputs(x) -> None:
    """(N, 784) images, N >= 1, finite."""
    check_tensor("x", x, shape=(None, 784), floating=True, nonempty=True, finite=True)


def train_net(cfg, seed: int, x: torch.Tensor, y: torch.Tensor, device) -> Net:
    """Adam on cross-entropy; initialisation and batch order from ``seed`` (the global
    random state is untouched)."""
    _check_cfg(cfg)
    check_int("seed", seed, 0)
    _check_inputs(x)
    check_tensor("y", y, shape=(x.shape[0],), integer=True)
    if not bool(((y >= 0) & (y < 10)).all()):
        raise ValueError("y: expected digit labels in [0, 10), got values outside")
    net = seeded_init(lambda: Net(cfg.arch, cfg.width), seed).to(device)
    fit_classifier(
        net,
        x,
        y,
        generator=make_generator(seed),
        epochs=cfg.epochs,
        batch_size=cfg.batch,
        lr=cfg.lr,
        device=device,
    )
    return net


@torch.no_grad()
def features(net: Net, x: torch.Tensor, batch: int = 4096) -> torch.Tensor:
    """Penultimate features of ``x`` in batches; (N, D)."""
    if not isinstance(net, Net):
        raise TypeError(f"net: expected a Net, got {type(net).__name__}")
    _check_inputs(x)
    check_int("batch", batch, 1)
    return torch.cat(
        [net.features(x[i : i + batch]) for i in range(0, x.shape[0], batch)]
    )


@dataclass
class SeedRun:
    """Everything one seed produces: the head, features, the settings chosen on
    validation data, the fitted detectors and their scores on the test sets."""

    seed: int
    W: torch.Tensor
    b: torch.Tensor
    h_fit: torch.Tensor  # ID training features used to fit detectors (N_fit, D)
    h_id: torch.Tensor  # ID test features (N, D)
    h_ood: dict  # test set name -> OOD features (N_i, D)
    accuracy: float
    chosen: dict  # method -> setting chosen on validation data
    fitted: dict  # method -> what it fitted at that setting
    validation: dict  # method -> {setting: mean validation AUROC}
    scores: dict  # method -> {"id": (N,), set: (N_i,)}
    notes: list
    h_val_id: torch.Tensor | None = None  # ID validation features
    h_val_ood: dict | None = None  # validation OOD features


def fit_detectors(cfg, W, b, h_fit, generator: torch.Generator) -> dict:
    """Thresholds, masks, bins and the KL+IB shaping, from ID training features only."""
    _check_cfg(cfg)
    S._check_head(h_fit, W, b, "h_fit")
    check_generator("generator", generator, allow_none=False)
    p = {
        "react_c": S.percentile_value(h_fit, cfg.react_p),
        "vra_x1": S.percentile_value(h_fit, cfg.vra_p[0]),
        "vra_x2": S.percentile_value(h_fit, cfg.vra_p[1]),
        "dice_mask": S.dice_mask(h_fit, W, cfg.dice_p),
        "optfs": S.optfs_fit(h_fit, W, b, cfg.optfs_bins),
        "ash_p": cfg.ash_p,
    }
    p["kl_ib"] = kl_ib_shaping(cfg, h_fit, generator, cfg.assumption, cfg.beta)
    return p


def kl_ib_shaping(
    cfg,
    h_fit,
    generator,
    assumption: str,
    beta: float,
    x_surrogate=None,
    family: str = "monotone",
):
    """Solve eq. 2 for one OOD-law assumption over one family of shapings (see
    :func:`solve_shaping`; the scale of g is handled as ``cfg.g_scale`` says); returns
    (knots, g) on the device of ``h_fit``."""
    _check_cfg(cfg)
    check_tensor("h_fit", h_fit, ndim=2, floating=True, nonempty=True)
    if not bool(((h_fit >= 0) & torch.isfinite(h_fit)).all()):
        raise ValueError(
            "h_fit: expected finite activations >= 0 (after ReLU), got NaN, inf or a "
            "negative value"
        )
    check_generator("generator", generator, allow_none=False)
    check_nonnegative("beta", beta)
    grid, p_id, p_ood = _kl_ib_problem(cfg, h_fit, generator, assumption, x_surrogate)
    g, _ = solve_shaping(
        p_id,
        p_ood,
        grid,
        beta=beta,
        sigma=cfg.sigma,
        steps=cfg.steps,
        n_z=cfg.n_z,
        family=family,
        scale=cfg.g_scale,
    )
    g = orient_and_scale(g, p_id, p_ood, grid.knots)
    return grid.knots.to(h_fit), g.to(h_fit)


def _kl_ib_problem(cfg, h_fit, generator, assumption: str, x_surrogate=None):
    """The discretised problem :func:`kl_ib_shaping` solves: (grid, p_ID, p_OOD) from
    at most cfg.n_activations ID activations and the assumed OOD law (inputs checked by
    the caller)."""
    x = h_fit.flatten().double().cpu()
    if x.numel() > cfg.n_activations:
        x = x[torch.randperm(x.numel(), generator=generator)[: cfg.n_activations]]
    x_ood = ood_law_samples(
        x,
        assumption,
        cfg.strength,
        generator=generator,
        x_surrogate=None if x_surrogate is None else x_surrogate.double().cpu(),
    )
    x_max = float(torch.quantile(x[x > 0], 0.999)) if bool((x > 0).any()) else 1.0
    grid = make_grid(x_max, cfg.n_bins)
    return grid, histogram(x, grid), histogram(x_ood, grid)


def score_all(h, W, b, p: dict) -> dict:
    """Every method's score on features ``h``; method -> (N,)."""
    need = ("optfs", "kl_ib", "react_c", "ash_p", "dice_mask", "vra_x1", "vra_x2")
    if not isinstance(p, dict) or any(k not in p for k in need):
        raise TypeError(
            f"p: expected the dict of fit_detectors (keys {need}), got "
            f"{type(p).__name__}"
        )
    left, width, theta = p["optfs"]
    return {
        "kl_ib": S.shaped_energy(h, W, b, *p["kl_ib"]),
        "msp": S.msp(h, W, b),
        "max_logit": S.max_logit(h, W, b),
        "energy": S.energy(h, W, b),
        "react": S.react(h, W, b, p["react_c"]),
        "ash_p": S.ash_p(h, W, b, p["ash_p"]),
        "ash_s": S.ash_s(h, W, b, p["ash_p"]),
        "dice": S.dice(h, W, b, p["dice_mask"]),
        "vra_p": S.vra_p(h, W, b, p["vra_x1"], p["vra_x2"]),
        "optfs": S.optfs(h, W, b, left, width, theta),
    }


def run_seed(cfg, seed: int, device, data=None) -> SeedRun:
    """Train one network, extract features, choose every method's setting on validation
    data (:func:`lib.ood_shaping.selection.select`), and score the test sets."""
    from . import selection as SEL

    _check_cfg(cfg)
    check_int("seed", seed, 0)
    if data is not None and (
        not isinstance(data, dict)
        or any(k not in data for k in ("train", "valid", "test", "fashion"))
    ):
        raise TypeError(
            f"data: expected the dict of load_data, got {type(data).__name__}"
        )
    data = data or load_data(cfg)
    gen = make_generator(seed)
    x_tr, y_tr = (t.to(device) for t in data["train"])
    net = train_net(cfg, seed, x_tr, y_tr, device)
    fit_idx = torch.randperm(x_tr.shape[0], generator=gen)[: cfg.n_fit].to(device)
    h_fit = features(net, x_tr[fit_idx])
    x_te, y_te = data["test"]
    te_idx = torch.randperm(x_te.shape[0], generator=gen)[: cfg.n_test]
    x_te, y_te = x_te[te_idx].to(device), y_te[te_idx].to(device)
    sets, notes = ood_sets(cfg.n_ood, gen, data["test"][0], data["fashion"])
    x_va = data["valid"][0]
    va_idx = torch.randperm(x_va.shape[0], generator=gen)[: cfg.n_val]
    val_sets = validation_sets(cfg.n_val, gen, x_va)
    h_id = features(net, x_te)
    h_ood = {k: features(net, v.to(device)) for k, v in sets.items()}
    h_val_id = features(net, x_va[va_idx].to(device))
    h_val = {k: features(net, v.to(device)) for k, v in val_sets.items()}
    W, b = net.fc.weight.detach(), net.fc.bias.detach()
    acc = float((S.logits(h_id, W, b).argmax(1) == y_te).float().mean())
    chosen, fitted, validation = {}, {}, {}
    for m in SEL.NO_SETTING:
        fitted[m] = None
        validation[m] = {
            None: SEL.mean_auroc(SEL.score_method, None, h_val_id, h_val, W, b, m)
        }
    for m in SEL.GRIDS:
        chosen[m], fitted[m], validation[m] = SEL.select(
            cfg, m, W, b, h_fit, h_val_id, h_val, gen
        )
    # the negative control: KL+IB at the chosen family and β, with no OOD assumption
    _, family, beta = chosen["kl_ib"]
    fitted["kl_ib_same"] = SEL.fit_setting(
        cfg, "kl_ib", ("same", family, beta), W, b, h_fit, gen
    )
    sc = {}
    for m, f in fitted.items():
        kind = "kl_ib" if m == "kl_ib_same" else m
        sc[m] = {"id": SEL.score_method(kind, f, h_id, W, b)}
        for name, h in h_ood.items():
            sc[m][name] = SEL.score_method(kind, f, h, W, b)
    return SeedRun(
        seed,
        W,
        b,
        h_fit,
        h_id,
        h_ood,
        acc,
        chosen,
        fitted,
        validation,
        sc,
        notes,
        h_val_id,
        h_val,
    )


def load_data(cfg) -> dict:
    """MNIST train/valid/test and Fashion-MNIST test on the CPU (Fashion-MNIST ``None``
    when absent)."""
    _check_cfg(cfg)
    x, y = load_mnist("train")
    try:
        fashion = load_fashion_mnist("test")[0]
    except FileNotFoundError:
        fashion = None
    return {
        "train": (x[: cfg.n_train], y[: cfg.n_train]),
        "valid": load_mnist("valid"),
        "test": load_mnist("test"),
        "fashion": fashion,
    }


def best_on_validation(run: SeedRun, methods=SHAPING) -> str:
    """The method among ``methods`` whose chosen setting has the highest validation
    AUROC (the rule a practitioner would deploy without seeing test OOD data)."""
    if not isinstance(run, SeedRun):
        raise TypeError(f"run: expected a SeedRun, got {type(run).__name__}")
    if isinstance(methods, (str, bytes)) or not isinstance(methods, (list, tuple)):
        raise TypeError(
            f"methods: expected a list or tuple of method names, got "
            f"{type(methods).__name__} ({methods!r:.80})"
        )
    if not methods:
        raise ValueError("methods: expected at least one method name, got none")
    for i, m in enumerate(methods):
        check_choice(f"methods[{i}]", m, tuple(run.validation))
    return max(methods, key=lambda m: max(run.validation[m].values()))


def metrics(run: SeedRun) -> dict:
    """method -> set -> (AUROC, FPR95) for one seed, plus the average over sets."""
    if not isinstance(run, SeedRun):
        raise TypeError(f"run: expected a SeedRun, got {type(run).__name__}")
    out = {}
    for m, sc in run.scores.items():
        per = {
            k: (S.auroc(sc["id"], v), S.fpr_at_95_tpr(sc["id"], v))
            for k, v in sc.items()
            if k != "id"
        }
        per["average"] = tuple(
            sum(v[i] for v in per.values()) / len(per) for i in range(2)
        )
        out[m] = per
    return out


def run_seeds(cfg, device, seeds=None) -> list:
    """One :class:`SeedRun` per seed: ``seeds``, or cfg.seed, cfg.seed + 1, ...
    (cfg.n_seeds of them)."""
    from lib.common.claims import seed_list

    _check_cfg(cfg)
    seeds = (
        [cfg.seed + i for i in range(cfg.n_seeds)]
        if seeds is None
        else seed_list(seeds)
    )
    data = load_data(cfg)
    return [run_seed(cfg, s, device, data) for s in seeds]


def summarise(runs: list) -> dict:
    """The main results table: per method and set, mean and std over seeds of AUROC and
    FPR95 (%)."""
    if (
        isinstance(runs, (str, bytes))
        or not isinstance(runs, (list, tuple))
        or not runs
        or not all(isinstance(r, SeedRun) for r in runs)
    ):
        raise TypeError(f"runs: expected a non-empty list of SeedRun, got {runs!r:.80}")
    per_seed = [metrics(r) for r in runs]
    sets = [k for k in per_seed[0]["energy"]]
    table = {}
    for m in METHODS:
        table[m] = {}
        for s in sets:
            a = torch.tensor([100 * p[m][s][0] for p in per_seed], dtype=torch.float64)
            f = torch.tensor([100 * p[m][s][1] for p in per_seed], dtype=torch.float64)
            sd = lambda t: float(t.std()) if t.numel() > 1 else 0.0
            table[m][s] = {
                "auroc": float(a.mean()),
                "auroc_std": sd(a),
                "fpr95": float(f.mean()),
                "fpr95_std": sd(f),
            }
    return {
        "sets": sets,
        "methods": list(METHODS),
        "table": table,
        "accuracy": [r.accuracy for r in runs],
        "best_on_validation": [best_on_validation(r) for r in runs],
        "chosen": [{m: r.chosen[m] for m in r.chosen} for r in runs],
        "notes": sorted({n for r in runs for n in r.notes}),
        "seeds": [r.seed for r in runs],
        "per_seed_average_auroc": {
            m: [100 * p[m]["average"][0] for p in per_seed] for m in per_seed[0]
        },
        "per_seed_average_fpr95": {
            m: [100 * p[m]["average"][1] for p in per_seed] for m in per_seed[0]
        },
    }


def run_experiment(cfg, device=None) -> dict:
    """The chapter's main results (same keys at every preset), on ``device`` (default
    :func:`lib.common.device`)."""
    _check_cfg(cfg)
    device = pick_device() if device is None else torch.device(device)
    return summarise(run_seeds(cfg, device))
