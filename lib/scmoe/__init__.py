"""Shortcut-connected Expert Parallelism for Accelerating Mixture of Experts (ScMoE).

Weilin Cai, Juyong Jiang, Le Qin, Junwei Cui, Sunghun Kim, Jiayi Huang. ICML 2025 (PMLR
267:6211-6228). arXiv:2404.05019 · https://openreview.net/forum?id=GKly3FkxN4 · no
official code.

Claim: if the top-1 MoE of block l reads the representation of block l−1 through a
shortcut while a dense shared expert processes block l's own representation, the MoE's
All-to-All dispatch and combine can run concurrently with the intervening computation
(up to 100 % overlap), which speeds training 1.49× and inference 1.82× over a top-2 MoE,
with model quality comparable to or better than top-2.

Key equation (the ScMoE block, h_prev = the previous block's representation after its
attention):

    h_{l+1} = h_cur + SE(LN(h_cur)) + Σ_e g_e(LN(h_prev)) · E_e(LN(h_prev)),
        top-1 gate g.

Modules: :mod:`.moe` (routing with capacity, dispatch/combine, batched experts),
:mod:`.reference` (naive loops for tests), :mod:`.model` (the four variants, the offline
corpus), :mod:`.parallel` (torch.distributed expert parallelism, sequential and
overlapped schedules, emulated links), :mod:`.timeline` (the analytic two-stream model),
:mod:`.experiment` (the chapter's runs).
"""

from dataclasses import dataclass

from lib.common import (
    check_int,
    check_nonnegative,
    check_numbers,
    check_positive,
    check_probability,
)

from .experiment import (
    corpus_splits,
    predict_measured,
    quality_experiment,
    run_experiment,
    speed_experiment,
    speed_spec,
    train_variant,
)
from .model import (
    VARIANTS,
    BlockPair,
    MoEGPT,
    active_ffn_params,
    bits_per_char,
    char_vocab,
    load_corpus,
    make_windows,
)
from .moe import (
    MoE,
    Experts,
    Routing,
    capacity,
    combine,
    dispatch,
    expert_ffn,
    load_balance_loss,
    route,
)
from .parallel import (
    Link,
    ep_check_worker,
    ep_moe,
    free_port,
    launch,
    measure_speed,
    pick_backend,
    speed_worker,
)
from .timeline import (
    SCHEDULES,
    components,
    flop_components,
    program,
    simulate,
    speedup_curve,
    step_time,
)


@dataclass(frozen=True)
class Config:
    """One preset of the chapter's experiments (see :func:`run_experiment`)."""

    seed: int = 0
    # quality: character LM on pydoc_data.topics, the four variants at equal steps and
    # tokens
    seeds: tuple = (0, 1)
    block: int = 64  # characters per window
    d_model: int = 32
    n_head: int = 2
    n_pairs: int = 1  # (dense, MoE) block pairs
    n_experts: int = 4
    capacity_factor: float = 1.0
    aux_weight: float = 0.01  # load-balancing loss weight
    batch: int = 32
    steps: int = 500
    lr: float = 1e-2
    val_windows: int = 256
    # speed: one block pair, expert parallel over world_size processes
    world_size: int = 2
    sp_d_model: int = 128
    sp_n_head: int = 4
    sp_batch: int = 8
    sp_seq: int = 128
    sp_n_experts: int = 4
    sp_capacity_factor: float = 1.25
    sp_repeats: int = 9
    sp_rhos: tuple = (None, 0.45, 0.6, 0.75)
    timeout_s: float = 240.0

    def __post_init__(self):
        check_int("seed", self.seed, 0)
        check_numbers("seeds", self.seeds, lambda n, v: check_int(n, v, 0))
        for name in (
            "block",
            "d_model",
            "n_head",
            "n_pairs",
            "n_experts",
            "batch",
            "steps",
            "val_windows",
            "world_size",
            "sp_d_model",
            "sp_n_head",
            "sp_batch",
            "sp_seq",
            "sp_n_experts",
            "sp_repeats",
        ):
            check_int(name, getattr(self, name), 1)
        for d, h in (("d_model", "n_head"), ("sp_d_model", "sp_n_head")):
            if getattr(self, d) % getattr(self, h):
                raise ValueError(
                    f"{d}: expected a multiple of {h}={getattr(self, h)}, got "
                    f"{getattr(self, d)}"
                )
        if self.sp_n_experts % self.world_size:
            raise ValueError(
                f"sp_n_experts: expected a multiple of world_size={self.world_size}, "
                f"got {self.sp_n_experts}"
            )
        for name in ("capacity_factor", "lr", "sp_capacity_factor", "timeout_s"):
            check_positive(name, getattr(self, name))
        check_nonnegative("aux_weight", self.aux_weight)
        if (
            isinstance(self.sp_rhos, (str, bytes))
            or not isinstance(self.sp_rhos, (list, tuple))
            or not self.sp_rhos
        ):
            raise TypeError(
                f"sp_rhos: expected a non-empty tuple of shares in [0, 1) or None, "
                f"got {self.sp_rhos!r}"
            )
        for i, r in enumerate(self.sp_rhos):
            if r is not None and check_probability(f"sp_rhos[{i}]", r) >= 1:
                raise ValueError(
                    f"sp_rhos[{i}]: expected a share < 1 (or None), got {r}"
                )


#: the CPU run the book executes
SMOKE = Config()
#: the GPU run: a wider, longer-trained LM, more seeds, GPU-sized speed measurement
FULL = Config(
    seeds=(0, 1, 2, 3, 4),
    block=128,
    d_model=256,
    n_head=8,
    n_pairs=3,
    n_experts=8,
    capacity_factor=1.0,
    batch=64,
    steps=6000,
    lr=1e-3,
    val_windows=1024,
    sp_d_model=1024,
    sp_n_head=16,
    sp_batch=16,
    sp_seq=512,
    sp_n_experts=8,
    sp_repeats=30,
    sp_rhos=(None, 0.15, 0.3, 0.45, 0.6, 0.75),
    timeout_s=900.0,
)

__all__ = [
    "Config",
    "SMOKE",
    "FULL",
    "VARIANTS",
    "SCHEDULES",
    "Routing",
    "capacity",
    "route",
    "load_balance_loss",
    "dispatch",
    "combine",
    "expert_ffn",
    "Experts",
    "MoE",
    "BlockPair",
    "MoEGPT",
    "active_ffn_params",
    "bits_per_char",
    "char_vocab",
    "load_corpus",
    "make_windows",
    "Link",
    "launch",
    "free_port",
    "pick_backend",
    "ep_moe",
    "ep_check_worker",
    "speed_worker",
    "measure_speed",
    "flop_components",
    "program",
    "simulate",
    "components",
    "step_time",
    "speedup_curve",
    "corpus_splits",
    "train_variant",
    "quality_experiment",
    "speed_spec",
    "speed_experiment",
    "predict_measured",
    "run_experiment",
]
