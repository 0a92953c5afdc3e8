"""The paper's claims as rules that can fail, measured on several seeds with a negative
control each (synthetic setting of the authors' tutorial).

A *seed* is one batch of synthetic deployments drawn from its own generator
(:func:`lib.wctm.experiment.run_seed`): ``cfg.null_streams`` no-shift streams and
``cfg.claim_streams`` streams of each shift, all with the official monitor settings
(adaptation at the X-CTM's Ville alarm, reference set = calibration + pre-adaptation
test points, MLP density ratio refitted every step). Each statistic is one number per
seed.

How the settings were chosen: nothing was tuned on these seeds. The recorded
expectations (``expect``) were set before the first full run: claims judged from a
binomial share or a ratio over 25-100 streams per seed are recorded as at least
*partly* reproduced, because with three notebook seeds their t-interval is wide; the
table shows the verdict the seeds actually earn. The rules are the
chapter's first version's criteria ("rarely" = at most a quarter of the streams,
"fast" = a mean delay under 100 steps, "several times" = at least 3, diagnosis right in
most streams), written before this revision's runs; the monitor's settings are the
official code's. The concept-shift delays of the paper column come from the official
repository's result files, not from the paper.
"""

from __future__ import annotations

import dataclasses

import torch

from lib.common.claims import Claim, Rule, judge_all, mean_values, seed_list

from .adapt import adaptive_pvalues
from .conformal import weighted_pvalues
from .martingales import composite_jumper, first_alarm
from .watch import alarm_summary, diagnose

#: seeds on which nothing was tuned (the rules predate this revision's runs); kept for
# the interface of the ledger
TUNING_SEEDS = ()
#: seeds the notebook evaluates (held-out seeds: lib.common.claims.HELDOUT_SEEDS)
NOTEBOOK_SEEDS = (0, 1, 2)

CLAIMS = (
    Claim(
        "no-shift-valid",
        "without a shift WATCH's false-alarm rate is at most α_V = 0.01",
        paper="≤ α (Ville's inequality)",
        where="§3, anytime validity",
        statistic="share of no-shift streams with a WATCH Ville alarm",
        rule=Rule.at_most(0.01),
        control="fixed calibration set from t = 0 (no growing reference)",
        expect="partly reproduced",
        fmt=".3f",
    ),
    Claim(
        "benign-silent",
        "under benign covariate shift WATCH rarely alarms",
        paper="rare alarms (Fig. 2–3)",
        where="§4, benign shift",
        statistic="share of benign-shift streams with a WATCH Ville alarm",
        rule=Rule.at_most(0.25),
        control="no adaptation (the standard CTM)",
        expect="partly reproduced",
    ),
    Claim(
        "benign-coverage",
        "under benign covariate shift WATCH's intervals keep ≈ 90 % coverage",
        paper="coverage ≈ 1 − α (Fig. 2)",
        where="§4, benign shift",
        statistic="post-change coverage of WATCH's 90 % intervals",
        rule=Rule.between(0.87, 0.93),
        control="unweighted intervals (the CTM's)",
        fmt=".3f",
    ),
    Claim(
        "extreme-fast",
        "under extreme (out-of-support) covariate shift WATCH alarms fast",
        paper="fast alarm (Fig. 3)",
        where="§4, extreme shift",
        statistic="WATCH Ville delay*, a missed change counted as 900 steps",
        rule=Rule.at_most(100.0),
        control="anticonservative rule (eq. wcp-anti) off",
        expect="not reproduced",
        fmt=".0f",
    ),
    Claim(
        "concept-faster",
        "under concept shift WATCH detects several times sooner than PR-ST (WATCH does "
        "not adapt there, so this compares its CTM p-values with PR-ST)",
        paper="delays ≈ 104–121 vs 480–545 (MEPS)",
        where="repo result files dd_results/, not the paper",
        statistic="PR-ST delay* / WATCH Ville delay*",
        rule=Rule.at_least(3.0),
        control="no shift (the same ratio on no-shift streams)",
        expect="partly reproduced",
        fmt=".1f",
    ),
    Claim(
        "diagnosis",
        "the X-CTM and WATCH together name the kind of shift",
        paper="correct diagnosis (Fig. 1, 3)",
        where="§3.3, diagnosis",
        statistic="share of streams diagnosed right, worst of the four scenarios",
        rule=Rule.at_least(0.5),
        control="the standard CTM in WATCH's place (no re-weighting)",
    ),
    Claim(
        "real-data",
        "the same holds on the paper's real data (MEPS, wine, airfoil, MNIST-C, "
        "CIFAR-10-C)",
        paper="Figs. 4–6",
        where="§5",
        expect="not tested here",
    ),
)


def claim_runs(cfg, seeds, device="cpu") -> dict:
    """The monitors' outputs per seed: ``{seed: {scenario: out}}``; the streams'
    batches are not kept."""
    from .experiment import _check_cfg, run_synthetic

    _check_cfg(cfg)
    runs = {}
    for s in seed_list(seeds):
        c = dataclasses.replace(cfg, seed=s)
        r = {}
        for sc in ("none", "benign", "concept", "extreme"):
            S = cfg.null_streams if sc == "none" else cfg.claim_streams
            pr = sc in ("none", "concept")
            out, batch, _ = run_synthetic(c, sc, device, S=S, pr=pr)
            if sc == "none":  # the validity control: a fixed calibration set from t=0
                one = torch.ones_like(batch.test_scores)
                p = weighted_pvalues(
                    batch.cal_scores,
                    torch.ones_like(batch.cal_scores),
                    batch.test_scores,
                    one,
                    out["u"],
                    cfg.alpha,
                )
                out["fixed_cal_ville"] = first_alarm(
                    composite_jumper(p), 1 / cfg.ville_alpha
                )
                # adaptation forced at the changepoint with the true ratio (w = 1):
                # what the fixed reference set costs when adaptation starts
                cp = torch.full_like(out["adapt_start"], cfg.changepoint)
                ad = adaptive_pvalues(
                    batch.cal_scores,
                    batch.test_scores,
                    batch.cal_x,
                    batch.test_x,
                    out["u"],
                    cp,
                    cfg.alpha,
                    ratio="logistic",
                    min_fit=cfg.T + 1,  # never fitted: unit weights
                )
                t = torch.arange(cfg.T, device=cp.device)[None, :]
                p = torch.where(t >= cfg.changepoint, ad["p"], out["p_ctm"])
                out["forced_ville"] = first_alarm(
                    composite_jumper(p), 1 / cfg.ville_alpha
                )
            r[sc] = out
        runs[s] = r
    return runs


def _rate(alarm) -> float:
    return float((alarm >= 0).double().mean())


def _delay(alarm, cfg) -> float:
    return alarm_summary(alarm, cfg.changepoint, cfg.T)["delay_cens"]


def values_from_runs(cfg, runs: dict) -> dict:
    """Per-seed values of each tested claim and of its control, from
    :func:`claim_runs`."""
    from .experiment import EXPECTED, _check_cfg

    _check_cfg(cfg)
    if not isinstance(runs, dict):
        raise TypeError(
            f"runs: expected the dict of claim_runs, got {type(runs).__name__}"
        )
    out = {c.id: {"values": {}, "control": {}} for c in CLAIMS if c.rule is not None}
    cp = cfg.changepoint
    for s, r in runs.items():
        none, ben, con, ext = r["none"], r["benign"], r["concept"], r["extreme"]
        out["no-shift-valid"]["values"][s] = _rate(none["watch_ville"])
        out["no-shift-valid"]["control"][s] = _rate(none["fixed_cal_ville"])
        out["benign-silent"]["values"][s] = _rate(ben["watch_ville"])
        out["benign-silent"]["control"][s] = _rate(ben["ctm_ville"])
        out["benign-coverage"]["values"][s] = float(ben["cover_watch"][:, cp:].mean())
        out["benign-coverage"]["control"][s] = float(ben["cover_ctm"][:, cp:].mean())
        out["extreme-fast"]["values"][s] = _delay(ext["watch_ville"], cfg)
        out["extreme-fast"]["control"][s] = _delay(ext["no_anti_ville"], cfg)
        out["concept-faster"]["values"][s] = _delay(con["pr_st"], cfg) / _delay(
            con["watch_ville"], cfg
        )
        out["concept-faster"]["control"][s] = _delay(none["pr_st"], cfg) / _delay(
            none["watch_ville"], cfg
        )
        right, right_ctrl = [], []
        for sc in ("none", "benign", "concept", "extreme"):
            o = r[sc]
            right.append(float((o["diagnosis"] == EXPECTED[sc]).double().mean()))
            d0 = diagnose(o["x_alarm"], o["ctm_ville"])  # no adaptation
            right_ctrl.append(float((d0 == EXPECTED[sc]).double().mean()))
        out["diagnosis"]["values"][s] = min(right)
        out["diagnosis"]["control"][s] = min(right_ctrl)
    return out


def measure_claims(cfg, seeds, device="cpu") -> dict:
    """Per-seed values of each tested claim's statistic and of its negative control:
    ``{claim id: {"values": {seed: v}, "control": {seed: v}}}``."""
    return values_from_runs(cfg, claim_runs(cfg, seeds, device))


def judge(measured: dict) -> list:
    """:func:`lib.common.claims.evaluate` for every claim of the chapter."""
    return judge_all(CLAIMS, measured)


def full_values(measured: dict | None) -> dict | None:
    """Mean over seeds of each claim's statistic (the "ours FULL" column)."""
    return mean_values(measured)
