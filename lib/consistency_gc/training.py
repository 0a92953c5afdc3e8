"""Consistency training with IC, GC and CD pairs (iCT recipe), batched over an ensemble
of members.

One training step (iCT, Song & Dhariwal 2024; GC, Issenhuth et al. 2025):

    i ~ lognormal over the N(k) − 1 intervals of the Karras grid,
    z ~ N(0, I),  x* ~ data
    IC:  x_{σ_i} = x* + σ_i z,  x_{σ_{i+1}} = x* + σ_{i+1} z               (eq. IC)
    GC:  x̂ = sg f_{θ⁻}(x* + σ_i z, σ_i),
         x_{σ_i} = x̂ + σ_i z,  x_{σ_{i+1}} = x̂ + σ_{i+1} z                 (eq. GC)
         used for a fraction μ of the batch, IC for the rest
    CD:  x_{σ_{i+1}} = x* + σ_{i+1} z,
         x_{σ_i} = x_{σ_{i+1}}
                   − (σ_{i+1} − σ_i)(x_{σ_{i+1}} − D(x_{σ_{i+1}}, σ_{i+1}))/σ_{i+1}
    loss = mean_b λ(σ_i) d(f_θ(x_{σ_{i+1}}, σ_{i+1}), sg f_θ(x_{σ_i}, σ_i)),
    λ = 1/(σ_{i+1} − σ_i)                                                  (eq. CT)

The target uses the stop-gradient online network (iCT's θ⁻ = sg θ, as the official code
does); the EMA network θ⁻ is the generator of GC's x̂ and the model we evaluate.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from lib.common import (
    check_bool,
    check_choice,
    check_finite,
    check_int,
    check_positive,
    check_probability,
    check_tensor,
    progress,
)

from .diffusion import (
    ema_update,
    ict_loss_weights,
    ict_num_scales,
    karras_sigmas,
    lognormal_indices,
    pseudo_huber,
)
from .models import ConsistencyEnsemble, EnsembleMLP, make_ema


#: the consistency distances d of :func:`consistency_loss`
LOSSES = ("pseudo_huber", "l2")


@dataclass(frozen=True)
class TrainConfig:
    """Hyper-parameters of one consistency-training run (shared by every member of an
    ensemble)."""

    steps: int = 3000
    batch: int = 256
    hidden: int = 128
    depth: int = 2
    lr: float = 5e-4
    ema_decay: float = 0.99
    sigma_min: float = 1e-3
    sigma_max: float = 5.0
    sigma_data: float = 0.5
    s0: int = 10
    s1: int = 100
    p_mean: float = -1.1
    p_std: float = 2.0
    n_checkpoints: int = 4
    # "pseudo_huber" (iCT) or "l2" (squared L2, the authors' 2-D toy)
    loss: str = "pseudo_huber"
    # EMA warm-up (the ``ema_pytorch`` default the authors' toy uses): the decay at step
    # k is min(ema_decay, 1 − (1 + k)^(−2/3)), so θ⁻ follows θ closely early on
    ema_warmup: bool = False

    def __post_init__(self):
        for name in ("steps", "batch", "depth", "s0", "n_checkpoints"):
            check_int(name, getattr(self, name), 1)
        check_int("hidden", self.hidden, 2)
        if self.hidden % 2:
            raise ValueError(
                f"hidden: expected an even int (the noise embedding has cos and sin "
                f"halves), got {self.hidden}"
            )
        if check_int("s1", self.s1, 1) < self.s0:
            raise ValueError(f"s1: expected an int >= s0 = {self.s0}, got {self.s1}")
        for name in ("lr", "sigma_min", "sigma_max", "sigma_data", "p_std"):
            check_positive(name, getattr(self, name))
        if self.sigma_max <= self.sigma_min:
            raise ValueError(
                f"sigma_max: expected a number > sigma_min = {self.sigma_min}, got "
                f"{self.sigma_max}"
            )
        check_probability("ema_decay", self.ema_decay)
        check_finite("p_mean", self.p_mean)
        check_choice("loss", self.loss, LOSSES)
        check_bool("ema_warmup", self.ema_warmup)

    def ema_decay_at(self, step: int) -> float:
        """The EMA decay used after optimisation step ``step`` (0-based)."""
        step = check_int("step", step, 0)
        if not self.ema_warmup:
            return self.ema_decay
        return min(self.ema_decay, 1.0 - (1.0 + step) ** (-2.0 / 3.0))


def consistency_pairs(
    x0: torch.Tensor,
    z: torch.Tensor,
    s_i: torch.Tensor,
    s_ip1: torch.Tensor,
    u: torch.Tensor | None = None,
    mu: torch.Tensor | None = None,
    generator_fn=None,
    cd: torch.Tensor | None = None,
    denoiser=None,
    *,
    check: bool = True,
):
    """The pair (x_{σ_i}, x_{σ_{i+1}}) and its endpoint x_end for IC / GC / CD members.

    x0, z (M, B, d); s_i < s_ip1 (M, B); u (M, B) uniforms and mu (M,) the GC fraction
    per member (sample b of member m uses GC iff u[m, b] < mu[m]); ``generator_fn(x,
    σ)`` the EMA model; cd (M,) bool marks CD members and ``denoiser(x, σ)`` is their
    exact teacher. Returns x_i, x_ip1, x_end, each (M, B, d). ``check=False`` skips
    reading the values (NaN, ranges): the training step, whose inputs were drawn by the
    trainer.
    """
    check_tensor("x0", x0, ndim=3, floating=True)
    if x0.shape[0] < 1 or x0.shape[1] < 1:
        raise ValueError(
            f"x0: expected at least one member and one sample, got shape "
            f"{tuple(x0.shape)}"
        )
    check_tensor("z", z, shape=tuple(x0.shape), floating=True)
    for name, s in (("s_i", s_i), ("s_ip1", s_ip1)):
        check_tensor(name, s, shape=tuple(x0.shape[:2]), floating=True)
    if check:
        _check_pair_inputs(x0, z, s_i, s_ip1, u, mu, generator_fn, cd, denoiser)
    si, sip1 = s_i.unsqueeze(-1), s_ip1.unsqueeze(-1)  # (M, B, 1)
    x_end = x0  # IC endpoint x*
    if generator_fn is not None:
        if u is None or mu is None:
            raise ValueError(
                "u: expected uniforms (M, B) and mu (M,) with generator_fn, got None"
            )
        with torch.no_grad():
            x_hat = generator_fn(x0 + si * z, s_i)  # x̂ = sg f_θ⁻(x* + σ_i z, σ_i)
        use_gc = (u < mu.unsqueeze(-1)).unsqueeze(-1)  # (M, B, 1)
        x_end = torch.where(use_gc, x_hat, x0)  # mix GC / IC at fraction μ
    x_i = x_end + si * z  # eq. IC / GC, same z
    x_ip1 = x_end + sip1 * z
    if cd is not None and denoiser is not None:
        with torch.no_grad():
            vel = (x_ip1 - denoiser(x_ip1, s_ip1)) / sip1  # exact PF-ODE velocity
            x_i_cd = x_ip1 - (sip1 - si) * vel  # one Euler step σ_{i+1} → σ_i
        x_i = torch.where(cd.view(-1, 1, 1), x_i_cd, x_i)
    return x_i, x_ip1, x_end


def consistency_loss(
    model,
    x_i,
    x_ip1,
    s_i,
    s_ip1,
    weight,
    loss: str = "pseudo_huber",
    *,
    check: bool = True,
) -> torch.Tensor:
    """Per-member loss mean_b λ_b d(f_θ(x_{σ_{i+1}}), sg f_θ(x_{σ_i})) (eq. CT); shape
    (M,).

    d is iCT's pseudo-Huber distance (``loss="pseudo_huber"``) or the squared L2
    distance (``"l2"``). ``check=False`` skips the input checks: the training step.
    """
    if loss not in LOSSES:
        raise ValueError(f"loss: expected 'pseudo_huber' or 'l2', got {loss!r}")
    if check:
        _check_loss_inputs(model, x_i, x_ip1, s_i, s_ip1, weight)
    with torch.no_grad():
        target = model(x_i, s_i)  # sg f_θ(x_{σ_i}, σ_i)   (M, B, d)
    pred = model(x_ip1, s_ip1)  # f_θ(x_{σ_{i+1}}, σ_{i+1})
    m, b = pred.shape[:2]
    if loss == "l2":
        dist = (pred - target).reshape(m, b, -1).pow(2).sum(-1)  # ‖·‖²   (M, B)
    else:
        dist = pseudo_huber(
            pred.reshape(m * b, -1), target.reshape(m * b, -1), check=False
        ).view(m, b)
    return (weight * dist).mean(dim=1)  # (M,)


def _check_pair_inputs(x0, z, s_i, s_ip1, u, mu, generator_fn, cd, denoiser) -> None:
    """The value checks of :func:`consistency_pairs` (one device sync each)."""
    check_tensor("x0", x0, finite=True)
    check_tensor("z", z, finite=True)
    for name, s in (("s_i", s_i), ("s_ip1", s_ip1)):
        if not bool(((s > 0) & torch.isfinite(s)).all()):
            raise ValueError(
                f"{name}: expected finite noise levels > 0, got NaN, inf or a value "
                f"<= 0"
            )
    if not bool((s_i <= s_ip1).all()):
        raise ValueError("s_i, s_ip1: expected s_i <= s_ip1 elementwise")
    M, B = x0.shape[:2]
    if generator_fn is not None:
        if not callable(generator_fn):
            raise TypeError(
                f"generator_fn: expected the EMA model (a callable), got "
                f"{type(generator_fn).__name__}"
            )
        if u is None or mu is None:
            raise ValueError(
                "u: expected uniforms (M, B) and mu (M,) with generator_fn, got None"
            )
        check_tensor("u", u, shape=(M, B), floating=True)
        if not bool(((u >= 0) & (u <= 1)).all()):
            raise ValueError(
                "u: expected uniforms in [0, 1], got values outside (or NaN)"
            )
        check_tensor("mu", mu, shape=(M,), floating=True)
        if not bool(((mu >= 0) & (mu <= 1)).all()):
            raise ValueError(
                "mu: expected GC fractions in [0, 1], got values outside (or NaN)"
            )
    if cd is not None:
        check_tensor("cd", cd, shape=(M,))
        if cd.dtype != torch.bool:
            raise TypeError(f"cd: expected a bool tensor, got dtype {cd.dtype}")
        if denoiser is not None and not callable(denoiser):
            raise TypeError(
                f"denoiser: expected the exact denoiser D(x, σ) (a callable), got "
                f"{type(denoiser).__name__}"
            )


def _check_loss_inputs(model, x_i, x_ip1, s_i, s_ip1, weight) -> None:
    if not callable(model):
        raise TypeError(
            f"model: expected the consistency model f(x, σ) (a callable), got "
            f"{type(model).__name__}"
        )
    check_tensor("x_i", x_i, floating=True)
    if x_i.ndim < 3 or x_i.shape[0] < 1 or x_i.shape[1] < 1:
        raise ValueError(
            f"x_i: expected shape (M, B, ...) with M, B >= 1, got {tuple(x_i.shape)}"
        )
    check_tensor("x_ip1", x_ip1, floating=True)
    if x_ip1.shape != x_i.shape:
        raise ValueError(
            f"x_i, x_ip1: expected one shape, got {tuple(x_i.shape)} and "
            f"{tuple(x_ip1.shape)}"
        )
    mb = tuple(x_i.shape[:2])
    for name, s in (("s_i", s_i), ("s_ip1", s_ip1)):
        check_tensor(name, s, shape=mb, floating=True)
        if not bool(((s > 0) & torch.isfinite(s)).all()):
            raise ValueError(
                f"{name}: expected finite noise levels > 0, got NaN, inf or a value "
                f"<= 0"
            )
    check_tensor("weight", weight, shape=mb, floating=True)
    if not bool(((weight >= 0) & torch.isfinite(weight)).all()):
        raise ValueError(
            "weight: expected finite weights >= 0, got NaN, inf or a negative value"
        )
    check_tensor("x_i", x_i, finite=True)
    check_tensor("x_ip1", x_ip1, finite=True)


class Trainer:
    """Trains an ensemble of consistency models side by side, one member per (method,
    seed).

    ``mu`` (M,) is each member's GC fraction (0 = IC), ``cd`` (M,) marks CD members
    (exact teacher ``denoiser`` needed), ``member_seed`` (M,) maps each member to a data
    stream / initialisation: members with the same seed see identical x*, z, i and u and
    start from identical weights, so methods are compared on paired randomness.
    ``init_generator`` (M,) marks members whose GC endpoints x̂ come from the frozen,
    untrained initial network instead of the EMA model (a negative control).
    ``stream_seeds`` (one int per data stream) initialises stream k's members from
    1000 · stream_seeds[k] (else ``seed`` · 1000 + k); with it, :meth:`fit` takes one
    generator per stream, so that several seeds train side by side in one ensemble and
    each gets what it would get alone (``Trainer(seed=s)`` with one stream).
    """

    def __init__(
        self,
        cfg: TrainConfig,
        data_dim: int,
        mu,
        cd=None,
        member_seed=None,
        seed: int = 0,
        denoiser=None,
        device: str | torch.device = "cpu",
        init_generator=None,
        stream_seeds=None,
    ):
        if not isinstance(cfg, TrainConfig):
            raise TypeError(f"cfg: expected a TrainConfig, got {type(cfg).__name__}")
        check_int("seed", seed, 0)
        if denoiser is not None and not callable(denoiser):
            raise TypeError(
                f"denoiser: expected the exact denoiser D(x, σ) (a callable), got "
                f"{type(denoiser).__name__}"
            )
        self.cfg, self.device = cfg, torch.device(device)
        try:
            self.mu = torch.as_tensor(mu, dtype=torch.float32)
        except (TypeError, ValueError, RuntimeError):
            raise TypeError(
                f"mu: expected a 1-d list of fractions in [0, 1], got {mu!r}"
            ) from None
        if (
            self.mu.ndim != 1
            or self.mu.numel() < 1
            or not bool(((self.mu >= 0) & (self.mu <= 1)).all())
        ):
            raise ValueError(
                f"mu: expected a 1-d list of fractions in [0, 1], got "
                f"{self.mu.tolist()}"
            )
        m = self.mu.numel()
        self.cd = (
            torch.zeros(m, dtype=torch.bool)
            if cd is None
            else torch.as_tensor(cd, dtype=torch.bool)
        )
        if self.cd.shape != (m,):
            raise ValueError(
                f"cd: expected {m} booleans like mu, got shape {tuple(self.cd.shape)}"
            )
        if bool(self.cd.any()) and denoiser is None:
            raise ValueError(
                "denoiser: expected the exact denoiser D(x, σ) for CD members, got None"
            )
        self.member_seed = (
            torch.zeros(m, dtype=torch.long)
            if member_seed is None
            else torch.as_tensor(member_seed, dtype=torch.long)
        )
        if self.member_seed.shape != (m,) or int(self.member_seed.min()) < 0:
            raise ValueError(
                f"member_seed: expected {m} non-negative ints, got "
                f"{self.member_seed.tolist()}"
            )
        self.init_gen = (
            torch.zeros(m, dtype=torch.bool)
            if init_generator is None
            else torch.as_tensor(init_generator)
        )
        if self.init_gen.shape != (m,) or self.init_gen.dtype != torch.bool:
            raise ValueError(
                f"init_generator: expected {m} booleans like mu, got "
                f"{self.init_gen.tolist()}"
            )
        self.n_streams = int(self.member_seed.max()) + 1
        self.stream_seeds = None
        if stream_seeds is not None:
            try:
                self.stream_seeds = torch.as_tensor(stream_seeds, dtype=torch.long)
            except (TypeError, ValueError, RuntimeError):
                raise TypeError(
                    f"stream_seeds: expected a list of ints, got {stream_seeds!r}"
                ) from None
            if self.stream_seeds.shape != (self.n_streams,) or bool(
                (self.stream_seeds < 0).any()
            ):
                raise ValueError(
                    f"stream_seeds: expected {self.n_streams} non-negative ints (one "
                    f"per data stream), got {self.stream_seeds.tolist()}"
                )
        self.denoiser, self.data_dim = denoiser, check_int("data_dim", data_dim, 1)
        net = EnsembleMLP(
            m,
            data_dim,
            cfg.hidden,
            cfg.depth,
            seeds=(
                seed * 1000 + self.member_seed
                if stream_seeds is None
                else 1000 * self.stream_seeds[self.member_seed]
            ).tolist(),
        )
        self.model = ConsistencyEnsemble(net, cfg.sigma_min, cfg.sigma_data).to(
            self.device
        )
        self.ema = make_ema(self.model)
        self.use_init_gen = bool(self.init_gen.any())
        self.init_model = make_ema(self.model) if self.use_init_gen else None
        self._init_dev = self.init_gen.to(self.device)
        self.opt = torch.optim.Adam(self.model.parameters(), lr=cfg.lr)
        self.use_gc, self.use_cd = bool((self.mu > 0).any()), bool(self.cd.any())
        self._mu_dev, self._cd_dev = self.mu.to(self.device), self.cd.to(self.device)
        self._seed_dev = self.member_seed.to(self.device)
        self._grids: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}
        self.step_count = 0

    def _grid(self, n: int):
        if n not in self._grids:
            c = self.cfg
            sig = karras_sigmas(n, c.sigma_min, c.sigma_max)  # (n,) CPU
            self._grids[n] = (sig, ict_loss_weights(sig))  # λ = 1/(σ_{i+1} − σ_i)
        return self._grids[n]

    def draw(self, sample_data, generator):
        """One batch of randomness per data stream, drawn on the CPU, moved, then shared
        by its members. ``generator``: one torch.Generator, or a list of one per
        stream (each stream then draws from its own)."""
        c, s, b = self.cfg, self.n_streams, self.cfg.batch
        sig, lam = self._grid(ict_num_scales(self.step_count, c.steps, c.s0, c.s1))
        gens = generator if isinstance(generator, (list, tuple)) else None
        if gens is not None and len(gens) != s:
            raise ValueError(
                f"generator: expected {s} generators (one per stream), got {len(gens)}"
            )
        parts = []
        for g, n in [(generator, s)] if gens is None else [(g, 1) for g in gens]:
            idx = lognormal_indices(n * b, sig, c.p_mean, c.p_std, generator=g)
            x0 = sample_data(n * b, g).view(n, b, -1)  # (n, B, d)
            z = torch.randn(n, b, self.data_dim, generator=g)  # (n, B, d)
            parts.append((idx.view(n, b), x0, z, torch.rand(n, b, generator=g)))
        idx, x0, z, u = (torch.cat(t) for t in zip(*parts))  # (S, B, ...) each
        idx = idx.reshape(-1)  # (S·B,)
        per = [
            t.to(self.device)[self._seed_dev]
            for t in (
                x0,
                z,
                sig[idx].view(s, b),
                sig[idx + 1].view(s, b),
                lam[idx].view(s, b),
                u,
            )
        ]
        return per  # each (M, B, ...)

    def generator(self, x: torch.Tensor, sigma: torch.Tensor) -> torch.Tensor:
        """GC's generator f_θ⁻(x, σ) per member: the EMA model, or the untrained
        initial network for the ``init_generator`` members; (M, B, d) -> (M, B, d)."""
        out = self.ema(x, sigma)
        if self.use_init_gen:
            out = torch.where(
                self._init_dev.view(-1, 1, 1), self.init_model(x, sigma), out
            )
        return out

    def step(self, batch) -> torch.Tensor:
        """One optimisation step on a drawn batch; returns the per-member loss (M,),
        detached."""
        x0, z, s_i, s_ip1, w, u = batch
        x_i, x_ip1, _ = consistency_pairs(
            x0,
            z,
            s_i,
            s_ip1,
            u,
            self._mu_dev,
            self.generator if self.use_gc else None,
            self._cd_dev if self.use_cd else None,
            self.denoiser,
            check=False,
        )
        loss = consistency_loss(
            self.model, x_i, x_ip1, s_i, s_ip1, w, self.cfg.loss, check=False
        )
        self.opt.zero_grad(set_to_none=True)
        loss.sum().backward()  # members are independent: Σ_m keeps each gradient
        self.opt.step()
        ema_update(self.ema, self.model, self.cfg.ema_decay_at(self.step_count))
        self.step_count += 1
        return loss.detach()

    def checkpoint_steps(self) -> list[int]:
        n, k = self.cfg.n_checkpoints, self.cfg.steps
        return sorted({round(k * (j + 1) / n) for j in range(n)})

    def fit(
        self,
        sample_data,
        generator: torch.Generator,
        on_checkpoint=None,
        desc: str = "training",
    ):
        """Train ``cfg.steps`` steps; call ``on_checkpoint(step, ema)`` at
        :meth:`checkpoint_steps`."""
        marks = set(self.checkpoint_steps())
        self.model.train()
        for _ in progress(
            range(self.step_count, self.cfg.steps), total=self.cfg.steps, desc=desc
        ):
            self.step(self.draw(sample_data, generator))
            if on_checkpoint is not None and self.step_count in marks:
                on_checkpoint(self.step_count, self.ema)
        return self

    @torch.no_grad()
    def one_step(self, z: torch.Tensor, model=None) -> torch.Tensor:
        """One-step samples f_θ⁻(σ_max z, σ_max) of every member from shared noise z (N,
        d), or from each member's own noise z (M, N, d) -> (M, N, d)."""
        model = self.ema if model is None else model
        m = self.mu.numel()
        check_tensor("z", z, floating=True, nonempty=True)
        if z.ndim == 3 and z.shape[0] != m:
            raise ValueError(
                f"z: expected (N, d) or ({m}, N, d), got shape {tuple(z.shape)}"
            )
        zz = z if z.ndim == 3 else z.expand(m, *z.shape)
        x = (self.cfg.sigma_max * zz).to(self.device)  # (M, N, d)
        sig = torch.full(x.shape[:2], self.cfg.sigma_max, device=self.device)
        return model(x, sig)
