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

from .claims import (
    CLAIMS,
    NOTEBOOK_SEEDS,
    TUNING_SEEDS,
    judge,
    measure_claims,
    measured_from_file,
    quality_values,
)
from .experiment import (
    corpus_splits,
    modelled_speedups,
    n_experts_for,
    predict_measured,
    quality_experiment,
    run_experiment,
    speed_experiment,
    speed_spec,
    train_many,
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
    SCHEDULE_RUNS,
    Link,
    build_speed,
    ep_check_worker,
    ep_moe,
    ep_step,
    free_port,
    launch,
    local_experts,
    measure_cuda_streams,
    measure_speed,
    pick_backend,
    speed_worker,
    step_check_worker,
    time_components,
    time_schedules,
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
class SpeedSizes:
    """The block pair a speed measurement times (per rank: ``batch`` × ``seq`` tokens of
    width ``d_model``; ``n_experts`` in all, spread over the ranks)."""

    d_model: int
    n_head: int
    batch: int
    seq: int
    n_experts: int
    capacity_factor: float = 1.25

    def __post_init__(self):
        for name in ("d_model", "n_head", "batch", "seq", "n_experts"):
            check_int(name, getattr(self, name), 1)
        if self.d_model % self.n_head:
            raise ValueError(
                f"d_model: expected a multiple of n_head={self.n_head}, got "
                f"{self.d_model}"
            )
        check_positive("capacity_factor", self.capacity_factor)


#: sizes two single-threaded CPU processes time in seconds (gloo)
CPU_SPEED = SpeedSizes(d_model=128, n_head=4, batch=8, seq=128, n_experts=4)
#: GPU-sized block (NCCL, one GPU per rank; or one GPU with CUDA streams)
GPU_SPEED = SpeedSizes(d_model=1024, n_head=16, batch=16, seq=512, n_experts=8)


@dataclass(frozen=True)
class Config:
    """One preset of the chapter's experiments (see :func:`run_experiment` and
    :func:`measure_claims`)."""

    seed: int = 0
    # quality: character LM on pydoc_data.topics; 2 block pairs = 4 blocks
    seeds: tuple = (0, 1, 2)
    block: int = 64  # characters per window
    d_model: int = 128
    n_head: int = 4
    n_pairs: int = 2  # (dense, MoE) block pairs
    n_experts: int = 4
    capacity_factor: float = 1.0
    aux_weight: float = 0.01  # load-balancing loss weight
    match_params: bool = True  # top-2 / top-1 get one expert more (n_experts_for)
    batch: int = 16
    steps: int = 200
    lr: float = 2e-3
    val_windows: int = 256
    workers: int = 2  # CPU training processes at a time (one thread each)
    # speed: one block pair, expert parallel over world_size processes
    world_size: int = 2
    speed: SpeedSizes = CPU_SPEED  # on NCCL
    speed_gloo: SpeedSizes = CPU_SPEED  # on gloo (CPU processes), whatever the preset
    sp_repeats: int = 15
    sp_rhos: tuple = (0.45, 0.6, 0.75)  # emulated links' communication shares
    sp_copies: tuple = (1, 8)  # real gloo runs: copies of each buffer per transfer
    timeout_s: float = 240.0
    # the stored long quality run (QUALITY): only the language models, these variants
    quality_only: bool = False
    variants: tuple = VARIANTS

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
            "workers",
            "world_size",
            "sp_repeats",
        ):
            check_int(name, getattr(self, name), 1)
        if self.d_model % self.n_head:
            raise ValueError(
                f"d_model: expected a multiple of n_head={self.n_head}, got "
                f"{self.d_model}"
            )
        for name in ("match_params", "quality_only"):
            if not isinstance(getattr(self, name), bool):
                raise TypeError(
                    f"{name}: expected a bool, got {type(getattr(self, name)).__name__}"
                )
        if (
            not isinstance(self.variants, tuple)
            or not self.variants
            or any(v not in VARIANTS for v in self.variants)
        ):
            raise ValueError(
                f"variants: expected a non-empty tuple from {VARIANTS}, got "
                f"{self.variants!r}"
            )
        for name in ("speed", "speed_gloo"):
            sz = getattr(self, name)
            if not isinstance(sz, SpeedSizes):
                raise TypeError(
                    f"{name}: expected a SpeedSizes, got {type(sz).__name__}"
                )
            if sz.n_experts % self.world_size:
                raise ValueError(
                    f"{name}.n_experts: expected a multiple of world_size="
                    f"{self.world_size}, got {sz.n_experts}"
                )
        for name in ("capacity_factor", "lr", "timeout_s"):
            check_positive(name, getattr(self, name))
        check_nonnegative("aux_weight", self.aux_weight)
        if (
            isinstance(self.sp_rhos, (str, bytes))
            or not isinstance(self.sp_rhos, (list, tuple))
            or not self.sp_rhos
        ):
            raise TypeError(
                f"sp_rhos: expected a non-empty tuple of shares in [0, 1), "
                f"got {self.sp_rhos!r}"
            )
        for i, r in enumerate(self.sp_rhos):
            if check_probability(f"sp_rhos[{i}]", r) >= 1:
                raise ValueError(f"sp_rhos[{i}]: expected a share < 1, got {r}")
        check_numbers("sp_copies", self.sp_copies, lambda n, v: check_int(n, v, 1))


#: the CPU run the book executes (and `make claims` on the ledger)
SMOKE = Config()
#: the GPU run: a wider, longer-trained LM, more seeds, GPU-sized speed measurement on
#: NCCL (the gloo fallback keeps CPU_SPEED, stated in the spec's "sizes")
FULL = Config(
    seeds=(0, 1, 2, 3, 4),
    block=128,
    d_model=256,
    n_head=8,
    n_pairs=3,
    n_experts=8,
    batch=64,
    steps=6000,
    lr=1e-3,
    val_windows=1024,
    speed=GPU_SPEED,
    sp_repeats=30,
    sp_rhos=(0.15, 0.3, 0.45, 0.6, 0.75),
    timeout_s=900.0,
)
#: the stored long quality run (``python -m lib.scmoe --preset QUALITY`` writes
#: results/scmoe.quality.json; 46 CPU-minutes): SMOKE's models, data and seeds trained
#: 2000 steps instead of 200, long enough to pass a character trigram table (SMOKE's
#: 200 steps stop just past a bigram table), for top-2, top-1 (the quality claim's
#: control) and ScMoE. The step count was fixed from the cost before any long run; the
#: learning-rate schedule (warm-up, cosine decay) stretches with it.
QUALITY = Config(steps=2000, quality_only=True, variants=("top2", "top1", "scmoe"))

__all__ = [
    "Config",
    "SpeedSizes",
    "CPU_SPEED",
    "GPU_SPEED",
    "SMOKE",
    "FULL",
    "QUALITY",
    "CLAIMS",
    "NOTEBOOK_SEEDS",
    "TUNING_SEEDS",
    "measure_claims",
    "judge",
    "measured_from_file",
    "quality_values",
    "n_experts_for",
    "train_many",
    "modelled_speedups",
    "ep_step",
    "local_experts",
    "step_check_worker",
    "build_speed",
    "time_components",
    "time_schedules",
    "SCHEDULE_RUNS",
    "measure_cuda_streams",
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
