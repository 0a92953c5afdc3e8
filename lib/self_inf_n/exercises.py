"""Self-checks for the self_inf_n chapter's exercises: ``exercises.ex1(answer, sc)``
says right, close or wrong (with a hint) without giving the answer away. The answers
depend on the notebook's world (a trained small GPT), so each check takes what the
notebook computed (``sc = sw["scores"]`` or ``sw = S.run_small_world(...)``) and
recomputes the answer from it with the chapter's own functions, in well under a second.

Exercises 3 and 4 ask for the outcome of fine-tuning runs (a minute or more each); no
cheap computation gives their harm, refusal and benign accuracy, so the check of
exercise 3 covers the step every answer rests on (how the selection splits into new
items and the rest), and exercise 4 has none.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from lib.common.exercises import Feedback, check_number, check_numbers

from . import SMOKE
from .influence import select_top

SCORE_KEYS = ("self_inf", "self_inf_n", "length", "family", "trivial")


def _check_scores(sc) -> None:
    if not isinstance(sc, dict) or any(k not in sc for k in SCORE_KEYS):
        raise TypeError(
            f"sc: expected the notebook's sw['scores'] (a dict with keys "
            f"{list(SCORE_KEYS)}), got {type(sc).__name__}"
        )


def length_slope(sc: dict, family: str = "copy") -> float:
    """Least-squares slope of log Self-Inf against log(answer length) over the pool
    samples of ``family``."""
    _check_scores(sc)
    fam = np.array(sc["family"])
    sel = fam == family
    if sel.sum() < 2:
        raise ValueError(
            f"family: expected a family with at least 2 samples in sc, got {family!r}"
        )
    ln, si = np.array(sc["length"])[sel], np.array(sc["self_inf"])[sel]
    return float(np.polyfit(np.log(ln), np.log(si), 1)[0])


def ex1(slope, sc, family: str = "copy") -> Feedback:
    """Exercise self_inf_n-ex1: the slope of log Self-Inf against log n for the
    ``copy`` samples of the notebook's pool (pass ``sc``; right within 0.02)."""
    return check_number(
        "self_inf_n ex1",
        slope,
        length_slope(sc, family),
        atol=0.02,
        rtol=0.0,
        close=0.2,
        hint="fit log(self_inf) against log(length), family == 'copy' only (not "
        "'copy_new'), with np.polyfit(..., 1)",
    )


def trivial_in_top(sc: dict, k: int = SMOKE.k) -> int:
    """How many trivial answers are among the top ⌈1.2·k⌉ Self-Inf-N scores (the
    official selection's first step)."""
    _check_scores(sc)
    scores = torch.tensor(sc["self_inf_n"], dtype=torch.float64)
    top = select_top(scores, math.ceil(1.2 * k))  # trivial ones kept: official order
    return int(torch.tensor(sc["trivial"], dtype=torch.bool)[top].sum())


def ex2(count, sc, k: int = SMOKE.k) -> Feedback:
    """Exercise self_inf_n-ex2: the number of trivial answers among the top 1.2k
    Self-Inf-N scores of the notebook's pool (pass ``sc``; exact)."""
    return check_number(
        "self_inf_n ex2",
        count,
        trivial_in_top(sc, k),
        atol=0.5,
        rtol=0.0,
        close=0.2,
        hint="rank by Self-Inf-N before dropping anything, keep the top 120, count "
        "sc['trivial'] among them",
    )


def split_sizes(sw: dict) -> tuple[int, int]:
    """The Self-Inf-N selection of ``sw`` split into samples about new items (family
    ending in ``_new``) and the rest: their sizes."""
    if not isinstance(sw, dict) or "scores" not in sw or "selections" not in sw:
        raise TypeError(
            f"sw: expected the notebook's sw (a dict with 'scores' and 'selections'), "
            f"got {type(sw).__name__}"
        )
    _check_scores(sw["scores"])
    fam = sw["scores"]["family"]
    new = sum(fam[i].endswith("_new") for i in sw["selections"]["self_inf_n"])
    return new, len(sw["selections"]["self_inf_n"]) - new


def ex3(sizes, sw) -> Feedback:
    """Exercise self_inf_n-ex3, the split only: how many samples of the Self-Inf-N
    selection are about new items, and how many are the rest (two numbers; pass
    ``sw``). The fine-tuning results themselves cost a minute and are not checked."""
    return check_numbers(
        "self_inf_n ex3 (split)",
        sizes,
        split_sizes(sw),
        atol=0.5,
        rtol=0.0,
        close=0.5,
        hint="a sample is about a new item when its family ends in '_new'; index "
        "sc['family'] with the selection",
    )


__all__ = ["ex1", "ex2", "ex3", "length_slope", "split_sizes", "trivial_in_top"]
