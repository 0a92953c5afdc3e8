"""The paper's claims as rules that can fail, measured on several seeds with a negative
control each.

Every seed trains its own ensemble on the exact two-Gaussian toy (one member each for
CD with the exact teacher, IC, GC with μ = 0.5, GC with μ = 1 and the control below),
from its own generators (``10 seed + k``), so a seed's values depend on that seed
alone. All statistics are per seed; comparisons are per-seed ratios or relative gaps of
members that share the seed's data, noise, indices and initial weights (a paired
design).

**The controls.** ``gc-gap`` and ``gc-faster``: GC whose endpoints x̂ come from the
frozen, *untrained* initial network instead of the EMA model. It keeps everything GC
does to the batch (half of the endpoints replaced by a network's output, same z) but
removes what the paper credits, a generator that has learned the data; a claim that
also held for it would say "any perturbation of the endpoints helps", not GC.
``cd-best``: the exact teacher's velocity replaced by IC's one-sample estimate (CD with
that estimate is IC). ``transport`` and ``discrepancy``: x̂ built from an independent
noise z' while the flow still uses z, i.e. GC's coupling of x̂ and z removed, the very
mechanism the paper's proofs use.

**How the settings were chosen** (on :data:`TUNING_SEEDS` 100-102 only, before any
notebook or held-out seed was run). The earlier chapter trained a width-64 MLP with the
pseudo-Huber loss (3,000 steps, lr 5e-4, EMA 0.99); there the GC-IC gap of the final
ODE-map error was 6-15 % per tuning seed and GC trailed IC at the first checkpoint
(-11 % on the mean). The authors' 2-D toy (``notebooks/consistency_gaussians_…`` in the
official repository) uses the squared L2 distance, width 256, Adam at lr 5e-5, an EMA
of 0.9999 with ``ema_pytorch``'s warm-up (decay min(0.9999, 1 − (1 + k)^(−2/3))),
batch 256 and 10,000 steps. Tried on the tuning seeds at a CPU size (final gap (IC −
GC)/IC on the mean; per-checkpoint gaps):

- L2, width 128, lr 5e-4, EMA 0.99, 1,500 steps: 5 % (−19 %, 5 %, 5 %, 5 %);
- L2, width 64, batch 256, 3,000 steps: 6 % (one seed −6 %), behind at the first
  checkpoint;
- the authors' lr 5e-5 and warm-up EMA at 1,500 steps, width 128: GC *worse* than IC
  by 30 % (the model is far from trained: IC's error is 0.21); lr 2e-4: worse by 16 %;
- L2, width 128, batch 128, lr 5e-4, EMA 0.99, 3,000 steps: 7 % (6-8 % per seed) and
  GC ahead at every checkpoint (13 %, 18 %, 15 %, 7 % on the mean);
- the same at width 64 (cheaper): 9 % on the mean but −1 % on one seed, and GC behind
  IC at the first checkpoint on all three seeds;
- the authors' own setting in full (width 256, lr 5e-5, warm-up EMA, batch 256, 10,000
  steps; 13 minutes for one seed here), seed 100 only: CD 0.027, GC 0.078, IC 0.097, a
  gap of 20 %; GC behind IC at the first of five checkpoints (−18 %), ahead by 15-20 %
  from the second on.

The width-128 L2 run at 3,000 steps is the toy's SMOKE setting: the authors' loss, a
wider network than before (their 256 does not fit the notebook's budget), their noise
schedule, but the chapter's learning rate and EMA, because the authors' lr 5e-5 needs
their 10,000 steps. The gap is *not* several times larger than with pseudo-Huber at
this size: the L2 and the pseudo-Huber runs both give gaps of 5-15 %, and the authors'
full setting gave 20 % on its one seed. The rule margins are about half the smallest
per-seed value seen on the tuning seeds (ODE-map gap ≥ 3 %; every checkpoint ≥ 0 %,
i.e. the ordering itself; CD ≥ 50 % below GC), and the transport and discrepancy ratios
keep the chapter's earlier asserts (≤ 0.75 at σ = 5, ≤ 0.5 at σ = 0.5). The five seeds
train side by side in one ensemble (each seed's result is what it would be alone), at
2 threads about 34 ms a step for the notebook's 27 members.

**MNIST** (``mnist-fd``). One run per seed (:func:`.experiment.image_experiment`): IC,
GC (μ = 0.5) and the control (GC with x̂ from the untrained network) trained side by
side at 14×14 from the same weights and data, one-step Fréchet distance to 2,000 test
digits in a small classifier's features. A width-512 MLP costs about 70 s a seed on one
thread; width 256 (1,500 steps) about 35 s, which makes 13 seeds affordable in
``make claims``. At width 256 the tuning seeds gave gaps (IC − GC)/IC of 13 %, 19 %
and 11 % (control: −28, −30 and −26, i.e. far worse than IC); the margin, about half
the smallest, is 5 % (:data:`MNIST_MARGIN`). Before this rule was written, two notebook
seeds had been run once at width 512 with an older stream layout (gaps 25 % and 25 %).

**The schedule fix.** The toy's iCT schedule first rounded log2(s1/s0) down, so with
s1/s0 = 10 its last stage stopped at 80 intervals instead of reaching s1 = 100; iCT and
the official code do not round. With the corrected schedule (same rules, same seeds)
``gc-gap`` on the notebook seeds fell from 0.05 [0.01, 0.10] (4/5) to 0.03 [−0.02,
0.07] (1/5 holding) and ``gc-faster`` to 4/5 seeds; on the held-out seeds they are
0.085 (7/8) and 0.056 (8/8). The recorded expectations were lowered to what the
notebook seeds give (not reproduced; partly reproduced); the rules were not changed.

**Recorded after the notebook seeds were run.** ``gc-gap`` was written expecting
"reproduced"; on the notebook seeds 10-14 its mean is 0.05 with a 95 % interval [0.01,
0.10] that crosses the rule's 0.03, and it holds on 4 of 5 seeds, so it is recorded as
partly reproduced. The rule was not changed.
"""

from __future__ import annotations

import torch

from lib.common.claims import Claim, Rule, judge_all, mean_values, seed_list

#: seeds on which the toy's settings and the rule margins were chosen (see above)
TUNING_SEEDS = (100, 101, 102)
#: seeds the notebook evaluates (held-out seeds: lib.common.claims.HELDOUT_SEEDS, via
# `make claims`)
NOTEBOOK_SEEDS = (10, 11, 12, 13, 14)
#: the mnist-fd rule's margin (see "MNIST" above)
MNIST_MARGIN = 0.05

CLAIMS = (
    Claim(
        "gc-gap",
        "GC (μ = 0.5) learns a one-step map closer to the exact ODE map than IC",
        paper="GC below IC in one-step error and FID",
        where="§5 toy (Fig. 3) and Table 1",
        statistic="relative gap (IC − GC)/IC of the final ODE-map error",
        rule=Rule.at_least(0.03),
        control="GC's generator replaced by the untrained initial network",
        expect="not reproduced",
    ),
    Claim(
        "gc-faster",
        "GC converges faster: it is ahead of IC at every checkpoint",
        paper="faster convergence of GC than IC",
        where="§5, training curves",
        statistic="smallest relative gap (IC − GC)/IC over the checkpoints",
        rule=Rule.at_least(0.0),
        control="GC's generator replaced by the untrained initial network",
        expect="partly reproduced",
    ),
    Claim(
        "cd-best",
        "distillation with the exact teacher beats both consistency-training couplings",
        paper="CT = CD + a non-vanishing regulariser",
        where="Thm (CT–CD discrepancy), §3",
        statistic="relative gap (GC − CD)/GC of the final ODE-map error",
        rule=Rule.at_least(0.5),
        control="exact velocity replaced by the one-sample estimate (CD becomes IC)",
    ),
    Claim(
        "transport",
        "GC's endpoints lower the noise–data transport cost",
        paper="E‖x̂ − z‖² < E‖x* − z‖²",
        where="§4, transport-cost proposition",
        statistic="transport-cost ratio GC/IC at σ = 5",
        rule=Rule.at_most(0.75),
        control="x̂ drawn with an independent noise z' (coupling with z removed)",
    ),
    Claim(
        "discrepancy",
        "GC's endpoints lower the CT–CD discrepancy σ² E‖v̂ − v‖²",
        paper="lower discrepancy term for GC",
        where="§4, discrepancy proposition",
        statistic="endpoint-error ratio GC/IC at σ = 0.5",
        rule=Rule.at_most(0.5),
        control="x̂ drawn with an independent noise z' (coupling with z removed)",
    ),
    Claim(
        "mnist-fd",
        "GC gives better one-step samples than IC on images (here MNIST 14×14)",
        paper="CIFAR-10 one-step FID 7.42 → 5.95, −20 % (IC → GC, μ = 0.5)",
        where="Table 1",
        statistic="relative gap (IC − GC)/IC of the one-step Fréchet distance",
        rule=Rule.at_least(MNIST_MARGIN),
        control="GC whose x̂ come from the frozen, untrained network",
    ),
    Claim(
        "cifar-fid",
        "the FID gains on CIFAR-10, ImageNet-32, CelebA-64 and LSUN-Church-64",
        paper="e.g. ImageNet-32 14.89 → 13.99, CelebA-64 15.82 → 11.74",
        where="Table 1",
        expect="not tested here",
    ),
)


def _gap(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return (a - b) / a  # relative gap (a − b)/a


def toy_claims(toy: dict) -> dict:
    """Per-seed values of each tested claim's statistic and of its negative control,
    from :func:`.experiment.toy_experiment`'s output.

    Returns ``{claim id: {"values": {seed: v}, "control": {seed: v}}}`` (plain floats).
    """
    from .experiment import CONTROL

    if not isinstance(toy, dict) or "names" not in toy or "seeds" not in toy:
        raise TypeError(
            f"toy: expected the dict of toy_experiment, got {type(toy).__name__}"
        )
    names, seed = toy["names"], toy["seed"]
    sig = list(toy["sigmas"])
    for need in (5.0, 0.5):
        if need not in sig:
            raise ValueError(f"toy: expected σ = {need} among the diagnostics' sigmas")
    j5, j05 = sig.index(5.0), sig.index(0.5)
    ps, err = toy["per_sigma"], toy["ode_err"]  # (S_σ, M), (C, M)
    out = {
        c.id: {"values": {}, "control": {}}
        for c in CLAIMS
        if c.rule is not None and c.id != "mnist-fd"  # the toy's claims only
    }
    for s in toy["seeds"]:
        ix = {n: i for i, (n, t) in enumerate(zip(names, seed)) if t == s}
        cd, ic, gc, ctl = (err[:, ix[k]] for k in ("CD", "IC", "GC", CONTROL))  # (C,)
        put = lambda k, v, c: (  # noqa: E731
            out[k]["values"].__setitem__(s, float(v)),
            out[k]["control"].__setitem__(s, float(c)),
        )
        put("gc-gap", _gap(ic[-1], gc[-1]), _gap(ic[-1], ctl[-1]))
        put("gc-faster", _gap(ic, gc).min(), _gap(ic, ctl).min())
        put("cd-best", _gap(gc[-1], cd[-1]), _gap(gc[-1], ic[-1]))
        i_ic, i_gc = ix["IC"], ix["GC"]
        for key, q, j in (
            ("transport", "transport", j5),
            ("discrepancy", "endpoint_error", j05),
        ):
            base = ps[f"ic_{q}"][j, i_ic]
            put(key, ps[f"gc_{q}"][j, i_gc] / base, ps[f"dec_{q}"][j, i_gc] / base)
    return out


def image_claims(runs: dict) -> dict:
    """The mnist-fd claim's per-seed values and control from ``{seed: output of
    image_experiment}`` (IC, GC and the control's Fréchet distances)."""
    if not isinstance(runs, dict) or not runs:
        raise TypeError(
            f"runs: expected a non-empty {{seed: image_experiment output}} dict, got "
            f"{type(runs).__name__}"
        )
    from .experiment import CONTROL

    out = {"values": {}, "control": {}}
    for s, r in runs.items():
        if not isinstance(r, dict) or "fd" not in r:
            raise ValueError(
                f"runs[{s}]: expected image_experiment's output, got {r!r}"
            )
        fd = r["fd"]
        out["values"][s] = float(_gap(torch.tensor(fd["IC"]), torch.tensor(fd["GC"])))
        out["control"][s] = float(
            _gap(torch.tensor(fd["IC"]), torch.tensor(fd[CONTROL]))
        )
    return {"mnist-fd": out}


def measure_claims(cfg, seeds, device="cpu") -> dict:
    """Per-seed values of each tested claim's statistic and of its negative control:
    trains the toy on ``seeds`` (without the μ = 1 and widget members, which no claim
    reads) and reads them off (:func:`toy_claims`); with ``cfg.images``, also one MNIST
    run per seed (:func:`image_claims`; skipped when MNIST is not installed)."""
    import dataclasses

    from .experiment import _check_cfg, image_experiment, toy_experiment

    _check_cfg(cfg)
    seeds = seed_list(seeds)
    out = toy_claims(toy_experiment(cfg, device, seeds, ablation=False))
    if cfg.images:
        runs = {
            s: image_experiment(dataclasses.replace(cfg, seed=s), device) for s in seeds
        }
        if not any("skipped" in r for r in runs.values()):
            out.update(image_claims(runs))
    return out


def file_measured(claims_file: dict | None, ids) -> dict:
    """``measure_claims``-shaped values of the claims ``ids`` on the notebook seeds,
    read back from ``results/claims/<slug>.json`` (for claims too slow for the
    notebook); claims the file lacks are left out."""
    if isinstance(ids, str) or not isinstance(ids, (list, tuple)) or not ids:
        raise TypeError(f"ids: expected a non-empty list of claim ids, got {ids!r}")
    if claims_file is None:
        return {}
    if not isinstance(claims_file, dict) or "claims" not in claims_file:
        raise TypeError(
            f"claims_file: expected a loaded claims file, got "
            f"{type(claims_file).__name__}"
        )
    out = {}
    for cid in ids:
        nb = claims_file["claims"].get(cid, {}).get("notebook") or {}
        m, c = nb.get("method"), nb.get("control")
        if m is None:
            continue
        out[cid] = {
            "values": dict(zip(m["seeds"], m["values"])),
            "control": None if c is None else dict(zip(c["seeds"], c["values"])),
        }
    return out


def judge(measured: dict) -> list:
    """:func:`lib.common.claims.evaluate` for every claim of the chapter (untested ones
    included)."""
    return judge_all(CLAIMS, measured)


def full_values(measured: dict | None) -> dict | None:
    """Mean over seeds of each claim's statistic (the "ours FULL" column), or None
    without a run."""
    return mean_values(measured)
