"""Self-checks for the effort chapter's exercises: ``exercises.ex1(answer)`` says
right, close or wrong (with a hint) without giving the answer away. Every answer is
computed here from the chapter's own functions."""

from __future__ import annotations

import torch

from lib.common.exercises import Feedback, check_choice, check_number

from .model import effective_rank, effort_parameter_count


def ex1(answer) -> Feedback:
    """Effort's trainable backbone parameters on CLIP ViT-B/16 (12 blocks, width 768,
    one residual triplet per q, k, v, o projection)."""
    return check_number(
        "effort ex1", answer, effort_parameter_count(768, 12), rtol=1e-9,
        hint="each triplet is a column of U, a singular value and a row of Vᵀ",
    )  # fmt: skip


def ex3(answer) -> Feedback:
    """Features isotropic in 4 directions and exactly zero in the other 28: their
    effective rank."""
    g = torch.Generator().manual_seed(0)
    z = torch.zeros(50000, 32)
    z[:, :4] = torch.randn(50000, 4, generator=g)
    return check_number(
        "effort ex3", answer, effective_rank(z), atol=0.05,
        hint="exp of the entropy of four equal shares",
    )  # fmt: skip


def ex2(answer) -> Feedback:
    """LoRA of rank 1 on the q, k, v, o projections of CLIP ViT-L/14 (24 blocks, width
    1024): how many trainable backbone parameters?"""
    return check_number(
        "effort ex2", answer, 24 * 4 * 2 * 1024, rtol=1e-9,
        hint="B is 1024×1 and A is 1×1024 for each projection",
    )  # fmt: skip


def ex4(answer) -> Feedback:
    """Which arm's trainable weights can reach any attention matrix the others can
    (a superset)? ("full", "lora4", "effort")"""
    return check_choice(
        "effort ex4", answer, "full", ("full", "lora4", "effort"),
        hint="compare the sets of reachable weights, not their sizes",
    )  # fmt: skip
