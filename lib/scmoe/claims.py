"""The paper's claims as rules that can fail, measured on several seeds with a negative
control each.

What is measured and what is modelled:

- **measured** (gloo, two CPU processes): the step times of one block pair in four
  schedules, timed in repeats that run every schedule once in a fresh random order
  (the same order on both ranks), each from a barrier. A seed is a fresh set of weights
  and tokens. The share of the real communication the overlap hides is
  median(T_seq − T_ovl) / median(T_seq − T_local) over the repeats, where T_local is the
  same sequential step with no transfer at all (the buffers stay on the rank). Its
  negative control puts the sequential schedule, timed a second time in the same
  repeats, in place of the overlapped one: a share that this control also reaches is
  timing noise or an order effect, not overlap. (An earlier version timed the schedules
  in a fixed cyclic order; the control then came out positive on every seed, an order
  effect in the direction of the claim. The random order removes it.)
- **measured on an emulated link** (marked modelled): the same schedules over the real
  transport completed no earlier than bytes / bandwidth, the bandwidth set so that the
  All-to-Alls are a share ρ = 0.6 of the top-1 MoE layer's time (the paper's PCIe
  share). The compute is real, the network is a sleep. Statistic: the median over
  paired repeats of T_top2 / T_ovl; a second row takes top-2 at FLOP-proportional
  expert cost (its step less what its experts, timed alone, take beyond twice top-1's).
- **modelled**: the analytic timeline at GPT-2-small FLOP counts, judged against the
  arXiv v2 speed-ups at the communication shares the paper states for them (ρ = 0.6 on
  8×A30 PCIe: +30 % training, +40 % inference; ρ = 0.15 on 8×A800 NVLink: +11 %,
  +15 %). One value, no seeds (tests/test_claims_files.py accepts one value for a
  modelled claim, which can never be "reproduced"). The abstract's 1.49× / 1.82× come
  without a communication share, so the model cannot be judged against them.
- **quality** (measured): character LMs of 4 blocks (2 block pairs) at width 128, at
  equal parameters (top-2 and top-1 get one expert more than ScMoE, which holds the
  shared expert instead; top-2 and ScMoE also pass each token through two FFNs).
  Paired by seed. At 200 steps these models are barely past a character-bigram table,
  and the control (top-1) passes the same rule, so the row is inconclusive whatever
  its verdict.

How the settings were chosen: nothing was tuned on any seed. The rule thresholds were
written before the first run of this version (the 0.02 bits-per-character margin of the
quality rule and the 10 % windows around the paper's speed-ups come from the earlier
version of the chapter; the 0.10 floor of the real-overlap share is ours, a share a
timing-noise control should not reach); the quality settings (200 steps of 16 windows,
learning rate 2e-3) were fixed by the CPU budget of `make claims` before any run; the
8 copies per real transfer were chosen, before any seed was judged, so that the
realised communication share of the gloo exchange on this CPU (0.6 to 0.8) lies in the
paper's PCIe range.

``expect`` is written from the notebook's seeds (0-2) before the held-out seeds were
run with the code it judges (random timing order, 2026-12-02): see the comment at each
claim. The modelled rows are deterministic: their expect is their verdict.
"""

from __future__ import annotations

import dataclasses

from lib.common.claims import Claim, Rule, judge_all, seed_list

#: nothing is tuned (see the module docstring)
TUNING_SEEDS: tuple = ()
#: seeds of the notebook's ledger rows (held-out seeds: lib.common.claims.HELDOUT_SEEDS)
NOTEBOOK_SEEDS = (0, 1, 2)

_CTRL_SEQ = "the sequential schedule (timed again) in place of the overlapped one"
_MODEL = "timeline model at GPT-2-small FLOP counts (one value)"
#: claims whose per-seed values are differences of two methods run on the same seed
PAIRED = ("quality-top2",)

CLAIMS = (
    Claim(
        "overlap-real",
        "overlapping hides part of the real All-to-All (gloo, 2 processes)",
        paper="communication overlapped up to 100 %",
        where="abstract",
        statistic="share of the real gloo communication hidden (8 copies per "
        "transfer): median(T_seq − T_ovl) / median(T_seq − T_local), paired repeats "
        "in random order",
        rule=Rule.at_least(0.10),
        control=_CTRL_SEQ,
        # pilot on seeds 0-2 (random order, machine loaded by other jobs): 1 of 3
        # seeds above 0.10, mean at the floor (0.11), control about 0: nothing is
        # asserted. The ledger run then gave "reproduced" on both seed sets (0.40 and
        # 0.32, control -0.01 and -0.03); expect was not raised after seeing it.
        expect="not reproduced",
    ),
    Claim(
        "overlap-70",
        "70–100 % of the communication is overlapped",
        paper="70–100 %",
        where="arXiv v2, §5 (PCIe and NVLink)",
        statistic="share of the real gloo communication hidden (as above)",
        rule=Rule.at_least(0.70),
        control=_CTRL_SEQ,
        expect="not reproduced",
    ),
    Claim(
        "infer-pcie-emulated",
        "inference speed-up of ScMoE over top-2 where communication is 60 % of MoE "
        "time",
        paper="1.40× (+40 %, 8×A30 PCIe, ρ = 60 %)",
        where="arXiv v2, §5",
        statistic="T_top2 / T_ovl, one block pair, emulated link at ρ = 0.6",
        rule=Rule.near(1.40, 0.10),
        control="sequential ScMoE in place of the overlapped one (T_top2 / T_seq)",
        modelled=True,
        # pilot on seeds 0-2: 1 of 3 seeds in the window, mean 1.66 above it, and the
        # control in the window on all three
        expect="not reproduced",
    ),
    Claim(
        "infer-pcie-emulated-flops",
        "the same, top-2 at FLOP-proportional expert cost",
        paper="1.40× (+40 %, 8×A30 PCIe, ρ = 60 %)",
        where="arXiv v2, §5",
        statistic="(T_top2 − excess) / T_ovl, emulated link at ρ = 0.6; excess = "
        "top-2's expert time beyond twice top-1's (timed alone)",
        rule=Rule.near(1.40, 0.10),
        control="sequential ScMoE in place of the overlapped one",
        modelled=True,
        # pilot on seeds 0-2: no seed in the window (1.05, 1.54, 1.89)
        expect="not reproduced",
    ),
    Claim(
        "train-modelled-pcie",
        "training speed-up of ScMoE over top-2 where communication is 60 % of MoE time",
        paper="1.30× (+30 %, 8×A30 PCIe, ρ = 60 %)",
        where="arXiv v2, §5",
        statistic=f"{_MODEL} at ρ = 0.6",
        rule=Rule.near(1.30, 0.10),
        modelled=True,
        expect="not reproduced",  # deterministic: 1.46
    ),
    Claim(
        "infer-modelled-pcie",
        "inference speed-up of ScMoE over top-2 where communication is 60 % of MoE "
        "time",
        paper="1.40× (+40 %, 8×A30 PCIe, ρ = 60 %)",
        where="arXiv v2, §5",
        statistic=f"{_MODEL} at ρ = 0.6",
        rule=Rule.near(1.40, 0.10),
        modelled=True,
        expect="not reproduced",  # deterministic: 1.69
    ),
    Claim(
        "train-modelled-nvlink",
        "training speed-up of ScMoE over top-2 where communication is 15 % of MoE time",
        paper="1.11× (+11 %, 8×A800 NVLink, ρ = 15 %)",
        where="arXiv v2, §5",
        statistic=f"{_MODEL} at ρ = 0.15",
        rule=Rule.near(1.11, 0.10),
        modelled=True,
        expect="partly reproduced",  # deterministic: 1.05
    ),
    Claim(
        "infer-modelled-nvlink",
        "inference speed-up of ScMoE over top-2 where communication is 15 % of MoE "
        "time",
        paper="1.15× (+15 %, 8×A800 NVLink, ρ = 15 %)",
        where="arXiv v2, §5",
        statistic=f"{_MODEL} at ρ = 0.15",
        rule=Rule.near(1.15, 0.10),
        modelled=True,
        expect="partly reproduced",  # deterministic: 1.08
    ),
    Claim(
        "quality-top2",
        "ScMoE is as good as top-2 at equal parameters (inconclusive at this size: "
        "the models are barely past a bigram table and the control passes too)",
        paper="comparable or better (GPT-MoE, SwinV2-MoE)",
        where="abstract; §5",
        statistic="validation bits/char, ScMoE − top-2 (paired by seed)",
        rule=Rule.at_most(0.02),
        control="top-1 (one FFN per token) in place of ScMoE",
        expect="not reproduced",  # nothing asserted: inconclusive (see docstring)
        fmt=".3f",
    ),
    Claim(
        "speedup-abstract",
        "1.49× training and 1.82× inference speed-up over top-2 (8 GPUs)",
        paper="1.49× / 1.82×",
        where="abstract (communication share and hardware not stated)",
        expect="not tested here",
    ),
)


def _speed_values(runs: list, seeds) -> dict:
    """The speed claims' per-seed values from :func:`measure_speed`'s list."""
    keys = ("overlap-real", "overlap-70", "infer-pcie-emulated")
    out = {k: {"values": {}, "control": {}} for k in keys}
    out["infer-pcie-emulated-flops"] = {"values": {}, "control": {}}
    for s, m in zip(seeds, runs):
        real = next(r for r in m["runs"] if r["rho"] is None and r["copies"] > 1)
        emul = next(r for r in m["runs"] if r["rho"] is not None)["paired"]
        for k in ("overlap-real", "overlap-70"):
            out[k]["values"][s] = real["paired"]["hidden"]
            out[k]["control"][s] = real["paired"]["hidden_control"]
        out["infer-pcie-emulated"]["values"][s] = emul["top2_over_overlap"]
        out["infer-pcie-emulated"]["control"][s] = emul["top2_over_seq"]
        out["infer-pcie-emulated-flops"]["values"][s] = emul["top2_flop_over_overlap"]
        out["infer-pcie-emulated-flops"]["control"][s] = emul["top2_flop_over_seq"]
    return out


#: the modelled claims and the key of :func:`modelled_speedups` each one reads
_MODELLED = (
    ("train-modelled-pcie", "train_top2_0.6"),
    ("infer-modelled-pcie", "infer_top2_0.6"),
    ("train-modelled-nvlink", "train_top2_0.15"),
    ("infer-modelled-nvlink", "infer_top2_0.15"),
)


def _modelled_values(seed: int = 0) -> dict:
    """The modelled claims' one value each (keyed by ``seed``), no control."""
    from .experiment import modelled_speedups

    model = modelled_speedups()
    return {cid: {"values": {seed: model[k]}, "control": {}} for cid, k in _MODELLED}


def measure_claims(cfg, seeds, device="cpu") -> dict:
    """Per-seed values of each tested claim's statistic and of its negative control:
    ``{claim id: {"values": {seed: v}, "control": {seed: v}}}`` (plain floats). The
    modelled claims get one value (keyed by the first seed) and no control."""
    from .experiment import _check_cfg, speed_spec, train_many
    from .parallel import measure_speed

    _check_cfg(cfg)
    seeds = seed_list(seeds)
    spec = speed_spec(cfg, seeds=seeds, rhos=(0.6,), copies=(max(cfg.sp_copies),))
    out = _speed_values(
        measure_speed(spec, cfg.world_size, cfg.timeout_s * len(seeds)), seeds
    )
    out |= _modelled_values(seeds[0])
    variants = ("scmoe", "top2", "top1")
    jobs = [(v, s) for s in seeds for v in variants]
    runs = train_many(cfg, jobs, device)
    bpc = {v: [r["bpc"] for (w, _), r in zip(jobs, runs) if w == v] for v in variants}
    out |= quality_values({"seeds": list(seeds), "bpc": bpc})
    return out


def quality_values(quality: dict) -> dict:
    """The quality claim's per-seed values from a dict like
    :func:`lib.scmoe.quality_experiment`'s (``{"seeds": [...], "bpc": {variant:
    [bits/char per seed]}}``, e.g. the stored QUALITY run): ScMoE − top-2 and, as the
    control, top-1 − top-2, in validation bits per character."""
    if not isinstance(quality, dict) or not {"seeds", "bpc"} <= set(quality):
        raise TypeError(
            f"quality: expected a dict with 'seeds' and 'bpc', got {quality!r:.60}"
        )
    seeds = seed_list(quality["seeds"])
    need = ("scmoe", "top2", "top1")
    if any(len(quality["bpc"].get(v, ())) != len(seeds) for v in need):
        raise ValueError(
            f"quality: expected bits/char of {need} for each of the {len(seeds)} "
            f"seeds, got variants {sorted(quality['bpc'])}"
        )
    b = {v: dict(zip(seeds, quality["bpc"][v])) for v in need}
    return {
        "quality-top2": {
            "values": {s: b["scmoe"][s] - b["top2"][s] for s in seeds},
            "control": {s: b["top1"][s] - b["top2"][s] for s in seeds},
        }
    }


def judge(measured: dict) -> list:
    """:func:`lib.common.claims.evaluate` for every claim of the chapter (untested ones
    included); the claims of :data:`PAIRED` are marked paired (per-seed differences of
    two methods run on the same seed)."""
    return [
        dataclasses.replace(r, paired=True) if r.claim.id in PAIRED else r
        for r in judge_all(CLAIMS, measured)
    ]


def measured_from_file(data: dict, which: str = "notebook") -> dict:
    """The per-seed values of ``results/claims/scmoe.json`` (as loaded by
    :func:`lib.common.claims.load_claims_file`) back in :func:`measure_claims`'s form,
    for the notebook or the held-out seeds."""
    if which not in ("notebook", "heldout"):
        raise ValueError(f"which: expected 'notebook' or 'heldout', got {which!r}")
    if not isinstance(data, dict) or "claims" not in data:
        raise TypeError(
            f"data: expected the dict of load_claims_file, got {type(data).__name__}"
        )
    out = {}
    for cid, c in data["claims"].items():
        r = c[which]
        if r.get("method") is None:
            continue
        m, k = r["method"], r.get("control")
        out[cid] = {
            "values": dict(zip(m["seeds"], m["values"])),
            "control": {} if k is None else dict(zip(k["seeds"], k["values"])),
        }
    return out
