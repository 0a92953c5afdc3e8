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

The volcano claim (``volcano-nll``): the statistic (test NLL of the small Moser Flow
minus that of the small EGF, both 3×32 MLPs on the coordinates, same loss, steps,
batch and penalty; 20 % of the volcanoes held out per seed), the margin (0.1 nats, as
on the torus) and the control (the EGF on rotations by π/2) were written before any
sphere run. Everything below was chosen on :data:`TUNING_SEEDS`, by the validation
split (10 %), never the test split. (1) A first run on tuning seed 0 with the torus's
b = 10 (300 steps × 256 points, rate 1e-2) left every network with a negative mass of
1.1–1.2: the penalty is an average
over probe points, so on a sphere of area 4π it weighs a unit of negative mass 4π
times less than on the unit torus. The sphere's penalty is therefore b · 4π = 40π for
every network (negative mass then ≤ 0.01). (2) At 200 steps × 256 points (rate 1e-2)
both networks stayed far from the data on seed 0 (validation NLL: EGF 1.89, Moser 2.09;
the uniform density scores 2.53). With the rates a first grid at 200 × 256 picked (3e-2
and 1e-1), trading batch for steps at the same cost helped both: 400 × 128 gave 1.65
and 1.89, 800 × 64 gave 1.45 and 1.82. So the budget is 600 × 64, what the notebook's
time allows, and the rates were tuned again there. (3) Learning rates from
{3e-3, 1e-2, 3e-2, 1e-1, 3e-1}, mean validation NLL over seeds 0–1: EGF 2.083 1.860
1.533 2.531 2.531; Moser 2.149 1.999 1.851 1.849 2.053. So the EGF uses 3e-2 and
Moser 1e-1 (3e-2 is within 0.003), both inside the grid, as at 200 × 256. The control
uses the EGF's rate. (4) The vMF mixture's
number of components is chosen per seed on the validation split from {1, 2, 4, …,
512}; on tuning seed 0 grids ending at 64 and then 256 had put the choice at their
edge. The verdict is recorded as partly reproduced: the EGF beats Moser Flow by the
margin, but so does the non-ergodic control.

The earthquake claim (``earth-nll``): the same statistic, models, settings and control
on the 1,707 earthquakes of npm vega-datasets (nothing re-tuned: the volcanoes'
settings carried over). The margin is the paper's own gap (−0.09 against −0.12, so
0.03 nats), written before the first earthquake run; the volcanoes' 0.1 would ask for
three times the effect the paper reports. On :data:`TUNING_SEEDS` (test NLL, EGF /
Moser / π/2 control / vMF), in a first run whose kernels were not pinned to AVX2:
seed 0 −0.51 / −0.26 / 0.08 / −3.39, seed 1 −0.30 / 0.13 / 0.33 / −3.01. The EGF
cleared the margin on both and the control on neither, so the expected verdict was set
to reproduced before the notebook and held-out seeds ran. With the book's AVX2 pin
(:mod:`lib.cpu_pins`, as every stored number) the same two seeds give seed 0 −0.14 /
−0.43 / 0.09 / −3.39 and seed 1 −0.29 / 0.16 / 0.31 / −3.01: Moser Flow is ahead on
seed 0 by 0.29, the control fails on both. A kernel change moves single fits by tenths
of a nat here, so single seeds say little; the notebook's three and the eight
held-out seeds decide the row.
"""

from __future__ import annotations

import torch

from lib.common import check_choice
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

_STAT_S2 = (
    "test NLL(small Moser) − test NLL(small EGF), nats, on 20 % of the GVP volcanoes "
    "held out per seed"
)
_CTRL_S2 = (
    "the EGF's rotations by π/4 replaced by rotations by π/2 (they generate the "
    "24-element octahedral group: not ergodic)"
)

_STAT_QUAKE = (
    "test NLL(small Moser) − test NLL(small EGF), nats, on 20 % of the 1,707 "
    "earthquakes (vega-datasets) held out per seed; the volcanoes' settings"
)
#: the earthquake row's verdict on TUNING_SEEDS, set before the notebook seeds ran
_EXPECT_QUAKE = "reproduced"

_STAT_RL = (
    "log10(final total flow ∫f→ with the divergence loss / with the FM loss), "
    "the checkerboard reward on T², 8 maps, 3×32 MLP, cfg.rl_steps Adam steps (600 "
    "in SMOKE)"
)
_CTRL_RL = "the divergence loss with its regulariser λ E(f→)², λ = 0.01"
#: the RL row's verdict on TUNING_SEEDS (1.04 and 1.02; control −0.21 and −0.27),
#: set before the notebook seeds ran
_EXPECT_RL = "reproduced"

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
        "volcano-nll",
        "on the volcano catalogue on the sphere a small EGF reaches a lower test NLL "
        "than an equally small Moser Flow",
        paper="NLL Volcano: EGF −2.31, Moser Flow −2.02 (mixture of vMF −0.31); "
        "the NOAA eruption data, not ours",
        where="Table 1 (Earth data on S²)",
        statistic=_STAT_S2,
        rule=Rule.at_least(0.1),
        control=_CTRL_S2,
        expect="partly reproduced",
    ),
    Claim(
        "earth-nll",
        "on the earthquake catalogue on the sphere a small EGF reaches a lower test "
        "NLL than an equally small Moser Flow",
        paper="NLL Earthquake: EGF −0.12, Moser Flow −0.09 (Flood 0.56 vs 0.62: no "
        "flood catalogue ships offline, not tested); the NOAA data, not ours",
        where="Table 1 (Earth data on S²)",
        statistic=_STAT_QUAKE,
        rule=Rule.at_least(0.03),
        control=_CTRL_S2,
        expect=_EXPECT_QUAKE,
    ),
    Claim(
        "rl-divergence",
        "in RL the divergence loss blows up (flow mass, trajectory length) while the "
        "FM loss converges",
        paper="total flow and τ diverge for the log² loss; the regulariser mitigates "
        "(qualitative)",
        where="Sec. 5, RL toy on T² (figure)",
        statistic=_STAT_RL,
        rule=Rule.at_least(0.5),
        control=_CTRL_RL,
        expect=_EXPECT_RL,
    ),
    Claim(
        "fewer-params",
        "an EGF matches Moser Flow with about 30× fewer parameters",
        paper="MLP 256×5 against Moser's 512×6; about 10× faster training",
        where="Sec. 5, sphere experiments",
        expect="not tested here",
    ),
)


def _claim_job(space: str, model: str, target: str, cfg, seed: int, device) -> float:
    """One fit of :func:`claim_fits`: a torus KL (``target``: the torus target) or the
    sphere's metrics (``target``: the data set)."""
    from .earth import sphere_fit_metrics
    from .experiment import fit_one

    if space == "torus":
        return fit_one(model, target, cfg, seed, device=device)[1]["kl"]
    return sphere_fit_metrics(model, cfg, seed, device, dataset=target)


_TORUS_ARMS = ("egf", "moser", "egf_rational")


def _datasets(datasets) -> tuple:
    from .earth import DATASETS

    if not isinstance(datasets, (tuple, list)) or not datasets:
        raise TypeError(f"datasets: expected a non-empty tuple, got {datasets!r}")
    for d in datasets:
        check_choice("datasets", d, DATASETS)
    return tuple(datasets)


def claim_jobs(cfg, seeds, device="cpu", datasets=("volcano", "earthquake")) -> list:
    """The independent fits of :func:`claim_fits`, as argument tuples of
    :func:`_claim_job` (torus arms by target, then each sphere data set's models,
    seed by seed)."""
    from .earth import SPHERE_MODELS
    from .experiment import _check_cfg
    from .torus import TARGETS

    _check_cfg(cfg)
    seeds = seed_list(seeds)
    jobs = [
        ("torus", m, t, cfg, s, device)
        for t in TARGETS
        for m in _TORUS_ARMS
        for s in seeds
    ]
    jobs += [
        ("sphere", m, d, cfg, s, device)
        for d in _datasets(datasets)
        for m in (*SPHERE_MODELS, "vmf")
        for s in seeds
    ]
    return jobs


def claim_fits_from(done: list, seeds, datasets=("volcano", "earthquake")) -> dict:
    """:func:`claim_fits`' dict from the results of :func:`claim_jobs`, in order."""
    from .earth import SPHERE_MODELS
    from .torus import TARGETS

    seeds = seed_list(seeds)
    it = iter(done)
    out = {t: {m: {s: next(it) for s in seeds} for m in _TORUS_ARMS} for t in TARGETS}
    for d in _datasets(datasets):
        out[d], out[d + "_detail"] = {}, {}
        for m in (*SPHERE_MODELS, "vmf"):
            out[d][m], out[d + "_detail"][m] = {}, {}
            for i, s in enumerate(seeds):
                r = next(it)
                if i > 0:  # the density maps are kept for the first seed only
                    r.pop("density_map")
                out[d][m][s] = r["test_nll"]
                out[d + "_detail"][m][s] = r
    return out


def claim_fits(
    cfg, seeds, device="cpu", processes: int = 1, datasets=("volcano", "earthquake")
) -> dict:
    """KL (quadrature) of the small EGF, the small Moser Flow and the control per
    torus target and seed: ``{target: {model: {seed: kl}}}``; under each sphere data
    set's name (``"volcano"``, ``"earthquake"``) its test NLLs ``{model: {seed:
    nll}}`` (models of :data:`lib.egf.earth.SPHERE_MODELS` and ``"vmf"``), with their
    other metrics under ``"<name>_detail"``. ``processes`` > 1 runs the fits in
    worker processes (:func:`lib.egf.experiment.pool_map`; the same numbers)."""
    from .experiment import pool_map

    jobs = claim_jobs(cfg, seeds, device, datasets)
    return claim_fits_from(pool_map(_claim_job, jobs, processes), seeds, datasets)


def measure_claims(
    cfg, seeds, device="cpu", fits: dict | None = None, rl: dict | None = None
) -> dict:
    """Per-seed values of each tested claim's statistic and of its negative control.

    Returns ``{claim id: {"values": {seed: v}, "control": {seed: v}}}`` (plain floats);
    ``fits`` (from :func:`claim_fits`) skips the training, and then the RL row is
    measured only from ``rl`` (:func:`lib.egf.rl.rl_runs`' dict) when given."""
    from .rl import rl_measured, rl_runs, rl_settings

    if fits is None:  # on a CPU, two one-thread worker processes (the same numbers)
        cpu = torch.device(device).type == "cpu"
        fits = claim_fits(cfg, seeds, device, processes=2 if cpu else 1)
        if rl is None:
            rl = rl_runs(seeds, device, 2 if cpu else 1, rl_settings(cfg))
    out = {}
    for cid, t in (("il-checkerboard", "checkerboard"), ("il-mixture", "mixture")):
        f = fits[t]
        out[cid] = {
            "values": {s: f["moser"][s] - f["egf"][s] for s in f["egf"]},
            "control": {s: f["moser"][s] - f["egf_rational"][s] for s in f["egf"]},
        }
    for cid, d in (("volcano-nll", "volcano"), ("earth-nll", "earthquake")):
        if d not in fits:  # the notebook fits the earthquakes' seeds elsewhere
            continue
        f = fits[d]
        out[cid] = {
            "values": {s: f["moser"][s] - f["egf"][s] for s in f["egf"]},
            "control": {s: f["moser"][s] - f["egf_pi2"][s] for s in f["egf"]},
        }
    if rl is not None:
        out.update(rl_measured(rl))
    return out


def judge(measured: dict) -> list:
    """:func:`lib.common.claims.evaluate` for every claim of the chapter (untested ones
    included)."""
    return judge_all(CLAIMS, measured)
