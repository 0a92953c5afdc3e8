"""Self-checks for the consistency_gc chapter's exercises: ``exercises.ex1(answer)``
says right, close or wrong (with a hint) without giving the answer away. Answers are
computed here from the chapter's own functions."""

from __future__ import annotations

import torch

from lib.common import make_generator
from lib.common.exercises import Feedback, check_choice, check_number

from .toy import two_gaussians


def ex1(answer) -> Feedback:
    """IC's transport cost E‖x* − z‖² on the two-Gaussian toy (estimated here by Monte
    Carlo on 400,000 pairs, so an exact answer is right to about 0.3 %)."""
    gmm = two_gaussians()
    g = make_generator(0)
    x = gmm.sample(400_000, g)  # (N, 2)
    z = torch.randn(x.shape, generator=g, dtype=x.dtype)
    truth = float(((x - z) ** 2).sum(-1).mean())
    return check_number(
        "consistency_gc ex1",
        answer,
        truth,
        rtol=0.005,
        close=0.1,
        hint="expand the square; x* and z are independent and E z = 0",
    )


def ex3(answer) -> Feedback:
    """What GC's x̂ tends to as σ_i → σ_min: "x*", "z" or "0"."""
    return check_choice(
        "consistency_gc ex3",
        answer,
        "x*",
        ("x*", "z", "0"),
        hint="use c_skip(σ_min) = 1 and c_out(σ_min) = 0",
    )
