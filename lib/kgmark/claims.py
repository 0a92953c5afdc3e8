"""The paper's claims as rules that can fail, measured on several seeds with a negative
control each.

Each seed trains its own R-GCN/DistMult autoencoder on UMLS and its own latent
diffusion model, and draws its own ``n_keys`` owner keys and attack randomness
(:func:`.experiment.run_seed`). For every key the positive is the KG watermarked with
it and the negative is the unwatermarked KG, both scored with that key, so an AUC is
over keys.

How the settings were chosen: the sizes (64-d embeddings, 4 nodes per 8×8×4 latent,
10 DDIM steps with one fixed-point refinement, the ring [1, 1.5) that fixes every
Fourier mask's size at 32 of 256 frequencies, 4 alignment clusters, the official
code's mask optimiser: Adam, lr 0.02, 50 epochs) were fixed before any detection was
run; the attack strengths (noise 0.1·std, 20 % deletion, 10 % insertion) follow the
paper's 10–30 % edit range. They were then run once on TUNING_SEEDS (seed 0) to check
the pipeline and the runtime, with 24 keys and 1000 diffusion training steps. Seed 0
gave (AUC per attack none / noise / delete / shuffle / insert): KGMark 1.00 / 1.00 /
0.86 / 1.00 / 0.87; alignment off 1.00 / – / – / 0.81 / 0.83; redundancy off 1.00 / – /
0.13 / – / –; Tree-Ring 1.00 / 1.00 / 0.56 / 0.31 / 0.35; Gaussian Shading 1.00 on
every attack; MRR 0.879 original, 0.640 KGMark, 0.640 random mask, 0.547 Tree-Ring,
0.068 Gaussian Shading. That run took about 45 s per seed, too slow for the held-out
check, so the keys were cut to 16 and the diffusion training to 600 steps; nothing
else was changed. The rules' thresholds were written before that run.

Revision after an outside referee (the rules and thresholds unchanged): the alignment
claim was measured on a pure shuffle, which leaves the alignment's input (the set of
relational profiles) as it was, so the shuffled KG scored exactly as the unshuffled
one and the claim could not fail. It is now measured on "reorder": 10 % of the
triples deleted, then the node ids shuffled (the strength the referee probed on one
fresh seed, 0.945 with alignment against 0.832 without; fixed before this run). The
masks now draw from their own generator (the random-mask control had been the learned
mask's initial logits), the wrong-key AUC pairs each score with the null score of the
same key, and a ring mask with KGMark's alignment and redundancy ("ring-align") and
the random mask are run under the edits, one ingredient changed at a time.
"""

from __future__ import annotations

import dataclasses
import statistics

from lib.common.claims import Claim, Rule, judge_all, seed_list

#: seeds on which the settings were checked
TUNING_SEEDS = (0, 1)
#: seeds the notebook evaluates (held-out seeds: lib.common.claims.HELDOUT_SEEDS)
NOTEBOOK_SEEDS = (10, 11, 12)

EDITS = ("noise", "delete", "insert")

#: the verdicts of the first run at these settings (notebook and held-out seeds), which
#: the chapter records and asserts
RECORDED = {
    "clean-auc": "reproduced",
    "edit-auc": "partly reproduced",
    "align-permutation": "partly reproduced",
    "redundancy-deletion": "partly reproduced",
    "small-lp-loss": "not reproduced",
    "learned-mask": "not reproduced",
}

_CLAIMS = (
    Claim(
        "clean-auc",
        "the watermark is detected on the unedited KG",
        paper="detection AUC up to 0.99",
        where="§1 (contributions); §5 (detection tables on three KGs)",
        statistic="KGMark's AUC, watermarked vs clean KG, no attack",
        rule=Rule.at_least(0.95),
        control="the watermarked KG scored with another owner's key",
        fmt=".3f",
    ),
    Claim(
        "edit-auc",
        "detection survives post-editing (noise, deletion, insertion)",
        paper="AUC ≈ 0.95 under post-editing attacks",
        where="§5 (robustness tables)",
        statistic="KGMark's AUC, mean over noise, 20 % deletion, 10 % insertion",
        rule=Rule.at_least(0.90),
        control="Tree-Ring (fixed ring, arrival order, no alignment) in its place",
        fmt=".3f",
    ),
    Claim(
        "align-permutation",
        "clustering-based alignment makes detection survive a new node order",
        paper="alignment adapts the watermark to spatial variations",
        where="§4.1 (Algorithm 1); ablation",
        statistic="KGMark's AUC after 10 % of the triples are deleted and the node ids "
        "shuffled (a pure shuffle leaves the alignment's input unchanged, so it "
        "could not fail)",
        rule=Rule.at_least(0.90),
        control="alignment off (latents from the arrival order)",
        fmt=".3f",
    ),
    Claim(
        "redundancy-deletion",
        "the redundant embedding makes detection survive node deletion",
        paper="redundant embedding hardens the watermark against temporal variations",
        where="§4.2 (Algorithm 2); ablation",
        statistic="KGMark's AUC after 20 % of the nodes are deleted",
        rule=Rule.at_least(0.85),
        control="redundancy off (one signature per latent position)",
        fmt=".3f",
    ),
    Claim(
        "small-lp-loss",
        "the watermark costs little downstream performance",
        paper="downstream performance loss within 0.02 %–9.7 %",
        where="§1 (contributions); §5 (transparency)",
        statistic="relative drop of link-prediction MRR (DistMult, filtered, test), "
        "original → watermarked",
        rule=Rule.at_most(0.097),
        control="Gaussian Shading (the inverted noise's signs set by the key)",
        fmt=".3f",
    ),
    Claim(
        "learned-mask",
        "the learnable mask is more transparent than a fixed ring of the same size",
        paper="the learnable mask matrix improves transparency",
        where="§4.3 (learnable mask) and the official code",
        statistic="relative MRR drop with the ring mask − with the learned mask",
        rule=Rule.at_least(0.005),
        control="a random symmetric mask of the same size in the learned mask's place",
        fmt=".3f",
    ),
    Claim(
        "recommendation-kgs",
        "results on the paper's KG-based recommendation data sets",
        paper="Last-FM, MIND, Alibaba-iFashion with a VGAE/RGAT and Stable Diffusion",
        where="§5",
        expect="not tested here",
    ),
    Claim(
        "finetune-attack",
        "robustness to fine-tuning the embeddings after edge deletion",
        paper="AUC stays high after fine-tuning",
        where="§5 (attacks)",
        expect="not tested here",
    ),
)

CLAIMS = tuple(
    dataclasses.replace(c, expect=RECORDED[c.id]) if c.id in RECORDED else c
    for c in _CLAIMS
)


def _drop(r, scheme):
    return (r["original"]["mrr"] - r[scheme]["mrr"]) / r["original"]["mrr"]


def measure_from_runs(runs: dict) -> dict:
    """Per-seed statistics and controls from :func:`.experiment.run_seeds`' output."""
    out = {c.id: {"values": {}, "control": {}} for c in CLAIMS if c.rule is not None}

    def put(cid, s, v, c):
        out[cid]["values"][s] = float(v)
        out[cid]["control"][s] = float(c)

    for s, r in runs.items():
        s = int(s)
        km = r["kgmark"]
        put("clean-auc", s, km["none"]["auc"], km["wrong_key_auc"])
        put(
            "edit-auc", s,
            statistics.fmean(km[a]["auc"] for a in EDITS),
            statistics.fmean(r["tree-ring"][a]["auc"] for a in EDITS),
        )  # fmt: skip
        put(
            "align-permutation",
            s,
            km["reorder"]["auc"],
            r["no-align"]["reorder"]["auc"],
        )
        put(
            "redundancy-deletion", s,
            km["delete"]["auc"], r["no-redundancy"]["delete"]["auc"],
        )  # fmt: skip
        put("small-lp-loss", s, _drop(r, "kgmark"), _drop(r, "gaussian-shading"))
        put(
            "learned-mask", s,
            _drop(r, "tree-ring") - _drop(r, "kgmark"),
            _drop(r, "tree-ring") - _drop(r, "random-mask"),
        )  # fmt: skip
    return out


def measure_claims(cfg, seeds, device="cpu", runs: dict | None = None) -> dict:
    """``{claim id: {"values": {seed: v}, "control": {seed: v}}}``; ``runs`` (from
    :func:`.experiment.run_seeds` on the same seeds) skips the training."""
    from .experiment import _check_cfg, run_seeds

    _check_cfg(cfg)
    seeds = seed_list(seeds)
    runs = run_seeds(cfg, seeds, device) if runs is None else runs
    return measure_from_runs(runs)


def judge(measured: dict) -> list:
    """:func:`lib.common.claims.evaluate` for every claim (untested ones included)."""
    return judge_all(CLAIMS, measured)
