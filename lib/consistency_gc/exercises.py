"""Self-checks for the consistency_gc chapter's exercises: ``exercises.ex1(answer)``
says right, close or wrong (with a hint) without giving the answer away. Answers are
computed here from the chapter's own functions."""

from __future__ import annotations

import torch

from lib.common import make_generator
from lib.common.exercises import Feedback, check_choice, check_number

from .toy import two_gaussians

#: the noise levels at which a Tweedie function is tried (ex2)
EX2_SIGMAS = (0.05, 0.4, 2.0)


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


def ex2(tweedie) -> Feedback:
    """A function ``tweedie(x, sigma) -> D`` that builds the two-Gaussian toy's denoiser
    from Tweedie's formula (autograd on log p_σ), tried against
    ``GaussianMixture.denoise`` at a few points and noise levels."""
    if not callable(tweedie):
        raise TypeError(
            f"tweedie: expected a function tweedie(x, sigma) -> tensor, got "
            f"{type(tweedie).__name__}"
        )
    gmm = two_gaussians()
    g = make_generator(1)
    x = 1.5 * torch.randn(64, gmm.dim, generator=g, dtype=torch.float64)  # (64, d)
    worst = 0.0
    for sigma in EX2_SIGMAS:
        truth = gmm.denoise(x, torch.tensor(sigma, dtype=torch.float64))  # (64, d)
        try:
            got = torch.as_tensor(tweedie(x.clone(), sigma), dtype=torch.float64)
        except Exception as err:  # the reader's code failed: say so, do not crash
            return Feedback(
                "consistency_gc ex2", "wrong", f"calling it raised {type(err).__name__}"
            )
        if got.shape != truth.shape:
            return Feedback(
                "consistency_gc ex2",
                "wrong",
                f"it should return one point per input point, shape "
                f"{tuple(truth.shape)}",
            )
        err = float((got.detach() - truth).abs().max() / truth.abs().max())
        worst = max(worst, err)
    if worst < 1e-6:
        return Feedback("consistency_gc ex2", "right")
    return Feedback(
        "consistency_gc ex2",
        "close" if worst < 0.05 else "wrong",
        "p_σ is the data density convolved with N(0, σ²I): each component's variance "
        "becomes s² + σ², and the score is multiplied by σ²",
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
