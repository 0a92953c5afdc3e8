"""The paper's claims as rules that can fail, measured on several seeds with a negative
control each.

What is measured and what is modelled:

- **measured** (gloo, two CPU processes): the step times of one block pair in four
  schedules, each the median of interleaved repeats from a barrier, maximised over the
  ranks. A seed is a fresh set of weights and tokens. The share of the real
  communication the overlap hides is (T_seq − T_overlap) / (T_seq − T_local), where
  T_local is the same sequential step with no transfer at all (the buffers stay on the
  rank). Its negative control puts the sequential schedule, timed a second time in the
  same interleaved loop, in place of the overlapped one: a share that this control
  also reaches is timing noise, not overlap.
- **measured on an emulated link** (marked modelled): the same schedules over the real
  transport completed no earlier than bytes / bandwidth, the bandwidth set so that the
  All-to-Alls are a share ρ = 0.6 of the MoE layer's time. The compute is real, the
  network is a sleep. Statistic: the median over paired repeats of T_top2 / T_ovl.
- **modelled**: the analytic timeline at GPT-2-small FLOP counts. One value, no seeds
  (tests/test_claims_files.py wants eight held-out values for every claim with a
  rule; that check fails for these two rows, see the chapter's issue #24 report).
- **quality** (measured): character LMs of 4 blocks (2 block pairs) at width 128, at
  equal parameters (top-2 and top-1 get one expert more than ScMoE, which holds the
  shared expert instead; top-2 and ScMoE also pass each token through two FFNs).

How the settings were chosen: nothing was tuned on any seed. The rule thresholds were
written before the first run of this version (the 0.02 bits-per-character margin of the
quality rule and the 10 % windows around the paper's speed-ups come from the earlier
version of the chapter; the 0.10 floor of the real-overlap share is ours, a share a
timing-noise control should not reach); the quality settings (200 steps of 16 windows,
learning rate 2e-3) were fixed by the CPU budget of `make claims` before any run.

``expect`` was written before the ledger run and only where a pilot on seeds 0-2 (the
notebook's) made a verdict likely: partly for the real overlap (its rule held on 3 of 3
pilot seeds, its control's mean was close to the floor) and for the modelled
speed-ups; the quality claim, never run at this size before, is recorded as "not
reproduced" so that nothing about it is asserted; the ledger shows the verdict it got.
"""

from __future__ import annotations

from lib.common.claims import Claim, Rule, judge_all, seed_list

#: nothing is tuned (see the module docstring)
TUNING_SEEDS: tuple = ()
#: seeds of the notebook's ledger rows (held-out seeds: lib.common.claims.HELDOUT_SEEDS)
NOTEBOOK_SEEDS = (0, 1, 2)

_CTRL_SEQ = "the sequential schedule (timed again) in place of the overlapped one"

CLAIMS = (
    Claim(
        "overlap-real",
        "overlapping hides part of the real All-to-All (gloo, 2 processes)",
        paper="communication overlapped up to 100 %",
        where="abstract",
        statistic="share of the real gloo communication hidden (8 copies per "
        "transfer): median(T_seq − T_ovl) / median(T_seq − T_local), paired repeats",
        rule=Rule.at_least(0.10),
        control=_CTRL_SEQ,
        expect="partly reproduced",
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
        paper="1.40× (+40 %, 8×A30 PCIe)",
        where="arXiv v2, §5",
        statistic="T_top2 / T_ovl, one block pair, emulated link at ρ = 0.6",
        rule=Rule.near(1.40, 0.10),
        control="sequential ScMoE in place of the overlapped one (T_top2 / T_seq)",
        modelled=True,
        expect="not reproduced",
    ),
    Claim(
        "train-modelled",
        "training speed-up of ScMoE over top-2",
        paper="1.49×",
        where="abstract",
        statistic="timeline model at ρ = 0.6, GPT-2-small FLOP counts (one value)",
        rule=Rule.near(1.49, 0.10),
        modelled=True,
        expect="partly reproduced",
    ),
    Claim(
        "infer-modelled",
        "inference speed-up of ScMoE over top-2",
        paper="1.82×",
        where="abstract",
        statistic="timeline model at ρ = 0.6, GPT-2-small FLOP counts (one value)",
        rule=Rule.near(1.82, 0.10),
        modelled=True,
        expect="partly reproduced",
    ),
    Claim(
        "quality-top2",
        "ScMoE is as good as top-2 at equal parameters",
        paper="comparable or better (GPT-MoE, SwinV2-MoE)",
        where="abstract; §5",
        statistic="validation bits/char, ScMoE − top-2 (paired by seed)",
        rule=Rule.at_most(0.02),
        control="top-1 (one FFN per token) in place of ScMoE",
        expect="not reproduced",
        fmt=".3f",
    ),
    Claim(
        "speedup-measured-gpus",
        "the 1.49× / 1.82× are measured on 8 GPUs",
        paper="1.49× / 1.82×",
        where="abstract",
        expect="not tested here",
    ),
)


def _speed_values(runs: list, seeds) -> dict:
    """The speed claims' per-seed values from :func:`measure_speed`'s list."""
    out = {
        k: {"values": {}, "control": {}}
        for k in ("overlap-real", "overlap-70", "infer-pcie-emulated")
    }
    for s, m in zip(seeds, runs):
        real = next(r for r in m["runs"] if r["rho"] is None and r["copies"] > 1)
        emul = next(r for r in m["runs"] if r["rho"] is not None)
        for k in ("overlap-real", "overlap-70"):
            out[k]["values"][s] = real["paired"]["hidden"]
            out[k]["control"][s] = real["paired"]["hidden_control"]
        out["infer-pcie-emulated"]["values"][s] = emul["paired"]["top2_over_overlap"]
        out["infer-pcie-emulated"]["control"][s] = emul["paired"]["top2_over_seq"]
    return out


def measure_claims(cfg, seeds, device="cpu") -> dict:
    """Per-seed values of each tested claim's statistic and of its negative control:
    ``{claim id: {"values": {seed: v}, "control": {seed: v}}}`` (plain floats). The
    modelled claims get one value (keyed by the first seed) and no control."""
    from .experiment import (
        _check_cfg,
        modelled_speedups,
        speed_spec,
        train_many,
    )
    from .parallel import measure_speed

    _check_cfg(cfg)
    seeds = seed_list(seeds)
    spec = speed_spec(cfg, seeds=seeds, rhos=(0.6,), copies=(max(cfg.sp_copies),))
    out = _speed_values(
        measure_speed(spec, cfg.world_size, cfg.timeout_s * len(seeds)), seeds
    )
    model = modelled_speedups()
    for cid, key in (
        ("train-modelled", "train_top2_0.6"),
        ("infer-modelled", "infer_top2_0.6"),
    ):
        out[cid] = {"values": {seeds[0]: model[key]}, "control": {}}
    variants = ("scmoe", "top2", "top1")
    jobs = [(v, s) for s in seeds for v in variants]
    bpc = {job: r["bpc"] for job, r in zip(jobs, train_many(cfg, jobs, device))}
    out["quality-top2"] = {
        "values": {s: bpc["scmoe", s] - bpc["top2", s] for s in seeds},
        "control": {s: bpc["top1", s] - bpc["top2", s] for s in seeds},
    }
    return out


def judge(measured: dict) -> list:
    """:func:`lib.common.claims.evaluate` for every claim of the chapter (untested ones
    included)."""
    return judge_all(CLAIMS, measured)


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
