"""Training, evaluation and the chapter's runs: small EGF, small and large Moser Flow
and a wrapped KDE on each torus target, with KL by quadrature on a grid."""

from __future__ import annotations

import time

import torch

from lib.common import check_choice, check_int, check_positive, make_generator

from .models import (
    EGF,
    MoserFlow,
    density_on_grid,
    kl_to_target,
    kl_weak_fm_loss,
    sample_chain,
)
from .torus import (
    TARGETS,
    grid_points,
    make_maps,
    sample_target,
    target_density,
)

#: the models of the comparison (egf_<maps>: the EGF with another transformation set)
MODELS = (
    "egf",
    "moser",
    "moser_large",
    "egf_translation",
    "egf_rational",
    "egf_identity",
)


def build_model(name: str, cfg, seed: int, device="cpu"):
    """A freshly initialised model (seeded by ``seed``) of the comparison."""
    name = check_choice("name", name, MODELS)
    torch.manual_seed(seed)
    if name.startswith("egf"):
        kind = "sl2" if name == "egf" else name.split("_")[1]
        return EGF(make_maps(kind), cfg.width, cfg.depth).to(device)
    width = cfg.large_width if name == "moser_large" else cfg.width
    return MoserFlow(width, cfg.depth).to(device)


def train(
    model,
    data: torch.Tensor,
    cfg,
    lr: float,
    seed: int,
    device="cpu",
    *,
    steps: int | None = None,
    batch: int | None = None,
    uniform=None,
    b: float | None = None,
):
    """Adam on the KL-weakFM loss: each step a minibatch of data and as many uniform
    probe points (ν_train = uniform ∪ data); returns the loss curve (list).

    ``steps``, ``batch`` and the penalty ``b`` default to the torus run's
    (``cfg.steps``, ``cfg.batch``, ``cfg.b``); ``uniform(n, generator)`` draws the
    uniform probes (default: the torus)."""
    lr = check_positive("lr", lr)
    steps = cfg.steps if steps is None else check_int("steps", steps, 1)
    b = cfg.b if b is None else check_positive("b", b)
    g = make_generator(seed)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, steps)
    n, B = data.shape[0], cfg.batch if batch is None else check_int("batch", batch, 1)
    idx = torch.randint(0, n, (steps, B), generator=g)
    if uniform is None:
        probes = torch.rand(steps, B, 2, dtype=torch.float64, generator=g)
    else:
        probes = uniform(steps * B, g).reshape(steps, B, -1)
    losses = []
    for t in range(steps):
        batch = data[idx[t].to(data.device)]
        probe = torch.cat([probes[t].to(device), batch])  # uniform ∪ data
        loss = kl_weak_fm_loss(model, batch, probe, b, cfg.eps)
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        losses.append(loss.detach())
    return [float(v) for v in torch.stack(losses)]


def evaluate(model, target: str, cfg, device="cpu") -> dict:
    """Exact KL(target ‖ model) on the grid, the model's negative mass, and its
    parameter count."""
    q, x, neg = density_on_grid(model, cfg.grid, device=device)
    p = target_density(x, target)
    return {
        "kl": kl_to_target(q, p),
        "neg_mass": neg,
        "params": sum(w.numel() for w in model.parameters()),
    }


def binned_kde(samples: torch.Tensor, h: float, n: int = 128) -> torch.Tensor:
    """Wrapped Gaussian KDE binned on the n×n grid: the samples' histogram convolved
    with the periodised Gaussian by FFT (exact on the torus up to the binning), (n, n)
    density values at the cell midpoints."""
    cells = torch.floor(samples * n).long().clamp(0, n - 1)  # (M, 2)
    hist = torch.zeros(n * n, dtype=torch.float64, device=samples.device)
    hist.index_add_(0, cells[:, 0] * n + cells[:, 1], torch.ones(len(samples)).to(hist))
    k = torch.fft.fftfreq(n, d=1.0 / n).to(hist)  # integer frequencies
    g = torch.exp(-2 * (torch.pi * h * k) ** 2)  # Fourier series of the wrapped kernel
    kern = g[:, None] * g[None, :]
    f = torch.fft.ifft2(torch.fft.fft2(hist.reshape(n, n)) * kern).real
    return (f * n * n / len(samples)).clamp_min(0)


def fit_kde(train_x, val_x, bandwidths, target: str, cfg, device="cpu") -> dict:
    """A binned wrapped Gaussian KDE whose bandwidth maximises the validation
    likelihood; its KL by quadrature on the grid."""
    n = cfg.grid
    vc = torch.floor(val_x * n).long().clamp(0, n - 1)
    scores = []
    for h in bandwidths:
        q = binned_kde(train_x, h, n)
        scores.append(-q[vc[:, 0], vc[:, 1]].clamp_min(1e-12).log().mean())
    h = bandwidths[int(torch.stack(scores).argmin())]
    q = binned_kde(train_x, h, n).reshape(-1)
    x = grid_points(n, device=device)
    q64 = binned_kde(train_x, h, 64)
    return {
        "kl": kl_to_target(q / q.mean(), target_density(x, target)),
        "bandwidth": h,
        "density64": (q64 / q64.mean()).tolist(),
    }


def fit_one(name: str, target: str, cfg, seed: int, lr=None, device="cpu") -> tuple:
    """Train model ``name`` on ``cfg.n_train`` samples of ``target`` (data seed
    ``seed``); returns (model, metrics with the loss curve and wall time)."""
    _check_cfg(cfg)
    name = check_choice("name", name, MODELS)
    target = check_choice("target", target, TARGETS)
    seed = check_int("seed", seed, 0)
    if lr is not None:
        lr = check_positive("lr", lr)
    data = sample_target(target, cfg.n_train, make_generator(10_000 + seed), device)
    model = build_model(name, cfg, seed, device)
    if lr is None:
        lr = (
            cfg.lr_moser_large
            if name == "moser_large"
            else (cfg.lr_moser if name == "moser" else cfg.lr_egf)
        )
    t0 = time.perf_counter()
    curve = train(model, data, cfg, lr, seed, device)
    out = evaluate(model, target, cfg, device)
    q64 = density_on_grid(model, 64, device=device)[0].reshape(64, 64)
    out.update(curve=curve, seconds=time.perf_counter() - t0, density64=q64.tolist())
    return model, out


#: the learning-rate grid of :func:`tune_lr` (every model gets all of it)
LR_GRID = (1e-3, 3e-3, 1e-2, 3e-2, 1e-1, 3e-1)


def tune_lr(cfg, seeds, lrs=LR_GRID, device="cpu") -> dict:
    """The same budget for every model: each learning rate of ``lrs`` on each seed and
    target; returns {model: {lr: mean validation NLL}} (validation: held-out target
    samples, never the grid KL)."""
    out = {}
    for name in ("egf", "moser", "moser_large"):
        out[name] = {}
        for lr in lrs:
            vals = []
            for target in TARGETS:
                for s in seeds:
                    model, _ = fit_one(name, target, cfg, s, lr=lr, device=device)
                    val = sample_target(
                        target, 2000, make_generator(20_000 + s), device
                    )
                    vals.append(_val_nll(model, val, cfg, device))
            out[name][lr] = sum(vals) / len(vals)
    return out


def _val_nll(model, val, cfg, device) -> float:
    """−E_val log q with q = f̂⁺ / ∫f̂⁺ (grid quadrature), floored at 1e-4."""
    x = grid_points(cfg.grid, device=device)
    norm = torch.cat(
        [model.terminal(x[i : i + 8192]).detach() for i in range(0, len(x), 8192)]
    )
    norm = norm.clamp_min(0).mean()
    q = model.terminal(val).detach().clamp_min(0) / norm
    return float(-q.clamp_min(1e-4).log().mean())


def _worker_init() -> None:
    """Each worker process of :func:`pool_map` trains on one torch thread."""
    torch.set_num_threads(1)


def pool_map(fn, jobs: list, processes: int = 1, first=None) -> list:
    """``[fn(*job) for job in jobs]``, in order; with ``processes`` > 1 in as many
    spawned one-thread worker processes. Every fit of this chapter seeds itself
    (:func:`build_model` calls ``torch.manual_seed``, training draws from its own
    generator), so on a one-thread CPU run the results equal the serial ones exactly
    (tested); it only lets the two cores of a small machine work at once."""
    processes = check_int("processes", processes, 1)
    if not callable(fn):
        raise TypeError(f"fn: expected a function, got {type(fn).__name__}")
    if not isinstance(jobs, list):
        raise TypeError(f"jobs: expected a list of argument tuples, got {jobs!r:.60}")
    if processes == 1 or len(jobs) <= 1:
        return [fn(*job) for job in jobs]
    import multiprocessing as mp

    # the longest jobs first (``first``: indices of jobs to start before the rest), so
    # that no worker is left with a long job at the end
    order = list(first or []) + [
        i for i in range(len(jobs)) if i not in set(first or [])
    ]
    ctx = mp.get_context("spawn")  # no fork after torch's thread pools started
    with ctx.Pool(min(processes, len(jobs)), initializer=_worker_init) as pool:
        done = pool.starmap(fn, [jobs[i] for i in order], chunksize=1)
    out = [None] * len(jobs)
    for i, r in zip(order, done):
        out[i] = r
    return out


def _main_job(kind: str, name: str, target: str, cfg, device) -> tuple:
    """One independent piece of :func:`run_experiment` (a fit with, for the EGF, its
    chain check; or the KDE), returned as plain data."""
    if kind == "kde":
        tr = sample_target(
            target, cfg.n_train, make_generator(10_000 + cfg.seed), device
        )
        val = sample_target(target, 1000, make_generator(20_000 + cfg.seed), device)
        return fit_kde(tr, val, cfg.bandwidths, target, cfg, device), None
    model, m = fit_one(name, target, cfg, cfg.seed, device=device)
    return m, (chain_stats(model, target, cfg, device) if name == "egf" else None)


def _job(part: str, *args):
    """A job of :func:`run_experiment`: the comparison's (``"main"``) or the claims'."""
    from .claims import _claim_job

    return _main_job(*args) if part == "main" else _claim_job(*args)


def run_comparison(
    cfg,
    device=None,
    processes: int = 1,
    datasets=("volcano", "earthquake"),
    rl: bool = False,
) -> dict:
    """The chapter's comparison on ``cfg.seed``: every model on both targets, the KDE,
    and the EGF's chain samples; plus the claims on ``cfg.claim_seeds`` on the sphere
    data sets ``datasets`` (a fit both need is trained once). The fits are independent
    jobs; ``processes`` > 1 runs them in that many worker processes (:func:`pool_map`;
    the same numbers on one thread). ``rl``: also the RL toy's runs on
    ``cfg.claim_seeds`` (:func:`lib.egf.rl.rl_runs`, under ``"rl"``) and its claim."""
    from lib.common import check_bool
    from lib.common import device as pick_device

    from .claims import claim_fits_from, claim_jobs, measure_claims

    _check_cfg(cfg)
    device = pick_device() if device is None else device
    main = [
        (kind, name, target, cfg, device)
        for target in TARGETS
        for kind, name in (
            ("fit", "egf"),
            ("fit", "moser"),
            ("fit", "moser_large"),
            ("kde", ""),
        )
    ]
    claims = claim_jobs(cfg, cfg.claim_seeds, device, datasets)
    # the comparison's EGF and small Moser Flow on cfg.seed are the claims' fits on that
    # seed (the same fit_one call): each is trained once and serves both
    key = {(j[1], j[2]): i for i, j in enumerate(main) if j[0] == "fit"}
    shared = {
        i: key[(j[1], j[2])]
        for i, j in enumerate(claims)
        if j[0] == "torus" and j[4] == cfg.seed and (j[1], j[2]) in key
    }
    jobs = [("main", *j) for j in main] + [
        ("claims", *j) for i, j in enumerate(claims) if i not in shared
    ]
    large = [i for i, j in enumerate(main) if j[1] == "moser_large"]
    done = pool_map(_job, jobs, processes, first=large)
    rest = iter(done[len(main) :])
    claim_done = [
        done[shared[i]][0]["kl"] if i in shared else next(rest)
        for i in range(len(claims))
    ]
    it = iter(done[: len(main)])
    res = {"fits": {}, "kde": {}, "chain": {}}
    for target in TARGETS:
        res["fits"][target] = {}
        for name in ("egf", "moser", "moser_large"):
            res["fits"][target][name], chain = next(it)
            if name == "egf":
                res["chain"][target] = chain
        res["kde"][target] = next(it)[0]
    res["claim_fits"] = claim_fits_from(claim_done, cfg.claim_seeds, datasets)
    if check_bool("rl", rl):
        from .rl import rl_runs, rl_settings

        res["rl"] = rl_runs(cfg.claim_seeds, device, processes, rl_settings(cfg))
    res["claims"] = measure_claims(
        cfg, cfg.claim_seeds, device, res["claim_fits"], res.get("rl")
    )
    return res


def run_experiment(cfg, device=None) -> dict:
    """:func:`run_comparison` in this process with the RL toy (the FULL command's
    entry point)."""
    return run_comparison(cfg, device, rl=True)


def chain_stats(egf, target: str, cfg, device="cpu") -> dict:
    """Does running the chain sample the EGF's own density?

    Two checks, each run for the chain and for a broken chain that draws the maps
    uniformly instead of from α (``policy="uniform"``), which both must catch:
    the total variation on an 8×8 histogram between the chain's samples and the model's
    grid density, against the mean TV of as many i.i.d. draws from the model (the
    noise floor; the check asks for at most 1.5 times it); and the mean number of
    jumps, which for a consistent flow equals ∫f→ (each unit of outflow is one jump;
    the check allows 4 standard errors + 0.02). Also the TV to the target."""
    k, w = 8, torch.tensor([8, 1])
    q, grid, _ = density_on_grid(egf, cfg.grid, device=device)
    with torch.no_grad():
        fout = torch.cat(
            [
                egf.outflow_policy(grid[i : i + 8192])[0]
                for i in range(0, len(grid), 8192)
            ]
        )
    out_mass = float(fout.mean())
    q, grid = q.cpu(), grid.cpu()
    gc = (torch.floor(grid * k).long().clamp(0, k - 1) * w).sum(1)
    qh = torch.zeros(k * k, dtype=torch.float64).index_add_(0, gc, q) / len(q)
    p = target_density(grid, target)
    ph = torch.zeros(k * k, dtype=torch.float64).index_add_(0, gc, p) / len(p)
    n = cfg.chain_samples
    # i.i.d. draws from the model's histogram: the TV that sampling noise alone gives
    g = make_generator(1)
    tv_iid = 0.0
    for _ in range(20):
        iid = torch.multinomial(qh, n, replacement=True, generator=g)
        ih = torch.bincount(iid, minlength=k * k).double() / n
        tv_iid += float(0.5 * (ih - qh).abs().sum()) / 20
    res = {"tv_iid": tv_iid, "out_mass": out_mass}
    for policy, tag in (("learned", ""), ("uniform", "uniform_")):
        x, steps, done = sample_chain(
            egf, n, cfg.chain_steps, make_generator(30_000), device, policy=policy
        )
        cells = (torch.floor(x.cpu() * k).long().clamp(0, k - 1) * w).sum(1)
        hist = torch.bincount(cells, minlength=k * k).double() / n
        st = steps.double().cpu()
        se = float(st.std() / n**0.5) if n > 1 else 0.0
        tv = float(0.5 * (hist - qh).abs().sum())
        jumps = float(st.mean())
        res[tag + "tv_model"] = tv
        res[tag + "mean_steps"] = jumps
        res[tag + "passes"] = bool(
            tv <= 1.5 * tv_iid and abs(jumps - out_mass) <= 4 * se + 0.02
        )
        if policy == "learned":
            res["tv_target"] = float(0.5 * (hist - ph).abs().sum())
            res["stopped"] = float(done.double().mean())
            res["samples"] = x[:1500].cpu().tolist()
    res["tv_model_target"] = float(0.5 * (qh - ph).abs().sum())
    return res


def _check_cfg(cfg):
    from . import Config

    if not isinstance(cfg, Config):
        raise TypeError(f"cfg: expected an egf.Config, got {type(cfg).__name__}")
