"""The problem set: theorems from templates, each with a gold structured proof.

Five families (Vieta systems, AM–GM instances, modular arithmetic, digit arithmetic,
nonlinear identities), with random constants. :func:`make_problems` keeps only theorems
whose gold proof checks; the split into train and test is by constants, so test theorems
are new statements.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from .language import Statement

FAMILIES = ("vieta", "amgm", "modular", "digits", "identity")


@dataclass(frozen=True)
class Problem:
    """A theorem, its family and its gold proof text."""

    name: str
    family: str
    stmt: Statement
    gold: str


def _p(lines):
    return "\n".join(lines)


def _vieta(rng: random.Random, wide: bool = False):
    kind = rng.choice(["cube2", "fourth2", "sq3", "cube3"])
    if kind.endswith("3"):
        hi = 7 if wide else 5
        r = [rng.randint(1, hi) for _ in range(3)]  # real roots: consistent hypotheses
        s1, s2, s3 = sum(r), r[0] * r[1] + r[1] * r[2] + r[2] * r[0], r[0] * r[1] * r[2]
        st = lambda goal: Statement(
            ("a", "b", "c"),
            "real",
            (
                ("h0", f"a + b + c = {s1}"),
                ("h1", f"a * b + b * c + c * a = {s2}"),
                ("h2", f"a * b * c = {s3}"),
            ),
            goal,
        )
        sq = [
            f"have h3 : ( a + b + c ) ** 2 = {s1} ** 2 by simp",
            "have h4 : a ** 2 + b ** 2 + c ** 2 = ( a + b + c ) ** 2 - 2 * ( a * b + "
            "b * c + c * a ) by algebra",
        ]
        if kind == "sq3":
            return st(f"a ** 2 + b ** 2 + c ** 2 = {s1 * s1 - 2 * s2}"), _p(
                ["proof", *sq, "show ?thesis by arith", "qed"]
            )
        return (
            st(f"a ** 3 + b ** 3 + c ** 3 = {s1**3 - 3 * s1 * s2 + 3 * s3}"),
            _p(
                [
                    "proof",
                    f"have h5 : a ** 2 + b ** 2 + c ** 2 = {s1} ** 2 - 2 * {s2}",
                    "proof",
                    *sq,
                    "show ?thesis by arith",
                    "qed",
                    "have h6 : a ** 3 + b ** 3 + c ** 3 - 3 * ( a * b * c ) = ( a + b "
                    "+ c ) * "
                    "( a ** 2 + b ** 2 + c ** 2 - ( a * b + b * c + c * a ) ) by "
                    "algebra",
                    "have h7 : ( a + b + c ) * ( a ** 2 + b ** 2 + c ** 2 - ( a * b + "
                    "b * c + c * a ) ) = "
                    f"{s1} * ( {s1} ** 2 - 2 * {s2} - {s2} ) by simp",
                    "show ?thesis by arith",
                    "qed",
                ]
            ),
        )
    hi = 9 if wide else 6
    r1, r2 = rng.randint(1, hi), rng.randint(1, hi)  # real roots: consistent hypotheses
    s, p = r1 + r2, r1 * r2
    st = lambda goal: Statement(
        ("a", "b"), "real", (("h0", f"a + b = {s}"), ("h1", f"a * b = {p}")), goal
    )
    sq = [
        f"have h2 : ( a + b ) ** 2 = {s} ** 2 by simp",
        "have h3 : a ** 2 + b ** 2 = ( a + b ) ** 2 - 2 * ( a * b ) by algebra",
    ]
    if kind == "sq2":
        return st(f"a ** 2 + b ** 2 = {s * s - 2 * p}"), _p(
            ["proof", *sq, "show ?thesis by arith", "qed"]
        )
    if kind == "cube2":
        return (
            st(f"a ** 3 + b ** 3 = {s**3 - 3 * p * s}"),
            _p(
                [
                    "proof",
                    f"have h2 : ( a + b ) ** 3 = {s} ** 3 by simp",
                    f"have h3 : ( a * b ) * ( a + b ) = {p} * {s} by simp",
                    "have h4 : a ** 3 + b ** 3 = ( a + b ) ** 3 - 3 * ( a * b ) * ( a "
                    "+ b ) by algebra",
                    "show ?thesis by arith",
                    "qed",
                ]
            ),
        )
    c = s * s - 2 * p
    return (
        st(f"a ** 4 + b ** 4 = {c * c - 2 * p * p}"),
        _p(
            [
                "proof",
                f"have h4 : a ** 2 + b ** 2 = {s} ** 2 - 2 * {p}",
                "proof",
                *sq,
                "show ?thesis by arith",
                "qed",
                f"have h5 : ( a ** 2 + b ** 2 ) ** 2 = ( {s} ** 2 - 2 * {p} ) ** 2 by "
                f"simp",
                f"have h6 : ( a * b ) ** 2 = {p} ** 2 by simp",
                "have h7 : a ** 4 + b ** 4 = ( a ** 2 + b ** 2 ) ** 2 - 2 * ( a * b ) "
                "** 2 by algebra",
                "show ?thesis by arith",
                "qed",
            ]
        ),
    )


def _amgm(rng: random.Random, wide: bool = False):
    c = rng.randint(2, 12 if wide else 9)
    kind = rng.choice(["sum", "ratio", "three"])
    if kind == "three":
        st = Statement(
            ("x", "y", "z"),
            "real",
            (
                ("h0", "x > 0"),
                ("h1", "y > 0"),
                ("h2", "z > 0"),
                ("h3", f"x * y * z = {c}"),
            ),
            f"( x + y ) * ( y + z ) * ( z + x ) >= {8 * c}",
        )
        return st, _p(
            [
                "proof",
                "have h4 : x * ( y - z ) ** 2 >= 0 by sos",
                "have h5 : y * ( z - x ) ** 2 >= 0 by sos",
                "have h6 : z * ( x - y ) ** 2 >= 0 by sos",
                "have h7 : ( x + y ) * ( y + z ) * ( z + x ) - 8 * ( x * y * z ) = x "
                "* ( y - z ) ** 2 + "
                "y * ( z - x ) ** 2 + z * ( x - y ) ** 2 by algebra",
                "show ?thesis by arith",
                "qed",
            ]
        )
    if kind == "ratio":
        st = Statement(
            ("x", "y"),
            "real",
            (("h0", "x > 0"), ("h1", "y > 0"), ("h2", f"x + y = {c}")),
            "x / y + y / x >= 2",
        )
        return st, _p(
            [
                "proof",
                "have h3 : x / y + y / x - 2 = ( x - y ) ** 2 / ( x * y ) by algebra",
                "have h4 : ( x - y ) ** 2 / ( x * y ) >= 0 by sos",
                "show ?thesis by arith",
                "qed",
            ]
        )
    st = Statement(
        ("x", "y"),
        "real",
        (("h0", "x > 0"), ("h1", "y > 0"), ("h2", f"x * y = {c * c}")),
        f"x + y >= {2 * c}" if kind == "sum" else f"x ** 2 + y ** 2 >= {2 * c * c}",
    )
    if kind == "sq":
        return st, _p(
            [
                "proof",
                "have h3 : ( x - y ) ** 2 >= 0 by sos",
                "have h4 : x ** 2 + y ** 2 = ( x - y ) ** 2 + 2 * ( x * y ) by algebra",
                "show ?thesis by arith",
                "qed",
            ]
        )
    return st, _p(
        [
            "proof",
            f"have h3 : ( x + y ) ** 2 >= 4 * {c * c}",
            "proof",
            "have h4 : ( x - y ) ** 2 >= 0 by sos",
            "have h5 : ( x + y ) ** 2 = ( x - y ) ** 2 + 4 * ( x * y ) by algebra",
            "show ?thesis by arith",
            "qed",
            "have h6 : x + y > 0 by arith",
            "show ?thesis by hammer",
            "qed",
        ]
    )


def _modular(rng: random.Random, wide: bool = False):
    m = rng.choice([3, 5, 7])
    r, c = rng.randint(1, m - 1), rng.randint(1, 9)
    st = Statement(
        ("n", "k"),
        "int",
        (("h0", f"n = {m} * k + {r}"),),
        f"( n ** 4 + {c} * n ** 2 ) % {m} = {(r**4 + c * r * r) % m}",
    )
    return st, _p(
        [
            "proof",
            f"have h1 : n ** 2 = {m} * ( {m} * k ** 2 + 2 * {r} * k ) + {r} ** 2 by "
            f"simp",
            f"have h2 : n ** 4 = {m} * ( {m} * k ** 2 + 2 * {r} * k ) * ( n ** 2 + "
            f"{r} ** 2 ) + {r} ** 4 by simp",
            "show ?thesis by arith",
            "qed",
        ]
    )


def _digits(rng: random.Random, wide: bool = False):
    a = rng.randint(2, 9)
    b = rng.randint(1, a - 1)
    d = a - b
    st = Statement(
        ("a", "b"),
        "int",
        (
            ("h0", "1 <= a"),
            ("h1", "a <= 9"),
            ("h2", "0 <= b"),
            ("h3", "b <= 9"),
            ("h4", f"a * b = {a * b}"),
            ("h5", f"a - b = {d}"),
        ),
        f"( 10 * a + b ) ** 2 = {(10 * a + b) ** 2}",
    )
    return st, _p(
        [
            "proof",
            f"have h6 : a = b + {d} by arith",
            f"have h7 : ( b - {b} ) * ( b + {b} + {d} ) = 0 by simp",
            f"have h8 : b = {b} by hammer",
            f"have h9 : a = {b} + {d} by arith",
            "show ?thesis by eval",
            "qed",
        ]
    )


def _identity(rng: random.Random, wide: bool = False):
    t = rng.randint(2, 15 if wide else 9)
    kind = rng.choice(["sq", "cube", "fourth"])
    st = lambda goal: Statement(
        ("x",), "real", (("h0", "x != 0"), ("h1", f"x + 1 / x = {t}")), goal
    )
    if kind == "sq":
        return (
            st(f"x ** 2 + 1 / x ** 2 = {t * t - 2}"),
            _p(
                [
                    "proof",
                    f"have h2 : ( x + 1 / x ) ** 2 = {t} ** 2 by simp",
                    "have h3 : x ** 2 + 1 / x ** 2 = ( x + 1 / x ) ** 2 - 2 by algebra",
                    "show ?thesis by arith",
                    "qed",
                ]
            ),
        )
    block = [
        f"have h2 : x ** 2 + 1 / x ** 2 = {t} ** 2 - 2",
        "proof",
        f"have h3 : ( x + 1 / x ) ** 2 = {t} ** 2 by simp",
        "have h4 : x ** 2 + 1 / x ** 2 = ( x + 1 / x ) ** 2 - 2 by algebra",
        "show ?thesis by arith",
        "qed",
    ]
    if kind == "fourth":
        return (
            st(f"x ** 4 + 1 / x ** 4 = {(t * t - 2) ** 2 - 2}"),
            _p(
                [
                    "proof",
                    *block,
                    f"have h5 : ( x ** 2 + 1 / x ** 2 ) ** 2 = ( {t} ** 2 - 2 ) ** 2 "
                    f"by simp",
                    "have h6 : x ** 4 + 1 / x ** 4 = ( x ** 2 + 1 / x ** 2 ) ** 2 - 2 "
                    "by algebra",
                    "show ?thesis by arith",
                    "qed",
                ]
            ),
        )
    return (
        st(f"x ** 3 + 1 / x ** 3 = {t**3 - 3 * t}"),
        _p(
            [
                "proof",
                f"have h2 : x ** 2 + 1 / x ** 2 = {t} ** 2 - 2",
                "proof",
                f"have h3 : ( x + 1 / x ) ** 2 = {t} ** 2 by simp",
                "have h4 : x ** 2 + 1 / x ** 2 = ( x + 1 / x ) ** 2 - 2 by algebra",
                "show ?thesis by arith",
                "qed",
                f"have h5 : ( x + 1 / x ) * ( x ** 2 + 1 / x ** 2 ) = {t} * ( {t} ** "
                f"2 - 2 ) by simp",
                "have h6 : x ** 3 + 1 / x ** 3 = ( x + 1 / x ) * ( x ** 2 + 1 / x ** "
                "2 ) - ( x + 1 / x ) by algebra",
                "show ?thesis by arith",
                "qed",
            ]
        ),
    )


_MAKERS = {
    "vieta": _vieta,
    "amgm": _amgm,
    "modular": _modular,
    "digits": _digits,
    "identity": _identity,
}


def sample_theorem(family: str, rng: random.Random, wide: bool = False) -> tuple:
    """One (Statement, gold proof) of ``family`` with constants drawn from ``rng``.
    ``wide`` draws the constants from wider ranges (roots up to 7 or 9 in the Vieta
    systems, up to 12 in AM–GM, up to 15 in the identities): about 430 distinct
    theorems whose gold proof checks instead of about 265."""
    if family not in _MAKERS:
        raise ValueError(f"family: expected one of {FAMILIES}, got {family!r}")
    if not isinstance(rng, random.Random):
        raise TypeError(f"rng: expected a random.Random, got {type(rng).__name__}")
    if not isinstance(wide, bool):
        raise TypeError(f"wide: expected a bool, got {type(wide).__name__}")
    return _MAKERS[family](rng, wide)


def make_problems(n: int, seed: int, prover=None, wide: bool = False) -> list:
    """``n`` distinct theorems (families in turn) whose gold proofs check with
    ``prover`` (``wide``: constants from the wider ranges of :func:`sample_theorem`)."""
    from lib.common import check_int

    from .language import _check_prover, initial_state, parse_steps, run_step
    from .tactics import Prover

    check_int("n", n, 1)
    check_int("seed", seed, 0)
    if not isinstance(wide, bool):
        raise TypeError(f"wide: expected a bool, got {type(wide).__name__}")
    if prover is not None:
        _check_prover(prover)
    prover = prover or Prover()
    rng, out, seen, tries = random.Random(seed), [], set(), 0
    while len(out) < n:
        tries += 1
        if tries > 50 * n:
            raise RuntimeError(
                f"make_problems: only {len(out)} of {n} gold proofs check"
            )
        fam = FAMILIES[tries % len(FAMILIES)]
        stmt, gold = sample_theorem(fam, rng, wide)
        if stmt in seen:
            continue
        seen.add(stmt)
        state = initial_state(stmt)
        for step in parse_steps(gold):
            state = run_step(state, step, stmt, prover).state
            if state is None:
                break
        if state is not None and state.done:
            out.append(Problem(f"{fam}-{len(out)}", fam, stmt, gold))
    return out
