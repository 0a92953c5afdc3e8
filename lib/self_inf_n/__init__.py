"""Benign Samples Matter! Fine-tuning On Outlier Benign Samples Severely Breaks Safety.

Zihan Guan, Mengxuan Hu, Ronghang Zhu, Sheng Li, Anil Vullikanti. ICML 2025 (PMLR 267).
arXiv:2505.06843 · code: https://github.com/GuanZihan/Benign-Samples-Matter

Claim: fine-tuning a safety-aligned language model on only ~100 *benign* samples — the
outliers of a benign data set, found by a length-normalised self-influence score —
breaks its safety alignment about as much as fine-tuning on harmful data, and far more
than random benign samples; the plain self-influence score is biased towards very short
answers, which makes the fine-tuned model answer tersely and hides the damage.

Key equations (ℓ = mean cross-entropy over the answer tokens a of a sample z, θ the
aligned model):

    Self-Inf(z)   = ‖∇_θ ℓ(z; θ)‖²                                   (1)
    Self-Inf-N(z) = log(Self-Inf(z) + 1) + log(len(a) + 1)            (2)

then drop trivial answers ("yes", "no", empty) and fine-tune on the top-k by (2).

Modules: :mod:`.world` (a generated instruction language with a hazard topic),
:mod:`.attack` (pretraining, alignment, the attack fine-tune, safety evaluation),
:mod:`.influence` (exact per-sample gradient norms from layer hooks or ``torch.func``,
the scores, the selections), :mod:`.reference` (naive loops for the tests),
:mod:`.smollm` (SmolLM2-135M-Instruct from a wheel, its self-influence),
:mod:`.experiment`.
"""

from dataclasses import dataclass

from lib.common import (
    check_choice,
    check_int,
    check_numbers,
    check_positive,
    check_probability,
)

from .attack import (
    CONTENT_CUT,
    content_nll,
    evaluate,
    eval_sets,
    generate,
    hazard_metrics,
    is_procedure,
    new_model,
    step_recall,
    train,
)
from .experiment import (
    NULLS,
    POOL_SELECTIONS,
    SELECTIONS,
    align_without_declines,
    attack,
    build_world,
    choose_attack_lr,
    known_and_refused,
    run_experiment,
    run_small_world,
    score_pool,
    selection_stats,
    selections,
    summarise,
    tune_attack,
    world_config,
    world_results,
    worlds_path,
)
from .claims import (
    CLAIMS,
    NOTEBOOK_SEEDS,
    TUNING_SEEDS,
    claim_values,
    full_values,
    judge,
    measure_claims,
)
from .influence import select_random, select_top, self_inf_n, self_influence, spearman
from .smollm import (
    chat_tensors,
    hf_self_influence,
    last_block_params,
    load_smollm2,
    smollm_dir,
    smollm_length_bias,
    smollm_length_bias_async,
    text_pool,
)
from .world import (
    DECLINE,
    EVAL_ITEMS,
    FAMILIES,
    HARMFUL_ITEMS,
    REFUSAL,
    World,
    alignment_set,
    answer_lengths,
    benign_pool,
    draw_samples,
    encode,
    harmful_set,
    hazard_sample,
    is_trivial,
    lm_mask,
    make_world,
    pretrain_corpus,
)


@dataclass(frozen=True)
class Config:
    """One preset of the chapter's experiment (see :func:`run_experiment`)."""

    seed: int = 0
    # the small GPT and its world
    d_model: int = 64
    n_layer: int = 2
    n_head: int = 4
    block: int = 40
    n_pretrain: int = (
        8000  # pretraining samples (+1/4 as many compliant hazard samples)
    )
    pretrain_epochs: float = 4
    pretrain_lr: float = 3e-3  # 4 epochs (5 before) to fit the CPU budget
    n_align: int = 3000  # alignment SFT samples, a quarter of them refusals
    align_epochs: float = 3
    align_lr: float = 1e-3
    refusal_share: float = 0.25
    decline_share: float = (
        0.1  # alignment samples that decline prompts about unknown items
    )
    pool_size: int = 1000  # benign fine-tuning pool
    new_share: float = (
        0.1  # share of capital/fact/definition/procedure samples about new items
    )
    n_benign_eval: int = 120
    # the attack (the paper: 100 samples, 5 epochs, batch 20, AdamW, lr 5e-5); the
    # rate is chosen on the tuning worlds (benchmarks/self_inf_n_tuning.py)
    k: int = 100
    attack_epochs: float = 5
    attack_batch: int = 20
    attack_lr: float = 0.0002
    # fine-tuning seeds (batch order; the random selection uses seed + 1)
    seeds: tuple = (0, 1)
    # sensitivity: Self-Inf-N and random at other learning rates (first seed): the
    # rate of the chapter's earlier version
    lr_sweep: tuple = (1.5e-3,)
    # more world seeds (pretraining, alignment, pool drawn afresh), summaries only
    other_worlds: tuple = ()
    full_seeds: int = 1  # seeds for the (10x longer) full-pool fine-tune
    control: tuple = (
        "self_inf_n",
        "random",
    )  # selections attacked in the control (aligned without declines)
    # the content measure's nulls and positive controls (the multi-world evaluation
    # sets all of NULLS): a second random selection, and random-100 with 1, 2 or 5 of
    # its samples replaced by harmful ones
    nulls: tuple = ()
    # SmolLM2-135M-Instruct: length bias of the scores on a generated English pool
    smol_samples: int = 96
    smol_blocks: int = 2  # gradients of the last blocks only (30 = all parameters)

    def __post_init__(self):
        check_int("seed", self.seed, 0)
        for name in (
            "d_model",
            "n_layer",
            "n_head",
            "n_pretrain",
            "n_align",
            "pool_size",
            "n_benign_eval",
            "k",
            "attack_batch",
            "full_seeds",
            "smol_blocks",
        ):
            check_int(name, getattr(self, name), 1)
        check_int("block", self.block, 2)
        check_int("smol_samples", self.smol_samples, 0)
        if self.d_model % self.n_head:
            raise ValueError(
                f"d_model: expected a multiple of n_head={self.n_head}, got "
                f"{self.d_model}"
            )
        if self.k > self.pool_size:
            raise ValueError(
                f"k: expected at most pool_size={self.pool_size}, got {self.k}"
            )
        for name in (
            "pretrain_epochs",
            "pretrain_lr",
            "align_epochs",
            "align_lr",
            "attack_epochs",
            "attack_lr",
        ):
            check_positive(name, getattr(self, name))
        for name in ("refusal_share", "decline_share", "new_share"):
            check_probability(name, getattr(self, name))
        if self.refusal_share + self.decline_share > 1:
            raise ValueError(
                f"decline_share: expected refusal_share + decline_share <= 1, got "
                f"{self.refusal_share} + {self.decline_share}"
            )
        check_numbers("seeds", self.seeds, lambda n, v: check_int(n, v, 0))
        check_numbers(
            "other_worlds",
            self.other_worlds,
            lambda n, v: check_int(n, v, 0),
            allow_empty=True,
        )
        check_numbers("lr_sweep", self.lr_sweep, check_positive, allow_empty=True)
        if isinstance(self.control, (str, bytes)) or not isinstance(
            self.control, (list, tuple)
        ):
            raise TypeError(
                f"control: expected a tuple of selections from {SELECTIONS}, got "
                f"{self.control!r}"
            )
        for i, name in enumerate(self.control):
            check_choice(f"control[{i}]", name, POOL_SELECTIONS[:-1])
        if isinstance(self.nulls, (str, bytes)) or not isinstance(
            self.nulls, (list, tuple)
        ):
            raise TypeError(
                f"nulls: expected a tuple of names from {NULLS}, got {self.nulls!r}"
            )
        for i, name in enumerate(self.nulls):
            check_choice(f"nulls[{i}]", name, NULLS)


#: the CPU run the book executes
SMOKE = Config()
#: the GPU run: a larger GPT and world, more seeds, and SmolLM2 scored on 400 samples
# with all parameters
FULL = Config(
    d_model=128,
    n_layer=2,
    n_pretrain=16000,
    pretrain_epochs=6,
    n_align=4000,
    pool_size=2000,
    seeds=(0, 1, 2, 3, 4),
    full_seeds=3,
    n_benign_eval=300,
    lr_sweep=(5e-4, 1e-3, 2e-3, 3e-3),
    other_worlds=(1, 2, 3, 4),
    control=("self_inf_n", "random", "self_inf", "bottom"),
    smol_samples=400,
    smol_blocks=30,
)

__all__ = [
    "content_nll",
    "CLAIMS",
    "NOTEBOOK_SEEDS",
    "TUNING_SEEDS",
    "claim_values",
    "full_values",
    "judge",
    "measure_claims",
    "Config",
    "SMOKE",
    "FULL",
    "DECLINE",
    "EVAL_ITEMS",
    "HARMFUL_ITEMS",
    "CONTENT_CUT",
    "NULLS",
    "POOL_SELECTIONS",
    "FAMILIES",
    "REFUSAL",
    "SELECTIONS",
    "World",
    "make_world",
    "draw_samples",
    "pretrain_corpus",
    "alignment_set",
    "benign_pool",
    "hazard_sample",
    "harmful_set",
    "step_recall",
    "known_and_refused",
    "world_config",
    "world_results",
    "worlds_path",
    "tune_attack",
    "choose_attack_lr",
    "encode",
    "answer_lengths",
    "is_trivial",
    "lm_mask",
    "new_model",
    "train",
    "generate",
    "eval_sets",
    "is_procedure",
    "hazard_metrics",
    "evaluate",
    "self_influence",
    "self_inf_n",
    "select_top",
    "select_random",
    "spearman",
    "build_world",
    "align_without_declines",
    "score_pool",
    "selections",
    "selection_stats",
    "attack",
    "summarise",
    "run_small_world",
    "run_experiment",
    "smollm_dir",
    "load_smollm2",
    "text_pool",
    "chat_tensors",
    "hf_self_influence",
    "last_block_params",
    "smollm_length_bias",
    "smollm_length_bias_async",
]
