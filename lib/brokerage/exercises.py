"""Self-checks for the brokerage chapter's exercises: ``exercises.ex1(answer)`` says
right, close or wrong (with a hint) without giving the answer away. Every answer is
computed here from the chapter's own functions."""

from __future__ import annotations

import math

import numpy as np
import torch

from lib.common import check_positive
from lib.common.exercises import Feedback, check_choice, check_number

from .model import expected_regret, make_market, make_noise


def ex1(answer, L: float = 2.0) -> Feedback:
    """The expected regret of a price more than a = 1/(2L) from m (uniform noise)."""
    L = check_positive("L", L)
    law, a = make_noise("uniform", L), 1 / (2 * L)
    far = torch.tensor([3 * a], dtype=torch.float64)  # any |p − m| > a
    truth = expected_regret(far, torch.zeros(1, dtype=torch.float64), law).item()
    return check_number(
        "brokerage ex1",
        answer,
        truth,
        hint="beyond the support no trade happens, so the regret is all of G(m)",
    )


def ex2(answer, main: dict) -> Feedback:
    """The best κ predicted by fitting R(κ) = A/κ + Bκ to the chapter's κ ablation
    (pass the notebook's ``main``)."""
    if not isinstance(main, dict) or "kappa" not in main:
        raise TypeError(
            f"main: expected the notebook's main results (a dict with 'kappa'), got "
            f"{type(main).__name__}"
        )
    k = np.asarray(main["kappa"]["kappas"], dtype=float)
    r = np.asarray(main["kappa"]["final"], dtype=float)
    (A, B), *_ = np.linalg.lstsq(np.stack([1 / k, k], 1), r, rcond=None)
    return check_number(
        "brokerage ex2",
        answer,
        math.sqrt(A / B),
        rtol=0.02,
        hint="minimise A/κ + Bκ in κ after a least-squares fit of A and B",
    )


def ex3(answer) -> Feedback:
    """Does a regret falling with L contradict the Ω(L d ln T) bound? (yes/no)"""
    return check_choice(
        "brokerage ex3",
        answer,
        "no",
        ("yes", "no"),
        hint="a lower bound is about the worst law with density bound L, not every law",
    )


def ex4(answer, L: float = 2.0) -> Feedback:
    """The smallest expected loss of a price p ≠ m under the ``atom`` law."""
    L = check_positive("L", L)
    law = make_noise("atom", L)
    eps = torch.tensor([1e-9], dtype=torch.float64)
    truth = expected_regret(eps, torch.zeros(1, dtype=torch.float64), law).item()
    return check_number(
        "brokerage ex4",
        answer,
        truth,
        rtol=1e-3,
        hint="the lost event: one valuation on the atom, the other below m",
    )


def ex5(answer, seed: int = 0) -> Feedback:
    """The probability of a round with V_t = W_t under the ``atom`` law (estimated here
    on 200,000 simulated rounds)."""
    mk = make_market(4, 50_000, 2, 2.0, "atom", seed=seed)
    truth = float((mk.V == mk.W).double().mean())
    return check_number(
        "brokerage ex5",
        answer,
        truth,
        atol=0.01,
        rtol=0.0,
        close=0.3,
        hint="both noises must sit on the atom",
    )
