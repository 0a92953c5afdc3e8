"""The paper's claims as rules that can fail, measured on several seeds with a negative
control each.

Every seed trains its own network (:func:`.experiment.run_seed`); every method's setting
is chosen on validation data only (:mod:`.selection`), never on the test OOD sets. The
comparisons are paired: on each seed, the difference between two detectors' mean test
AUROC (percentage points, averaged over the test OOD sets) on the same network and the
same images.

How the settings were chosen. The grids of :mod:`.selection` were fixed on tuning seed 0
by looking at *validation* AUROC only (ReAct's and DICE's grids were widened because the
first grids' best values lay on their edges); they are the same after the change of the
solver below. The rules were written before the notebook and held-out seeds were run
and are not changed by it: "beats" means a paired mean difference >= 0 (the verdict rule
then asks for the whole 95 % interval above 0 and 80 % of seeds); the shape claims
compare a slope ratio with 1, the identity's value. Earlier versions of the chapter
looked at seeds 0-2, including their test sets (:data:`TUNING_SEEDS`).

Provenance of :data:`EXPECT`. The solver changed after an outside review: the flow now
keeps the scale of g fixed (``Config.g_scale = "fixed"``) instead of letting g collapse
to a constant and rescaling it afterwards. Every value earlier versions of EXPECT were
based on came from the collapsing solver, so EXPECT was set again before the notebook
seeds (10-14) and the held-out seeds (1000-1007) were run with the new solver. What had
been seen with it by then: the shape statistics and the KL+IB test AUROC of single
settings (not the selection) on the network of notebook seed 10 (a diagnostic and the
exercises). From those: the tail assumption stretches the top instead of clipping
(``clip``: not reproduced), the bottom is pruned with or without the tail (``prune``:
partly, its control holds), KL+IB at β = 2 scores below energy (``kl-ib-vs-energy``
and ``kl-ib-best``: not reproduced); ``shaping-helps`` does not involve the solver and
keeps its earlier expectation.
"""

from __future__ import annotations

import torch

from lib.common import check_tensor
from lib.common.claims import Claim, Rule, judge_all, mean_values, seed_list

from . import scores as S

#: seeds the chapter's settings were looked at on
TUNING_SEEDS = (0, 1, 2)
#: seeds the notebook evaluates (held-out: lib.common.claims.HELDOUT_SEEDS, via
# make claims)
NOTEBOOK_SEEDS = (10, 11, 12, 13, 14)

#: the verdict the chapter records and asserts for each claim, set before the notebook
# and held-out seeds were run with the fixed-scale solver (see the module docstring);
# the ledger's verdict is the weaker of the notebook's and the held-out seeds' verdicts
EXPECT = {
    "shaping-helps": "partly reproduced",
    "kl-ib-vs-energy": "not reproduced",
    "kl-ib-best": "not reproduced",
    "clip": "not reproduced",
    "prune": "partly reproduced",
}

CLAIMS = (
    Claim(
        "shaping-helps",
        "the hand-designed shaping rule chosen on validation data beats plain energy "
        "on the test OOD sets",
        paper="ReAct, ASH, VRA, OptFS above energy on every benchmark",
        where="Zhao et al.'s tables, reused by the paper",
        statistic="mean test AUROC, chosen rule − energy (points)",
        rule=Rule.at_least(0.0),
        control="MaxLogit (no shaping) in the rule's place",
        expect=EXPECT["shaping-helps"],
        fmt=".2f",
    ),
    Claim(
        "kl-ib-vs-energy",
        "the KL+IB shaping (assumption, family and β chosen on validation data) beats "
        "plain energy",
        paper="the new shaping improves on energy",
        where="abstract; experiments",
        statistic="mean test AUROC, KL+IB − energy (points)",
        rule=Rule.at_least(0.0),
        control="KL+IB with no OOD assumption (p_OOD = p_ID), same family and β",
        expect=EXPECT["kl-ib-vs-energy"],
        fmt=".2f",
    ),
    Claim(
        "kl-ib-best",
        "the KL+IB shaping beats the best hand-designed rule (the rule with the best "
        "validation AUROC)",
        paper="the new shaping is best on average",
        where="abstract; experiments (ImageNet-1k, CIFAR)",
        statistic="mean test AUROC, KL+IB − chosen rule (points)",
        rule=Rule.at_least(0.0),
        control="energy in KL+IB's place",
        expect=EXPECT["kl-ib-best"],
        fmt=".2f",
    ),
    Claim(
        "clip",
        "rare large OOD activations (the +tail assumption) give a clipping shape: g "
        "flattens above the ID bulk",
        paper="an OOD tail recovers ReAct-like clipping",
        where="abstract (recovering existing shaping functions)",
        statistic="slope of g* on [q90, q99] / slope on [q10, q90] of active ID "
        "activations (weaker+tail, non-decreasing g, β = 2, scale of g fixed)",
        rule=Rule.at_most(1.0),
        control="the same solve without the tail (weaker)",
        expect=EXPECT["clip"],
        fmt=".2f",
    ),
    Claim(
        "prune",
        "uniformly weaker OOD activations give a pruning shape: g flattens the low "
        "activations",
        paper="weaker OOD activations recover ASH-like pruning",
        where="abstract (recovering existing shaping functions)",
        statistic="slope of g* on [0, q50] / slope on [q50, q99] of active ID "
        "activations (weaker, non-decreasing g, β = 2, scale of g fixed)",
        rule=Rule.at_most(1.0),
        control="the same solve with a rare-spike tail added (weaker+tail)",
        expect=EXPECT["prune"],
        fmt=".2f",
    ),
)


def _slope(knots, g, a: float, b: float) -> float:
    x = torch.tensor([a, b], dtype=knots.dtype, device=knots.device)
    y = S.interp(x, knots, g)
    return float((y[1] - y[0]) / (b - a))


def slope_ratios(h_fit, knots, g) -> dict:
    """The shape statistics of the ``clip`` and ``prune`` claims for one shaping g:
    ``top`` = slope on [q90, q99] / slope on [q10, q90], ``bottom`` = slope on [0, q50]
    / slope on [q50, q99], q the quantiles of the active (> 0) ID activations."""
    check_tensor("h_fit", h_fit, ndim=2, floating=True, nonempty=True, finite=True)
    check_tensor("knots", knots, ndim=1, floating=True, finite=True)
    if knots.shape[0] < 2 or not bool((knots[1:] > knots[:-1]).all()):
        raise ValueError(
            f"knots: expected at least 2 strictly increasing knots, got shape "
            f"{tuple(knots.shape)} or an unsorted tensor"
        )
    check_tensor("g", g, shape=(knots.shape[0],), floating=True, finite=True)
    x = h_fit.flatten()
    x = x[x > 0]
    if x.numel() == 0:
        raise ValueError("h_fit: expected some active (> 0) activations, got none")
    if x.numel() > 2**24:
        x = x[:: x.numel() // 2**24 + 1]
    q = torch.quantile(
        x.double(), torch.tensor([0.1, 0.5, 0.9, 0.99], dtype=torch.float64)
    ).tolist()
    k, v = knots.double().cpu(), g.double().cpu()
    mid = _slope(k, v, q[0], q[2])
    return {
        "top": _slope(k, v, q[2], q[3]) / mid,
        "bottom": _slope(k, v, 0.0, q[1]) / _slope(k, v, q[1], q[3]),
    }


def claims_from_runs(cfg, runs) -> dict:
    """Per-seed values of each claim's statistic and of its negative control, from the
    :class:`.experiment.SeedRun` of each seed (``{id: {"values", "control"}}``)."""
    from lib.common import make_generator

    from .experiment import SeedRun, _check_cfg, best_on_validation, kl_ib_shaping
    from .experiment import metrics

    _check_cfg(cfg)
    if (
        isinstance(runs, (str, bytes))
        or not isinstance(runs, (list, tuple))
        or not all(isinstance(r, SeedRun) for r in runs)
    ):
        raise TypeError(f"runs: expected a non-empty list of SeedRun, got {runs!r:.80}")
    if not runs:
        raise ValueError("runs: expected a non-empty list of SeedRun, got an empty one")
    out = {c.id: {"values": {}, "control": {}} for c in CLAIMS}
    for r in runs:
        avg = {m: 100 * v["average"][0] for m, v in metrics(r).items()}
        best = best_on_validation(r)
        s = r.seed
        out["shaping-helps"]["values"][s] = avg[best] - avg["energy"]
        out["shaping-helps"]["control"][s] = avg["max_logit"] - avg["energy"]
        out["kl-ib-vs-energy"]["values"][s] = avg["kl_ib"] - avg["energy"]
        out["kl-ib-vs-energy"]["control"][s] = avg["kl_ib_same"] - avg["energy"]
        out["kl-ib-best"]["values"][s] = avg["kl_ib"] - avg[best]
        out["kl-ib-best"]["control"][s] = avg["energy"] - avg[best]
        shapes = {
            a: slope_ratios(
                r.h_fit,
                *kl_ib_shaping(cfg, r.h_fit, make_generator(s), a, 2.0),
            )
            for a in ("weaker", "weaker+tail")
        }
        out["clip"]["values"][s] = shapes["weaker+tail"]["top"]
        out["clip"]["control"][s] = shapes["weaker"]["top"]
        out["prune"]["values"][s] = shapes["weaker"]["bottom"]
        out["prune"]["control"][s] = shapes["weaker+tail"]["bottom"]
    return out


def measure_claims(cfg, seeds, device="cpu") -> dict:
    """Train one network per seed, choose settings on validation data, score the test
    sets, and return :func:`claims_from_runs` (plain floats)."""
    from .experiment import _check_cfg, run_seeds

    _check_cfg(cfg)
    return claims_from_runs(cfg, run_seeds(cfg, device, seed_list(seeds)))


def judge(measured: dict) -> list:
    """:func:`lib.common.claims.evaluate` for every claim of the chapter."""
    return judge_all(CLAIMS, measured)


def full_values(measured: dict | None) -> dict | None:
    """Mean over seeds of each claim's statistic (the "ours FULL" column)."""
    return mean_values(measured)
