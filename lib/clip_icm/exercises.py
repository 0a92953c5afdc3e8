"""Self-checks for the clip_icm chapter's exercises: ``exercises.ex1(answer)`` says
right, close or wrong (with a hint) without giving the answer away. Every answer is
computed here from the chapter's own functions."""

from __future__ import annotations

import torch

from lib.common.exercises import Feedback, check_choice, check_number

from .icm import icm_matrix, invariant_basis
from .scm import linear_scm, subspace_leak


def _scm():
    return linear_scm(4000, 4, 4, 8, 2000, torch.Generator().manual_seed(0))


def ex1(answer) -> Feedback:
    """The linear causal model with 4 invariant and 4 variant factors in D = 8, λ =
    1000: how many eigenvalues of M are positive?"""
    s = _scm()
    truth = int(
        (torch.linalg.eigvalsh(icm_matrix(s["z"], s["delta"], 1000.0)) > 0).sum()
    )
    return check_number(
        "clip_icm ex1", answer, truth, rtol=1e-9,
        hint="on which directions does ΔᵀΔ vanish?",
    )  # fmt: skip


def ex2(answer) -> Feedback:
    """The same model: the share of the variant signal that leaks through the official
    code's basis, ``eigh(M)[1][:, :4]`` (the second value of ``subspace_leak``)."""
    s = _scm()
    basis = invariant_basis(s["z"], s["delta"], 1000.0, 4, "bottom")
    truth = subspace_leak(basis, s["A"], 4)[1]
    return check_number(
        "clip_icm ex2", answer, truth, atol=0.01,
        hint="eigh sorts eigenvalues in ascending order",
    )  # fmt: skip


def ex3(answer) -> Feedback:
    """With λ = 0, which directions does the estimator keep? ("principal",
    "invariant", "variant")"""
    return check_choice(
        "clip_icm ex3", answer, "principal", ("principal", "invariant", "variant"),
        hint="set λ = 0 in the definition of M",
    )  # fmt: skip


def ex4(answer) -> Feedback:
    """k = D and any λ: does zero-shot prediction in the 'invariant subspace' differ
    from raw CLIP's? (yes/no)"""
    return check_choice(
        "clip_icm ex4", answer, "no", ("yes", "no"),
        hint="A_inv is then an orthogonal matrix; what does it do to inner products?",
    )  # fmt: skip
