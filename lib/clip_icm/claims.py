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
TUNING_TEXT

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
        where="§1, motivating example (Figure 1)",
        statistic="fold C: probe accuracy with the target's training part seen − "
        "without it",
        rule=Rule.at_least(0.10),
        control="the same gap on fold A, whose style links agree with the sources'",
        fmt=".3f",
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
