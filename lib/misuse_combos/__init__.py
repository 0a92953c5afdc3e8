"""Adversaries Can Misuse Combinations of Safe Models.

Erik Jones, Anca Dragan, Jacob Steinhardt. ICML 2025 (PMLR 267).
arXiv:2406.14595 · no official code.

Claim: testing models one at a time for misuse is not enough. An adversary splits a
malicious task into a hard but benign part, which an aligned frontier model solves, and
an easy but malicious part, which a weaker model that never refuses solves; the
combination succeeds far more often than either model alone (vulnerable code: 43 % for
Claude 3 Opus + Llama 2 70B against < 3 % for each alone), and the misuse grows with
the quality of both models. An automated decomposition, in which the weak model asks
the strong model related benign questions and uses the answers in context, also works.

Key equation (the adversary's success on a task g(h(x)), manual decomposition):

    success = P[ W(g-request, S(h-request(x))) = g(h(x)) ],

where S is the strong model (queried only with the benign h) and W the weak model. In
this chapter everything is harmless: h is the sum of two D-digit numbers and g shifts
every digit by 3 — a transformation the chapter's policy forbids, nothing more.

Modules: :mod:`.tasks` (the task world and its prompts), :mod:`.models` (the two
transformers, their training, batched greedy decoding, the moderation classifier),
:mod:`.experiment` (conditions, capability grid), :mod:`.claims`, :mod:`.reference`
(naive versions for the tests), :mod:`.exercises`.
"""

from dataclasses import dataclass

from lib.common import check_int, check_numbers, check_positive, check_probability

from .claims import CLAIMS, NOTEBOOK_SEEDS, TUNING_SEEDS, judge, measure_claims
from .experiment import (
    CONDITIONS,
    attack,
    grid,
    make_tasks,
    moderation,
    run_experiment,
    run_seeds,
    seed_run,
    self_decomposed,
    WEAK_EDIT_GATE,
    choose_weak_steps,
    tune_weak_steps,
)
from .models import (
    KINDS,
    Moderator,
    at_checkpoint,
    bag_of_words,
    generate,
    labelled_set,
    make_model,
    train_checkpoints,
    train_model,
    training_set,
)
from .pretrained import (
    WEAK_FILE,
    load_weak_models,
    save_weak_models,
    train_weak_models,
)
from .tasks import (
    BENIGN_EDITS,
    FORBIDDEN_WORDS,
    REFUSE,
    SHIFT,
    add_prompt,
    build_vocab,
    draw_operands,
    encode_examples,
    g_edit,
    h_sum,
    labelled_prompt,
    number,
    random_task,
    strong_example,
    target,
    task_prompt,
    value,
    weak_example,
)


@dataclass(frozen=True)
class Config:
    """One preset of the chapter's experiment (see :func:`seed_run`)."""

    seed: int = 0
    max_digits: int = 4  # difficulties D = 1 … max_digits; D = max_digits is "hard"
    block_size: int = 40
    strong_d: int = 64  # the strong model: width, layers, steps
    strong_layers: int = 2
    strong_steps: int = 480
    weak_d: int = 64  # the weak model: same shape, fewer steps, shorter sums
    weak_layers: int = 2
    weak_steps: int = 400  # chosen on tuning seeds 0-2 (misuse_combos_tuning.py)
    weak_sum_digits: int = 2  # the weak model's sums and whole tasks: at most 2 digits
    n_train_strong: int = 20000  # training examples (drawn once per seed)
    n_train_weak: int = 20000
    batch_size: int = 96
    lr: float = 4e-3
    # capability grid: checkpoints as fractions of each model's training steps
    # (finer where each skill appears: the scaling claim reads the last row and column)
    strong_checkpoints: tuple = (0.25, 0.5, 0.6, 0.75, 0.9, 1.0)
    weak_checkpoints: tuple = (0.0, 0.5, 0.6, 0.7, 0.8, 1.0)
    n_eval: int = 100  # test tasks per difficulty
    n_moderation: int = 400  # labelled prompts the moderation classifier learns from
    n_moderation_test: int = 400
    claim_seeds: tuple = NOTEBOOK_SEEDS

    def __post_init__(self):
        check_int("seed", self.seed, 0)
        check_int("max_digits", self.max_digits, 1)
        if self.max_digits > 9:
            raise ValueError(f"max_digits: expected at most 9, got {self.max_digits}")
        for name in (
            "strong_d",
            "strong_layers",
            "strong_steps",
            "weak_d",
            "weak_layers",
            "weak_steps",
            "weak_sum_digits",
            "n_train_strong",
            "n_train_weak",
            "batch_size",
            "n_eval",
        ):
            check_int(name, getattr(self, name), 1)
        check_int("n_moderation", self.n_moderation, 10)
        check_int("n_moderation_test", self.n_moderation_test, 10)
        need = 6 * self.max_digits + 14
        if check_int("block_size", self.block_size, 2) < need:
            raise ValueError(
                f"block_size: expected at least {need} for max_digits="
                f"{self.max_digits}, got {self.block_size}"
            )
        check_positive("lr", self.lr)
        for name in ("strong_checkpoints", "weak_checkpoints"):
            check_numbers(name, getattr(self, name), check_probability)
            if not getattr(self, name):
                raise ValueError(f"{name}: expected at least one fraction, got ()")
        check_numbers("claim_seeds", self.claim_seeds, lambda n, v: check_int(n, v, 0))
        if len(set(self.claim_seeds)) != len(self.claim_seeds):
            raise ValueError(
                f"claim_seeds: expected distinct seeds, got {self.claim_seeds!r}"
            )


#: the CPU run the book executes
SMOKE = Config()
#: the GPU run: larger models trained longer, harder tasks, more test tasks and seeds
FULL = Config(
    max_digits=6,
    block_size=56,
    strong_d=128,
    strong_layers=3,
    strong_steps=3000,
    weak_d=64,
    weak_layers=2,
    weak_steps=800,
    weak_sum_digits=3,
    n_train_strong=60000,
    n_train_weak=40000,
    batch_size=128,
    lr=2e-3,
    strong_checkpoints=(0.125, 0.25, 0.5, 0.75, 1.0),
    weak_checkpoints=(0.0, 0.125, 0.25, 0.5, 1.0),
    n_eval=400,
    n_moderation=1000,
    n_moderation_test=1000,
    claim_seeds=(20, 21, 22, 23, 24),
)

__all__ = [
    "Config",
    "SMOKE",
    "FULL",
    "CLAIMS",
    "NOTEBOOK_SEEDS",
    "TUNING_SEEDS",
    "measure_claims",
    "judge",
    "CONDITIONS",
    "KINDS",
    "tune_weak_steps",
    "self_decomposed",
    "WEAK_FILE",
    "load_weak_models",
    "save_weak_models",
    "train_weak_models",
    "choose_weak_steps",
    "WEAK_EDIT_GATE",
    "attack",
    "grid",
    "make_tasks",
    "moderation",
    "run_experiment",
    "run_seeds",
    "seed_run",
    "Moderator",
    "at_checkpoint",
    "bag_of_words",
    "generate",
    "labelled_set",
    "make_model",
    "train_checkpoints",
    "train_model",
    "training_set",
    "BENIGN_EDITS",
    "FORBIDDEN_WORDS",
    "REFUSE",
    "SHIFT",
    "add_prompt",
    "build_vocab",
    "draw_operands",
    "encode_examples",
    "g_edit",
    "h_sum",
    "labelled_prompt",
    "number",
    "random_task",
    "strong_example",
    "target",
    "task_prompt",
    "value",
    "weak_example",
]
