"""A Variational Information Theoretic Approach to Out-of-Distribution Detection.

Sudeepta Mondal, Zhuolin Jiang, Ganesh Sundaramoorthi. ICML 2025 (PMLR 267).
arXiv:2506.14194 · https://arxiv.org/abs/2506.14194 (no official code; the benchmark it
follows is Zhao et al., "Towards Optimal Feature-Shaping Methods for OOD Detection",
ICLR 2024, OptFSOOD).

Claim: treat the OOD feature as a random variable Z with law p(z|x) over the penultimate
features x and choose that law to minimise −KL(p(Z|ID) ‖ p(Z|OOD)) plus an
Information-Bottleneck term; under different assumptions on the OOD feature law the
optimum reproduces existing shaping functions (clipping, pruning) and predicts a new one
that beats them on OOD benchmarks.

Key equation (eq. 2; the abstract-level form is the paper's, the concrete channel is
ours):

    L[p(z|x)] = −KL(p(Z|ID) ‖ p(Z|OOD)) + β [ I(X; Z) − γ I(Z; Y) ],
        Z | x ~ N(g(x), σ²),

and the shaping g* found by its gradient flow (the scale of g held fixed, so that the
flow chooses a shape and cannot shrink g below the noise) is applied elementwise before
the energy score log Σ_c exp(W g*(h) + b)_c.

The paper's functional acts on any conditional law p(z|x); the solver offers g free
(shapes may turn down, as OptFS's do) or non-decreasing, and the family is one of the
settings chosen on validation data.

Modules: :mod:`.variational` (eq. 2 on a grid and its gradient flow), :mod:`.scores`
(MSP, MaxLogit, Energy, ReAct, ASH-P/S, DICE, VRA-P, OptFS, AUROC, FPR95), :mod:`.data`
(MNIST, the twelve test OOD sets and the two validation OOD sets), :mod:`.selection`
(one procedure and budget that choose every method's setting on validation data),
:mod:`.experiment` (network, features, the main table), :mod:`.claims` (the claims
ledger: CLAIMS, measure_claims, judge).
"""

from dataclasses import dataclass

from lib.common import (
    check_choice,
    check_int,
    check_nonnegative,
    check_numbers,
    check_positive,
    check_range,
)

from .claims import (
    CLAIMS,
    NOTEBOOK_SEEDS,
    TUNING_SEEDS,
    claims_from_runs,
    judge,
    measure_claims,
    slope_ratios,
)
from .data import (
    OOD_SETS,
    VAL_SETS,
    jigsaw,
    lfw_faces,
    load_fashion_mnist,
    ood_sets,
    random_patches,
    smooth_noise,
    validation_sets,
)
from .experiment import (
    METHODS,
    SHAPING,
    Net,
    SeedRun,
    best_on_validation,
    features,
    fit_detectors,
    kl_ib_shaping,
    load_data,
    metrics,
    run_experiment,
    run_seed,
    run_seeds,
    score_all,
    summarise,
    train_net,
)
from .scores import (
    ash_p,
    ash_s,
    auroc,
    dice,
    dice_mask,
    energy,
    fpr_at_95_tpr,
    interp,
    max_logit,
    msp,
    optfs,
    optfs_fit,
    optfs_shape,
    percentile_value,
    percentile_values,
    react,
    shaped_energy,
    vra_p,
)
from .selection import BUDGET, GRIDS, fit_setting, score_method, select
from .variational import (
    ASSUMPTIONS,
    FAMILIES,
    SCALES,
    Grid,
    channel_densities,
    histogram,
    kl_ib_loss,
    kl_ib_terms,
    make_grid,
    ood_law_samples,
    orient_and_scale,
    solve_shaping,
)


@dataclass(frozen=True)
class Config:
    """One preset of the chapter's experiment (see :func:`run_experiment`)."""

    seed: int = 0
    n_seeds: int = 5  # networks trained (seeds seed, seed+1, ...)
    arch: str = "mlp"  # "mlp" (784-512-256-10) or "cnn"
    width: int = 256  # D, the penultimate width
    epochs: int = 2
    batch: int = 128
    lr: float = 1e-3
    n_train: int = 25000  # MNIST training images
    n_fit: int = 5000  # ID training images whose features fit the detectors
    n_test: int = 2000  # ID test images
    n_ood: int = 2000  # images per test OOD set (faces: at most 200)
    n_val: int = 2000  # MNIST validation images, and images per validation OOD set
    react_p: float = 90.0  # ReAct clips at this percentile of ID activations
    ash_p: float = 65.0  # ASH prunes this percentage of each sample's units
    dice_p: float = 70.0  # DICE keeps weights above this contribution percentile
    vra_p: tuple = (50.0, 95.0)  # VRA-P thresholds x1, x2 as ID percentiles
    optfs_bins: int = 100
    assumption: str = "weaker+tail"  # OOD-law assumption behind the KL+IB shaping
    strength: float = 1.0
    beta: float = 2.0  # weight of the Information Bottleneck term
    sigma: float = 0.05  # channel noise, in units of the activation range
    g_scale: str = "fixed"  # "fixed": E_ID[g²] = E_ID[X²] during the flow
    n_bins: int = 64
    steps: int = 200  # gradient-flow steps
    n_z: int = 256  # points of the z-grid
    n_activations: int = 200000  # ID activations that form p_ID

    def __post_init__(self):
        check_int("seed", self.seed, 0)
        for name in (
            "n_seeds",
            "width",
            "epochs",
            "batch",
            "n_train",
            "n_fit",
            "n_test",
            "n_ood",
            "n_val",
            "optfs_bins",
            "steps",
            "n_z",
            "n_activations",
        ):
            check_int(name, getattr(self, name), 1)
        check_int("n_bins", self.n_bins, 2)
        check_choice("arch", self.arch, ("mlp", "cnn"))
        check_choice("assumption", self.assumption, ASSUMPTIONS)
        check_choice("g_scale", self.g_scale, SCALES)
        for name in ("lr", "strength", "sigma"):
            check_positive(name, getattr(self, name))
        check_nonnegative("beta", self.beta)
        for name in ("react_p", "ash_p", "dice_p"):
            check_range(name, getattr(self, name), 0, 100)
        vra = check_numbers("vra_p", self.vra_p, lambda n, v: check_range(n, v, 0, 100))
        if len(vra) != 2 or not vra[0] < vra[1]:
            raise ValueError(
                f"vra_p: expected two percentiles x1 < x2, got {self.vra_p!r}"
            )


#: the CPU run the book executes
SMOKE = Config()
#: the GPU run: a CNN, longer training, 5 seeds, full test sets
FULL = Config(
    n_seeds=5,
    arch="cnn",
    epochs=5,
    n_train=50000,
    n_fit=20000,
    n_test=10000,
    n_ood=10000,
    steps=600,
    n_z=512,
    n_activations=1000000,
)

__all__ = [
    "CLAIMS",
    "NOTEBOOK_SEEDS",
    "TUNING_SEEDS",
    "measure_claims",
    "claims_from_runs",
    "judge",
    "slope_ratios",
    "VAL_SETS",
    "FAMILIES",
    "SCALES",
    "GRIDS",
    "BUDGET",
    "select",
    "fit_setting",
    "score_method",
    "best_on_validation",
    "validation_sets",
    "jigsaw",
    "smooth_noise",
    "percentile_values",
    "Config",
    "SMOKE",
    "FULL",
    "OOD_SETS",
    "METHODS",
    "SHAPING",
    "ASSUMPTIONS",
    "Net",
    "SeedRun",
    "Grid",
    "make_grid",
    "histogram",
    "ood_law_samples",
    "channel_densities",
    "kl_ib_terms",
    "kl_ib_loss",
    "solve_shaping",
    "orient_and_scale",
    "msp",
    "max_logit",
    "energy",
    "react",
    "ash_p",
    "ash_s",
    "dice_mask",
    "dice",
    "vra_p",
    "optfs_fit",
    "optfs_shape",
    "optfs",
    "shaped_energy",
    "interp",
    "percentile_value",
    "auroc",
    "fpr_at_95_tpr",
    "ood_sets",
    "random_patches",
    "lfw_faces",
    "load_fashion_mnist",
    "load_data",
    "train_net",
    "features",
    "fit_detectors",
    "kl_ib_shaping",
    "score_all",
    "run_seed",
    "run_seeds",
    "metrics",
    "summarise",
    "run_experiment",
]
