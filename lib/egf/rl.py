"""The RL variant of an EGF: a reward R on the torus is the terminal flow, f_term = R,
and the network must satisfy flow matching f_init + f*← = f→ + R everywhere.

Two losses on probe points s ~ ν_train (uniform on T² here):

* the stable flow-matching loss ``"fm"``:  E |f_init + f*← − f→ − R|²  (eq. 2, q = 2);
* the divergence loss ``"divergence"``:    E log²((f_init + f*←) / (f→ + R)), and with
  its regulariser ``"divergence_reg"``:   … + λ E (f→)².

The log-ratio is unchanged when the inflow and the outflow both grow, so the divergence
loss has no scale: a flow that circulates more and more mass around the ergodic
transformations keeps lowering it (the total flow ∫f→ and the trajectory length τ grow),
which is what the regulariser λ E (f→)² holds back. The FM loss measures the residual in
absolute terms and has no such direction.

The paper's RL toy uses 16 maps; here the 8 of :func:`rl_maps` (the chapter's four
SL2(Z) maps and the four irrational translations), the same 3×32 MLP as the imitation
runs and the checkerboard as reward.
"""

from __future__ import annotations

import math
import os
import pathlib
import time

import torch

from lib.common import (
    check_choice,
    check_generator,
    check_instance,
    check_int,
    check_nonnegative,
    check_positive,
    check_tensor,
    make_generator,
)
from lib.common.claims import seed_list

from .models import EGF
from .torus import TARGETS, TorusMaps, make_maps, target_density

#: the losses of the RL toy (see the module docstring)
RL_LOSSES = ("fm", "divergence", "divergence_reg")
#: the RL toy's settings (:func:`train_rl`' keywords), fixed before any run: the
#: imitation runs' 3×32 MLP, Adam at 3e-3 without a schedule, 600 steps of 256
#: uniform probes, λ = 1e-2, a record every 50 steps with 256 walkers of at most 200
#: jumps
RL_SETTINGS = {
    "target": "checkerboard",
    "steps": 600,
    "batch": 256,
    "lr": 3e-3,
    "lam": 1e-2,
    "width": 32,
    "depth": 3,
    "every": 50,
    "walkers": 256,
    "max_steps": 200,
}
#: the stored record the chapter reads, and the command that writes it
RL_FILE = pathlib.Path(__file__).resolve().parents[2] / "results" / "egf.rl.json"
RL_COMMAND = "python -m lib.egf rl"


def rl_maps(device="cpu") -> TorusMaps:
    """The RL toy's 8 maps: ``make_maps("sl2")`` followed by
    ``make_maps("translation")`` (A, B with irrational shifts and their inverses; the
    two shifts and their negatives)."""
    a, b = make_maps("sl2"), make_maps("translation")
    return TorusMaps(torch.cat([a.mats, b.mats]), torch.cat([a.shifts, b.shifts])).to(
        device
    )


def _check_egf(egf) -> EGF:
    if not isinstance(egf, EGF):
        raise TypeError(f"egf: expected an EGF, got {type(egf).__name__}")
    if egf.dim != 2:
        raise ValueError("egf: expected an EGF of the torus (the reward lives on T²)")
    return egf


def rl_loss(
    egf: EGF, x: torch.Tensor, reward: torch.Tensor, loss: str = "fm", lam: float = 0.0
) -> torch.Tensor:
    """The RL loss ``loss`` (one of :data:`RL_LOSSES`) at the probe points ``x`` (N, 2)
    with terminal flow ``reward`` (N,); ``lam`` is λ of ``"divergence_reg"``."""
    egf = _check_egf(egf)
    loss = check_choice("loss", loss, RL_LOSSES)
    x = egf.maps.check_points("x", x)
    reward = check_tensor(
        "reward", reward, shape=(x.shape[0],), floating=True, finite=True
    )
    lam = check_nonnegative("lam", lam)
    out, _ = egf.outflow_policy(x)  # f→ (N,)
    inflow = egf.maps.f_init + egf.star_inflow(x)  # f_init + f*← (N,)
    if loss == "fm":
        return (inflow - out - reward).pow(2).mean()  # eq. (2), q = 2
    ratio = torch.log(inflow) - torch.log(out + reward)  # log((f_init+f*←)/(f→+R))
    value = ratio.pow(2).mean()
    if loss == "divergence_reg":
        value = value + lam * out.pow(2).mean()  # the regulariser λ E (f→)²
    return value


@torch.no_grad()
def rl_chain_length(
    egf: EGF, target: str, n: int, max_steps: int = 200, generator=None, device="cpu"
) -> dict:
    """Run the RL flow's chain for ``n`` walkers: start uniform; at s stop with
    probability R(s) / (R(s) + f→(s)), else jump to Φ_i(s) with probability α_i(s).
    Returns ``{"tau": mean jumps, "capped": share still running at max_steps}`` (τ
    counts a capped walker's ``max_steps`` jumps, so it is a lower bound when
    ``capped`` > 0)."""
    egf = _check_egf(egf)
    n, max_steps = check_int("n", n, 1), check_int("max_steps", max_steps, 1)
    target = check_choice("target", target, TARGETS)
    generator = check_generator("generator", generator)
    x = egf.maps.uniform(n, generator).to(device)  # s₀ ~ f_init
    u = torch.rand(max_steps, n, dtype=torch.float64, generator=generator).to(device)
    v = torch.rand(max_steps, n, dtype=torch.float64, generator=generator).to(device)
    maps = egf.maps.to(device)
    steps = torch.zeros(n, dtype=torch.long, device=device)
    alive = torch.ones(n, dtype=torch.bool, device=device)
    for t in range(max_steps):
        f, a = egf.outflow_policy(x)
        r = target_density(x, target)
        alive = alive & ~(u[t] * (r + f) < r)  # P(stop) = R / (R + f→)
        i = (a.cumsum(-1) < v[t, :, None]).sum(-1).clamp_max(maps.p - 1)  # i ~ α
        nxt = maps.forward(x)[i, torch.arange(n, device=device)]
        x = torch.where(alive[:, None], nxt, x)
        steps = steps + alive.long()
        if not bool(alive.any()):
            break
    return {"tau": float(steps.double().mean()), "capped": float(alive.double().mean())}


def train_rl(
    loss: str,
    seed: int,
    *,
    target: str = "checkerboard",
    steps: int = 600,
    batch: int = 256,
    lr: float = 3e-3,
    lam: float = 1e-2,
    width: int = 32,
    depth: int = 3,
    every: int = 50,
    walkers: int = 256,
    max_steps: int = 200,
    device="cpu",
) -> dict:
    """Train a fresh EGF (seeded by ``seed``) on the RL loss ``loss`` with reward
    ``target_density(·, target)``; every ``every`` steps record the total flow ∫f→
    (mean over 4096 fixed uniform points), the FM residual E|f_init + f*← − f→ − R|
    on them, and τ from :func:`rl_chain_length`.

    Returns ``{"step": [...], "total_flow": [...], "fm_residual": [...], "tau": [...],
    "capped": [...], "loss": [...]}`` (plain floats; step 0 is the initial model)."""
    loss = check_choice("loss", loss, RL_LOSSES)
    target = check_choice("target", target, TARGETS)
    seed = check_int("seed", seed, 0)
    steps, batch = check_int("steps", steps, 1), check_int("batch", batch, 1)
    every = check_int("every", every, 1)
    walkers, max_steps = (
        check_int("walkers", walkers, 1),
        check_int("max_steps", max_steps, 1),
    )
    lr = check_positive("lr", lr)
    lam = check_nonnegative("lam", lam)
    torch.manual_seed(seed)
    egf = EGF(rl_maps(), check_int("width", width, 1), check_int("depth", depth, 1))
    egf = egf.to(device)
    g = make_generator(seed)
    probes = torch.rand(steps, batch, 2, dtype=torch.float64, generator=g)
    fixed = torch.rand(4096, 2, dtype=torch.float64, generator=g).to(device)
    r_fixed = target_density(fixed, target)
    opt = torch.optim.Adam(egf.parameters(), lr=lr)
    hist = {k: [] for k in ("step", "total_flow", "fm_residual", "tau", "capped")}
    hist["loss"] = []

    def record(t):
        with torch.no_grad():
            f, _ = egf.outflow_policy(fixed)
            res = egf.maps.f_init + egf.star_inflow(fixed) - f - r_fixed
        chain = rl_chain_length(
            egf, target, walkers, max_steps, make_generator(10_000 + t), device
        )
        hist["step"].append(t)
        hist["total_flow"].append(float(f.mean()))
        hist["fm_residual"].append(float(res.abs().mean()))
        hist["tau"].append(chain["tau"])
        hist["capped"].append(chain["capped"])

    record(0)
    for t in range(1, steps + 1):
        x = probes[t - 1].to(device)
        value = rl_loss(egf, x, target_density(x, target), loss, lam)
        opt.zero_grad()
        value.backward()
        opt.step()
        hist["loss"].append(float(value.detach()))
        if t % every == 0 or t == steps:
            record(t)
    return hist


def _settings_arg(settings) -> dict:
    if settings is None:
        return dict(RL_SETTINGS)
    check_instance("settings", settings, dict, "a dict of train_rl's keywords")
    unknown = set(settings) - set(RL_SETTINGS)
    if unknown:
        raise ValueError(
            f"settings: expected keys among {sorted(RL_SETTINGS)}, got "
            f"{sorted(unknown)}"
        )
    return {**RL_SETTINGS, **settings}


def rl_settings(cfg) -> dict:
    """:data:`RL_SETTINGS` with the preset's number of steps (``cfg.rl_steps``)."""
    from .experiment import _check_cfg

    _check_cfg(cfg)
    return {**RL_SETTINGS, "steps": cfg.rl_steps}


def _rl_job(loss: str, seed: int, settings: dict, device) -> dict:
    return train_rl(loss, seed, **settings, device=device)


def rl_runs(seeds, device="cpu", processes: int = 1, settings=None) -> dict:
    """:func:`train_rl` for every loss and seed: ``{loss: {seed: history}}``;
    ``settings`` default to :data:`RL_SETTINGS`; ``processes`` > 1 runs them in
    one-thread worker processes (the same numbers)."""
    from .experiment import pool_map

    seeds = seed_list(seeds)
    processes = check_int("processes", processes, 1)
    settings = _settings_arg(settings)
    jobs = [(loss, s, settings, device) for loss in RL_LOSSES for s in seeds]
    done = iter(pool_map(_rl_job, jobs, processes))
    return {loss: {s: next(done) for s in seeds} for loss in RL_LOSSES}


def rl_measured(runs: dict) -> dict:
    """The ``rl-divergence`` row in :func:`lib.egf.claims.measure_claims`' form from
    :func:`rl_runs`' dict: per seed log10(final total flow with the divergence loss /
    with the FM loss), and the control with the regulariser on."""
    check_instance("runs", runs, dict, "rl_runs' dict")
    if set(runs) != set(RL_LOSSES):
        raise ValueError(f"runs: expected the keys {RL_LOSSES}, got {sorted(runs)}")

    def gap(loss, s):  # log10 of the ratio of the final total flows
        return math.log10(runs[loss][s]["total_flow"][-1]) - math.log10(
            runs["fm"][s]["total_flow"][-1]
        )

    seeds = list(runs["fm"])
    return {
        "rl-divergence": {
            "values": {s: gap("divergence", s) for s in seeds},
            "control": {s: gap("divergence_reg", s) for s in seeds},
        }
    }


def save_rl_record(
    seeds, path=RL_FILE, device="cpu", processes: int = 1, settings=None
):
    """Run :func:`rl_runs` at ``settings`` (default :data:`RL_SETTINGS`) and write
    them with the code fingerprint, the command and the run's machine
    (:func:`lib.egf.records.write_record`); returns the path."""
    from .records import write_record

    check_instance("path", path, (str, os.PathLike), "a path")
    settings = _settings_arg(settings)
    t0 = time.perf_counter()
    runs = rl_runs(seeds, device, processes, settings)
    seeds = seed_list(seeds)
    return write_record(path, RL_COMMAND, settings, seeds, "runs", runs, device, t0)


def load_rl_record(path=RL_FILE, settings=None) -> dict:
    """The stored record: ``{"runs": {loss: {seed: history}}, "seeds", "stale", ...}``
    with integer seeds; ``stale`` is True when ``lib/egf`` changed since it was
    written. Raises when the file is missing or its settings are not ``settings``
    (default :data:`RL_SETTINGS`)."""
    from .records import read_record

    check_instance("path", path, (str, os.PathLike), "a path")
    settings = _settings_arg(settings)
    return read_record(path, RL_COMMAND, settings, "runs", "path")


def main() -> pathlib.Path:
    """``python -m lib.egf rl``: the notebook seeds, two workers; returns the path."""
    from .claims import NOTEBOOK_SEEDS

    return save_rl_record(NOTEBOOK_SEEDS, processes=2)


__all__ = [
    "RL_LOSSES",
    "RL_SETTINGS",
    "RL_FILE",
    "RL_COMMAND",
    "rl_maps",
    "rl_loss",
    "rl_chain_length",
    "train_rl",
    "rl_settings",
    "rl_runs",
    "rl_measured",
    "save_rl_record",
    "load_rl_record",
]
