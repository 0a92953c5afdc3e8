"""An analytic timeline of one block pair (dense block l−1 + MoE block l) on one device.

Two streams: **compute** runs operations one after another; **comm** runs the
All-to-Alls one after another. A program is a list of steps: ``("compute", name,
duration)``, ``("launch", name, duration)`` (start a transfer on the comm stream as soon
as the link is free and the launching compute has reached this point) and ``("wait",
name)`` (compute stalls until that transfer is complete). The time of a schedule is when
both streams are done: eq. (7)-(9) are the closed forms of the programs.
"""

from __future__ import annotations

import math

from lib.common import check_choice, check_int, check_positive, check_probability

SCHEDULES = ("top2", "top1", "shared", "scmoe_seq", "scmoe_overlap")
#: the reference setting at which a communication share ρ is quoted: 8 experts on 8
# devices, cf = 1
REF_EXPERTS, REF_CF = 8, 1.0


#: the component durations :func:`program` reads, and the measured ones
#:func:`components` starts from
PROGRAM_KEYS = (
    "attn",
    "ffn",
    "shared",
    "gate1",
    "gate2",
    "expert1",
    "expert2",
    "a2a1",
    "a2a2",
)
BASE_KEYS = ("attn", "ffn", "gate1", "gate2")


def _check_durations(name: str, c, keys) -> None:
    if not isinstance(c, dict):
        raise TypeError(
            f"{name}: expected a dict of durations with keys {keys}, got "
            f"{type(c).__name__}"
        )
    missing = [k for k in keys if k not in c]
    if missing:
        raise ValueError(f"{name}: expected keys {keys}, missing {missing}")
    for k in keys:
        v = c[k]
        if (
            isinstance(v, bool)
            or not isinstance(v, (int, float))
            or not (v >= 0 and math.isfinite(v))
        ):
            raise ValueError(
                f"{name}[{k!r}]: expected a finite duration >= 0, got {v!r}"
            )


def program(schedule: str, c: dict) -> list:
    """The steps of ``schedule`` for component durations ``c`` (keys: attn, ffn, shared,
    gate1, gate2, expert1, expert2, a2a1, a2a2; any unit)."""
    check_choice("schedule", schedule, SCHEDULES)
    _check_durations("c", c, PROGRAM_KEYS)
    pre = [
        ("compute", "attn l-1", c["attn"]),
        ("compute", "mlp l-1", c["ffn"]),
        ("compute", "attn l", c["attn"]),
    ]
    if schedule in ("top2", "top1"):
        k = "2" if schedule == "top2" else "1"
        return pre + [
            ("compute", "gate", c["gate" + k]),
            ("launch", "dispatch", c["a2a" + k]),
            ("wait", "dispatch"),
            ("compute", "experts", c["expert" + k]),
            ("launch", "combine", c["a2a" + k]),
            ("wait", "combine"),
        ]
    if schedule == "shared":
        # top-1 + shared expert on the same input: the shared expert hides one
        # All-to-All; like ep_step, the combine (the dispatch would do as well)
        return pre + [
            ("compute", "gate", c["gate1"]),
            ("launch", "dispatch", c["a2a1"]),
            ("wait", "dispatch"),
            ("compute", "experts", c["expert1"]),
            ("launch", "combine", c["a2a1"]),
            ("compute", "shared", c["shared"]),
            ("wait", "combine"),
        ]
    if schedule in ("scmoe_seq", "scmoe_overlap"):
        ovl = schedule == "scmoe_overlap"
        steps = [
            ("compute", "attn l-1", c["attn"]),
            ("compute", "gate", c["gate1"]),
            ("launch", "dispatch", c["a2a1"]),
        ]
        steps += [] if ovl else [("wait", "dispatch")]
        steps += [("compute", "mlp l-1", c["ffn"]), ("compute", "attn l", c["attn"])]
        steps += [("wait", "dispatch")] if ovl else []
        steps += [
            ("compute", "experts", c["expert1"]),
            ("launch", "combine", c["a2a1"]),
        ]
        steps += [] if ovl else [("wait", "combine")]
        steps += [("compute", "shared", c["shared"])]
        return steps + ([("wait", "combine")] if ovl else [])
    raise ValueError(f"schedule: expected one of {SCHEDULES}, got {schedule!r}")


def simulate(steps: list) -> tuple[list, float]:
    """Run a program: returns segments [(stream, name, start, end)] and the total
    time."""
    if isinstance(steps, (str, bytes)) or not isinstance(steps, (list, tuple)):
        raise TypeError(
            f"steps: expected a list of program steps (see program), got "
            f"{type(steps).__name__}"
        )
    for i, step in enumerate(steps):
        if (
            not isinstance(step, (list, tuple))
            or len(step) < 2
            or step[0] not in ("compute", "launch", "wait")
        ):
            raise ValueError(
                f"steps[{i}]: expected ('compute'|'launch', name, duration) or "
                f"('wait', name), got {step!r}"
            )
        if step[0] != "wait" and (
            len(step) != 3
            or isinstance(step[2], bool)
            or not isinstance(step[2], (int, float))
            or not (step[2] >= 0 and math.isfinite(step[2]))
        ):
            raise ValueError(
                f"steps[{i}]: expected a finite duration >= 0, got {step!r}"
            )
    t, link_free, done, segs = 0.0, 0.0, {}, []
    for step in steps:
        kind, name = step[0], step[1]
        if kind == "compute":
            segs.append(("compute", name, t, t + step[2]))
            t += step[2]
        elif kind == "launch":
            start = max(t, link_free)
            link_free = done[name] = start + step[2]
            segs.append(("comm", name, start, link_free))
        elif kind == "wait":
            if name not in done:
                raise ValueError(f"steps: wait for {name!r} before it was launched")
            t = max(t, done[name])
        else:
            raise ValueError(f"steps: unknown step kind {kind!r}")
    return segs, max([t, link_free])


def flop_components(
    d_model: int = 768, seq: int = 1024, mlp_mult: int = 4, n_experts: int = REF_EXPERTS
) -> dict:
    """Compute costs of the pieces of a block from multiply-accumulates per token
    (units: D² MACs).

    Attention: QKV and output projections 4D² plus scores and weighted values 2·T·D
    (causal: half of them, T·D); FFN: 2·mult·D²; gate: D·E. Defaults: a
    GPT-2-small-sized block (our assumption for the paper's GPT-MoE), used when no
    measured component times are given."""
    d = check_int("d_model", d_model, 1)
    t, m = check_int("seq", seq, 1), check_int("mlp_mult", mlp_mult, 1)
    n_experts = check_int("n_experts", n_experts, 1)
    attn = (4 * d * d + t * d) / (d * d)
    ffn = 2 * m
    gate = n_experts / d
    return {
        "attn": attn,
        "ffn": float(ffn),
        "shared": float(ffn),
        "gate1": gate,
        "gate2": gate,
    }


def components(
    base: dict,
    rho: float,
    n_experts: int = REF_EXPERTS,
    capacity_factor: float = REF_CF,
) -> dict:
    """Component durations for a communication share ``rho`` (quoted at the reference
    setting).

    ``base`` holds measured attn, ffn (one FFN over the device's N tokens), gate1,
    gate2. Experts compute cf·k·N padded slots: expert_k = k·cf·ffn. ρ is the share of
    the two All-to-Alls in the top-2 MoE time at the reference (E = 8 devices, cf = 1):
    ρ = 2·a2a₂ / (2·a2a₂ + 2·ffn), eq. (6); elsewhere the bytes that leave a device
    scale with k·cf·(1 − 1/E)."""
    _check_durations("base", base, BASE_KEYS)
    rho = check_probability("rho", rho)
    if rho >= 1:
        raise ValueError(f"rho: expected a share < 1, got {rho}")
    n_experts = check_int("n_experts", n_experts, 2)
    cf = check_positive("capacity_factor", capacity_factor)
    f = base["ffn"]
    a2a2_ref = rho * f / (1 - rho)  # eq. (6) solved
    scale = cf * (1 - 1 / n_experts) / (REF_CF * (1 - 1 / REF_EXPERTS))
    out = {k: base[k] for k in ("attn", "ffn", "gate1", "gate2")}
    out["shared"] = base.get("shared", f)
    out |= {
        "expert1": cf * f,
        "expert2": 2 * cf * f,
        "a2a1": a2a2_ref * scale / 2,
        "a2a2": a2a2_ref * scale,
    }
    return out


def step_time(schedule: str, c: dict, training: bool = False) -> float:
    """Time of one block pair; training = forward + a backward pass with twice the
    compute and the same All-to-All volume, overlapped the same way (the backward of a
    shortcut is a shortcut)."""
    check_choice("schedule", schedule, SCHEDULES)
    _check_durations("c", c, PROGRAM_KEYS)
    fwd = simulate(program(schedule, c))[1]
    if not training:
        return fwd
    bwd = {k: (v if k.startswith("a2a") else 2 * v) for k, v in c.items()}
    return fwd + simulate(program(schedule, bwd))[1]


def speedup_curve(
    base: dict,
    rhos,
    baseline: str = "top2",
    schedule: str = "scmoe_overlap",
    n_experts: int = REF_EXPERTS,
    capacity_factor: float = REF_CF,
    training: bool = False,
) -> list[float]:
    """time(baseline) / time(schedule) at each ρ in ``rhos``."""
    _check_durations("base", base, BASE_KEYS)
    if (
        isinstance(rhos, (str, bytes))
        or not hasattr(rhos, "__iter__")
        or isinstance(rhos, dict)
    ):
        raise TypeError(
            f"rhos: expected a list of communication shares, got {type(rhos).__name__}"
        )
    rhos = list(rhos)
    if not rhos:
        raise ValueError("rhos: expected at least one share, got none")
    for i, rho in enumerate(rhos):
        if check_probability(f"rhos[{i}]", rho) >= 1:
            raise ValueError(f"rhos[{i}]: expected a share < 1, got {rho}")
    check_choice("baseline", baseline, SCHEDULES)
    check_choice("schedule", schedule, SCHEDULES)
    out = []
    for rho in rhos:
        c = components(base, rho, n_experts, capacity_factor)
        out.append(step_time(baseline, c, training) / step_time(schedule, c, training))
    return out
