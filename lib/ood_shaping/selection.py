"""One procedure chooses every method's setting, on validation data only.

Each method with a setting gets the same budget: :data:`BUDGET` candidate settings,
listed in :data:`GRIDS`. Every candidate is fitted from ID *training* features exactly
as the method prescribes (thresholds as ID percentiles, DICE's mask, OptFS's bins, the
KL+IB solution), then scored on ID *validation* images (MNIST's validation split, never
used for training or testing) against the validation OOD sets (:data:`.data.VAL_SETS`,
synthetic and disjoint in kind from the test sets). The candidate with the highest mean
validation AUROC wins (ties: the first in the grid). The test OOD sets are never looked
at. Methods without a setting (MSP, MaxLogit, Energy) are scored as they are.

The grids span each method's usual range: ReAct's percentile (the paper uses 90), ASH's
pruning percentage (65–90 in its paper), DICE's sparsity (70–90), VRA-P's two
percentiles, OptFS's number of bins (100 in its code), and for the KL+IB shaping the
OOD-law assumption, the family of g (non-decreasing, or free to turn down) and the
bottleneck weight β.
"""

from __future__ import annotations

import torch

from lib.common import (
    check_choice,
    check_generator,
    check_int,
    check_nonnegative,
    check_numbers,
    check_range,
)

from . import scores as S
from .variational import ASSUMPTIONS, FAMILIES

#: candidate settings per method (the same number for every method with a setting)
GRIDS = {
    "react": (50.0, 60.0, 70.0, 80.0, 85.0, 90.0, 95.0, 99.0),
    "ash_p": (40.0, 50.0, 60.0, 65.0, 70.0, 80.0, 85.0, 90.0),
    "ash_s": (40.0, 50.0, 60.0, 65.0, 70.0, 80.0, 85.0, 90.0),
    "dice": (0.0, 10.0, 20.0, 30.0, 50.0, 70.0, 80.0, 90.0),
    "vra_p": (
        (30.0, 90.0),
        (40.0, 95.0),
        (50.0, 90.0),
        (50.0, 95.0),
        (50.0, 99.0),
        (60.0, 95.0),
        (60.0, 99.0),
        (70.0, 99.0),
    ),
    "optfs": (10, 20, 30, 50, 70, 100, 150, 200),
    # (OOD-law assumption, family of g, β)
    "kl_ib": (
        ("weaker+tail", "monotone", 0.5),
        ("weaker+tail", "monotone", 2.0),
        ("floor+tail", "monotone", 0.5),
        ("floor+tail", "monotone", 2.0),
        ("weaker+tail", "free", 0.5),
        ("weaker+tail", "free", 2.0),
        ("floor+tail", "free", 0.5),
        ("floor+tail", "free", 2.0),
    ),
}
#: candidates per method
BUDGET = 8
assert all(len(v) == BUDGET for v in GRIDS.values())
#: the methods scored without a setting
NO_SETTING = ("msp", "max_logit", "energy")


def _check_setting(method: str, setting) -> None:
    """``setting`` is one candidate of ``method`` (the kind of value :data:`GRIDS`
    lists)."""
    if method in ("react", "ash_p", "ash_s", "dice"):
        check_range("setting", setting, 0, 100)
    elif method == "vra_p":
        q = check_numbers("setting", setting, lambda n, v: check_range(n, v, 0, 100))
        if len(q) != 2 or not q[0] < q[1]:
            raise ValueError(
                f"setting: expected two percentiles q1 < q2 for vra_p, got {setting!r}"
            )
    elif method == "optfs":
        check_int("setting", setting, 1)
    else:  # kl_ib: (OOD-law assumption, family of g, β)
        if (
            isinstance(setting, (str, bytes))
            or not isinstance(setting, (list, tuple))
            or len(setting) != 3
        ):
            raise TypeError(
                f"setting: expected (assumption, family, beta) for kl_ib, got "
                f"{type(setting).__name__} ({setting!r:.80})"
            )
        check_choice("setting[0]", setting[0], ASSUMPTIONS)
        check_choice("setting[1]", setting[1], FAMILIES)
        check_nonnegative("setting[2]", setting[2])


def _check_fit_inputs(cfg, method, W, b, h_fit, generator) -> None:
    """The inputs :func:`fit_setting` and :func:`select` share."""
    from .experiment import _check_cfg

    _check_cfg(cfg)
    check_choice("method", method, tuple(GRIDS))
    S._check_head(h_fit, W, b, "h_fit")
    check_generator("generator", generator, allow_none=False)


def fit_setting(
    cfg, method: str, setting, W, b, h_fit, generator, pct: dict | None = None
) -> dict:
    """What ``method`` fits from ID training features ``h_fit`` at one ``setting``.

    ``pct`` optionally holds precomputed ID percentiles {p: value} (one sort for a whole
    grid)."""
    from .experiment import kl_ib_shaping

    if method not in GRIDS:
        raise ValueError(f"method: expected one of {tuple(GRIDS)}, got {method!r}")
    _check_fit_inputs(cfg, method, W, b, h_fit, generator)
    _check_setting(method, setting)
    if pct is not None and not isinstance(pct, dict):
        raise TypeError(
            f"pct: expected a dict percentile -> value or None, got "
            f"{type(pct).__name__}"
        )
    pct = pct or {}

    def percentile(q):
        return pct[q] if q in pct else S.percentile_value(h_fit, q)

    if method == "react":
        return {"c": percentile(setting)}
    if method in ("ash_p", "ash_s"):
        return {"p": float(setting)}
    if method == "dice":
        return {"mask": S.dice_mask(h_fit, W, setting)}
    if method == "vra_p":
        x1, x2 = (percentile(q) for q in setting)
        return {"x1": x1, "x2": x2}
    if method == "optfs":
        return {"bins": S.optfs_fit(h_fit, W, b, int(setting))}
    assumption, family, beta = setting
    kn, g = kl_ib_shaping(cfg, h_fit, generator, assumption, beta, family=family)
    return {"knots": kn, "g": g}


def score_method(method: str, fitted: dict | None, h, W, b) -> torch.Tensor:
    """The score of ``method`` (fitted by :func:`fit_setting`; ``None`` for the methods
    without a setting) on features ``h``; (N,), higher = more ID."""
    if method == "msp":
        return S.msp(h, W, b)
    if method == "max_logit":
        return S.max_logit(h, W, b)
    if method == "energy":
        return S.energy(h, W, b)
    if not isinstance(fitted, dict):
        raise TypeError(
            f"fitted: expected the dict of fit_setting for {method!r}, got "
            f"{type(fitted).__name__}"
        )
    if method == "react":
        return S.react(h, W, b, fitted["c"])
    if method == "ash_p":
        return S.ash_p(h, W, b, fitted["p"])
    if method == "ash_s":
        return S.ash_s(h, W, b, fitted["p"])
    if method == "dice":
        return S.dice(h, W, b, fitted["mask"])
    if method == "vra_p":
        return S.vra_p(h, W, b, fitted["x1"], fitted["x2"])
    if method == "optfs":
        return S.optfs(h, W, b, *fitted["bins"])
    if method == "kl_ib":
        return S.shaped_energy(h, W, b, fitted["knots"], fitted["g"])
    raise ValueError(f"method: expected a detector name, got {method!r}")


def mean_auroc(score, fitted, h_id, h_ood: dict, W, b, method: str) -> float:
    """Mean AUROC (ID positive) of one fitted method over the OOD sets ``h_ood``."""
    s_id = score(method, fitted, h_id, W, b)
    vals = [S.auroc(s_id, score(method, fitted, h, W, b)) for h in h_ood.values()]
    return sum(vals) / len(vals)


def select(cfg, method: str, W, b, h_fit, h_val_id, h_val_ood: dict, generator):
    """Fit every candidate of ``method`` and keep the one with the best mean validation
    AUROC. Returns ``(setting, fitted, {setting: validation AUROC})``."""
    _check_fit_inputs(cfg, method, W, b, h_fit, generator)
    S._check_head(h_val_id, W, b, "h_val_id")
    if not isinstance(h_val_ood, dict) or not h_val_ood:
        raise TypeError(
            f"h_val_ood: expected a non-empty dict name -> features, got "
            f"{type(h_val_ood).__name__}"
        )
    for name, h in h_val_ood.items():
        S._check_head(h, W, b, f"h_val_ood[{name!r}]")
    best, table = None, {}
    pct = None
    if method in ("react", "vra_p"):
        qs = sorted(
            {q for s in GRIDS[method] for q in (s if method == "vra_p" else [s])}
        )
        pct = dict(zip(qs, S.percentile_values(h_fit, qs)))
    for setting in GRIDS[method]:
        fitted = fit_setting(cfg, method, setting, W, b, h_fit, generator, pct)
        a = mean_auroc(score_method, fitted, h_val_id, h_val_ood, W, b, method)
        table[setting] = a
        if best is None or a > best[2]:
            best = (setting, fitted, a)
    return best[0], best[1], table
