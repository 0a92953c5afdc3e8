"""The paper's claims as rules that can fail, measured on several seeds with a negative
control each.

Each seed draws its own digits, styles, pretraining pool, CLIP initialisation and
batches, intervention pairs and held-out splits (:func:`.experiment.prepare_seed`);
every arm of every left-out domain is evaluated on the same embeddings
(:func:`.experiment.run_fold`). ``C`` is the fold that leaves out domain C, where the
colour–class link flips (a shift the interventions cover); ``D`` leaves out domain D,
where the marker–class link flips (a shift they do not cover); ``A`` leaves out a
domain whose links agree with the sources'.

How the settings were chosen (TUNING_SEEDS only; ``benchmarks/clip_icm_tuning.py``):
the raw probe's and the augmentation probe's C over the same 20 log-spaced values in
[0.01, 100], and ICM's (λ, k) over λ ∈ {1, 3, 10, 30, 100} × k ∈ {4, 8, 16, 32} at the
raw probe's C, each by its mean OOD probe accuracy over the four left-out domains and
the two tuning seeds (DomainBed's test-domain selection, on tuning seeds only). Chosen:
C = 3.36 for both probes (raw: mean OOD 0.865, ID 0.955; augmentation probe: 0.886),
λ = 3 and k = 16 (mean OOD 0.893, ID 0.940; λ = 3, k = 32 tied at 0.893, and λ = 1,
k = 16 gave 0.892). Large λ fails here: at λ = 100 the mean OOD accuracy falls to
0.50–0.73, because the intervention differences of a small nonlinear CLIP are not
confined to the colour directions. Per fold at the chosen settings (tuning seeds 0 and
1; left out A, B, C, D): raw 0.952, 0.953, 0.807, 0.770 and 0.950, 0.930, 0.780,
0.782; ICM 0.937, 0.953, 0.868, 0.823 and 0.947, 0.928, 0.853, 0.835; augmentation
probe 0.952, 0.953, 0.847, 0.813 and 0.943, 0.932, 0.810, 0.837. ICM gained as much on
the uncovered shift (D, +0.05) as on the covered one (C, +0.06 and +0.07) on the tuning
seeds, and closed about 0.4 of fold C's gap, so those two claims were expected to fail.

The world and the interventions were chosen before that grid, on tuning seed 0, by
fold C's OOD accuracy: a CLIP trained on the source domains themselves with all seven
augmentations (ICM never beat raw CLIP on fold C: 0.60–0.62 against 0.63 at λ ≤ 10);
a separate pretraining pool whose styles followed the class 90 % or 50 % of the time
(raw probe 0.26 and 0.69 on fold C, a weaker CLIP); a pool with styles independent of
the class (raw 0.75, ICM up to 0.85); and hue jitter ±0.05 in the pool with the two
colour interventions (raw 0.76, ICM 0.87), which was kept. The rules' thresholds were
written after the tuning runs above and before any notebook or held-out seed was run.

Recorded verdicts (``expect``) are those of the first run at these settings on the
notebook and held-out seeds; the rules and settings were not changed after it.
"""

from __future__ import annotations

import statistics

from lib.common.claims import Claim, Rule, judge_all, seed_list

#: seeds on which the settings were chosen
TUNING_SEEDS = (0, 1)
#: seeds the notebook evaluates (held-out seeds: lib.common.claims.HELDOUT_SEEDS)
NOTEBOOK_SEEDS = (10, 11, 12)

_PROBE = "linear probe on the source domains, accuracy on the left-out domain"

CLAIMS = (
    Claim(
        "probe-gap",
        "a probe on frozen CLIP features loses much accuracy on an unseen domain",
        paper="TerraIncognita: 47.8 % leaving the target domain out vs 78.9 % with it "
        "seen (a 31.1-point gap)",
        where="§1 (motivating experiment: a linear classifier on frozen CLIP "
        "embeddings, leave-one-domain-out)",
        statistic="fold C: probe accuracy with the target's training part seen − "
        "without it",
        rule=Rule.at_least(0.10),
        control="the same gap on fold A, whose style links agree with the sources'",
        fmt=".3f",
        expect="partly reproduced",
    ),
    Claim(
        "icm-closes-gap",
        "predicting in the invariant subspace closes most of the OOD gap",
        paper="CLIP-ICM's linear probe beats CLIP's on every DomainBed dataset "
        "(numbers not checked)",
        where="main DomainBed table (linear probe)",
        statistic="fold C: (ICM OOD − raw OOD) / (raw ID − raw OOD), " + _PROBE,
        rule=Rule.at_least(0.5),
        control="λ = 0 (the top-k principal directions, no interventions)",
        fmt=".2f",
        expect="not reproduced",
    ),
    Claim(
        "small-id-cost",
        "at a small in-distribution cost",
        paper="ID accuracy stays close to CLIP's (our reading of the trade-off)",
        where="§5–6 (λ trades invariance against information)",
        statistic="raw ID − ICM ID, mean over the four left-out domains",
        rule=Rule.at_most(0.03),
        control="the official code's eigenvector order (bottom-k) in ICM's place",
        fmt=".3f",
        expect="reproduced",
    ),
    Claim(
        "bottom-k-fails",
        "keeping the k smallest eigenvalues (eigh's ascending order, first k) fails",
        paper="the code keeps eigh(M)[1][:, :k]: the most intervention-sensitive "
        "directions",
        where="repo: clip_icm.py (get_A_inv)",
        statistic="fold C: bottom-k OOD − raw OOD, " + _PROBE,
        rule=Rule.at_most(-0.10),
        control="top-k (the paper's optimisation) in bottom-k's place",
        fmt=".3f",
        expect="reproduced",
    ),
    Claim(
        "no-gain-uncovered",
        "no gain on a shift the interventions do not cover",
        paper="identifiability needs interventions on the variant factors that shift "
        "(Prop. 5.5's assumption)",
        where="§5 (Prop. 5.5); our negative control",
        statistic="fold D: ICM OOD − raw OOD, " + _PROBE,
        rule=Rule.at_most(0.02),
        control="the same difference on fold C (a covered shift)",
        fmt=".3f",
        expect="not reproduced",
    ),
    Claim(
        "zero-shot-gain",
        "zero-shot prediction in the invariant subspace is more robust",
        paper="CLIP-ICM's zero-shot beats CLIP's on DomainBed (numbers not checked)",
        where="main DomainBed table (zero-shot)",
        statistic="fold C: ICM zero-shot OOD − raw zero-shot OOD",
        rule=Rule.at_least(0.02),
        control="λ = 0 in ICM's place",
        fmt=".3f",
        expect="not reproduced",
    ),
    Claim(
        "domainbed-mean",
        "the probe gains on average over left-out domains",
        paper="higher average accuracy over DomainBed's left-out domains",
        where="main DomainBed table (average column)",
        statistic="ICM OOD − raw OOD, mean over the four left-out domains",
        rule=Rule.at_least(0.01),
        control="λ = 0 in ICM's place",
        fmt=".3f",
        expect="partly reproduced",
    ),
    Claim(
        "beats-aug-probe",
        "ICM beats a probe trained on the augmented images too",
        paper="(not in the paper; the baseline a reader would try first)",
        where="our addition",
        statistic="fold C: ICM OOD − OOD of a probe fitted on f(x) and f(x̃)",
        rule=Rule.at_least(0.0),
        control="raw CLIP's probe in ICM's place",
        fmt=".3f",
        expect="reproduced",
    ),
    Claim(
        "open-classes",
        "zero-shot accuracy on unseen classes survives (in the wild)",
        paper="open-class zero-shot 63.6 % → 24.6 % after fine-tuning; CLIP-ICM keeps "
        "it",
        where="§1 and the in-the-wild table",
        expect="not tested here",
    ),
    Claim(
        "imagenet",
        "gains on ImageNet variants with ViT-B/16",
        paper="ImageNet-V2/-S/-A/-R accuracies",
        where="ImageNet table",
        expect="not tested here",
    ),
)


def _mean(xs):
    return statistics.fmean(xs)


def measure_from_runs(runs: dict) -> dict:
    """Per-seed statistics and controls from :func:`.experiment.run_seeds`' output."""
    out = {c.id: {"values": {}, "control": {}} for c in CLAIMS if c.rule is not None}

    def put(cid, s, v, c):
        out[cid]["values"][s] = float(v)
        out[cid]["control"][s] = float(c)

    for s, r in runs.items():
        s = int(s)
        C, D, A = r["C"], r["D"], r["A"]
        put(
            "probe-gap",
            s,
            C["seen"]["ood"] - C["raw"]["ood"],
            A["seen"]["ood"] - A["raw"]["ood"],
        )
        gap = max(C["raw"]["id"] - C["raw"]["ood"], 1e-3)
        put(
            "icm-closes-gap", s,
            (C["icm"]["ood"] - C["raw"]["ood"]) / gap,
            (C["pca"]["ood"] - C["raw"]["ood"]) / gap,
        )  # fmt: skip
        put(
            "small-id-cost", s,
            _mean([f["raw"]["id"] - f["icm"]["id"] for f in r.values()]),
            _mean([f["raw"]["id"] - f["bottom"]["id"] for f in r.values()]),
        )  # fmt: skip
        put(
            "bottom-k-fails", s,
            C["bottom"]["ood"] - C["raw"]["ood"], C["icm"]["ood"] - C["raw"]["ood"],
        )  # fmt: skip
        put(
            "no-gain-uncovered", s,
            D["icm"]["ood"] - D["raw"]["ood"], C["icm"]["ood"] - C["raw"]["ood"],
        )  # fmt: skip
        put(
            "zero-shot-gain", s,
            C["icm"]["zs_ood"] - C["raw"]["zs_ood"],
            C["pca"]["zs_ood"] - C["raw"]["zs_ood"],
        )  # fmt: skip
        put(
            "domainbed-mean", s,
            _mean([f["icm"]["ood"] - f["raw"]["ood"] for f in r.values()]),
            _mean([f["pca"]["ood"] - f["raw"]["ood"] for f in r.values()]),
        )  # fmt: skip
        put(
            "beats-aug-probe", s,
            C["icm"]["ood"] - C["aug"]["ood"], C["raw"]["ood"] - C["aug"]["ood"],
        )  # fmt: skip
    return out


def measure_claims(cfg, seeds, device="cpu", runs: dict | None = None) -> dict:
    """``{claim id: {"values": {seed: v}, "control": {seed: v}}}``; ``runs`` (from
    :func:`.experiment.run_seeds` on the same seeds) skips the training."""
    from .experiment import run_seeds

    seeds = seed_list(seeds)
    runs = run_seeds(cfg, seeds, device) if runs is None else runs
    return measure_from_runs(runs)


def judge(measured: dict) -> list:
    """:func:`lib.common.claims.evaluate` for every claim (untested ones included)."""
    return judge_all(CLAIMS, measured)
