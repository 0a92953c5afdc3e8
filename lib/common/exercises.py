"""Self-checks for the chapters' exercises.

A chapter's ``lib/<slug>/exercises.py`` computes each answer from the chapter's own
functions and compares the reader's answer with it through the helpers here. They say
*right*, *close* (with a hint) or *wrong* (with a hint), and never print the answer.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence

STATUSES = ("right", "close", "wrong")


@dataclasses.dataclass(frozen=True)
class Feedback:
    """The result of a self-check; truthy when the answer is right."""

    exercise: str
    status: str
    hint: str = ""

    def __post_init__(self):
        if self.status not in STATUSES:
            raise ValueError(f"status: expected one of {STATUSES}, got {self.status!r}")

    @property
    def ok(self) -> bool:
        return self.status == "right"

    def __bool__(self) -> bool:
        return self.ok

    def __str__(self) -> str:
        mark = {"right": "✓ right", "close": "≈ close", "wrong": "✗ not yet"}
        tail = "" if self.ok or not self.hint else f": {self.hint}"
        return f"{self.exercise}: {mark[self.status]}{tail}"

    __repr__ = __str__


def _real(name: str, x) -> float:
    if (
        isinstance(x, bool)
        or not isinstance(x, (int, float))
        and not hasattr(x, "__float__")
    ):
        raise TypeError(f"{name}: expected a real number, got {type(x).__name__}")
    try:
        v = float(x)
    except (TypeError, ValueError):
        raise TypeError(
            f"{name}: expected a real number, got {type(x).__name__}"
        ) from None
    return v


def check_number(
    exercise: str,
    answer,
    truth: float,
    *,
    rtol: float = 1e-3,
    atol: float = 0.0,
    close: float = 0.2,
    hint: str = "",
) -> Feedback:
    """Right within ``atol + rtol·|truth|``; close within ``atol + close·|truth|``."""
    a, t = _real("answer", answer), _real("truth", truth)
    if not (rtol >= 0 and atol >= 0 and close >= rtol):
        raise ValueError(
            f"rtol, atol, close: expected 0 <= rtol <= close and atol >= 0, got "
            f"{rtol}, {atol}, {close}"
        )
    if not math.isfinite(a):
        return Feedback(exercise, "wrong", "the answer is not a finite number")
    err = abs(a - t)
    if err <= atol + rtol * abs(t):
        return Feedback(exercise, "right")
    if err <= atol + close * abs(t):
        return Feedback(exercise, "close", hint or "nearly: check the last step")
    side = "too large" if a > t else "too small"
    return Feedback(exercise, "wrong", f"{side}; {hint}" if hint else side)


def check_numbers(
    exercise: str,
    answer,
    truth: Sequence[float],
    *,
    rtol: float = 1e-3,
    atol: float = 0.0,
    close: float = 0.2,
    hint: str = "",
) -> Feedback:
    """Elementwise :func:`check_number` for a sequence (its length is checked first)."""
    try:
        values = [_real(f"answer[{i}]", x) for i, x in enumerate(answer)]
    except TypeError as err:
        if "answer[" in str(err):
            raise
        raise TypeError(
            f"answer: expected a sequence of numbers, got {type(answer).__name__}"
        ) from None
    truth = list(truth)
    if len(values) != len(truth):
        return Feedback(
            exercise, "wrong", f"expected {len(truth)} numbers, got {len(values)}"
        )
    parts = [
        check_number(exercise, a, t, rtol=rtol, atol=atol, close=close)
        for a, t in zip(values, truth)
    ]
    if all(p.ok for p in parts):
        return Feedback(exercise, "right")
    bad = [i for i, p in enumerate(parts) if not p.ok]
    status = "close" if all(p.status != "wrong" for p in parts) else "wrong"
    where = f"entries {bad} are off" if len(bad) < len(parts) else "every entry is off"
    return Feedback(exercise, status, f"{where}; {hint}" if hint else where)


def check_choice(
    exercise: str, answer, truth: str, options: Sequence[str], *, hint: str = ""
) -> Feedback:
    """One of ``options`` (case and surrounding spaces ignored)."""
    if not isinstance(answer, str):
        raise TypeError(f"answer: expected one of {list(options)}, got {answer!r}")
    norm = {o.strip().lower(): o for o in options}
    if truth.strip().lower() not in norm:
        raise ValueError(f"truth: expected one of {list(options)}, got {truth!r}")
    a = answer.strip().lower()
    if a not in norm:
        raise ValueError(f"answer: expected one of {list(options)}, got {answer!r}")
    if a == truth.strip().lower():
        return Feedback(exercise, "right")
    return Feedback(exercise, "wrong", hint)
