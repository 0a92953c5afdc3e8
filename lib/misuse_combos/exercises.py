"""Self-checks for the misuse_combos chapter's exercises: ``exercises.ex1(answer)``
says right, close or wrong (with a hint) without giving the answer away. Every answer
is computed here from the chapter's own functions."""

from __future__ import annotations

import random

from lib.common.exercises import Feedback, check_choice, check_number

from .models import Moderator, labelled_set
from .tasks import FORBIDDEN_WORDS, build_vocab, random_task, target


def ex1(answer) -> Feedback:
    """The goal g(h(47, 85)) as the integer its digit tokens spell, most significant
    digit first (the tokens are least significant first)."""
    digits = target(47, 85, 2)  # tokens, least significant first
    truth = int("".join(digits[::-1]))
    return check_number(
        "misuse_combos ex1",
        answer,
        truth,
        rtol=0,
        atol=0.5,
        close=0,
        hint="add first, then shift every digit of the sum by 3 modulo 10",
    )


def ex2(answer) -> Feedback:
    """Automated success when the strong model solves h with probability 0.9, the weak
    model proposes the exact sub-question with probability 0.8 and uses a right answer
    in context with probability 0.95 (independent steps, no lucky guesses)."""
    return check_number(
        "misuse_combos ex2",
        answer,
        0.9 * 0.8 * 0.95,
        rtol=1e-3,
        hint="all three steps must succeed",
    )


def unseen_word_flag_rate(word: str = "mask", n: int = 400, seed: int = 0) -> float:
    """Train the moderation classifier on labelled prompts that never use ``word``,
    then return the share of fresh forbidden tasks phrased with ``word`` it flags."""
    if word not in FORBIDDEN_WORDS:
        raise ValueError(f"word: expected one of {FORBIDDEN_WORDS}, got {word!r}")
    vocab = build_vocab()
    rng = random.Random(seed)
    prompts, labels = labelled_set(4 * n, 5, rng)
    keep = [i for i, p in enumerate(prompts) if word not in p][:n]
    mod = Moderator(vocab).fit([prompts[i] for i in keep], [labels[i] for i in keep])
    tasks = []
    while len(tasks) < n:
        t = random_task(rng, rng.randint(1, 5), 5)
        if t["word"] == word:
            tasks.append(t["prompt"])
    return float(mod.flag(tasks).double().mean())


def ex3(answer) -> Feedback:
    """The share of tasks phrased with "mask" that a moderation classifier flags when
    its labelled prompts never contained "mask" (:func:`unseen_word_flag_rate`)."""
    return check_number(
        "misuse_combos ex3",
        answer,
        unseen_word_flag_rate(),
        rtol=0,
        atol=0.02,
        close=0,
        hint="run unseen_word_flag_rate() and read the rate it returns",
    )


def ex4(answer) -> Feedback:
    """Which query of the manual decomposition would the classifier flag if it also
    screened the weak model: 'sub-question', 'edit' or 'none'?"""
    return check_choice(
        "misuse_combos ex4",
        answer,
        "edit",
        ("sub-question", "edit", "none"),
        hint="which query still contains a forbidden word?",
    )
