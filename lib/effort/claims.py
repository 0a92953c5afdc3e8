"""The paper's claims as rules that can fail, measured on several seeds with a
negative control each.

Each seed draws its own real patches, fakes, validation and test sets, head
initialisation and minibatches (:func:`.experiment.prepare_seed`); every arm of a
seed sees the same data, the same head initialisation and the same batches, for the
same number of steps. The foundation model is the stored one (one pretraining, as a
detector built on CLIP has one CLIP).

How the settings were chosen (TUNING_SEEDS only, ``benchmarks/effort_tuning.py``):
each arm's Adam learning rate from the same grid {1e-3, 3e-3, 1e-2, 3e-2, 1e-1} by the
lowest validation cross-entropy on the *seen* generator (real vs nearest-neighbour
up-sampling, validation patches from the training band), averaged over the two
tuning seeds; the unseen generators were not looked at. The generator families, the
patch size, the backbone and the number of steps were fixed before any detector was
trained. The rules' thresholds were written before the notebook and held-out seeds
were run.

The tuning table (validation loss on the seen generator, mean over seeds 0 and 1; the
chosen rate in brackets):

    arm          1e-3    3e-3    1e-2    3e-2    1e-1
    probe       0.696   0.668  [0.662]  0.673   0.802
    full        0.220  [0.218]  0.378   0.692   0.693
    lora1       0.673   0.564   0.240  [0.177]  0.686
    lora4       0.639   0.381   0.233  [0.224]  0.694
    effort      0.687   0.623   0.363  [0.225]  0.275
    effort_reg  0.695   0.667  [0.660]  0.673   0.799
    principal   0.653   0.443  [0.210]  0.362   0.705
    middle      0.677   0.598   0.296  [0.196]  0.521

The LoRA baseline of ``beats-lora-unseen`` is rank 1, the rank with the lower tuned
validation loss (until an outside referee's review it was the better of ranks 1 and 4
on the unseen test families, which let the test set choose the baseline, and the
verdict was *not reproduced*; against rank 1 Effort leads by 0.021 and 0.012 on the
notebook and held-out means, and the principal-subspace control leads as much, so
the recorded verdict is now *partly reproduced*).

The regularisers are averaged over the adapted layers, as in the official loss (they
were summed before the referee's review, eight times the official weight); the
``effort_reg`` row above was re-tuned after that change (summed, it read 0.696, 0.668,
[0.661], 0.673, 0.804: the same rate wins, and the detector still barely moves from the
linear probe: the penalties hold the residual triplet where it started).

Recorded verdicts (``expect``) are those of the first run at these settings on the
notebook and held-out seeds; the rules and settings were not changed after it.
"""

from __future__ import annotations

from lib.common.claims import Claim, Rule, judge_all, seed_list

#: seeds on which the settings were chosen
TUNING_SEEDS = (0, 1)
#: LoRA's rank for the comparison, chosen like the learning rates: rank 1's tuned
#: validation loss on the seen generator (0.177) is below rank 4's (0.224)
LORA_ARM = "lora1"
#: seeds the notebook evaluates (held-out seeds: lib.common.claims.HELDOUT_SEEDS)
NOTEBOOK_SEEDS = (10, 11, 12)

_UNSEEN = "mean AUC over the five unseen generators"

CLAIMS = (
    Claim(
        "beats-full-unseen",
        "Effort generalises to unseen generators better than full fine-tuning",
        paper="ablation on CLIP ViT-L/14: Effort above full fine-tuning and LoRA on "
        "unseen data (numbers not checked); cross-dataset AUC 0.917 vs the best prior "
        "0.878 (CDFA)",
        where="§5 ablation table; repo README table (FF++ → 7 datasets)",
        statistic=f"Effort − full fine-tuning, {_UNSEEN}",
        rule=Rule.at_least(0.02),
        control="the principal-subspace control (top triplet trained) in Effort's "
        "place",
        fmt=".3f",
        expect="not reproduced",
    ),
    Claim(
        "beats-lora-unseen",
        "Effort generalises better than LoRA with the same head and budget",
        paper="LoRA below Effort in the ablation (numbers not checked)",
        where="§5 ablation table",
        statistic=f"Effort − LoRA rank 1 (the rank chosen on validation), {_UNSEEN}",
        rule=Rule.at_least(0.01),
        control="the principal-subspace control in Effort's place",
        fmt=".3f",
        expect="partly reproduced",
    ),
    Claim(
        "beats-probe-unseen",
        "Effort generalises better than a linear probe on the frozen model",
        paper="GenImage mean accuracy 91.1 vs UnivFD (a linear probe on CLIP) 79.5",
        where="GenImage table (trained on SDv1.4)",
        statistic=f"Effort − linear probe, {_UNSEEN}",
        rule=Rule.at_least(0.02),
        control="the principal-subspace control in Effort's place",
        fmt=".3f",
        expect="not reproduced",
    ),
    Claim(
        "seen-matches-full",
        "on the seen generator Effort matches full fine-tuning",
        paper="in-domain AUC of all fine-tuned detectors near 0.99 (FF++), SDv1.4 "
        "99.8 %",
        where="GenImage table (SDv1.4 column)",
        statistic="Effort − full fine-tuning, AUC on the seen generator",
        rule=Rule.at_least(-0.02),
        control="the linear probe (no adaptation) in Effort's place",
        fmt=".3f",
        expect="partly reproduced",
    ),
    Claim(
        "principal-worse",
        "training the principal subspace instead generalises worse",
        paper="adapting the principal components distorts pretrained knowledge "
        "(the orthogonal/residual subspace is the paper's design choice)",
        where="§4 (method motivation), analysis of subspaces",
        statistic=f"principal-subspace control − Effort, {_UNSEEN}",
        rule=Rule.at_most(-0.02),
        control="a middle triplet trained in the principal one's place",
        fmt=".3f",
        expect="not reproduced",
    ),
    Claim(
        "rank-kept",
        "Effort keeps the feature space's effective rank; fine-tuning collapses it",
        paper="explained-variance curves: the fine-tuned feature space is "
        "low-rank, Effort's stays high-rank",
        where="Fig. 1 / the PCA analysis (repo: analysis/pca_rank.py)",
        statistic="effective rank of the test features after training ÷ before "
        "(the pretrained model's)",
        rule=Rule.at_least(0.9),
        control="full fine-tuning in Effort's place",
        fmt=".3f",
        expect="not reproduced",
    ),
    Claim(
        "asymmetry",
        "the fake class is learned much faster than the real class",
        paper="the training loss on fakes falls fast while the loss on reals "
        "stays high (the 'asymmetry phenomenon')",
        where="§3, loss-curve figure",
        statistic="full fine-tuning: mean real loss ÷ mean fake loss over training",
        rule=Rule.at_least(1.5),
        control="two random halves of the real patches as 'real' and 'fake'",
        fmt=".2f",
        expect="not reproduced",
    ),
    Claim(
        "params",
        "0.19M trainable parameters (ViT-L/14)",
        paper="0.19M against 18–133M for the other detectors",
        where="efficiency table; repo: effort_detector.py (24 × 4 × 2049)",
        expect="not tested here",
    ),
    Claim(
        "genimage",
        "GenImage mean accuracy 91.1 % when trained on SDv1.4",
        paper="91.1 vs DRCT 89.5, NPR 88.6, UnivFD 79.5",
        where="GenImage table",
        expect="not tested here",
    ),
)


def measure_from_runs(cfg, runs: dict) -> dict:
    """Per-seed statistics and controls from :func:`.experiment.run_seeds`' output."""
    from .experiment import asymmetry

    out = {c.id: {"values": {}, "control": {}} for c in CLAIMS if c.rule is not None}

    def put(cid, s, v, c):
        out[cid]["values"][s] = float(v)
        out[cid]["control"][s] = float(c)

    for s, r in runs.items():
        s = int(s)
        un = {a: r[a]["unseen"] for a in r if "unseen" in r[a]}
        lora = un[LORA_ARM]
        put("beats-full-unseen", s, un["effort"] - un["full"],
            un["principal"] - un["full"])  # fmt: skip
        put("beats-lora-unseen", s, un["effort"] - lora, un["principal"] - lora)
        put("beats-probe-unseen", s, un["effort"] - un["probe"],
            un["principal"] - un["probe"])  # fmt: skip
        put("seen-matches-full", s, r["effort"]["seen"] - r["full"]["seen"],
            r["probe"]["seen"] - r["full"]["seen"])  # fmt: skip
        put("principal-worse", s, un["principal"] - un["effort"],
            un["middle"] - un["effort"])  # fmt: skip
        base = r["probe"]["erank"]
        put("rank-kept", s, r["effort"]["erank"] / base, r["full"]["erank"] / base)
        put("asymmetry", s, asymmetry(r["full"]["curves"]),
            asymmetry(r["real_vs_real"]["curves"]))  # fmt: skip
    return out


def measure_claims(cfg, seeds, device="cpu", runs: dict | None = None) -> dict:
    """``{claim id: {"values": {seed: v}, "control": {seed: v}}}``; ``runs`` (from
    :func:`.experiment.run_seeds` on the same seeds) skips the training."""
    from .experiment import _check_cfg, run_seeds
    from .pretrain import load_foundation

    _check_cfg(cfg)
    seeds = seed_list(seeds)
    if runs is None:
        runs = run_seeds(cfg, seeds, load_foundation(), device)
    return measure_from_runs(cfg, runs)


def judge(measured: dict) -> list:
    """:func:`lib.common.claims.evaluate` for every claim (untested ones included)."""
    return judge_all(CLAIMS, measured)
