"""The paper's claims as rules that can fail, measured on several seeds with a negative
control each.

Each seed draws its own training set (data seed 10 000 + seed) and initialises its
own networks; the statistic is KL(target ‖ model), by quadrature on the grid, of the
small Moser Flow minus that of the small EGF, both 3×32 MLPs on the same periodic
features, trained with the same loss (KL-weakFM is Moser Flow's loss with f̂ in place
of 1 − div u), the same steps, batch and penalty.

How the settings were chosen: the width, depth, penalty b = 10 and ε were fixed from
the paper's toy (3×32 MLP) and the notes before any run; the grid (128²) by the CPU
budget. The learning rate of each model (small EGF, small Moser, large Moser) was
picked from {1e-3, 3e-3, 1e-2, 3e-2, 1e-1, 3e-1} by the mean validation NLL (held-out
target samples, not the grid KL) over both targets on :data:`TUNING_SEEDS`, the same
four runs per rate for every model (:func:`lib.egf.experiment.tune_lr`). Mean
validation NLL from 1e-3 to 3e-1: EGF −0.344 −0.419 −0.459 −0.502 −0.499 0.000;
Moser 3×32 −0.184 −0.360 −0.461 −0.508 −0.525 −0.261; Moser 3×128 −0.344 −0.452
−0.476 −0.469 −0.082 −0.432. So the EGF uses 3e-2, Moser 3×32 1e-1 and Moser 3×128
1e-2, each inside the grid (a first grid that stopped at 1e-2 had put all three at
its edge). The controls use the EGF's rate. Steps: 400, the CPU budget; on the tuning
seeds doubling them to 800 moved the checkerboard statistic from −0.05 to −0.13 and
the mixture's from −0.00 to −0.02, less than the 0.1 margin and against the claim
in both cases, so longer training is unlikely to turn the verdicts. The rule's margin
(0.1 nats) was fixed before the tuned runs, after one untuned run on tuning seed 0
(rate 3e-3, 150 steps: EGF 0.38, Moser 3×32 0.69). Both claims are recorded as not
reproduced.
"""

from __future__ import annotations

from lib.common.claims import Claim, Rule, judge_all, seed_list

#: seeds on which the learning rates and the margin were chosen
TUNING_SEEDS = (0, 1)
#: seeds the notebook evaluates (held-out seeds: lib.common.claims.HELDOUT_SEEDS)
NOTEBOOK_SEEDS = (10, 11, 12)

_STAT = (
    "KL(target ‖ small Moser) − KL(target ‖ small EGF), nats, by quadrature on a "
    "128² grid"
)
_CTRL = (
    "the EGF's SL2(Z) maps replaced by translations by rational shifts (a finite "
    "group: not ergodic)"
)

CLAIMS = (
    Claim(
        "il-checkerboard",
        "a small EGF fits the torus checkerboard where an equally small Moser Flow "
        "underfits",
        paper="EGF 3×32 reproduces the target; Moser Flow 3×32 fails (qualitative)",
        where="Sec. 5, 2-D imitation-learning toy on T² (figure)",
        statistic=_STAT,
        rule=Rule.at_least(0.1),
        control=_CTRL,
        expect="not reproduced",
    ),
    Claim(
        "il-mixture",
        "the same on a wrapped mixture of six Gaussians",
        paper="(our second target; the paper's toy figures show other 2-D densities)",
        where="Sec. 5, 2-D imitation-learning toy on T² (figure)",
        statistic=_STAT,
        rule=Rule.at_least(0.1),
        control=_CTRL,
        expect="not reproduced",
    ),
    Claim(
        "earth-nll",
        "on Earth data on the sphere the EGF has a lower NLL than Moser Flow",
        paper="NLL Volcano −2.31 vs −2.02, Earthquake −0.12 vs −0.09, Flood 0.56 vs "
        "0.62",
        where="Table 1 (NASA data on S²)",
        expect="not tested here",
    ),
    Claim(
        "rl-divergence",
        "in RL the divergence loss blows up (flow mass, trajectory length) while the "
        "FM loss converges",
        paper="total flow and τ diverge for the log² loss; the regulariser mitigates",
        where="Sec. 5, RL toy on T² (figure)",
        expect="not tested here",
    ),
    Claim(
        "fewer-params",
        "an EGF matches Moser Flow with about 30× fewer parameters",
        paper="MLP 256×5 against Moser's 512×6; about 10× faster training",
        where="Sec. 5, sphere experiments",
        expect="not tested here",
    ),
)


def claim_fits(cfg, seeds, device="cpu") -> dict:
    """KL (quadrature) of the small EGF, the small Moser Flow and the control per
    target and
    seed: ``{target: {model: {seed: kl}}}``."""
    from .experiment import _check_cfg, fit_one
    from .torus import TARGETS

    _check_cfg(cfg)
    seeds = seed_list(seeds)
    out = {t: {m: {} for m in ("egf", "moser", "egf_rational")} for t in TARGETS}
    for t in TARGETS:
        for m in out[t]:
            for s in seeds:
                out[t][m][s] = fit_one(m, t, cfg, s, device=device)[1]["kl"]
    return out


def measure_claims(cfg, seeds, device="cpu", fits: dict | None = None) -> dict:
    """Per-seed values of each tested claim's statistic and of its negative control.

    Returns ``{claim id: {"values": {seed: v}, "control": {seed: v}}}`` (plain floats);
    ``fits`` (from :func:`claim_fits`) skips the training."""
    fits = claim_fits(cfg, seeds, device) if fits is None else fits
    out = {}
    for cid, t in (("il-checkerboard", "checkerboard"), ("il-mixture", "mixture")):
        f = fits[t]
        out[cid] = {
            "values": {s: f["moser"][s] - f["egf"][s] for s in f["egf"]},
            "control": {s: f["moser"][s] - f["egf_rational"][s] for s in f["egf"]},
        }
    return out


def judge(measured: dict) -> list:
    """:func:`lib.common.claims.evaluate` for every claim of the chapter (untested ones
    included)."""
    return judge_all(CLAIMS, measured)
