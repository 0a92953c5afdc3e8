"""The paper's claims as rules that can fail, measured on several seeds with a negative
control each.

Each seed draws its own digits, styles, pretraining pool, CLIP initialisation and
batches, intervention pairs, held-out splits and readout set
(:func:`.experiment.prepare_seed`); every arm of every left-out domain is evaluated on
the same embeddings (:func:`.experiment.run_fold`). ``C`` is the fold that leaves out
domain C, whose colour–class link flips while its marker follows the class as most
sources' markers do (a one-factor shift the interventions cover); ``D`` leaves out
domain D, whose marker–class link flips while its colour follows the class as most
sources' colours do (a one-factor shift they do not cover); ``A`` leaves out a domain
whose links agree with the sources'.

The domain design. An outside referee found that the earlier design shifted both
style factors in C and D (C's marker and D's colour were drawn at random, so with C
left out its random marker was also an uncovered marker shift, and with D left out
its random colour a covered colour shift): the whole fold-D gain of ICM came from
images whose colour disagreed with the sources' link. The referee's probe of the
one-factor domains used here (A, B unchanged; C colour = class + 5 at 90 %, marker =
class at 85 %; D colour = class at 85 %, marker = class + 5 at 90 %), at the earlier,
untuned settings and on seeds 2001–2003 (never tuning, notebook or held-out seeds),
informed this design, which was fixed before any tuning below: there ICM closed
0.57–0.85 of fold C's gap and moved fold D by −0.04. The earlier design's results
(λ = 3, k = 16, C = 3.36; notebook seeds · held-out seeds, commit 85755f7):
icm-closes-gap 0.36 · 0.30 (not reproduced), no-gain-uncovered 0.057 · 0.053 (not
reproduced), small-id-cost (ID cost alone, bottom-k control) 0.008 · 0.012
(reproduced), beats-aug-probe (raw-CLIP control) 0.036 · 0.026 (reproduced),
domainbed-mean 0.029 · 0.022 (partly reproduced), zero-shot-gain −0.018 · −0.016 (not
reproduced). The referee also found that λ = 0 passes the old small-id-cost and
beats-aug-probe rules; their controls are now λ = 0, and small-id-cost's rule is
joint (below).

How the settings were chosen (TUNING_SEEDS only; ``benchmarks/clip_icm_tuning.py``,
re-run for this design): the raw probe's and the augmentation probe's C over the same
20 log-spaced values in [0.01, 100]; ICM's (λ, k) over λ ∈ {1, 3, 10, 30, 100} × k ∈
{4, 8, 16, 32} at the raw probe's C; then the augmentation probe in the λ = 0 (top-k
PCA) subspace at ICM's k, its C over the same 20 values. Each by its mean OOD probe
accuracy over the four left-out domains and the two tuning seeds (DomainBed's
test-domain selection, on tuning seeds only). Chosen: C = 61.58 for the raw probe
(mean OOD 0.900, ID 0.970; every C ≥ 14 within 0.001 of it), C_aug = 61.58 for the
augmentation probe (0.906), λ = 3 and k = 8 for ICM (0.910, ID 0.948; λ = 1, k = 8
gave 0.908, and λ ∈ {1, 3}, k = 32 gave 0.904), and C_aug_pca = 8.86 for the
augmentation probe in the top-8 PCA subspace (0.906). Large λ fails: at λ = 100 the
mean OOD accuracy is 0.64–0.84, fold D falling to 0.15–0.62. Per fold OOD at the
chosen settings (tuning seeds 0 and 1; left out A, B, C, D): raw 0.985, 0.972, 0.868,
0.802 and 0.978, 0.953, 0.825, 0.817; ICM 0.955, 0.958, 0.940, 0.795 and 0.950, 0.930,
0.932, 0.822; λ = 0 (k = 8) 0.953, 0.957, 0.770, 0.880 and 0.957, 0.923, 0.768, 0.893;
augmentation probe 0.978, 0.975, 0.907, 0.798 and 0.972, 0.948, 0.867, 0.802; the same
in the PCA subspace 0.950, 0.955, 0.860, 0.878 and 0.952, 0.920, 0.835, 0.897. So on
the tuning seeds ICM gained on fold C (+0.07, +0.11) and not on fold D (−0.01, +0.01),
at an ID cost of 0.022; λ = 0 at k = 8 lost on fold C and gained on fold D (+0.08).

The world and the interventions were chosen before all of this, on tuning seed 0, by
fold C's ICM OOD accuracy (with the earlier domains): a CLIP trained on the source
domains themselves with all seven augmentations (ICM never beat raw CLIP on fold C:
0.60–0.62 against 0.63 at λ ≤ 10); a separate pretraining pool whose styles followed
the class 90 % or 50 % of the time (raw probe 0.26 and 0.69 on fold C, a weaker
CLIP); a pool with styles independent of the class (raw 0.75, ICM up to 0.85); and hue
jitter ±0.05 in the pool with the two colour interventions (raw 0.76, ICM 0.87), which
was kept. The rules' thresholds were kept from the earlier design except where a
statistic changed: small-id-cost's joint rule (ID cost ≤ 0.03 and colour readout ≤
0.5, the readout's threshold proposed by the referee) and the new beats-aug-pca-probe
(≥ 0, as beats-aug-probe) were written before the tuning run and before any notebook
or held-out seed was run.

Recorded verdicts (``expect``) are those of the first run at these settings on the
notebook and held-out seeds (``scripts/run_claims.py clip_icm``); the rules and
settings were not changed after it. In that run icm-closes-gap and no-gain-uncovered
were reproduced on the held-out seeds (7/8 each) but their three-seed notebook
intervals crossed the margin, and zero-shot-gain held on the mean but on 5/8 held-out
seeds only: all three are recorded as partly reproduced. After that run only the
wording of small-id-cost's statistic was changed (same values and verdicts on the
re-run that refreshed the file's hash).
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
        "embeddings, leave-one-domain-out); our world builds the gap in by design, so "
        "this illustrates the experiment rather than reproduces it",
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
        expect="partly reproduced",
    ),
    Claim(
        "small-id-cost",
        "the subspace sheds the covered style at a small in-distribution cost",
        paper="ID accuracy stays close to CLIP's while the variant factors are "
        "removed (our reading of the trade-off)",
        where="§5–6 (λ trades invariance against information)",
        statistic="max(ID cost / 0.03, colour readout / 0.5), at most 1 exactly when "
        "ID cost ≤ 0.03 and colour readout ≤ 0.5 (ID cost: raw ID − ICM ID; colour "
        "readout: accuracy of a linear probe reading the colour from ICM's subspace on "
        "the readout set, whose colour is independent of the class, chance 0.10; both "
        "means over the four left-out domains)",
        rule=Rule.at_most(1.0),
        control="λ = 0 in ICM's place (the same k, no interventions)",
        fmt=".2f",
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
        expect="partly reproduced",
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
        expect="partly reproduced",
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
        control="λ = 0 in ICM's place",
        fmt=".3f",
        expect="reproduced",
    ),
    Claim(
        "beats-aug-pca-probe",
        "ICM beats a probe trained on the augmented images too, in the top-k PCA "
        "subspace",
        paper="(not in the paper; the same dimension cut as ICM, with the "
        "interventions used as training data instead of in M)",
        where="our addition",
        statistic="fold C: ICM OOD − OOD of a probe fitted on f(x) and f(x̃) "
        "projected on the λ = 0 basis (its C tuned alike)",
        rule=Rule.at_least(0.0),
        control="λ = 0 in ICM's place",
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


#: small-id-cost's two thresholds (its statistic divides by them: ≤ 1 when both hold)
ID_COST_MAX, READOUT_MAX = 0.03, 0.5


def _shed_at_cost(run: dict, arm: str) -> float:
    """small-id-cost's joint statistic for one seed's folds: max(ID cost / 0.03, colour
    readout / 0.5), each a mean over the left-out domains."""
    cost = _mean([f["raw"]["id"] - f[arm]["id"] for f in run.values()])
    readout = _mean([f[arm]["colour"] for f in run.values()])
    return max(cost / ID_COST_MAX, readout / READOUT_MAX)


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
        put("small-id-cost", s, _shed_at_cost(r, "icm"), _shed_at_cost(r, "pca"))
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
            C["icm"]["ood"] - C["aug"]["ood"], C["pca"]["ood"] - C["aug"]["ood"],
        )  # fmt: skip
        put(
            "beats-aug-pca-probe", s,
            C["icm"]["ood"] - C["aug_pca"]["ood"],
            C["pca"]["ood"] - C["aug_pca"]["ood"],
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
