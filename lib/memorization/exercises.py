"""Self-checks for the memorization chapter's exercises: ``exercises.ex1(answer)`` says
right, close or wrong (with a hint) without giving the answer away. Every answer is
computed here from the chapter's own functions."""

from __future__ import annotations

import torch

from lib.common.exercises import Feedback, check_choice, check_number

from .diffusion import ambient_loss, optimal_denoiser


def ex1(answer) -> Feedback:
    """Two training points 0 and 2 on a line, x_σ = 0.5, σ = 0.5: the weight the
    optimal denoiser puts on the nearer point."""
    train = torch.tensor([[0.0], [2.0]], dtype=torch.float64)
    d = optimal_denoiser(
        torch.tensor([[0.5]], dtype=torch.float64),
        torch.tensor([0.5], dtype=torch.float64),
        train,
    )
    truth = 1 - float(d[0, 0]) / 2  # D = w·0 + (1 − w)·2
    return check_number(
        "memorization ex1",
        answer,
        truth,
        rtol=1e-4,
        hint="the weights are a softmax of −‖x − x_i‖² / 2σ²",
    )


def ex2(answer) -> Feedback:
    """The factor by which the ambient loss at σ = 2 σ_n scales the squared error of
    the x₀ prediction D (before the weight λ), as a number."""
    sn, s = 0.5, 1.0
    x = torch.zeros(1, 1, 1)
    eps = torch.zeros(1, 1, 1)

    def shifted(xs, sigma):  # a denoiser off by exactly 1
        return torch.ones_like(xs)

    lam = (s**2 + 0.25) / (s * 0.5) ** 2
    loss = ambient_loss(shifted, x, x, torch.tensor([[s]]), torch.tensor([sn]), eps)
    truth = float(loss) / lam
    return check_number(
        "memorization ex2",
        answer,
        truth,
        rtol=1e-4,
        hint="ŷ − y is a multiple of D − E[x | x_σ]; square the coefficient",
    )


def ex3(answer) -> Feedback:
    """Does the σ ≥ σ_n part of the loss ever read a clean image? (yes/no)"""
    return check_choice(
        "memorization ex3",
        answer,
        "no",
        ("yes", "no"),
        hint="look at which tensors the loss uses where σ ≥ σ_n",
    )
