"""ITFormer: Bridging Time Series and Natural Language for Multi-Modal QA with
Large-Scale Multitask Dataset (EngineMT-QA).

Yilin Wang, Peixuan Lei, Jie Song, Yuzhe Hao, Tao Chen, Yuxuan Zhang, Lei Jia, Yuanxiang
Li, Zhongyu Wei. ICML 2025 (PMLR 267). arXiv:2506.20093 ·
https://arxiv.org/abs/2506.20093 · code: https://github.com/Pandalin98/ITFormer-ICML25

Claim: a small bridge between a frozen time-series encoder and a frozen language model
— learnable instruct tokens that read the question, then the series through a
channel-then-time attention (ITA), with time-token position codes (TPE), emitted as
tokens in the LM's prompt (TAL) — answers questions about multichannel engine data
better than linear or Q-Former-style bridges, training under 1 % of the LM's
parameters.

Key equations (P: K instruct tokens; Q: the question's embeddings; H: time tokens
(V channels × N patches); one block):

    X = [P; Q] + PE,  X ← X + SelfAttn(X),  X ← X + FFN(X)
    α = softmax_v((W_cq P)·mean_n(W_ck H)[v]),   H̄[n] = Σ_v ᾱ[v] (W_cv H)[v, n]
    P ← P + LN(Attn(W_q P, W_k H̄, W_v H̄)),   P ← P + FFN(P)

and the LM reads W_f LN(P) in K placeholder slots, trained on the answer tokens only.

Modules: :mod:`.data` (EngineMT-QA-lite: units, questions, tokens), :mod:`.models`
(encoder, TPE, ITA, the bridges), :mod:`.lm` (the frozen LMs), :mod:`.experiment`,
:mod:`.metrics` (ROUGE-L), :mod:`.claims`, :mod:`.reference` (naive versions),
:mod:`.backbone` and :mod:`.stored` (the committed frozen parts and bridges).
"""

from dataclasses import dataclass

from lib.common import check_int, check_numbers, check_positive, check_probability

from .claims import CLAIMS, NOTEBOOK_SEEDS, TUNING_SEEDS, judge, measure_claims
from .data import (
    CLOSED,
    MAX_CHANNELS,
    MAX_CYCLES,
    QTYPE_NAMES,
    QTYPES,
    SPECIFIC,
    STAGE_OF,
    channel_signs,
    describe,
    encode_qa,
    make_qa,
    make_units,
    make_vocab,
)
from .experiment import (
    bridge_logits,
    build_backbone,
    feature_share,
    generate,
    init_bridge,
    predict,
    features,
    prepare_backbone,
    prepare_seed,
    run_experiment,
    run_seed,
    run_seeds,
    score,
    score_facts,
    series_sensitivity,
    train_bridge,
    train_bridges,
)
from .lm import GPTAdapter, HFAdapter, load_smollm2, word_ids
from .metrics import corpus_bleu, lcs_length, rouge_l
from .models import (
    BRIDGES,
    TPE,
    FlatCrossAttention,
    InstructTimeAttention,
    ITFormer,
    LinearBridge,
    QFormer,
    TextOnly,
    TSEncoder,
    lm_logits,
    make_bridge,
    masked_patch_loss,
    n_params,
    pretrain_encoder,
    sinusoid,
)


@dataclass(frozen=True)
class Config:
    """One preset of the experiment (:func:`run_seed`)."""

    seed: int = 0
    n_pretrain: int = 1500  # units for the encoder's and the LM's pretraining
    n_train: int = 1500  # training units per seed (per_unit questions each)
    n_test: int = 500
    per_unit: int = 2
    n_channels: int = 6
    n_cycles: int = 10
    cycle_len: int = 12
    patch: int = 6  # two patches per cycle
    noise: float = 0.35
    d_enc: int = 32
    enc_layers: int = 2
    enc_steps: int = 400
    enc_batch: int = 32
    enc_lr: float = 3e-3
    mask_ratio: float = 0.75
    lm: str = "gpt"  # "gpt" (pretrained here, frozen) or "smollm2" (FULL)
    d_lm: int = 64
    lm_layers: int = 2
    lm_steps: int = 2500
    lm_lr: float = 3e-3
    p_facts: float = 0.5  # share of LM pretraining rows with the facts in the slots
    n_head: int = 4
    n_slots: int = 8  # K: time tokens in the LM's prompt, equal for every bridge
    d_bridge: int = 32
    bridge_layers: int = 1
    q_len: int = 10
    a_len: int = 8
    steps: int = 1000  # every bridge's training budget
    batch: int = 64
    lr: float = 3e-3
    lrs: tuple = ()  # per-bridge learning rates chosen on TUNING_SEEDS: ((name, lr), …)
    claim_seeds: tuple = NOTEBOOK_SEEDS

    def __post_init__(self):
        check_int("seed", self.seed, 0)
        for name in (
            "n_pretrain",
            "n_train",
            "n_test",
            "enc_batch",
            "per_unit",
            "d_enc",
            "enc_layers",
            "enc_steps",
            "d_lm",
            "lm_layers",
            "lm_steps",
            "n_head",
            "n_slots",
            "d_bridge",
            "bridge_layers",
            "steps",
            "batch",
            "patch",
            "q_len",
            "a_len",
        ):
            check_int(name, getattr(self, name), 1)
        for name, low, high in (
            ("n_channels", 2, MAX_CHANNELS),
            ("n_cycles", 3, MAX_CYCLES),
        ):
            if check_int(name, getattr(self, name), low) > high:
                raise ValueError(
                    f"{name}: expected at most {high}, got {getattr(self, name)}"
                )
        check_int("cycle_len", self.cycle_len, 2)
        for name in ("enc_lr", "lm_lr", "lr", "noise"):
            check_positive(name, getattr(self, name))
        check_probability("mask_ratio", self.mask_ratio)
        check_probability("p_facts", self.p_facts)
        if self.lm not in ("gpt", "smollm2"):
            raise ValueError(f"lm: expected 'gpt' or 'smollm2', got {self.lm!r}")
        if self.cycle_len % self.patch:
            raise ValueError(
                f"patch: expected a divisor of cycle_len={self.cycle_len}, got "
                f"{self.patch}"
            )
        for name in ("d_enc", "d_bridge", "d_lm"):
            if getattr(self, name) % self.n_head or getattr(self, name) % 2:
                raise ValueError(
                    f"{name}: expected an even multiple of n_head={self.n_head}, got "
                    f"{getattr(self, name)}"
                )
        if isinstance(self.lrs, (str, bytes)) or not isinstance(
            self.lrs, (list, tuple)
        ):
            raise TypeError(
                f"lrs: expected a tuple of (bridge name, lr) pairs, got "
                f"{type(self.lrs).__name__} ({self.lrs!r})"
            )
        for i, pair in enumerate(self.lrs):
            if not isinstance(pair, (list, tuple)) or len(pair) != 2:
                raise TypeError(
                    f"lrs[{i}]: expected a (bridge name, lr) pair, got {pair!r}"
                )
            name, lr = pair
            if name not in BRIDGES:
                raise ValueError(
                    f"lrs: expected bridge names in {BRIDGES}, got {name!r}"
                )
            check_positive("lrs", lr)
        check_numbers("claim_seeds", self.claim_seeds, lambda n, v: check_int(n, v, 0))
        if len(set(self.claim_seeds)) != len(self.claim_seeds):
            raise ValueError(
                f"claim_seeds: expected distinct seeds, got {self.claim_seeds!r}"
            )

    @property
    def n_patches(self) -> int:
        return self.n_cycles * self.cycle_len // self.patch

    @property
    def patches_per_cycle(self) -> int:
        return self.cycle_len // self.patch

    def lr_for(self, name: str) -> float:
        return dict(self.lrs).get(name, self.lr)


#: the CPU run the book executes
SMOKE = Config()
#: a GPU run: SmolLM2-135M-Instruct as the frozen LM, more units, a wider two-layer
#: bridge, a longer budget
FULL = Config(
    n_train=6000,
    n_test=1500,
    lm="smollm2",
    d_enc=64,
    enc_steps=600,
    n_head=8,
    d_bridge=128,
    bridge_layers=2,
    steps=1500,
    batch=128,
    lr=1e-3,
)

__all__ = [
    "Config",
    "SMOKE",
    "FULL",
    "QTYPES",
    "QTYPE_NAMES",
    "STAGE_OF",
    "SPECIFIC",
    "CLOSED",
    "channel_signs",
    "describe",
    "make_units",
    "make_qa",
    "make_vocab",
    "encode_qa",
    "BRIDGES",
    "TSEncoder",
    "masked_patch_loss",
    "pretrain_encoder",
    "TPE",
    "sinusoid",
    "InstructTimeAttention",
    "FlatCrossAttention",
    "ITFormer",
    "QFormer",
    "LinearBridge",
    "TextOnly",
    "make_bridge",
    "n_params",
    "lm_logits",
    "GPTAdapter",
    "HFAdapter",
    "load_smollm2",
    "word_ids",
    "lcs_length",
    "rouge_l",
    "corpus_bleu",
    "prepare_backbone",
    "build_backbone",
    "feature_share",
    "features",
    "prepare_seed",
    "init_bridge",
    "train_bridge",
    "train_bridges",
    "bridge_logits",
    "predict",
    "generate",
    "score",
    "score_facts",
    "series_sensitivity",
    "run_seed",
    "run_seeds",
    "run_experiment",
    "CLAIMS",
    "NOTEBOOK_SEEDS",
    "TUNING_SEEDS",
    "measure_claims",
    "judge",
]
