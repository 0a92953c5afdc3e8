"""Does Generation Require Memorization? Creative Diffusion Models using Ambient
Diffusion.

Kulin Shah, Alkis Kalavasis, Adam R. Klivans, Giannis Daras. ICML 2025 (PMLR 267).
arXiv:2502.21278 · https://arxiv.org/abs/2502.21278 · code:
https://github.com/kulinshah98/memorization_noisy_data

Claim: diffusion models trained on few images copy them; memorising is only needed at
low noise, so training the high-noise part on one fixed noisy copy of each image
(ambient diffusion) and the low-noise part on the clean images cuts the copy rate at
about the same quality.

Key equation (the loss above σ_n; y = x + σ_n η is fixed per image):

    x_σ = y + √(σ² − σ_n²) ε,   ŷ = (σ² − σ_n²)/σ² · D(x_σ, σ) + σ_n²/σ² · x_σ,
    L = λ(σ) ‖ŷ − y‖²,   λ(σ) = (σ² + σ_d²)/(σ σ_d)²;  below σ_n plain EDM on x.

Modules: :mod:`.diffusion` (ensemble MLP, the loss, Heun sampling, the optimal
denoiser), :mod:`.data` (digits, feature net, metrics), :mod:`.experiment` (the runs),
:mod:`.claims`, :mod:`.reference` (naive versions for tests).
"""

from dataclasses import dataclass

from lib.common import (
    check_bool,
    check_int,
    check_numbers,
    check_positive,
    check_probability,
)

from .claims import CLAIMS, NOTEBOOK_SEEDS, TUNING_SEEDS, judge, measure_claims
from .data import (
    DigitNet,
    frechet_distance,
    load_digits_split,
    nearest_similarity,
    nn_ratio,
    train_feature_net,
)
from .diffusion import (
    EnsembleMLP,
    ambient_loss,
    edm_weight,
    heun_sample,
    optimal_denoiser,
    sample_sigma,
    sampling_sigmas,
    train_ensemble,
)
from .experiment import checkpoints, prepare_seed, run_experiment, run_seeds, run_sizes
from .experiment import score
from .experiment import variants


@dataclass(frozen=True)
class Config:
    """One preset of the chapter's experiments (see :func:`run_seeds`)."""

    seed: int = 0
    n_train: int = 32  # training images per model (the copy regime)
    n_pool: int = 300  # images set aside for training sets (the first 2N: train, decoy)
    n_heldout: int = 500  # calibration and the Fréchet reference
    width: int = 256
    depth: int = 3
    steps: int = 3000
    batch: int = 64
    lr: float = 1e-3
    ema: float = 0.999
    sigma_n: float = 0.5  # the method's σ_n (chosen on TUNING_SEEDS, see .claims)
    sigma_ns: tuple = (0.5, 1.0)  # the method's σ_n's trained per seed (σ_n, too large)
    stop_fractions: tuple = (0.125, 0.25, 0.5, 0.75, 1.0)  # checkpoints (early stop)
    sample_steps: int = 18
    n_samples: int = 500
    quantile: float = 0.99
    fully_ambient: bool = False  # also train the no-clean-data variant (see .claims)
    fresh_control: bool = True  # also train the method with a fresh copy every step
    clf_steps: int = 800
    claim_seeds: tuple = NOTEBOOK_SEEDS

    def __post_init__(self):
        check_int("seed", self.seed, 0)
        for name in ("n_train", "width", "depth", "steps", "batch", "n_pool"):
            check_int(name, getattr(self, name), 1)
        check_int("n_heldout", self.n_heldout, 2)
        check_int("n_samples", self.n_samples, 2)
        check_int("sample_steps", self.sample_steps, 2)
        check_int("clf_steps", self.clf_steps, 1)
        check_bool("fully_ambient", self.fully_ambient)
        check_bool("fresh_control", self.fresh_control)
        check_positive("lr", self.lr)
        check_probability("ema", self.ema)
        check_probability("quantile", self.quantile)
        check_positive("sigma_n", self.sigma_n)
        check_numbers("sigma_ns", self.sigma_ns, check_positive)
        check_numbers("stop_fractions", self.stop_fractions, check_probability)
        if self.sigma_n not in self.sigma_ns:
            raise ValueError(
                f"sigma_ns: expected it to contain sigma_n = {self.sigma_n}, got "
                f"{self.sigma_ns!r}"
            )
        if 2 * self.n_train > self.n_pool:
            raise ValueError(
                f"n_train: expected <= n_pool/2 = {self.n_pool // 2}, "
                f"got {self.n_train}"
            )
        check_numbers("claim_seeds", self.claim_seeds, lambda n, v: check_int(n, v, 0))


#: the CPU run the book executes
SMOKE = Config()
#: a GPU run: more images, wider nets, longer training, more samples
FULL = Config(
    n_train=128, width=1024, steps=30000, batch=256, n_samples=2000,
    sigma_ns=(0.25, 0.5, 0.75, 1.0), fully_ambient=True,
)  # fmt: skip

__all__ = [
    "Config",
    "SMOKE",
    "FULL",
    "EnsembleMLP",
    "ambient_loss",
    "edm_weight",
    "sample_sigma",
    "heun_sample",
    "sampling_sigmas",
    "optimal_denoiser",
    "train_ensemble",
    "DigitNet",
    "load_digits_split",
    "train_feature_net",
    "nearest_similarity",
    "nn_ratio",
    "frechet_distance",
    "variants",
    "checkpoints",
    "prepare_seed",
    "score",
    "run_seeds",
    "run_sizes",
    "run_experiment",
    "CLAIMS",
    "NOTEBOOK_SEEDS",
    "TUNING_SEEDS",
    "measure_claims",
    "judge",
]
