"""Self-checks for the proofaug chapter's exercises: ``exercises.ex1(answer)`` says
right, close or wrong (with a hint) without giving the answer away. Every answer is
computed here from the chapter's own checker and search functions.

Exercise 2 has no check: its answer (how many re-queries ERP spends on one sampled
proposal) depends on the state of the proposer's random generator at the moment the
reader runs it, so a check would have to re-sample and could disagree with the reader's
own, correct, count.
"""

from __future__ import annotations

import numpy as np

from lib.common.exercises import Feedback, check_number

from .language import Statement
from .search import hammer_only, replay, semi_proof
from .tactics import Prover

#: the chapter's worked example (cell "A proposal whose inner lemma is false"): the
#: statement, and the proposal whose false lemma ``h5`` forces a coarsening
EX1_STATEMENT = Statement(
    ("a", "b"),
    "real",
    (("h0", "a + b = 5"), ("h1", "a * b = 6")),
    "a ** 4 + b ** 4 = 97",
)
EX1_PROPOSAL = "\n".join(
    [
        "proof",
        "have h2 : ( a + b ) ** 2 = 5 ** 2 by sos",
        "have h4 : a ** 2 + b ** 2 = 13",
        "proof",
        "have h5 : a = 7 by arith",
        "show ?thesis by arith",
        "qed",
        "have h6 : ( a ** 2 + b ** 2 ) ** 2 = 13 ** 2 by simp",
        "have h7 : ( a * b ) ** 2 = 6 ** 2 by simp",
        "have h8 : a ** 4 + b ** 4 = ( a ** 2 + b ** 2 ) ** 2 - 2 * ( a * b ) ** 2 by "
        "algebra",
        "show ?thesis by arith",
        "qed",
    ]
)


def _coarsen_bounds(drop: int, prover=None) -> tuple[int, int]:
    """(r, e) of eq. (coarsen) for the hole left by ``h5``'s tactic, as 0-based
    indices into ``parse_steps(EX1_PROPOSAL)``, looking ``drop`` levels up."""
    prover = prover if prover is not None else Prover()
    steps = semi_proof(EX1_STATEMENT, EX1_PROPOSAL, prover)
    if steps is None:
        raise RuntimeError("the worked example no longer yields a semi-proof")
    before, final, err = replay(EX1_STATEMENT, steps, prover)
    if err is not None:
        raise RuntimeError("the worked example's semi-proof no longer replays")
    levels = [s.level for s in before] + [final.level]
    holes = [i for i, s in enumerate(steps) if s == "sorry"]
    i = holes[1]  # the first hole is h2's tactic, which simp closes
    lvl = levels[i]
    r = max(j for j in range(i) if levels[j] <= lvl - drop)
    e = min(j for j in range(i + 1, len(levels)) if levels[j] <= lvl - drop)
    return r, e


def ex1(answer) -> Feedback:
    """The pair (r, e) of eq. (coarsen) for the ``sorry`` left by ``h5 : a = 7``, as
    0-based indices into ``PA.parse_steps(proposal)``: r is the first step replaced by
    the new ``sorry``, e the first step kept after it."""
    if (
        not isinstance(answer, (tuple, list))
        or len(answer) != 2
        or not all(
            isinstance(x, (int, np.integer)) and not isinstance(x, bool) for x in answer
        )
    ):
        raise TypeError(f"answer: expected a pair of integers (r, e), got {answer!r}")
    r, e = (int(x) for x in answer)
    truth = _coarsen_bounds(2)
    if (r, e) == truth:
        return Feedback("proofaug ex1", "right")
    if (r, e) == _coarsen_bounds(1):
        return Feedback(
            "proofaug ex1",
            "wrong",
            "that is the rule with ℓ−1: it stops at a state-mode state inside the same "
            "block",
        )
    if (r, e) == (truth[0] + 1, truth[1] + 1):
        return Feedback(
            "proofaug ex1", "close", "count the steps from 0, as Python does"
        )
    return Feedback(
        "proofaug ex1",
        "wrong",
        "print the level before every step and look for the last and the next state "
        "at ℓ−2 or below",
    )


def ex3(answer, env: dict, small: int = 600, large: int = 20_000) -> Feedback:
    """The hammer-only pass rate on ``env["test"]`` with ``Prover(small, large)``."""
    if not isinstance(env, dict) or "test" not in env:
        raise TypeError(
            f"env: expected the chapter's env dict with a 'test' list, got "
            f"{type(env).__name__}"
        )
    strong = Prover(small, large)
    truth = float(np.mean([hammer_only(p.stmt, strong).success for p in env["test"]]))
    return check_number(
        "proofaug ex3",
        answer,
        truth,
        rtol=1e-9,
        atol=1e-9,
        close=0.1,
        hint="a share of the test theorems between 0 and 1, with the stronger prover",
    )
