"""Self-checks for the scmoe chapter's exercises: ``exercises.ex1(answer)`` says right,
close or wrong (with a hint) without giving the answer away. Every answer is computed
here from the chapter's own functions: the router (:func:`route`) for the dropped
tokens, the two-stream timeline (:func:`program`, :func:`simulate`) for the overlap."""

from __future__ import annotations

import functools

import numpy as np
import torch

from lib.common.exercises import Feedback, check_choice, check_number, check_numbers

from .moe import route
from .timeline import components, flop_components, program, simulate, speedup_curve

#: the (q, E) pairs at which a formula for the dropped share is tried
EX1_CASES = ((0.4, 4), (0.3, 8), (0.6, 2), (0.5, 3), (0.9, 16))
#: the values of a/f at which the threshold formulas are tried
EX2_RATIOS = (0.25, 2 / 3, 1.0, 2.0)


def _evaluate(exercise: str, fn, points) -> tuple[list | None, Feedback | None]:
    """``fn`` at every point of ``points`` (each a tuple of arguments), or the
    feedback saying why it could not be evaluated."""
    if not callable(fn):
        raise TypeError(
            f"answer: expected a function (for example a lambda), got "
            f"{type(fn).__name__}"
        )
    try:
        return [float(fn(*p)) for p in points], None
    except Exception as err:  # the reader's function: report, do not crash
        return None, Feedback(
            exercise, "wrong", f"your function raised {type(err).__name__}: {err}"
        )


@functools.lru_cache(maxsize=None)
def dropped_share(q: float, n_experts: int, n_tokens: int = 1200) -> float:
    """The share of tokens that top-1 routing at capacity factor 1 drops when a share
    ``q`` of ``n_tokens`` goes to expert 0 and the rest is spread evenly (measured with
    :func:`route` on logits that produce this routing)."""
    hot = round(q * n_tokens)
    logits = torch.zeros(n_tokens, n_experts)  # (N, E)
    logits[:hot, 0] = 5.0
    rest = torch.arange(n_tokens - hot) % (n_experts - 1) + 1
    logits[torch.arange(hot, n_tokens), rest] = 5.0
    return 1 - route(logits, 1, 1.0).keep.float().mean().item()


def ex1(answer) -> Feedback:
    """Exercise scmoe-ex1: the share of dropped tokens. ``answer`` is either a number
    (for q = 0.4, E = 4, as in the solution's check) or a function ``f(q, E)``, tried at
    several (q, E) with q > 1/E."""
    hint = "the crowded expert keeps N/E tokens (its capacity); the others drop none"
    if callable(answer):
        got, fail = _evaluate("scmoe ex1", answer, EX1_CASES)
        if fail is not None:
            return fail
        truth = [dropped_share(q, e) for q, e in EX1_CASES]
        return check_numbers(
            "scmoe ex1", got, truth, atol=2e-3, rtol=0.0, close=0.3, hint=hint
        )
    return check_number(
        "scmoe ex1", answer, dropped_share(0.4, 4), atol=2e-3, close=0.3, hint=hint
    )


def _window_gap(rho: float, ratio: float, which: str) -> float:
    """End of the transfer minus end of the computation that hides it, in the
    overlapped ScMoE program at share ``rho`` for a/f = ``ratio``: zero when the
    transfer exactly fills its window."""
    base = {"attn": ratio, "ffn": 1.0, "gate1": 0.0, "gate2": 0.0}
    segs, _ = simulate(program("scmoe_overlap", components(base, rho)))
    end = {(stream, name): t1 for stream, name, _, t1 in segs}
    hider = "attn l" if which == "dispatch" else "shared"
    return end[("comm", which)] - end[("compute", hider)]


@functools.lru_cache(maxsize=None)
def fill_share(ratio: float, which: str) -> float:
    """The communication share ρ at which the ``which`` All-to-All ("dispatch" or
    "combine") exactly fills its window, for a/f = ``ratio``: bisection on the
    timeline."""
    lo, hi = 0.0, 1 - 1e-9
    for _ in range(80):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if _window_gap(mid, ratio, which) < 0 else (lo, mid)
    return (lo + hi) / 2


def _peak_share(base: dict) -> float:
    rhos = np.linspace(0.3, 0.95, 1301)
    curve = speedup_curve(base, rhos, baseline="scmoe_seq")
    return float(rhos[int(np.argmax(curve))])


def ex2(dispatch, combine, peak=None) -> Feedback:
    """Exercise scmoe-ex2: ``dispatch`` and ``combine`` are functions of x = a/f giving
    the share ρ* at which each All-to-All fills its window (top-1, cf = 1), tried at
    several x. ``peak`` (optional): the ρ at which the overlap's gain over the
    sequential ScMoE is largest for the chapter's GPT-2-sized block (right within
    0.01)."""
    xs = [(x,) for x in EX2_RATIOS]
    parts = []
    for name, fn in (("dispatch", dispatch), ("combine", combine)):
        got, fail = _evaluate(f"scmoe ex2 ({name})", fn, xs)
        if fail is not None:
            return fail
        truth = [fill_share(x, name) for x in EX2_RATIOS]
        window = "block l-1's MLP and block l's attention" if name == "dispatch" else ""
        window = window or "the shared expert"
        parts.append(
            check_numbers(
                f"scmoe ex2 ({name})",
                got,
                truth,
                rtol=1e-3,
                close=0.1,
                hint=f"c₁ = ρf/(2(1−ρ)) must equal the time of {window}",
            )
        )
    if peak is not None:
        parts.append(
            check_number(
                "scmoe ex2 (peak)",
                peak,
                _peak_share(flop_components()),
                atol=0.01,
                close=0.1,
                hint="the saved time stops growing once both windows are full",
            )
        )
    bad = [p for p in parts if not p.ok]
    if not bad:
        return Feedback("scmoe ex2", "right")
    status = "close" if all(p.status == "close" for p in bad) else "wrong"
    return Feedback("scmoe ex2", status, "; ".join(str(p) for p in bad))


NAMES = {
    "attn l-1": "attention",
    "attn l": "attention",
    "mlp l-1": "mlp",
    "gate": "gate",
    "experts": "experts",
    "shared": "shared expert",
}
EX3_OPTIONS = ("shared expert", "attention", "mlp", "gate", "experts", "nothing")


def hidden_transfers(schedule: str, rho: float = 0.6) -> dict:
    """For each All-to-All of ``schedule`` (at share ``rho``, the chapter's block): the
    computations that run while it is in flight."""
    segs, _ = simulate(program(schedule, components(flop_components(), rho)))
    comp = [(n, a, b) for s, n, a, b in segs if s == "compute"]
    return {
        name: sorted({NAMES[c] for c, a, b in comp if min(b, t1) - max(a, t0) > 1e-12})
        for s, name, t0, t1 in segs
        if s == "comm"
    }


def ex3(n_hidden, hidden_by: str) -> Feedback:
    """Exercise scmoe-ex3: in the ``shared`` variant, how many of the two All-to-Alls
    can still be overlapped (``n_hidden``), and with what (``hidden_by``, one of
    :data:`EX3_OPTIONS`)? Computed from the ``shared`` program's timeline."""
    hidden = {k: v for k, v in hidden_transfers("shared").items() if v}
    count = check_number(
        "scmoe ex3 (how many)",
        n_hidden,
        len(hidden),
        rtol=0.0,
        atol=0.1,
        close=0.0,
        hint="which computation needs neither the MoE's output nor feeds its input?",
    )
    what = sorted({c for v in hidden.values() for c in v}) or ["nothing"]
    choice = check_choice(
        "scmoe ex3 (with what)",
        hidden_by,
        what[0],
        EX3_OPTIONS,
        hint="without the shortcut the MoE reads h_cur: what else reads only h_cur?",
    )
    if count.ok and choice.ok:
        return Feedback("scmoe ex3", "right")
    bad = [str(p) for p in (count, choice) if not p.ok]
    return Feedback("scmoe ex3", "wrong", "; ".join(bad))


__all__ = ["ex1", "ex2", "ex3", "dropped_share", "fill_share", "hidden_transfers"]
