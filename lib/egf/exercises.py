"""Self-checks for the egf chapter's exercises: ``exercises.ex1(answer)`` says right,
close or wrong (with a hint) without giving the answer away. Every answer is computed
here from the chapter's own functions."""

from __future__ import annotations

import math

import torch

from lib.common.exercises import Feedback, check_choice, check_number

from .models import EGF, kl_to_target
from .torus import grid_points, make_maps, target_density


def ex1(answer) -> Feedback:
    """The virtual terminal flow f̂ of an EGF with constant outflow f→ = 3 and any
    policy, under the chapter's SL2(Z) maps."""
    model = EGF(make_maps("sl2"), width=4, depth=1)
    with torch.no_grad():
        for p in model.net.parameters():
            p.zero_()
        model.net[-1].bias[0] = math.log(math.exp(3.0) - 1)  # softplus = 3
        model.net[-1].bias[1:] = torch.tensor([0.3, -1.0, 2.0, 0.0])
        truth = float(model.terminal(grid_points(8)).mean())
    return check_number(
        "egf ex1",
        answer,
        truth,
        rtol=1e-6,
        atol=1e-9,
        hint="the maps preserve the area, so a constant flow is carried onto itself",
    )


def ex2(answer) -> Feedback:
    """KL(checkerboard ‖ uniform), in nats (what a model that learnt nothing scores)."""
    p = target_density(grid_points(64), "checkerboard")
    truth = kl_to_target(torch.ones_like(p), p)
    return check_number(
        "egf ex2", answer, truth, rtol=1e-3, hint="the target is 2 on half the torus"
    )


def ex3(answer) -> Feedback:
    """With translations for maps, can f̂ have a Fourier mode that neither f→ nor any
    α_i f→ has? (yes/no)"""
    return check_choice(
        "egf ex3",
        answer,
        "no",
        ("yes", "no"),
        hint="a translation multiplies each Fourier coefficient by a phase",
    )
