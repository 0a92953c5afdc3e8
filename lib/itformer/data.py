"""EngineMT-QA-lite: generated engine units and templated questions about them.

A unit is ``n_cycles`` flight cycles of ``cycle_len`` samples on ``n_channels``
sensors. Every sensor reads a health index through its own sign and gain (C-MAPSS's
recipe: temperatures rise, pressures fall as the engine wears), plus noise; the wear
``d(t) = a·t^b`` is steady (``b = 1``) or accelerating (``b = 3``). Zero, one or two
sensors develop a **fault**: a step up or down that starts at the beginning of a cycle
and stays.

Questions follow EngineMT-QA's four stages (understanding, perception, reasoning,
decision). Three question types name a channel or a cycle (``SPECIFIC``): they are the
ones where choosing what to read from the series depends on the question.
"""

from __future__ import annotations

import torch

from lib.common import check_generator, check_instance, check_int, check_nonnegative
from lib.common.gpt import Vocab

#: (question type, stage, names a channel or a cycle, closed answer)
QTYPES = (
    ("describe", "understanding", False, False),
    ("any_fault", "perception", False, True),
    ("fault_in", "perception", True, True),
    ("first_fault", "perception", True, True),
    ("onset", "reasoning", True, True),
    ("accelerating", "reasoning", False, True),
    ("action", "decision", False, True),
)
QTYPE_NAMES = tuple(q[0] for q in QTYPES)
STAGE_OF = {q[0]: q[1] for q in QTYPES}
SPECIFIC = tuple(q[0] for q in QTYPES if q[2])
CLOSED = tuple(q[0] for q in QTYPES if q[3])
MAX_CHANNELS, MAX_CYCLES = 8, 12

_WORDS = (
    "q: a: ? is there any fault in which channel faults first at what cycle does "
    "start the wear accelerating action yes no continue inspect replace describe "
    "none up down steady accel"
).split()
#: the placeholder token whose slots receive the time tokens (TAL)
TS = "<ts>"


def _check_unit(unit) -> dict:
    """The dict of :func:`make_units`."""
    keys = ("x", "a", "accel", "fault_cycle", "fault_dir")
    if not isinstance(unit, dict) or any(k not in unit for k in keys):
        raise TypeError(
            f"unit: expected make_units' dict (with {keys}), got {type(unit).__name__}"
        )
    return unit


def make_vocab() -> Vocab:
    """The word vocabulary: specials, <ts>, question/answer words, c0…, w0…"""
    chans = [f"c{i}" for i in range(MAX_CHANNELS)]
    cycles = [f"w{i}" for i in range(MAX_CYCLES)]
    return Vocab([TS, *_WORDS, *chans, *cycles])


def channel_signs(n_channels: int) -> torch.Tensor:
    """Fixed sensor physics: the sign and gain with which each channel reads wear."""
    if check_int("n_channels", n_channels, 1) > MAX_CHANNELS:
        raise ValueError(
            f"n_channels: expected at most {MAX_CHANNELS}, got {n_channels}"
        )
    sign = torch.tensor([1.0, -1.0, 1.0, -1.0, 1.0, -1.0, 1.0, -1.0])[:n_channels]
    gain = torch.linspace(0.8, 1.4, n_channels)
    return sign * gain  # (V,)


def make_units(
    n: int,
    n_channels: int = 6,
    n_cycles: int = 10,
    cycle_len: int = 12,
    noise: float = 0.35,
    generator: torch.Generator | None = None,
) -> dict:
    """``n`` units: ``x`` (n, V, L) and their ground truth (faults, wear)."""
    check_int("n", n, 1)
    check_int("n_channels", n_channels, 2)
    check_int("n_cycles", n_cycles, 3)
    check_int("cycle_len", cycle_len, 2)
    check_nonnegative("noise", noise)
    if n_channels > MAX_CHANNELS or n_cycles > MAX_CYCLES:
        raise ValueError(
            f"n_channels, n_cycles: expected at most {MAX_CHANNELS} and "
            f"{MAX_CYCLES}, got {n_channels} and {n_cycles}"
        )
    check_generator("generator", generator)
    g, V, C = generator, n_channels, n_cycles
    L = C * cycle_len
    t = torch.linspace(0, 1, L)  # (L,)
    a = 0.4 + 1.6 * torch.rand(n, generator=g)  # wear at the end
    accel = torch.rand(n, generator=g) < 0.5
    b = torch.where(accel, 3.0, 1.0)
    wear = a[:, None] * t[None] ** b[:, None]  # (n, L)
    base = 0.5 * torch.randn(n, V, 1, generator=g)
    x = base + channel_signs(V)[None, :, None] * wear[:, None]  # (n, V, L)
    # zero, one or two faulty channels, distinct onsets (cycles 1 … C-2)
    n_fault = torch.multinomial(torch.tensor([0.3, 0.4, 0.3]), n, True, generator=g)
    chans = torch.argsort(torch.rand(n, V, generator=g), 1)[:, :2]  # (n, 2)
    onset = torch.argsort(torch.rand(n, C - 2, generator=g), 1)[:, :2] + 1  # (n, 2)
    direction = torch.where(torch.rand(n, 2, generator=g) < 0.5, -1.0, 1.0)
    size = 1.6 + 0.8 * torch.rand(n, 2, generator=g)
    fault_cycle = torch.full((n, V), -1, dtype=torch.long)  # -1: no fault
    fault_dir = torch.zeros(n, V)
    cyc = torch.arange(L) // cycle_len  # (L,)
    for j in range(2):
        on = n_fault > j  # (n,)
        idx = torch.nonzero(on).squeeze(1)
        ch = chans[idx, j]
        fault_cycle[idx, ch] = onset[idx, j]
        fault_dir[idx, ch] = direction[idx, j]
        step = (cyc[None] >= onset[idx, j, None]).float()  # (m, L)
        x[idx, ch] += (direction[idx, j] * size[idx, j])[:, None] * step
    x = x + noise * torch.randn(n, V, L, generator=g)
    return dict(
        x=x,
        a=a,
        accel=accel,
        fault_cycle=fault_cycle,
        fault_dir=fault_dir,
        n_fault=n_fault,
        cycle_len=cycle_len,
    )


def _answer(unit: dict, i: int, qtype: str, ch: int) -> list:
    fc = unit["fault_cycle"][i]  # (V,)
    faulty = torch.nonzero(fc >= 0).squeeze(1).tolist()
    faulty.sort(key=lambda v: int(fc[v]))
    if qtype == "describe":
        out = []
        for v in faulty:
            up = float(unit["fault_dir"][i, v]) > 0
            out += [f"c{v}", "up" if up else "down", f"w{int(fc[v])}"]
        out = out or ["none"]
        return out + ["accel" if bool(unit["accel"][i]) else "steady"]
    if qtype == "any_fault":
        return ["yes" if faulty else "no"]
    if qtype == "fault_in":
        return ["yes" if int(fc[ch]) >= 0 else "no"]
    if qtype == "first_fault":
        return [f"c{faulty[0]}" if faulty else "none"]
    if qtype == "onset":
        return [f"w{int(fc[ch])}" if int(fc[ch]) >= 0 else "none"]
    if qtype == "accelerating":
        return ["yes" if bool(unit["accel"][i]) else "no"]
    if qtype == "action":  # two faults or heavy wear: replace; one fault: inspect
        if len(faulty) == 2 or float(unit["a"][i]) > 1.6:
            return ["replace"]
        return ["inspect" if faulty else "continue"]
    raise ValueError(f"qtype: expected one of {QTYPE_NAMES}, got {qtype!r}")


def _question(qtype: str, ch: int) -> list:
    return {
        "describe": ["describe", "the", "wear", "?"],
        "any_fault": ["is", "there", "any", "fault", "?"],
        "fault_in": ["is", "there", "any", "fault", "in", f"c{ch}", "?"],
        "first_fault": ["which", "channel", "faults", "first", "?"],
        "onset": [
            "at",
            "what",
            "cycle",
            "does",
            "the",
            "fault",
            "in",
            f"c{ch}",
            "start",
            "?",
        ],
        "accelerating": ["is", "the", "wear", "accelerating", "?"],
        "action": ["which", "action", "?"],
    }[qtype]


def describe(unit: dict, i: int) -> list:
    """Unit ``i`` in words: each fault's channel, direction and onset, then the wear."""
    n = _check_unit(unit)["fault_cycle"].shape[0]
    if check_int("i", i, 0) >= n:
        raise ValueError(f"i: expected a unit index < {n}, got {i}")
    return _answer(unit, i, "describe", 0)


def make_qa(unit: dict, per_unit: int = 2, generator=None) -> list:
    """``per_unit`` questions per unit: ``[(unit index, qtype, question, answer)]``.

    Channel questions ask about a faulty channel half of the time (``onset`` always,
    when the unit has a fault; else about a healthy channel, answer ``none``)."""
    _check_unit(unit)
    check_int("per_unit", per_unit, 1)
    check_generator("generator", generator)
    g = generator
    n, V = unit["fault_cycle"].shape
    qt = torch.randint(len(QTYPES), (n, per_unit), generator=g)
    coin = torch.rand(n, per_unit, generator=g) < 0.5
    pick = torch.randint(V, (n, per_unit, 2), generator=g)
    out = []
    for i in range(n):
        faulty = torch.nonzero(unit["fault_cycle"][i] >= 0).squeeze(1).tolist()
        for k in range(per_unit):
            qtype = QTYPE_NAMES[int(qt[i, k])]
            ch = int(pick[i, k, 0])
            if faulty and (qtype == "onset" or (qtype == "fault_in" and coin[i, k])):
                ch = faulty[int(pick[i, k, 1]) % len(faulty)]
            out.append((i, qtype, _question(qtype, ch), _answer(unit, i, qtype, ch)))
    return out


def encode_qa(
    qa: list,
    vocab: Vocab,
    n_slots: int,
    q_len: int = 10,
    a_len: int = 8,
    facts: list | None = None,
):
    """Token tensors for the frozen LM and the bridge.

    Layout of a row: ``<bos> <ts>×n_slots q: question a: answer <eos> <pad>…``.
    Returns ``ids`` (n, T), ``targets`` (n, T) (shifted by one), ``loss_mask`` (n, T)
    (answer tokens and <eos> only: the answer-only loss), ``question`` (n, q_len) ids,
    ``q_mask`` (n, q_len), ``unit`` (n,), ``qtype`` (n,) indices into QTYPE_NAMES and
    ``slot`` (T,) bool, where the time tokens go. ``facts`` (LM pretraining only): per
    row, None or the words written into the slots in place of <ts> (the unit's
    description, padded with <ts>)."""
    if isinstance(qa, (str, bytes)) or not isinstance(qa, (list, tuple)):
        raise TypeError(
            f"qa: expected make_qa's list of questions, got {type(qa).__name__}"
        )
    check_instance("vocab", vocab, Vocab, "a lib.common.gpt.Vocab")
    check_int("n_slots", n_slots, 1)
    check_int("q_len", q_len, 1)
    check_int("a_len", a_len, 1)
    T = 1 + n_slots + 1 + q_len + 1 + a_len + 1
    n = len(qa)
    if n == 0:
        raise ValueError("qa: expected at least one question, got an empty list")
    if facts is not None and (not isinstance(facts, (list, tuple)) or len(facts) != n):
        got = type(facts).__name__
        if isinstance(facts, (list, tuple)):
            got += f" of length {len(facts)}"
        raise ValueError(
            f"facts: expected None or one entry per question ({n}), got {got}"
        )
    ids = torch.full((n, T + 1), vocab.pad_id, dtype=torch.long)
    mask = torch.zeros(n, T + 1, dtype=torch.bool)
    question = torch.full((n, q_len), vocab.pad_id, dtype=torch.long)
    for r, (_, qtype, q, a) in enumerate(qa):
        if len(q) > q_len or len(a) > a_len:
            raise ValueError(
                f"q_len, a_len: expected at least {len(q)} and {len(a)}, got "
                f"{q_len} and {a_len}"
            )
        fill = list(facts[r]) if facts is not None and facts[r] is not None else []
        fill = (fill + [TS] * n_slots)[:n_slots]
        row = ["<bos>"] + fill + ["q:"] + q + ["a:"]
        start = len(row)
        row = row + a + ["<eos>"]
        ids[r, : len(row)] = torch.tensor(vocab.encode(row))
        mask[r, start : len(row)] = True
        question[r, : len(q)] = torch.tensor(vocab.encode(q))
    slot = torch.zeros(T, dtype=torch.bool)
    slot[1 : 1 + n_slots] = True
    return dict(
        ids=ids[:, :-1],
        targets=ids[:, 1:],
        loss_mask=mask[:, 1:],
        question=question,
        q_mask=question != vocab.pad_id,
        unit=torch.tensor([u for u, *_ in qa]),
        qtype=torch.tensor([QTYPE_NAMES.index(t) for _, t, *_ in qa]),
        slot=slot,
    )
