"""Orthogonal Subspace Decomposition for Generalizable AI-Generated Image Detection
(Effort).

Zhiyuan Yan, Jiangming Wang, Peng Jin, Ke-Yue Zhang, Chengchun Liu, Shen Chen, Taiping
Yao, Shouhong Ding, Baoyuan Wu, Li Yuan. ICML 2025 (oral). arXiv:2411.15633 ·
https://arxiv.org/abs/2411.15633 · code:
https://github.com/YZY-stack/Effort-AIGI-Detection

Claim: fine-tuning a vision foundation model to tell real from generated images
collapses its feature space onto the few directions that separate the training
generator's fakes, and so fails on unseen generators; freezing the principal
singular subspace of every attention projection and training only the residual
(smallest) singular triplets keeps the pretrained knowledge, learns the forgery
cue in an orthogonal subspace, and generalises better with ~0.19M trainable
parameters.

Key equations (per attention projection W ∈ R^{m×n}, rank r kept frozen):

    W = U Σ Vᵀ,   W_main = U_{:r} Σ_{:r} V_{:r}ᵀ (frozen),
    W' = W_main + U_res diag(σ_res) V_resᵀ   (U_res, σ_res, V_res trained).

Modules: :mod:`.data` (real patches, six generator families), :mod:`.model` (the
ViT, the SVD residual and LoRA layers, effective rank, principal angles),
:mod:`.pretrain` (the stored foundation model), :mod:`.experiment` (training and
testing every arm), :mod:`.claims`, :mod:`.reference` (naive versions for the tests).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from lib.common import (
    check_choice,
    check_instance,
    check_int,
    check_nonnegative,
    check_numbers,
    check_positive,
)

from .claims import CLAIMS, NOTEBOOK_SEEDS, TUNING_SEEDS, judge, measure_claims
from .data import (
    GENERATORS,
    PatchAE,
    blend_fake,
    dct_fake,
    dct_matrix,
    make_fakes,
    pca_basis,
    pca_fake,
    real_images,
    sample_patches,
    train_ae,
    upsample_fake,
)
from .experiment import (
    CLAIM_ARMS,
    angle_summary,
    asymmetry,
    auc,
    evaluate,
    prepare_seed,
    run_seed,
    run_seeds,
    summarise,
    train_detector,
    tune,
)
from .model import (
    ARMS,
    PROJ,
    Detector,
    LoRALinear,
    SVDResidualLinear,
    ViT,
    adapt,
    adapted_layers,
    attention_weights,
    effective_rank,
    effort_parameter_count,
    explained_variance,
    principal_angles,
    trainable_parameters,
)
from .pretrain import (
    FOUNDATION_FILE,
    PRETRAIN,
    PretrainConfig,
    load_foundation,
    pretrain,
    save_foundation,
)

#: each arm's learning rate, chosen on TUNING_SEEDS by the seen generator's
#: validation loss (see .claims)
LRS = {
    "probe": 0.01, "full": 0.003, "lora1": 0.03, "lora4": 0.03, "effort": 0.03,
    "effort_reg": 0.01, "principal": 0.01, "middle": 0.03,
}  # fmt: skip


@dataclass(frozen=True)
class Config:
    """One preset of the chapter's experiment (see :func:`run_seed`)."""

    seed: int = 0
    seen: str = "nearest"  # the generator family the detector is trained on
    n_train: int = 1000  # real training patches (and as many fakes)
    n_val: int = 300
    n_test: int = 300  # test reals, and test fakes per generator
    steps: int = 100
    batch: int = 64
    n_res: int = 1  # Effort's trainable residual triplets per projection
    pca_k: int = 24  # the PCA generator's components (of 256)
    quality: int = 30  # the DCT generator's JPEG quality
    w_orth: float = 1.0  # weights of the two regularisers (the effort_reg arm)
    w_ksv: float = 1.0
    angle_k: int = 4  # top-k subspace whose rotation is measured
    lrs: dict = field(default_factory=lambda: dict(LRS))
    claim_seeds: tuple = NOTEBOOK_SEEDS

    def __post_init__(self):
        check_int("seed", self.seed, 0)
        check_choice("seen", self.seen, GENERATORS)
        for name in ("n_train", "n_val", "n_test", "steps", "n_res", "pca_k",
                     "angle_k"):  # fmt: skip
            check_int(name, getattr(self, name), 1)
        check_int("batch", self.batch, 2)
        check_int("quality", self.quality, 1)
        for name in ("w_orth", "w_ksv"):
            check_nonnegative(name, getattr(self, name))
        check_instance("lrs", self.lrs, dict, "a dict {arm: learning rate}")
        if set(self.lrs) != set(ARMS):
            raise ValueError(
                f"lrs: expected a learning rate for each of {ARMS}, got "
                f"{sorted(self.lrs)}"
            )
        for arm, lr in self.lrs.items():
            check_positive(f"lrs[{arm!r}]", lr)
        if self.pca_k > 256:
            raise ValueError(f"pca_k: expected at most 256, got {self.pca_k}")
        check_numbers("claim_seeds", self.claim_seeds, lambda n, v: check_int(n, v, 0))
        if len(set(self.claim_seeds)) != len(self.claim_seeds):
            raise ValueError(
                f"claim_seeds: expected distinct seeds, got {self.claim_seeds!r}"
            )


#: the CPU run the book executes
SMOKE = Config()
#: a GPU run: more data, four times the steps, the same stored foundation model
FULL = Config(n_train=5000, n_val=1000, n_test=2000, steps=500, batch=128)


def run_experiment(cfg: Config, device=None) -> dict:
    """The FULL entry point: every arm on the notebook seeds, and the claims."""
    from lib.common import device as pick_device

    from .experiment import _check_cfg

    _check_cfg(cfg)
    found = load_foundation()
    runs = run_seeds(cfg, cfg.claim_seeds, found, pick_device(device))
    from .claims import measure_from_runs

    slim = {
        s: {a: {k: v for k, v in r.items() if k != "curves"} for a, r in run.items()}
        for s, run in runs.items()
    }
    return {"runs": slim, "claims": measure_from_runs(cfg, runs)}


__all__ = [
    "Config", "SMOKE", "FULL", "LRS", "run_experiment",
    "GENERATORS", "PatchAE", "blend_fake", "dct_fake", "dct_matrix", "make_fakes",
    "pca_basis", "pca_fake", "real_images", "sample_patches", "train_ae",
    "upsample_fake",
    "CLAIM_ARMS", "angle_summary", "asymmetry", "auc", "evaluate", "prepare_seed",
    "run_seed", "run_seeds", "summarise", "train_detector", "tune",
    "ARMS", "PROJ", "Detector", "LoRALinear", "SVDResidualLinear", "ViT", "adapt",
    "adapted_layers", "attention_weights", "effective_rank", "effort_parameter_count",
    "explained_variance", "principal_angles", "trainable_parameters",
    "FOUNDATION_FILE", "PRETRAIN", "PretrainConfig", "load_foundation", "pretrain",
    "save_foundation",
    "CLAIMS", "NOTEBOOK_SEEDS", "TUNING_SEEDS", "measure_claims", "judge",
]  # fmt: skip
