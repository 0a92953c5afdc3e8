"""The paper's claims as rules that can fail, measured on several seeds with a negative
control each.

Each seed draws its own split of the digits (training set of N = 32, a disjoint decoy
set of 32, 500 held-out digits, the rest for the feature net), its own fixed noisy
copies and its own initialisations; every variant of every seed trains in one ensemble
(:func:`lib.memorization.experiment.run_seeds`). Copy rate: the share of 500 samples
whose nearest training image, in the feature net's cosine similarity, is closer than
the 99th percentile of held-out digits' nearest similarity. Quality: the Fréchet
distance (FD) of those features to the held-out digits'.

How the settings were chosen (TUNING_SEEDS only; see the chapter's Experiment section):
width 256 because width 128 copied less than 3 % of the time within 4000 steps on
tuning seed 0 (N = 64, batch 128); N = 32 and batch 64 because at N = 64 copying (25 %
on tuning seed 0) needed batch 256, too slow for nine models on the CPU budget;
3000 steps at batch 64 and lr 1e-3 by the notebook's time budget. σ_n = 0.5 was picked
from {0.25, 0.5, 0.75, 1.0} as the largest copy-rate cut whose FD stays within 15 % of
EDM's on the tuning seeds, and 1.0 kept as "too large". The rules' margins were
written before any run at these settings; nothing was changed after the notebook or
held-out seeds were run.

Tuning seeds 0 and 1, final checkpoint (copy rate / FD): EDM 0.120/102.1 and
0.164/51.3; σ_n = 0.25: 0.038/80.4, 0.088/40.1; σ_n = 0.5: 0.010/72.8, 0.030/43.6;
σ_n = 0.75: 0.008/92.9, 0.020/85.0; σ_n = 1.0: 0.028/226.1, 0.010/66.4; fully ambient
at 0.5: 0.000/102.0, 0.000/51.4. The fully ambient model kept EDM's FD there, so it is
not the quality claim's control (σ_n = 1.0 is) and the SMOKE preset does not train it
(``Config.fully_ambient``); on four later seeds (2001–2004) its FD was 0.99–1.73 times
EDM's, so the tuning seeds' "same FD" did not carry over. Early stopping on the tuning
seeds: FD ratio 1.41 and 0.81 (the claim's statistic), so that claim was expected to be
fragile. Early stopping picks, per seed, the best checkpoint with the test metrics: more
tuning than the method gets (one σ_n for all seeds), which favours the baseline; but on
four later seeds (2001–2004) a fixed stop at 1500 steps, the same for every seed, also
copied no more than the method and had a lower FD on all four.

Recorded verdicts (``expect``) are those of the first run at these settings on the
notebook and held-out seeds; the rules and settings were not changed after it. The
controls of ``method-cuts-copies`` and ``beats-early-stopping`` were replaced later by
the fixed-copy ablation (a fresh noisy copy at every step), because the first controls
were constant (EDM against itself) or capped by construction; the rules stayed. Adding
that model to each seed's ensemble changes every training run (the batches come from one
generator), so the verdicts were recorded again from that run: ``method-keeps-quality``
went from not reproduced to partly reproduced, the others stayed.

Training length was fixed at 3000 steps by the time budget, not tuned. On three later
seeds (2005–2007) trained for 9000 steps EDM's copy rate rose from 0.10–0.18 to
0.53–0.76 and the method's reached 0.18–0.39, with FD ratios 1.11–1.33: the method
delays copying rather than preventing it at this scale.
"""

from __future__ import annotations

from lib.common.claims import Claim, Rule, judge_all, seed_list

#: seeds on which the settings were chosen
TUNING_SEEDS = (0, 1)
#: seeds the notebook evaluates (held-out seeds: lib.common.claims.HELDOUT_SEEDS)
NOTEBOOK_SEEDS = (10, 11, 12)

#: copy rate floor in ratios (one sample in a hundred: the calibration's false-copy
#: rate), so a seed where EDM copies nothing does not divide by zero
COPY_FLOOR = 0.01

_FEAT = "in the feature net's cosine similarity, 500 samples, N = 32"

CLAIMS = (
    Claim(
        "baseline-copies",
        "EDM trained on few images reproduces its training images",
        paper="EDM's samples are often near-copies of its 300 training images "
        "(DINOv2 similarity > 0.9; we did not copy the table's numbers)",
        where="Table 1 (CIFAR-10, FFHQ, Tiny-ImageNet; share with similarity > 0.9)",
        statistic="EDM's copy rate " + _FEAT,
        rule=Rule.at_least(0.1),
        control="the same samples scored against 32 real digits the model never saw "
        "(a decoy training set)",
        fmt=".3f",
        expect="partly reproduced",
    ),
    Claim(
        "method-cuts-copies",
        "ambient high noise / EDM low noise copies far less than EDM",
        paper="fewer memorised samples than EDM at every data size",
        where="Table 1 (share with similarity > 0.9)",
        statistic="copy rate of the method (σ_n = 0.5) / EDM's (floor 0.01)",
        rule=Rule.at_most(0.5),
        control="the fixed copy removed: the same loss with a fresh noisy copy "
        "y = x + σ_n η drawn at every step (its copy rate / EDM's)",
        fmt=".2f",
        expect="partly reproduced",
    ),
    Claim(
        "method-keeps-quality",
        "at nearly unchanged quality",
        paper="FID the same as or better than EDM's",
        where="Table 1 (FID)",
        statistic="FD of the method (σ_n = 0.5) / EDM's FD",
        rule=Rule.at_most(1.15),
        control="noisy data over more of the noise range: σ_n = 1.0 in the method's "
        "place",
        fmt=".2f",
        expect="partly reproduced",
    ),
    Claim(
        "large-sigma-hurts",
        "too large a σ_n hurts quality",
        paper="σ_n sets how much of the noise range sees only noisy data; the "
        "paper treats it as a knob between copying and quality (numbers not checked)",
        where="the method's description; our reading",
        statistic="FD at σ_n = 1.0 / FD at σ_n = 0.5",
        rule=Rule.at_least(1.2),
        control="the step from σ_n = 0 to 0.5 instead: FD at 0.5 / EDM's FD",
        fmt=".2f",
        expect="partly reproduced",
    ),
    Claim(
        "beats-early-stopping",
        "the method's trade-off beats early-stopped EDM",
        paper="(not in the paper; the baseline a reader would try first)",
        where="our addition",
        statistic="FD of the best EDM checkpoint copying no more than the method / "
        "the method's FD",
        rule=Rule.at_least(1.05),
        control="the fixed copy removed: the fresh-copy model in the method's place",
        fmt=".2f",
        expect="not reproduced",
    ),
    Claim(
        "stable-diffusion",
        "the same holds for Stable Diffusion fine-tuned on 10k LAION pairs",
        paper="lower similarity to training images at comparable quality",
        where="text-to-image experiment (10k LAION pairs)",
        expect="not tested here",
    ),
)


def _final(scores: dict) -> dict:
    return scores[max(scores)]


def early_stop_fd(edm_scores: dict, copy_budget: float) -> float:
    """FD of the EDM checkpoint with the lowest FD among those whose copy rate is at
    most ``copy_budget`` (the earliest checkpoint when none is): early stopping tuned
    with the test metrics, which favours it."""
    ok = [v["fd"] for v in edm_scores.values() if v["copy"] <= copy_budget]
    return min(ok) if ok else edm_scores[min(edm_scores)]["fd"]


def measure_from_runs(runs: dict, cfg) -> dict:
    """Per-seed statistics and controls from :func:`run_seeds`' output."""
    m, big = f"ambient_{cfg.sigma_n:g}", f"ambient_{max(cfg.sigma_ns):g}"
    fr = f"fresh_{cfg.sigma_n:g}"
    out = {c.id: {"values": {}, "control": {}} for c in CLAIMS if c.rule is not None}
    for s, sc in runs["scores"].items():
        e, a, b = _final(sc["edm"]), _final(sc[m]), _final(sc[big])
        f = _final(sc[fr])
        put = lambda cid, v, c: (  # noqa: E731
            out[cid]["values"].__setitem__(s, float(v)),
            out[cid]["control"].__setitem__(s, float(c)),
        )
        put("baseline-copies", e["copy"], e["copy_decoy"])
        ce = max(e["copy"], COPY_FLOOR)
        put(
            "method-cuts-copies",
            max(a["copy"], COPY_FLOOR) / ce,
            max(f["copy"], COPY_FLOOR) / ce,
        )
        put("method-keeps-quality", a["fd"] / e["fd"], b["fd"] / e["fd"])
        put("large-sigma-hurts", b["fd"] / a["fd"], a["fd"] / e["fd"])
        put(
            "beats-early-stopping",
            early_stop_fd(sc["edm"], a["copy"]) / a["fd"],
            early_stop_fd(sc["edm"], f["copy"]) / f["fd"],
        )
    return out


def measure_claims(cfg, seeds, device="cpu", runs: dict | None = None) -> dict:
    """``{claim id: {"values": {seed: v}, "control": {seed: v}}}``; ``runs`` (from
    :func:`run_seeds` on the same seeds) skips the training."""
    from .experiment import run_seeds

    seeds = seed_list(seeds)
    runs = run_seeds(cfg, seeds, device) if runs is None else runs
    return measure_from_runs(runs, cfg)


def judge(measured: dict) -> list:
    """:func:`lib.common.claims.evaluate` for every claim (untested ones included)."""
    return judge_all(CLAIMS, measured)
