"""Improving Consistency Models with Generator-Augmented Flows.

Thibaut Issenhuth, Sangchul Lee, Ludovic Dos Santos, Jean-Yves Franceschi, Chansoo Kim,
Alain Rakotomamonjy. ICML 2025 (spotlight). arXiv:2406.09570 ·
https://github.com/thibautissenhuth/consistency_GC

Claim: consistency training (CT) is consistency distillation (CD) plus a regulariser
driven by the error of its single-sample velocity estimate, a gap that does not vanish
as the discretisation refines; training on *generator-augmented* pairs — endpoints x̂ =
sg f_θ⁻(x* + σ_i z, σ_i) produced by the (EMA) model itself instead of the data point x*
— shrinks both that error and the noise–data transport cost, and gives better one-step
samples (CIFAR-10 one-step FID 7.42 → 5.95 with μ = 0.5).

Key equation (the generator-augmented pair, with the same z at both noise levels):

    x̂ = sg f_θ⁻(x* + σ_i z, σ_i),  x̃_{σ_i} = x̂ + σ_i z,
        x̃_{σ_{i+1}} = x̂ + σ_{i+1} z,
    L = E λ(σ_i) d(f_θ(x̃_{σ_{i+1}}, σ_{i+1}), sg f_θ(x̃_{σ_i}, σ_i)),
        λ = 1/(σ_{i+1} − σ_i),

used for a fraction μ of each batch (independent-coupling pairs x* + σ z for the rest).
Our μ is the GC fraction; the official code's mixing argument (``mix_gen_induced_traj``)
is the fraction of *independent* pairs, 1 − μ; the two agree only at 0.5.

Modules: :mod:`.toy` (the exact two-Gaussian toy: denoiser and PF-ODE map),
:mod:`.models` (a batched ensemble of MLP consistency models), :mod:`.training` (IC / GC
/ CD pairs and the iCT step), :mod:`.diagnostics` (transport cost, velocity error, map
error), :mod:`.images` (MNIST, classifier, Fréchet distance), :mod:`.experiment` (the
chapter's runs), :mod:`.diffusion` (the EDM / iCT pieces: preconditioning, Karras σ's,
iCT schedule, pseudo-Huber, EMA) and :mod:`.compile` (``torch.compile`` unless
``LIB_NO_COMPILE=1``, used by the benchmark).
"""

from dataclasses import dataclass

from lib.common import (
    check_bool,
    check_int,
    check_numbers,
    check_positive,
    check_probability,
)

from .compile import maybe_compile
from .diagnostics import flow_diagnostics, map_error
from .diffusion import (
    edm_scalings,
    ema_update,
    ict_loss_weights,
    ict_num_scales,
    karras_sigmas,
    lognormal_indices,
    lognormal_probs,
    precondition,
    pseudo_huber,
)
from .claims import (
    CLAIMS,
    MNIST_MARGIN,
    NOTEBOOK_SEEDS,
    TUNING_SEEDS,
    file_measured,
    image_claims,
    judge,
    measure_claims,
    toy_claims,
)
from .experiment import (
    CONTROL,
    TOY_METHODS,
    by_method,
    gc_transport_ratio,
    image_experiment,
    run_experiment,
    summarise,
    toy_experiment,
    toy_members,
    toy_seeds,
)
from .images import Classifier, frechet_distance, mnist_data, train_classifier
from .models import (
    ConsistencyEnsemble,
    EnsembleLinear,
    EnsembleMLP,
    make_ema,
    noise_embedding,
)
from .toy import TWO_GAUSSIANS, GaussianMixture, pf_ode_map, two_gaussians
from .training import TrainConfig, Trainer, consistency_loss, consistency_pairs


@dataclass(frozen=True)
class Config:
    """One preset of the chapter (see :func:`run_experiment`)."""

    seed: int = 0
    # --- 2-D toy: CD, IC, GC (μ = 0.5), GC μ = 1 and the untrained-generator control
    # for every seed, plus extra μ's for the widget (first seed). The authors' squared
    # L2 loss and noise schedule; width, lr and EMA sized for the CPU (see claims.py)
    toy: TrainConfig = TrainConfig(hidden=128, batch=128, loss="l2")
    n_seeds: int = 5
    widget_mus: tuple = (0.25, 0.75)
    n_test: int = 1000  # test noises z for the ODE-map and sample errors
    ode_steps: int = 400  # Heun steps of the exact PF-ODE map Φ
    diag_sigmas: tuple = (0.01, 0.03, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0)
    n_diag: int = 4000
    # --- MNIST: IC vs GC, one-step Fréchet distance in a small classifier's feature
    # space
    images: bool = True
    image_size: int = 14
    image: TrainConfig = TrainConfig(
        steps=1500,
        batch=128,
        hidden=256,
        depth=2,
        lr=2e-4,
        ema_decay=0.995,
        sigma_min=0.002,
        sigma_max=80.0,
        s0=10,
        s1=160,
        n_checkpoints=1,
    )
    image_mu: float = 0.5
    # seeds cfg.seed, cfg.seed + 1, … of the MNIST comparison in run_experiment (the
    # notebook runs the first live and reads the others from results/*.smoke.json)
    image_seeds: int = 5
    classifier_steps: int = 400
    n_fd: int = 2000

    def __post_init__(self):
        check_int("seed", self.seed, 0)
        for name in ("toy", "image"):
            if not isinstance(getattr(self, name), TrainConfig):
                raise TypeError(
                    f"{name}: expected a TrainConfig, got "
                    f"{type(getattr(self, name)).__name__}"
                )
        for name in (
            "n_seeds",
            "n_test",
            "ode_steps",
            "n_diag",
            "classifier_steps",
            "image_seeds",
        ):
            check_int(name, getattr(self, name), 1)
        check_int("n_fd", self.n_fd, 2)
        check_numbers(
            "widget_mus", self.widget_mus, check_probability, allow_empty=True
        )
        check_numbers("diag_sigmas", self.diag_sigmas, check_positive)
        check_bool("images", self.images)
        if 28 % check_int("image_size", self.image_size, 1):
            raise ValueError(
                f"image_size: expected a divisor of 28 (7, 14, 28), got "
                f"{self.image_size}"
            )
        check_probability("image_mu", self.image_mu)


#: the CPU run the book executes (toy: 5 seeds × 5 members, 3,000 steps; MNIST 14×14,
# 1,500 steps)
SMOKE = Config()
#: the GPU run: longer toy training, 5 seeds; MNIST at 28×28 with a wider MLP and 20k
# steps
FULL = Config(
    toy=TrainConfig(
        steps=10000,
        batch=256,
        hidden=256,
        loss="l2",
        lr=5e-5,
        ema_decay=0.9999,
        ema_warmup=True,
        n_checkpoints=8,
    ),
    n_seeds=5,
    n_test=4000,
    n_diag=20000,
    image_size=28,
    image=TrainConfig(
        steps=20000,
        batch=256,
        hidden=1024,
        depth=3,
        lr=2e-4,
        ema_decay=0.999,
        sigma_min=0.002,
        sigma_max=80.0,
        s0=10,
        s1=1280,
        n_checkpoints=1,
    ),
    classifier_steps=3000,
    n_fd=10000,
)

__all__ = [
    "CLAIMS",
    "NOTEBOOK_SEEDS",
    "MNIST_MARGIN",
    "file_measured",
    "image_claims",
    "TUNING_SEEDS",
    "measure_claims",
    "judge",
    "toy_claims",
    "CONTROL",
    "toy_seeds",
    "Config",
    "SMOKE",
    "FULL",
    "TrainConfig",
    "TOY_METHODS",
    "GaussianMixture",
    "TWO_GAUSSIANS",
    "two_gaussians",
    "pf_ode_map",
    "EnsembleLinear",
    "EnsembleMLP",
    "ConsistencyEnsemble",
    "make_ema",
    "noise_embedding",
    "consistency_pairs",
    "consistency_loss",
    "Trainer",
    "flow_diagnostics",
    "map_error",
    "mnist_data",
    "Classifier",
    "train_classifier",
    "frechet_distance",
    "toy_members",
    "toy_experiment",
    "image_experiment",
    "by_method",
    "summarise",
    "run_experiment",
    "gc_transport_ratio",
    "edm_scalings",
    "precondition",
    "karras_sigmas",
    "ict_num_scales",
    "lognormal_probs",
    "lognormal_indices",
    "ict_loss_weights",
    "pseudo_huber",
    "ema_update",
    "maybe_compile",
]
