"""The chapter's other data: a gravitational N-body system in 3-D (particle tracking,
as the paper's N-body set) and small point-cloud time courses with one time left out
(the paper's hold-out task), with the interpolation each method makes at the missing
time and the official metrics (W1 and a Gaussian-kernel MMD after min–max scaling).

Hold-out (the official tutorial's procedure): drop snapshot k, solve the chain on the
other times (the gap t_{k−1} → t_{k+1} is one step of twice the length), sample paths,
and draw each path's point at t_k from the reference process conditioned on its states
at t_{k−1} and t_{k+1}:

    p(η_t | η_a, η_b) ∝ N(η_t; Φ₁η_a, Q₁) · N(η_b; Φ₂η_t, Q₂)
    ⇒ Λ = Q₁⁻¹ + Φ₂ᵀQ₂⁻¹Φ₂,  mean = Λ⁻¹(Q₁⁻¹Φ₁η_a + Φ₂ᵀQ₂⁻¹η_b),  cov = Λ⁻¹.

For the smooth SB, η = (position, velocity) with the velocity drawn inside its sampled
cell from the stationary law (a truncated normal, as the official code's rejection
sampler); for the Brownian SB the same formula is the Brownian bridge. W2 matching
interpolates its matched pairs on a straight line (McCann); the transport spline
(Chewi et al., 2021, the paper's F&S baseline) follows W2-matched paths through every
remaining time and evaluates a cubic spline through each.
"""

from __future__ import annotations

import math

import numpy as np
import scipy.interpolate
import scipy.optimize
import torch

from lib.common import (
    check_choice,
    check_instance,
    check_int,
    check_nonnegative,
    check_positive,
)
from lib.common import check_tensor

from .model import DTYPE, LinearSDE, Tracks, brownian_log_kernels, reference_grids
from .model import smooth_log_kernels, transition
from .solver import chain_sinkhorn, sample_paths
from .tracking import w2_matching

HOLDOUT_METHODS = ("smooth_sb", "brownian_sb", "w2", "spline")
DATASETS = ("petal", "branch")


def _shuffle(states: torch.Tensor, gen: torch.Generator, t_end: float) -> Tracks:
    """Tracks from true states (K, n, d, m): each time's observations in a random
    order."""
    K, n, d = states.shape[:3]
    perms = torch.stack([torch.randperm(n, generator=gen) for _ in range(K)])
    obs = torch.gather(states[..., 0], 1, perms[..., None].expand(-1, -1, d))
    times = torch.linspace(0, t_end, K, dtype=DTYPE)
    return Tracks(obs, perms, states, times)


def simulate_nbody(
    n: int = 8,
    steps: int = 25,
    t_end: float = 2.0,
    gm: float = 9.0,
    soft: float = 0.2,
    spread: float = 0.6,
    kick: float = 0.3,
    substeps: int = 40,
    seed: int = 0,
    device="cpu",
) -> Tracks:
    """``n`` equal masses (total G·M = ``gm``) under softened gravity in 3-D,
    observed at ``steps`` + 1 times on [0, t_end]: positions start N(0, spread²),
    velocities N(0, (kick·√gm)²), centre of mass at rest; leapfrog with ``substeps``
    per observation interval.

    a_i = Σ_j (G M / n) (x_j − x_i) / (|x_j − x_i|² + soft²)^{3/2}
    """
    check_int("n", n, 2)
    check_int("steps", steps, 1)
    check_int("substeps", substeps, 1)
    check_int("seed", seed, 0)
    for name, v in (("t_end", t_end), ("gm", gm), ("soft", soft), ("spread", spread)):
        check_positive(name, v)
    check_nonnegative("kick", kick)
    gen = torch.Generator().manual_seed(int(seed))
    x = spread * torch.randn(n, 3, generator=gen, dtype=DTYPE)  # (n, 3)
    v = kick * math.sqrt(gm) * torch.randn(n, 3, generator=gen, dtype=DTYPE)
    x, v = x - x.mean(0), v - v.mean(0)

    def acc(x):
        dx = x[None, :, :] - x[:, None, :]  # (i, j, 3): x_j − x_i
        r2 = (dx**2).sum(-1) + soft**2  # (i, j)
        return (gm / n) * (dx / r2[..., None] ** 1.5).sum(1)  # (n, 3)

    h = t_end / steps / substeps
    a = acc(x)
    states = [torch.stack([x, v], -1)]  # (n, 3, 2)
    for _ in range(steps):
        for _ in range(substeps):  # leapfrog (kick–drift–kick)
            v = v + 0.5 * h * a
            x = x + h * v
            a = acc(x)
            v = v + 0.5 * h * a
        states.append(torch.stack([x, v], -1))
    tr = _shuffle(torch.stack(states), gen, t_end)
    return Tracks(*(t.to(device) for t in (tr.obs, tr.labels, tr.states, tr.times)))


def simulate_cloud(
    kind: str = "petal",
    n: int = 40,
    steps: int = 5,
    t_end: float = 2.0,
    noise: float = 0.03,
    seed: int = 0,
    device="cpu",
) -> Tracks:
    """A small point-cloud time course in 2-D with curved paths (``steps`` + 1
    snapshots of ``n`` points; the same particles at every time, shuffled).

    ``"petal"``: each point leaves the centre along a loop that turns as it goes,
    radius 0.2 + sin(πt/t_end) and angle θᵢ + 1.5 t (a petal-like flower, as the
    Petal set). ``"branch"``: a bifurcating time course (as single-cell
    differentiation): x = t, y = bᵢ·0.6 t² with bᵢ = ±1, plus a small per-point offset.
    Each point also carries a fixed offset of s.d. ``noise`` in each coordinate.
    Velocities are stored as the second state component.
    """
    check_choice("kind", kind, DATASETS)
    check_int("n", n, 2)
    check_int("steps", steps, 2)
    check_positive("t_end", t_end)
    check_nonnegative("noise", noise)
    check_int("seed", seed, 0)
    gen = torch.Generator().manual_seed(int(seed))
    K = steps + 1
    t = torch.linspace(0, t_end, K, dtype=DTYPE)[:, None]  # (K, 1)
    # a fresh sample of cells at every time (a snapshot destroys what it measures)
    off = noise * torch.randn(K, n, 2, generator=gen, dtype=DTYPE)  # (K, n, 2)
    if kind == "petal":
        th = 2 * math.pi * (torch.arange(n) + torch.rand(K, n, generator=gen)) / n
        w = math.pi / t_end
        r, dr = 0.2 + torch.sin(w * t), w * torch.cos(w * t)  # (K, 1)
        ang, dang = th.to(DTYPE) + 1.5 * t, 1.5  # (K, n)
        x = torch.stack([r * torch.cos(ang), r * torch.sin(ang)], -1)  # (K, n, 2)
        vx = dr * torch.cos(ang) - r * dang * torch.sin(ang)
        vy = dr * torch.sin(ang) + r * dang * torch.cos(ang)
        vel = torch.stack([vx, vy], -1)
    else:
        b = torch.where(torch.rand(K, n, generator=gen) < 0.5, -1.0, 1.0).to(DTYPE)
        x = torch.stack([t.expand(-1, n), b * 0.6 * t**2], -1)  # (K, n, 2)
        vel = torch.stack([torch.ones_like(x[..., 0]), b * 1.2 * t], -1)
    states = torch.stack([x + off, vel], -1)  # (K, n, 2, 2)
    tr = _shuffle(states, gen, t_end)
    return Tracks(*(a.to(device) for a in (tr.obs, tr.labels, tr.states, tr.times)))


def bridge_moments(sde, t0: float, t1: float, t2: float):
    """The reference's state at t1 given its states at t0 < t1 < t2: mean
    A η(t0) + B η(t2) and covariance C, returned as (A, B, C) (m, m) arrays
    (eq. (bridge) of the module docstring)."""
    check_instance("sde", sde, LinearSDE)
    for name, t in (("t0", t0), ("t1", t1), ("t2", t2)):
        check_nonnegative(name, t)
    if not t0 < t1 < t2:
        raise ValueError(f"t0, t1, t2: expected t0 < t1 < t2, got {(t0, t1, t2)}")
    P1, Q1 = transition(sde, t1 - t0)
    P2, Q2 = transition(sde, t2 - t1)
    Q1i, Q2i = np.linalg.inv(Q1), np.linalg.inv(Q2)
    lam = Q1i + P2.T @ Q2i @ P2  # (m, m) precision
    cov = np.linalg.inv(lam)
    return cov @ Q1i @ P1, cov @ P2.T @ Q2i, 0.5 * (cov + cov.T)


def _bridge_sample(sde, t0, t1, t2, ea, eb, gen) -> torch.Tensor:
    """Positions at t1 drawn from the reference conditioned on states ``ea`` at t0 and
    ``eb`` at t2 (S, m)."""
    A, B, cov = (torch.tensor(x, dtype=DTYPE) for x in bridge_moments(sde, t0, t1, t2))
    mean = ea @ A.T + eb @ B.T  # (S, m)
    L = torch.linalg.cholesky(cov)
    z = torch.randn(mean.shape, generator=gen, dtype=DTYPE)
    return (mean + z @ L.T)[:, 0]  # (S,)


def _velocity_in_cell(centres, h, sd, cells, gen) -> torch.Tensor:
    """A velocity drawn in each sampled cell from the stationary N(0, sd²) truncated to
    the cell (inverse CDF)."""
    c = torch.tensor(centres, dtype=DTYPE)[cells]  # (S,)
    lo = torch.special.ndtr((c - h / 2) / sd)
    hi = torch.special.ndtr((c + h / 2) / sd)
    u = lo + (hi - lo) * torch.rand(c.shape, generator=gen, dtype=DTYPE)
    v = sd * torch.special.ndtri(u.clamp(1e-300, 1 - 1e-16))
    return torch.where(torch.isfinite(v), v, c)


def holdout_points(
    tracks: Tracks,
    k: int,
    method: str,
    ell: float = 3.0,
    c: float = 1.0,
    M: int = 12,
    sub: int = 2,
    width: float = 3.0,
    sweeps: int = 40,
    per_start: int = 10,
    seed: int = 0,
) -> torch.Tensor:
    """The points ``method`` infers at the left-out time ``k`` (0 < k < K − 1) from the
    other snapshots: (S, d), S = n·per_start (n for the W2 methods)."""
    check_instance("tracks", tracks, Tracks)
    check_choice("method", method, HOLDOUT_METHODS)
    K, n, d = tracks.obs.shape
    check_int("k", k, 1)
    if k >= K - 1:
        raise ValueError(f"k: expected an interior time in [1, {K - 2}], got {k}")
    check_int("per_start", per_start, 1)
    check_int("seed", seed, 0)
    keep = [i for i in range(K) if i != k]
    obs, times = tracks.obs[keep].cpu(), tracks.times[keep].cpu()
    t0, t1, t2 = (tracks.times[i].item() for i in (k - 1, k, k + 1))
    if method in ("w2", "spline"):
        paths = w2_matching(obs)  # (n, K − 1)
        pts = obs[torch.arange(K - 1)[None, :], paths]  # (n, K − 1, d)
        if method == "w2":  # McCann: the straight line between the matched pair
            a, b = pts[:, k - 1], pts[:, k]
            return a + (t1 - t0) / (t2 - t0) * (b - a)
        spl = scipy.interpolate.CubicSpline(times.numpy(), pts.numpy(), axis=1)
        return torch.tensor(spl(t1), dtype=DTYPE)  # (n, d)
    gen = torch.Generator().manual_seed(int(seed))
    if method == "smooth_sb":
        log_k, log_p0 = smooth_log_kernels(obs, times, ell, c, M, sub, width)
    else:
        log_k, log_p0 = brownian_log_kernels(obs, times, c)
    sol = chain_sinkhorn(log_k, log_p0, sweeps=sweeps)
    paths, cells = sample_paths(sol, per_start, gen, cells=True)  # (S, K−1), (S,K−1,d)
    xa = obs[k - 1][paths[:, k - 1]]  # (S, d)
    xb = obs[k][paths[:, k]]  # (S, d) the observation after the gap
    out = torch.empty_like(xa)
    if method == "brownian_sb":
        span = (times[-1] - times[0]).item()
        s2 = (c**2 * obs.var(dim=(0, 1)) / span).tolist()  # (d,) as the kernel
        for j in range(d):  # Brownian bridge
            lam = (t1 - t0) / (t2 - t0)
            sd = math.sqrt(s2[j] * (t1 - t0) * (t2 - t1) / (t2 - t0))
            z = torch.randn(xa.shape[0], generator=gen, dtype=DTYPE)
            out[:, j] = xa[:, j] + lam * (xb[:, j] - xa[:, j]) + sd * z
        return out
    for j, (sde, centres, h) in enumerate(reference_grids(obs, ell, c, M, width)):
        sd = math.sqrt(sde.P_inf[1, 1])
        va = _velocity_in_cell(centres, h, sd, cells[:, k - 1, j], gen)
        vb = _velocity_in_cell(centres, h, sd, cells[:, k, j], gen)
        ea = torch.stack([xa[:, j], va], 1)  # (S, 2) state before the gap
        eb = torch.stack([xb[:, j], vb], 1)  # (S, 2) state after it
        out[:, j] = _bridge_sample(sde, t0, t1, t2, ea, eb, gen)
    return out


def _scale(truth_all: torch.Tensor, *xs):
    lo, hi = truth_all.min().item(), truth_all.max().item()
    return [(x - lo) / (hi - lo) for x in xs]


def w1_distance(a: torch.Tensor, b: torch.Tensor) -> float:
    """W1 between the uniform empirical measures on the rows of ``a`` (p, d) and ``b``
    (q, d), exact: each point is repeated so both sides have lcm(p, q) atoms and the
    optimal plan is an assignment."""
    check_tensor("a", a, ndim=2, floating=True, finite=True, nonempty=True)
    check_tensor("b", b, ndim=2, floating=True, finite=True, nonempty=True)
    if a.shape[1] != b.shape[1]:
        raise ValueError(f"b: expected {a.shape[1]} columns, got {b.shape[1]}")
    L = math.lcm(len(a), len(b))
    if L > 4000:
        raise ValueError(f"a, b: expected lcm of the sizes ≤ 4000, got {L}")
    A = a.repeat_interleave(L // len(a), 0)
    B = b.repeat_interleave(L // len(b), 0)
    C = torch.cdist(A, B).numpy()
    r, col = scipy.optimize.linear_sum_assignment(C)
    return float(C[r, col].mean())


def mmd_gaussian(a: torch.Tensor, b: torch.Tensor, sigma: float = 1.0) -> float:
    """The biased (V-statistic) squared MMD with kernel exp(−|x − y|² / 2σ²), as the
    official evaluation."""
    check_tensor("a", a, ndim=2, floating=True, finite=True, nonempty=True)
    check_tensor("b", b, ndim=2, floating=True, finite=True, nonempty=True)
    check_positive("sigma", sigma)

    def k(x, y):
        return torch.exp(-(torch.cdist(x, y) ** 2) / (2 * sigma**2)).mean()

    return float(k(a, a) + k(b, b) - 2 * k(a, b))


def holdout_scores(tracks: Tracks, method: str, seed: int = 0, **kw) -> dict:
    """Leave-one-time-out for every interior time: mean W1 and MMD (after min–max
    scaling by the whole data set, as the official evaluation) of ``method``'s inferred
    points against the left-out snapshot."""
    check_instance("tracks", tracks, Tracks)
    check_int("seed", seed, 0)
    K = tracks.obs.shape[0]
    w1, mmd = [], []
    for k in range(1, K - 1):
        pts = holdout_points(tracks, k, method, seed=seed + k, **kw)
        truth = tracks.obs[k].cpu()
        t, p = _scale(tracks.obs.cpu(), truth, pts)
        w1.append(w1_distance(t, p))
        mmd.append(mmd_gaussian(t, p))
    return {"w1": float(np.mean(w1)), "mmd": float(np.mean(mmd))}


NB_METHODS = ("smooth_sb", "brownian_sb", "w2", "velocity")


def make_nbody(cfg, seed: int, device="cpu") -> Tracks:
    """The N-body set of ``cfg`` for one seed (generator 10·seed + 3)."""
    from .experiment import _check_cfg

    _check_cfg(cfg)
    check_int("seed", seed, 0)
    return simulate_nbody(cfg.nb_n, cfg.nb_steps, seed=10 * seed + 3, device=device)


def make_cloud(cfg, kind: str, seed: int, device="cpu") -> Tracks:
    """The ``kind`` point-cloud set of ``cfg`` for one seed (generator 10·seed + 4 for
    the petal, + 5 for the branch)."""
    from .experiment import _check_cfg

    _check_cfg(cfg)
    check_choice("kind", kind, DATASETS)
    check_int("seed", seed, 0)
    g = 10 * seed + 4 + DATASETS.index(kind)
    return simulate_cloud(kind, cfg.cl_n, cfg.cl_steps, seed=g, device=device)


def nbody_kwargs(cfg, method: str, c=None) -> dict:
    """Settings of ``method`` on the N-body set (``c`` overrides the tuned scale)."""
    from .experiment import _check_cfg

    _check_cfg(cfg)
    check_choice("method", method, NB_METHODS)
    if method == "smooth_sb":
        return dict(
            ell=cfg.nb_ell,
            c=cfg.nb_c if c is None else c,
            M=cfg.nb_M,
            sub=cfg.sub,
            width=cfg.nb_width,
            sweeps=cfg.sweeps,
            per_start=cfg.per_start,
        )
    if method == "brownian_sb":
        c = cfg.nb_bsb_c if c is None else c
        return dict(c=c, sweeps=cfg.bsb_sweeps, per_start=cfg.per_start)
    return {}


def holdout_kwargs(cfg, method: str, ell=None, c=None) -> dict:
    """Settings of ``method`` on the hold-out task (``ell``, ``c`` override)."""
    from .experiment import _check_cfg

    _check_cfg(cfg)
    check_choice("method", method, HOLDOUT_METHODS)
    if method == "smooth_sb":
        return dict(
            ell=cfg.cl_ell if ell is None else ell,
            c=cfg.cl_c if c is None else c,
            M=cfg.cl_M,
            sub=cfg.sub,
            width=cfg.cl_width,
            sweeps=cfg.sweeps,
            per_start=cfg.cl_per_start,
        )
    if method == "brownian_sb":
        c = cfg.cl_bsb_c if c is None else c
        return dict(c=c, sweeps=cfg.bsb_sweeps, per_start=cfg.cl_per_start)
    return {}


def run_nbody(cfg, seed: int, device="cpu", methods=NB_METHODS) -> dict:
    """Correct rates of each method on one seed's N-body set: {method: rates}."""
    from .experiment import _check_names
    from .tracking import correct_rates, track

    methods = _check_names("methods", methods, NB_METHODS)
    tr = make_nbody(cfg, seed, device)
    out = {}
    for m in methods:
        paths = track(tr, m, seed=10 * seed + 8, **nbody_kwargs(cfg, m))
        out[m] = correct_rates(paths, tr.labels.cpu())
    return out


def run_holdout(cfg, seed: int, device="cpu", methods=HOLDOUT_METHODS) -> dict:
    """Leave-one-time-out scores of each method on one seed's two point-cloud sets:
    {kind: {method: {"w1", "mmd"}}}."""
    from .experiment import _check_names

    methods = _check_names("methods", methods, HOLDOUT_METHODS)
    out = {}
    for kind in DATASETS:
        tr = make_cloud(cfg, kind, seed, device)
        out[kind] = {
            m: holdout_scores(tr, m, seed=100 * seed, **holdout_kwargs(cfg, m))
            for m in methods
        }
    return out


def tune_clouds(cfg, seeds) -> dict:
    """The N-body and hold-out tuning grids on ``seeds``: the smooth SB's c (N-body) or
    (ℓ, c) pairs (hold-out) against the Brownian SB's c with as many values; scores are
    the mean 5-step rate (N-body) and the mean W1 over both point-cloud sets."""
    from lib.common.claims import seed_list

    from .tracking import correct_rates, track

    seeds = seed_list(seeds)
    out = {"seeds": list(seeds), "nbody": {}, "holdout": {}}
    nb = {s: make_nbody(cfg, s) for s in seeds}
    for method, grid in (
        ("smooth_sb", cfg.nb_c_grid),
        ("brownian_sb", cfg.nb_bsb_grid),
    ):
        scores = {}
        for c in grid:
            kw = nbody_kwargs(cfg, method, c=c)
            r = [
                correct_rates(track(tr, method, seed=10 * s + 8, **kw), tr.labels)
                for s, tr in nb.items()
            ]
            scores[str(c)] = float(np.mean([x["5-step"] for x in r]))
        out["nbody"][method] = scores
    sets = {(s, k): make_cloud(cfg, k, s) for s in seeds for k in DATASETS}
    grids = (
        ("smooth_sb", [(e, c) for e in cfg.cl_ell_grid for c in cfg.cl_c_grid]),
        ("brownian_sb", [(None, c) for c in cfg.cl_bsb_grid]),
    )
    for method, grid in grids:
        scores = {}
        for ell, c in grid:
            kw = holdout_kwargs(cfg, method, ell=ell, c=c)
            w = [
                holdout_scores(tr, method, seed=100 * s, **kw)["w1"]
                for (s, _), tr in sets.items()
            ]
            scores[f"{ell:g},{c:g}" if ell else f"{c:g}"] = float(np.mean(w))
        out["holdout"][method] = scores
    return out


def summarise_extra(extra: dict) -> dict:
    """{"nbody": {method: {metric: (mean, s.d.)}}, "holdout": {set: {method: {"w1",
    "mmd": (mean, s.d.)}}}} over the seeds of ``extra`` ({seed: run_extra output})."""
    if not isinstance(extra, dict) or not extra:
        raise TypeError(
            f"extra: expected a non-empty dict of run_extra, got {type(extra).__name__}"
        )

    def ms(vals):
        v = np.array(vals, dtype=float)
        return (float(v.mean()), float(v.std(ddof=1)) if len(v) > 1 else 0.0)

    first = next(iter(extra.values()))
    nb = {
        m: {
            k: ms([e["nbody"][m][k] for e in extra.values()]) for k in first["nbody"][m]
        }
        for m in first["nbody"]
    }
    ho = {
        kind: {
            m: {
                k: ms([e["holdout"][kind][m][k] for e in extra.values()])
                for k in ("w1", "mmd")
            }
            for m in first["holdout"][kind]
        }
        for kind in first["holdout"]
    }
    return {"nbody": nb, "holdout": ho}
