"""EDM training with the ambient high-noise loss, an ensemble MLP denoiser, Heun
sampling, and the closed-form empirically-optimal denoiser.

Shapes: an ensemble of M models trains at once, each on its own data; data tensors are
(M, N, D), batches (M, B, D) and noise levels (M, B). A model with σ_n = 0 is plain
EDM: the ambient loss reduces to EDM's there (tested).
"""

from __future__ import annotations

import math

import torch

from lib.common import (
    check_generator,
    check_instance,
    check_int,
    check_numbers,
    check_positive,
    check_probability,
    check_tensor,
)
from lib.common.edm import karras_sigmas, precondition

SIGMA_DATA = 0.5  # EDM's σ_d
P_MEAN, P_STD = -1.2, 1.2  # EDM's log-normal σ distribution


def edm_weight(sigma: torch.Tensor, sigma_data: float = SIGMA_DATA) -> torch.Tensor:
    """λ(σ) = (σ² + σ_d²) / (σ σ_d)², EDM's loss weight; shape of ``sigma``."""
    _check_sigmas("sigma", sigma)
    sigma_data = check_positive("sigma_data", sigma_data)
    return _edm_weight(sigma, sigma_data)


def _check_sigmas(name: str, sigma, positive: bool = True) -> torch.Tensor:
    """A non-empty floating tensor of finite noise levels (> 0, or >= 0)."""
    check_tensor(name, sigma, floating=True, finite=True, nonempty=True)
    if bool((sigma <= 0).any() if positive else (sigma < 0).any()):
        raise ValueError(
            f"{name}: expected noise levels {'> 0' if positive else '>= 0'}, got "
            f"min {float(sigma.min()):.3g}"
        )
    return sigma


def _edm_weight(sigma: torch.Tensor, sigma_data: float = SIGMA_DATA) -> torch.Tensor:
    return (sigma**2 + sigma_data**2) / (sigma * sigma_data) ** 2  # eq. (2)


def noise_embedding(c_noise: torch.Tensor, n_freq: int = 8) -> torch.Tensor:
    """Fourier features of c_noise = log(σ)/4: (..., 2 n_freq + 1)."""
    freqs = 2.0 ** torch.arange(n_freq, device=c_noise.device, dtype=c_noise.dtype)
    ang = c_noise.unsqueeze(-1) * freqs * math.pi / 2  # (..., n_freq)
    return torch.cat([c_noise.unsqueeze(-1), ang.sin(), ang.cos()], -1)


class EnsembleMLP(torch.nn.Module):
    """M independent MLPs F_m(x, c_noise) with grouped weights (one batched matmul per
    layer): input (M, B, D) and c_noise (M, B), output (M, B, D).

    ``depth`` hidden layers of ``width`` SiLU units; the noise embedding is
    concatenated to the input of every hidden layer. Model m is initialised from
    ``seeds[m]`` alone, so a model's weights do not depend on its ensemble.
    """

    def __init__(self, seeds, dim: int = 64, width: int = 256, depth: int = 3):
        super().__init__()
        if not isinstance(seeds, (list, tuple)):
            raise TypeError(
                f"seeds: expected a list of ints >= 0, got {type(seeds).__name__}"
            )
        seeds = [check_int("seeds", s, 0) for s in seeds]
        if not seeds:
            raise ValueError("seeds: expected at least one seed, got an empty list")
        dim, width = check_int("dim", dim, 1), check_int("width", width, 1)
        depth = check_int("depth", depth, 1)
        self.M, self.dim, self.n_emb = len(seeds), dim, 17
        sizes = [dim] + [width] * depth + [dim]
        ws, bs = [[] for _ in sizes[1:]], [[] for _ in sizes[1:]]
        for s in seeds:
            g = torch.Generator().manual_seed(s)
            for i, (a, b) in enumerate(zip(sizes[:-1], sizes[1:])):
                fan_in = a + (self.n_emb if i < depth else 0)
                bound = 1 / math.sqrt(fan_in)
                ws[i].append((torch.rand(fan_in, b, generator=g) * 2 - 1) * bound)
                bs[i].append(torch.zeros(1, b))
        scale = [1.0] * depth + [0.0]  # the output layer starts at zero: D = c_skip x
        self.weights = torch.nn.ParameterList(
            [torch.nn.Parameter(torch.stack(w) * c) for w, c in zip(ws, scale)]
        )  # (M, in, out) each
        self.biases = torch.nn.ParameterList(
            [torch.nn.Parameter(torch.stack(b)) for b in bs]
        )  # (M, 1, out) each

    def forward(self, x: torch.Tensor, c_noise: torch.Tensor) -> torch.Tensor:
        emb = noise_embedding(c_noise)  # (M, B, 17)
        h = x
        for w, b in zip(self.weights[:-1], self.biases[:-1]):
            h = torch.nn.functional.silu(torch.baddbmm(b, torch.cat([h, emb], -1), w))
        return torch.baddbmm(self.biases[-1], h, self.weights[-1])  # (M, B, D)

    def denoise(self, x: torch.Tensor, sigma: torch.Tensor) -> torch.Tensor:
        """The x₀ prediction D(x, σ) with EDM preconditioning; x (M, B, D), σ (M, B)."""
        return precondition(self, x, sigma, SIGMA_DATA, check=False)


def sample_sigma(
    shape, sigma_floor: torch.Tensor | None = None, generator=None
) -> torch.Tensor:
    """σ ~ LogNormal(P_mean, P_std²), shape ``shape`` (CPU). With ``sigma_floor``
    (broadcastable), σ is drawn from the same law conditioned on σ ≥ floor (inverse
    CDF; a floor of 0 leaves the law unchanged)."""
    if not isinstance(shape, (tuple, list, torch.Size)) or not shape:
        raise TypeError(f"shape: expected a non-empty tuple of ints, got {shape!r}")
    shape = tuple(check_numbers("shape", shape, lambda n, v: check_int(n, v, 1)))
    check_generator("generator", generator)
    if sigma_floor is not None:
        _check_sigmas("sigma_floor", torch.as_tensor(sigma_floor), positive=False)
    u = torch.rand(shape, generator=generator, dtype=torch.float64)  # (shape)
    if sigma_floor is not None:
        fl = torch.as_tensor(sigma_floor, dtype=torch.float64).clamp_min(1e-30)
        lo = 0.5 * (1 + torch.erf((fl.log() - P_MEAN) / (P_STD * math.sqrt(2))))
        u = lo + (1 - lo) * u  # uniform on [Φ(floor), 1)
    u = u.clamp(1e-12, 1 - 1e-12)
    z = math.sqrt(2) * torch.erfinv(2 * u - 1)  # standard normal quantile
    return (P_MEAN + P_STD * z).exp().float()


def ambient_loss(
    denoise,
    x: torch.Tensor,
    y: torch.Tensor,
    sigma: torch.Tensor,
    sigma_n: torch.Tensor,
    eps: torch.Tensor,
    check: bool = True,
) -> torch.Tensor:
    """The paper's loss per sample, shape (M, B).

    x: clean images (M, B, D); y = x + σ_n η their fixed noisy copies; σ (M, B); σ_n
    (M,) per model; ε (M, B, D) fresh noise. For σ < σ_n: EDM on x. For σ ≥ σ_n: the
    network sees x_σ = y + √(σ² − σ_n²) ε, its x₀-prediction D is turned into a
    prediction of y, ŷ = (σ² − σ_n²)/σ² D + σ_n²/σ² x_σ, scored against y.
    ``check=False`` (the training loop) skips the input checks.
    """
    if check:
        _check_loss_inputs(denoise, x, y, sigma, sigma_n, eps)
    sn = sigma_n.view(-1, 1)  # (M, 1)
    hi = sigma >= sn  # (M, B)
    var_extra = (sigma**2 - sn**2).clamp_min(0)  # σ² − σ_n² where σ ≥ σ_n
    base = torch.where(hi.unsqueeze(-1), y, x)  # (M, B, D): y above σ_n, x below
    std = torch.where(hi, var_extra.sqrt(), sigma).unsqueeze(-1)  # (M, B, 1)
    x_sigma = base + std * eps  # (M, B, D), a sample at total noise level σ
    d = denoise(x_sigma, sigma)  # (M, B, D), the x₀ prediction
    a = torch.where(hi, var_extra / sigma**2, torch.ones_like(sigma)).unsqueeze(-1)
    pred = a * d + (1 - a) * x_sigma  # eq. (4): ŷ; equals D below σ_n
    return _edm_weight(sigma) * (pred - base).pow(2).mean(-1)  # eq. (5)   (M, B)


def _check_loss_inputs(denoise, x, y, sigma, sigma_n, eps):
    if not callable(denoise):
        raise TypeError(f"denoise: expected a callable, got {type(denoise).__name__}")
    check_tensor("x", x, ndim=3, floating=True, finite=True, nonempty=True)
    M, B, _ = x.shape
    check_tensor("y", y, shape=tuple(x.shape), floating=True, finite=True)
    check_tensor("eps", eps, shape=tuple(x.shape), floating=True, finite=True)
    check_tensor("sigma", sigma, shape=(M, B), floating=True)
    _check_sigmas("sigma", sigma)
    check_tensor("sigma_n", sigma_n, shape=(M,), floating=True)
    _check_sigmas("sigma_n", sigma_n, positive=False)


def optimal_denoiser(
    x: torch.Tensor, sigma: torch.Tensor, train: torch.Tensor
) -> torch.Tensor:
    """The empirically-optimal denoiser for the empirical distribution of ``train``:
    D*(x, σ) = Σ_i softmax_i(−‖x − x_i‖² / 2σ²) x_i.

    x (..., B, D); σ with x's leading shape (..., B); train (..., N, D) or (N, D).
    """
    check_tensor("x", x, floating=True, finite=True, nonempty=True)
    check_tensor("train", train, floating=True, finite=True, nonempty=True)
    if x.ndim < 2:
        raise ValueError(f"x: expected shape (..., B, D), got {tuple(x.shape)}")
    if x.shape[-1] != train.shape[-1] or train.ndim not in (2, x.ndim):
        raise ValueError(
            f"x, train: expected one dimension D and train (N, D) or (..., N, D), got "
            f"x {tuple(x.shape)} and train {tuple(train.shape)}"
        )
    check_tensor("sigma", sigma, floating=True)
    if sigma.shape != x.shape[:-1]:
        raise ValueError(
            f"x, sigma: expected sigma of shape {tuple(x.shape[:-1])} (x's leading "
            f"shape), got x {tuple(x.shape)} and sigma {tuple(sigma.shape)}"
        )
    _check_sigmas("sigma", sigma)
    d2 = torch.cdist(x, train.expand(*x.shape[:-2], *train.shape[-2:])).pow(2)
    logits = -d2 / (2 * sigma.unsqueeze(-1) ** 2)  # (..., B, N)
    return torch.softmax(logits, -1) @ train  # eq. (6)   (..., B, D)


def sampling_sigmas(
    steps: int,
    sigma_min=0.002,
    sigma_max: float = 80.0,
    rho: float = 7.0,
    device="cpu",
) -> torch.Tensor:
    """Karras σ's in decreasing order with a final 0: (steps + 1,), or (M, steps + 1)
    when ``sigma_min`` is a sequence (one schedule per model)."""
    steps = check_int("steps", steps, 2)
    sigma_max, rho = check_positive("sigma_max", sigma_max), check_positive("rho", rho)
    if isinstance(sigma_min, (int, float)) and not isinstance(sigma_min, bool):
        mins = [check_positive("sigma_min", sigma_min)]
    elif isinstance(sigma_min, (list, tuple)):
        mins = list(check_numbers("sigma_min", sigma_min, check_positive))
    else:
        raise TypeError(
            f"sigma_min: expected a number > 0 or a list of them, got "
            f"{type(sigma_min).__name__}"
        )
    if max(mins) >= sigma_max:
        raise ValueError(
            f"sigma_min: expected values < sigma_max = {sigma_max}, got {max(mins)}"
        )
    rows = [
        torch.cat([karras_sigmas(steps, s, sigma_max, rho).flip(0), torch.zeros(1)])
        for s in mins
    ]
    out = torch.stack(rows) if not isinstance(sigma_min, (int, float)) else rows[0]
    return out.to(device)


@torch.no_grad()
def heun_sample(denoise, x: torch.Tensor, sigmas: torch.Tensor) -> torch.Tensor:
    """EDM's deterministic Heun sampler (Karras et al., Alg. 1).

    ``x`` is the start x_T = σ_0 z: (B, D) with ``sigmas`` (n,), or (M, B, D) with
    ``sigmas`` (M, n), one schedule per model, decreasing to a final 0 (Euler step).
    ``denoise(x, σ)`` gets σ with x's leading shape.
    """
    if not callable(denoise):
        raise TypeError(f"denoise: expected a callable, got {type(denoise).__name__}")
    check_tensor("x", x, floating=True, finite=True, nonempty=True)
    check_tensor("sigmas", sigmas, floating=True)
    if x.ndim not in (2, 3):
        raise ValueError(f"x: expected shape (B, D) or (M, B, D), got {tuple(x.shape)}")
    if sigmas.ndim != x.ndim - 1 or sigmas.shape[:-1] != x.shape[:-2]:
        raise ValueError(
            f"x, sigmas: expected sigmas of shape {tuple(x.shape[:-2]) + ('n',)} for x "
            f"of shape "
            f"{tuple(x.shape)}, got {tuple(sigmas.shape)}"
        )
    if sigmas.shape[-1] < 2:
        raise ValueError(f"sigmas: expected >= 2 levels, got {tuple(sigmas.shape)}")
    _check_sigmas("sigmas", sigmas, positive=False)
    lead = x.shape[:-1]

    def at(i):  # σ_i broadcast to x's leading shape
        return sigmas[..., i].unsqueeze(-1).expand(lead)

    for i in range(sigmas.shape[-1] - 1):
        s, s_next = at(i), at(i + 1)
        d = (x - denoise(x, s)) / s.unsqueeze(-1)  # dx/dσ = (x − D)/σ
        x_euler = x + (s_next - s).unsqueeze(-1) * d
        if bool((sigmas[..., i + 1] > 0).all()):
            d2 = (x_euler - denoise(x_euler, s_next)) / s_next.unsqueeze(-1)
            x = x + (s_next - s).unsqueeze(-1) * (d + d2) / 2  # Heun correction
        else:
            x = x_euler
    return x


def check_sigma_n(sigma_n) -> torch.Tensor:
    """σ_n per model as a float tensor, ≥ 0."""
    try:
        t = torch.as_tensor(sigma_n, dtype=torch.float32)
    except (TypeError, ValueError, RuntimeError):
        raise TypeError(
            f"sigma_n: expected a non-empty 1-d sequence of numbers >= 0, got "
            f"{sigma_n!r}"
        ) from None
    if t.ndim != 1 or t.numel() == 0 or not bool(((t >= 0) & t.isfinite()).all()):
        raise ValueError(
            f"sigma_n: expected a non-empty 1-d sequence of numbers >= 0, "
            f"got {sigma_n!r}"
        )
    return t


def train_ensemble(
    model: EnsembleMLP,
    x: torch.Tensor,
    y: torch.Tensor,
    sigma_n,
    clean_low,
    *,
    steps: int,
    batch: int,
    lr: float,
    generator: torch.Generator,
    ema: float = 0.999,
    checkpoints=(),
    fresh=None,
    sizes=None,
):
    """Adam on the sum over models of each model's mean :func:`ambient_loss`.

    x, y (M, N, D): clean images and their fixed noisy copies; ``sigma_n`` (M,);
    ``clean_low`` (M,) bools: False for a model that never sees clean data (its σ is
    drawn conditioned on σ ≥ σ_n). ``fresh`` (M,) bools, default all False: True for
    a model whose noisy copies are redrawn at every step, y = x + σ_n η_fresh (the
    ablation of the fixed copy). ``sizes`` (M,) ints, default all N: model m trains on
    the first ``sizes[m]`` rows of x[m], y[m] only (training sets of several sizes in
    one ensemble, zero-padded to N). Batches and noise are drawn on the CPU from
    ``generator``. Returns ``(ema_model, {step: ema state_dict})`` for ``checkpoints``.
    """
    check_instance("model", model, EnsembleMLP)
    check_tensor("x", x, ndim=3, floating=True, finite=True, nonempty=True)
    check_tensor("y", y, shape=tuple(x.shape), floating=True, finite=True)
    M, N, D = x.shape
    if model.M != M or model.dim != D:
        raise ValueError(
            f"model: expected M={M}, dim={D} as x, got M={model.M}, dim={model.dim}"
        )
    sn = check_sigma_n(sigma_n)
    if sn.numel() != M:
        raise ValueError(f"sigma_n: expected {M} values, got {sn.numel()}")
    if not isinstance(clean_low, (list, tuple, torch.Tensor)) or any(
        not isinstance(c, (bool, torch.Tensor)) for c in clean_low
    ):
        raise TypeError(f"clean_low: expected {M} bools, got {clean_low!r}")
    clean = torch.as_tensor(clean_low, dtype=torch.bool)
    if clean.shape != (M,):
        raise ValueError(f"clean_low: expected {M} bools, got {clean_low!r}")
    fresh = [False] * M if fresh is None else fresh
    if not isinstance(fresh, (list, tuple)) or any(
        not isinstance(f, bool) for f in fresh
    ):
        raise TypeError(f"fresh: expected {M} bools, got {fresh!r}")
    if len(fresh) != M:
        raise ValueError(f"fresh: expected {M} bools, got {len(fresh)}")
    fresh_t = torch.tensor(fresh).view(M, 1, 1).to(x.device)
    if sizes is not None:
        if not isinstance(sizes, (list, tuple)):
            raise TypeError(f"sizes: expected {M} ints, got {type(sizes).__name__}")
        if len(sizes) != M:
            raise ValueError(f"sizes: expected {M} ints, got {len(sizes)}")
        sizes = [check_int("sizes", n, 1) for n in sizes]
        if max(sizes) > N:
            raise ValueError(f"sizes: expected sizes <= N = {N}, got {max(sizes)}")
    ragged = sizes is not None and min(sizes) < N
    n_rows = torch.tensor(sizes if ragged else [N] * M).view(M, 1)  # (M, 1)
    steps, batch = check_int("steps", steps, 1), check_int("batch", batch, 1)
    lr = check_positive("lr", lr)
    ema = check_probability("ema", ema)
    check_generator("generator", generator, allow_none=False)
    if not isinstance(checkpoints, (list, tuple)):
        raise TypeError(
            f"checkpoints: expected a tuple of steps, got {type(checkpoints).__name__}"
        )
    check_numbers(
        "checkpoints", checkpoints, lambda n, v: check_int(n, v, 1), allow_empty=True
    )
    dev = x.device
    floor = torch.where(clean, torch.zeros(M), sn).view(M, 1)  # (M, 1)
    # foreach: one multi-tensor Adam update per step (the same arithmetic as the
    # per-tensor loop, bit for bit on the CPU; about 1.5x faster here)
    opt = torch.optim.Adam(model.parameters(), lr=lr, foreach=True)
    ema_model = _clone(model)
    sn_dev, saved = sn.to(dev), {}
    rows = torch.arange(M).view(M, 1)
    for k in range(1, steps + 1):
        if ragged:  # a uniform row among model m's first sizes[m]
            u = torch.rand((M, batch), generator=generator)
            idx = (u * n_rows).long().clamp_max(n_rows - 1)  # (M, B)
        else:
            idx = torch.randint(N, (M, batch), generator=generator)  # (M, B)
        sigma = sample_sigma((M, batch), floor, generator).to(dev)  # (M, B)
        eps = torch.randn(M, batch, D, generator=generator).to(dev)
        xb, yb = x[rows, idx], y[rows, idx]  # (M, B, D)
        if any(fresh):  # a new noisy copy y = x + σ_n η for the ablation models
            eta = torch.randn(M, batch, D, generator=generator).to(dev)
            yb = torch.where(fresh_t, xb + sn_dev.view(M, 1, 1) * eta, yb)
        loss = ambient_loss(model.denoise, xb, yb, sigma, sn_dev, eps, check=False)
        loss = loss.mean(1).sum()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        beta = min(ema, (1 + k) / (10 + k))  # EMA with a warm-up
        with torch.no_grad():
            torch._foreach_lerp_(
                list(ema_model.parameters()), list(model.parameters()), 1 - beta
            )
        if k in checkpoints:
            saved[k] = {n: t.clone() for n, t in ema_model.state_dict().items()}
    return ema_model, saved


def _clone(model: EnsembleMLP) -> EnsembleMLP:
    out = EnsembleMLP.__new__(EnsembleMLP)
    torch.nn.Module.__init__(out)
    out.M, out.dim, out.n_emb = model.M, model.dim, model.n_emb
    out.weights = torch.nn.ParameterList(
        [torch.nn.Parameter(w.detach().clone()) for w in model.weights]
    )
    out.biases = torch.nn.ParameterList(
        [torch.nn.Parameter(b.detach().clone()) for b in model.biases]
    )
    return out.requires_grad_(False)
