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

from .claims import CLAIMS, NOTEBOOK_SEEDS, TUNING_SEEDS, judge, measure_claims
from .config import Config
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
