"""KGMark: A Diffusion Watermark for Knowledge Graphs.

Hongrui Peng, Haolang Lu, Yuanlong Yu, Weiye Fu, Kun Wang, Guoshun Nan. ICML 2025
(PMLR 267:48832–48851). arXiv:2505.23873 · https://arxiv.org/abs/2505.23873 · code
(partial: no alignment, no redundancy): https://github.com/phrara/kgmark

Claim: a KG's node embeddings, grouped into multi-channel latents and DDIM-inverted
by a latent diffusion model, can carry a Fourier-domain signature under a learnable
mask; after sampling back, the watermark is detected by inversion with AUC ≈ 0.99,
survives post-editing (AUC ≈ 0.95) thanks to a clustering-based alignment and a
redundant embedding, and costs 0.02–9.7 % of downstream performance.

Key equations (z_T = DDIM⁻¹(x_0), s = FFT2(ε) the key, M the mask):

    z_T^w = FFT⁻¹( M ⊙ s + (1 − M) ⊙ FFT(z_T) ),   x_0^w = DDIM(z_T^w);
    score(x) = − mean_{k ∈ M} | FFT(DDIM⁻¹(x))_k − s_k |.

Modules: :mod:`.data` (UMLS/Nations/Kinships from the pykeen wheel), :mod:`.gae`
(R-GCN encoder, DistMult decoder, link prediction), :mod:`.diffusion` (latent
diffusion, DDIM sampling and inversion), :mod:`.watermark` (keys, masks, embedding,
detection, alignment, Gaussian Shading), :mod:`.experiment` (schemes, attacks,
AUC), :mod:`.claims`, :mod:`.reference` (naive versions for the tests). This is a
re-implementation at toy scale, not the authors' pipeline.
"""

import dataclasses

from lib.common import (
    check_choice,
    check_int,
    check_nonnegative,
    check_numbers,
    check_positive,
    check_probability,
)

from .claims import CLAIMS, NOTEBOOK_SEEDS, TUNING_SEEDS, judge, measure_claims
from .data import DATASETS, KG, dataset_dir, load_kg
from .diffusion import (
    Denoiser,
    LatentDiffusion,
    ddim_invert,
    ddim_sample,
    sigma_grid,
    train_diffusion,
)
from .experiment import (
    ATTACKS,
    SCHEMES,
    Prepared,
    Scheme,
    attack,
    auc,
    detect,
    prepare_seed,
    run_experiment,
    run_scheme,
    run_seed,
    run_seeds,
    tpr_at_fpr,
    watermark,
)
from .gae import RGCN, distmult_scores, link_prediction, relational_adjacency, train_gae
from .watermark import (
    Key,
    aligned_groups,
    bit_error,
    distance,
    index_groups,
    inject,
    kmeans,
    learn_mask,
    make_key,
    p_value,
    random_mask,
    ring_mask,
    shade,
    structural_features,
    vp,
)


@dataclasses.dataclass(frozen=True)
class Config:
    """One preset of the experiment (see :func:`lib.kgmark.experiment.run_seed`)."""

    seed: int = 0
    dataset: str = "umls"
    dim: int = 64  # node embedding size = h·w
    bases: int = 8  # R-GCN basis matrices
    gae_steps: int = 100
    gae_lr: float = 0.01
    channels: int = 4  # C nodes per latent
    grid: tuple = (8, 8)  # (h, w): one node's embedding as an 8×8 image
    hidden: int = 256  # denoiser MLP width
    diff_steps: int = 600
    diff_batch: int = 256
    diff_lr: float = 2e-3
    ddim_steps: int = 10
    fixed_point: int = 1  # inversion refinements per DDIM step
    clusters: int = 4  # k-means clusters of the alignment
    ring: tuple = (1.0, 1.5)  # Tree-Ring radii [r_in, r_out); sets the mask size
    mask_steps: tuple = (1, 2, 3)  # sampling steps the mask objective looks at
    mask_epochs: int = 50
    mask_lr: float = 0.02
    max_groups: int = 64  # positions of the non-redundant layout
    n_keys: int = 16  # owner keys per seed (positives and negatives)
    n_lp: int = 4  # watermarked KGs whose link prediction is measured
    noise: float = 0.1  # attack: Gaussian noise, × the embeddings' std
    delete: float = 0.2  # attack: share of nodes deleted
    insert: float = 0.1  # attack: share of nodes inserted (with a shuffle)
    edge_delete: float = 0.1  # attack "reorder": share of triples cut, then a shuffle
    claim_seeds: tuple = (10, 11, 12)

    def __post_init__(self):
        check_int("seed", self.seed, 0)
        check_choice("dataset", self.dataset, DATASETS)
        for name in ("dim", "bases", "gae_steps", "channels", "hidden", "diff_steps",
                     "diff_batch", "ddim_steps", "clusters", "mask_epochs",
                     "max_groups", "n_keys"):  # fmt: skip
            check_int(name, getattr(self, name), 1)
        check_int("n_keys", self.n_keys, 2)
        check_int("fixed_point", self.fixed_point, 0)
        check_int("n_lp", self.n_lp, 1)
        for name in ("gae_lr", "diff_lr", "mask_lr", "noise"):
            check_positive(name, getattr(self, name))
        for name in ("delete", "insert", "edge_delete"):
            check_probability(name, getattr(self, name))
        check_numbers("grid", self.grid, lambda n, v: check_int(n, v, 1))
        if len(self.grid) != 2 or self.grid[0] * self.grid[1] != self.dim:
            raise ValueError(
                f"grid: expected (h, w) with h·w = dim = {self.dim}, got {self.grid}"
            )
        check_numbers("ring", self.ring, check_nonnegative)
        if len(self.ring) != 2 or not self.ring[0] < self.ring[1]:
            raise ValueError(f"ring: expected 0 <= r_in < r_out, got {self.ring}")
        if self.n_lp > self.n_keys:
            raise ValueError(
                f"n_lp: expected at most n_keys = {self.n_keys}, got {self.n_lp}"
            )
        check_numbers("mask_steps", self.mask_steps, lambda n, v: check_int(n, v, 0))
        if any(not 0 <= t <= self.ddim_steps for t in self.mask_steps):
            raise ValueError(
                f"mask_steps: expected steps in [0, {self.ddim_steps}], got "
                f"{self.mask_steps}"
            )
        check_numbers("claim_seeds", self.claim_seeds, lambda n, v: check_int(n, v, 0))
        if len(set(self.claim_seeds)) != len(self.claim_seeds):
            raise ValueError(
                f"claim_seeds: expected distinct seeds, got {self.claim_seeds!r}"
            )


#: the CPU run the book executes
SMOKE = Config(claim_seeds=NOTEBOOK_SEEDS)
#: a GPU run: a longer-trained, wider denoiser, more DDIM steps, more keys
FULL = dataclasses.replace(
    SMOKE, diff_steps=4000, hidden=512, ddim_steps=25, mask_steps=(2, 5, 8),
    n_keys=100, n_lp=10,
)  # fmt: skip

__all__ = [
    "Config", "SMOKE", "FULL",
    "DATASETS", "KG", "dataset_dir", "load_kg",
    "RGCN", "relational_adjacency", "distmult_scores", "train_gae", "link_prediction",
    "Denoiser", "LatentDiffusion", "train_diffusion", "sigma_grid", "ddim_sample",
    "ddim_invert",
    "Key", "make_key", "ring_mask", "learn_mask", "inject", "distance", "p_value",
    "shade", "bit_error", "kmeans", "aligned_groups", "index_groups", "vp",
    "random_mask", "structural_features",
    "Scheme", "SCHEMES", "ATTACKS", "Prepared", "prepare_seed", "watermark",
    "detect", "attack", "auc", "tpr_at_fpr", "run_scheme", "run_seed", "run_seeds",
    "run_experiment",
    "CLAIMS", "NOTEBOOK_SEEDS", "TUNING_SEEDS", "measure_claims", "judge",
]  # fmt: skip
