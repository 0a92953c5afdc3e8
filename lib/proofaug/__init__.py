"""Efficient Neural Theorem Proving via Fine-grained Proof Structure Analysis
(ProofAug).

Haoxiong Liu, Jiacheng Sun, Zhenguo Li, Andrew C. Yao. ICML 2025 (PMLR 267).
arXiv:2501.18310 · https://github.com/haoxiongliu/ProofAug

Claim: a proof proposed by a language model usually fails as a whole, yet most of its
structure is right; replaying it, turning every failed step into ``sorry`` (the
**maximal compatible semi-proof**) and closing each ``sorry`` with automation at the
finest granularity that works — built-in tactics, then a hammer, then coarser and
coarser blocks up to the whole theorem — solves far more theorems per model query than
accepting only proofs that check (DSP) or than the hammer alone: 52.5% of miniF2F-test
with at most 100 queries (Isabelle, deepseek-math-7b-base), 66.0% with a mixed strategy.

Key rule (coarsening, ``proof_aug_1dp``): a ``sorry`` at proof level ℓ that no tactic
closes is replaced, together with its enclosing block, by one ``sorry``: the steps from
the last step before it at level ≤ ℓ−2 to the next step after it at level ≤ ℓ−2,

    semi-proof  s₁ … s_r … sorry … s_e …   ↦   s₁ … s_{r−1} sorry s_e …

and the search restarts on the coarser semi-proof; the root level is ATP on the whole
theorem.

Modules: :mod:`.language` (proof language, checker), :mod:`.tactics` (sympy/z3 tactics,
the hammer), :mod:`.problems` (templates with gold proofs), :mod:`.proposers` (the
transformer, the noisy oracle), :mod:`.search` (ProofAug, DSP, hammer-only),
:mod:`.experiment` (the chapter's runs), :mod:`.reference` (naive references for tests).
"""

from dataclasses import dataclass

from lib.common import check_int, check_numbers, check_positive, check_probability

from .claims import CLAIMS, NOTEBOOK_SEEDS, TUNING_SEEDS, judge, measure_claims
from .experiment import (
    METHODS,
    HARD_VARIANTS,
    VARIANTS,
    ablation,
    budget_curve,
    fresh_problems,
    hard_split,
    hammer_budget,
    main_experiment,
    run_experiment,
    run_methods,
    seed_run,
    setup,
)
from .language import (
    ProofState,
    Statement,
    initial_state,
    join_steps,
    parse_formula,
    parse_steps,
    run_step,
    tokenize,
)
from .problems import FAMILIES, Problem, make_problems, sample_theorem
from .proposers import (
    NeuralProposer,
    build_vocab,
    claim_examples,
    corrupt,
    decode_proof,
    dsp_sketch,
    encode_pair,
    sample_proofs,
    sketch_examples,
    train_proposer,
    training_tensors,
)
from .search import (
    Outcome,
    blocks_of,
    check_proof,
    dsp,
    hammer_only,
    proof_aug,
    replay,
    semi_proof,
)
from .tactics import BUILTINS, TACTICS, Prover, z3_prove


@dataclass(frozen=True)
class Config:
    """One preset of the chapter's experiment (see :func:`run_experiment`)."""

    seed: int = 0
    n_train: int = 160  # training theorems (gold proofs + their claims)
    n_test: int = 20  # held-out theorems (hammer-hard ones with ``hard``)
    # the hammer-hard variant: ``n_pool`` theorems from the wider templates, the test
    # set the first ``n_test`` of them the hammer cannot prove, the rest for training
    hard: bool = False
    n_pool: int = 400
    sketch: bool = False  # train the proposer on DSP-style sketches (by hammer holes)
    rlimit_builtin: int = 600  # z3 resource limit of the built-in tactics (arith, auto)
    rlimit_hammer: int = 1000  # ... and of the hammer
    train_steps: int = 240
    block_size: int = 224
    d_model: int = 64
    n_layer: int = 2
    batch_size: int = 32
    lr: float = 3e-3
    temperature: float = 0.6  # the paper samples at 0.6
    n_samples: int = 8  # proposals per theorem and seed: budgets 1, 2, 4, …, n_samples
    # the seeds the chapter measures: each draws fresh test theorems and its own samples
    claim_seeds: tuple = NOTEBOOK_SEEDS
    noise_rates: tuple = (0.1, 0.2, 0.3, 0.5)  # the noisy-oracle sweep (figure)
    oracle_rate: float = 0.3  # ... and the rate its claim is judged at
    oracle_samples: int = 4  # corrupted gold proofs per theorem and seed

    def __post_init__(self):
        check_int("seed", self.seed, 0)
        for name in ("hard", "sketch"):
            if not isinstance(getattr(self, name), bool):
                raise TypeError(
                    f"{name}: expected a bool, got {type(getattr(self, name)).__name__}"
                )
        for name in (
            "n_pool",
            "n_train",
            "n_test",
            "rlimit_builtin",
            "rlimit_hammer",
            "train_steps",
            "d_model",
            "n_layer",
            "batch_size",
            "n_samples",
            "oracle_samples",
        ):
            check_int(name, getattr(self, name), 1)
        check_int("block_size", self.block_size, 2)
        if self.d_model % 4:
            raise ValueError(
                f"d_model: expected a multiple of the proposer's 4 heads, got "
                f"{self.d_model}"
            )
        check_positive("lr", self.lr)
        check_positive("temperature", self.temperature)
        check_numbers("noise_rates", self.noise_rates, check_probability)
        check_probability("oracle_rate", self.oracle_rate)
        check_numbers("claim_seeds", self.claim_seeds, lambda n, v: check_int(n, v, 0))
        if len(set(self.claim_seeds)) != len(self.claim_seeds):
            raise ValueError(
                f"claim_seeds: expected distinct seeds, got {self.claim_seeds!r}"
            )


#: the CPU run the book executes
SMOKE = Config()
#: the GPU run: a bigger proposer trained longer, budgets up to 64 and five seeds. The
#: split stays at 160 + 20: the templates yield only a few hundred distinct theorems
#: whose gold proof checks (asked for 400, make_problems finds 265 before it gives up)
FULL = Config(
    train_steps=2000,
    block_size=256,
    d_model=128,
    n_layer=4,
    batch_size=64,
    lr=1e-3,
    n_samples=64,
    claim_seeds=(10, 11, 12, 13, 14),
    oracle_samples=8,
)
#: the hammer-hard test set (``python -m lib.proofaug --preset HARD``, writes
#: results/proofaug.hard.json; about 10 min on two CPU cores, 16 CPU-minutes): 100 test
#: theorems the hammer fails on at its limit, a proposer trained on the other theorems
#: of the wider templates with DSP-style sketches, every test theorem on every seed, and
#: the hammer alone at larger limits
HARD = Config(hard=True, sketch=True, n_test=100, n_samples=4, noise_rates=(0.3,))

__all__ = [
    "Config",
    "SMOKE",
    "FULL",
    "HARD",
    "HARD_VARIANTS",
    "METHODS",
    "VARIANTS",
    "CLAIMS",
    "NOTEBOOK_SEEDS",
    "TUNING_SEEDS",
    "measure_claims",
    "judge",
    "FAMILIES",
    "BUILTINS",
    "TACTICS",
    "Statement",
    "ProofState",
    "Problem",
    "Outcome",
    "Prover",
    "NeuralProposer",
    "tokenize",
    "parse_formula",
    "parse_steps",
    "join_steps",
    "initial_state",
    "run_step",
    "z3_prove",
    "sample_theorem",
    "make_problems",
    "claim_examples",
    "encode_pair",
    "decode_proof",
    "build_vocab",
    "training_tensors",
    "train_proposer",
    "sample_proofs",
    "corrupt",
    "replay",
    "check_proof",
    "blocks_of",
    "semi_proof",
    "proof_aug",
    "dsp",
    "hammer_only",
    "budget_curve",
    "run_methods",
    "setup",
    "fresh_problems",
    "hard_split",
    "hammer_budget",
    "dsp_sketch",
    "sketch_examples",
    "seed_run",
    "main_experiment",
    "ablation",
    "run_experiment",
]
