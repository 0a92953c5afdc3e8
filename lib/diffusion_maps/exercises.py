"""Self-checks for the diffusion-maps chapter's exercises: ``exercises.ex1(answer)``
says right, close or wrong (with a hint) without giving the answer away. Every answer
is computed here from the chapter's own functions."""

from __future__ import annotations

from lib.common.exercises import Feedback, check_number, check_numbers

from .theory import neumann_ball_nu1, predicted_count_circle


def ex1(answer) -> Feedback:
    """The predicted number of surviving circle eigenpairs at r = 0.1 in R^3."""
    return check_number(
        "diffusion_maps ex1",
        answer,
        predicted_count_circle(0.1, 3),
        rtol=0.0,
        atol=0.5,
        close=0.1,
        hint="count the eigenvalues k² (each double) below ν₁(D − 1)/r²",
    )


def ex2(answer) -> Feedback:
    """The list ν₁(m) − (m + 1) for m = 1, …, 60."""
    truth = [neumann_ball_nu1(m) - (m + 1) for m in range(1, 61)]
    return check_numbers(
        "diffusion_maps ex2",
        answer,
        truth,
        rtol=1e-6,
        atol=1e-6,
        hint="ν₁(m) is the first non-zero Neumann eigenvalue of the unit m-ball",
    )


def ex4(answer, n: int = 1000) -> Feedback:
    """The horizontal pair counts (r = 0.3, r = 0.2) on the wobbly tube, seed 0."""
    from . import SMOKE
    from .claims import circle_count

    truth = [circle_count(n, 3, r, SMOKE, 0, wobble=0.5) for r in (0.3, 0.2)]
    return check_numbers(
        "diffusion_maps ex4",
        answer,
        truth,
        rtol=0.0,
        atol=0.5,
        close=0.15,
        hint="count the horizontal pairs before the first vertical mode",
    )
