"""Tests of lib.egf: the torus maps, the closed-form star inflow against a naive loop,
normalisation, Moser's divergence against finite differences, the KDE, the chain,
bad inputs, the FULL path shrunk, the claims' control, CUDA parity."""

import dataclasses
import os

import numpy as np
import pytest
import torch

from lib import egf as E
from lib.egf.reference import (
    kde_naive,
    moser_density_naive,
    sphere_star_inflow_naive,
    star_inflow_naive,
    surface_divergence_naive,
)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TINY = E.Config(
    steps=20,
    batch=32,
    n_train=200,
    grid=16,
    large_width=8,
    width=8,
    depth=2,
    bandwidths=(0.03, 0.06),
    chain_samples=64,
    chain_steps=5,
    claim_seeds=(0, 1),
    sphere_width=8,
    sphere_depth=2,
    sphere_steps=5,
    sphere_batch=32,
    sphere_quad=500,
    vmf_components=(1, 2),
    vmf_iters=5,
    rl_steps=10,
)


def _pts(n=50, seed=0):
    return torch.rand(
        n, 2, dtype=torch.float64, generator=torch.Generator().manual_seed(seed)
    )


# --- maps ---


@pytest.mark.parametrize("kind", E.MAP_KINDS)
def test_maps_invert_and_preserve_measure(kind):
    m = E.make_maps(kind)
    x = _pts(200)
    y = m.forward(x)  # (p, N, 2)
    for i in range(m.p):
        back = m.inverse(y[i])[i]
        d = torch.remainder(back - x + 0.5, 1.0) - 0.5
        assert d.abs().max() < 1e-12
    assert torch.allclose(m.inv_jacobian, torch.ones(m.p, dtype=torch.float64))


def test_sl2_maps_are_mixing_generators():
    m = E.make_maps("sl2")
    det = torch.linalg.det(m.mats)
    assert torch.allclose(det, torch.ones(4, dtype=torch.float64))
    tr = torch.einsum("pii->p", m.mats)
    assert tr[0].abs() > 2  # A is hyperbolic (|trace| > 2): mixing


def test_inflow_of_uniform_under_measure_preserving_maps_is_uniform():
    """With constant f→ = c and any policy, f*← = c: a uniform density is a fixed point
    of measure-preserving maps, so f̂ = f_init = 1."""
    model = E.EGF(E.make_maps("sl2"), width=8, depth=1)
    with torch.no_grad():
        for p in model.net.parameters():
            p.zero_()
        model.net[-1].bias[0] = 1.5  # f→ = softplus(1.5), α uniform
    x = _pts()
    f, _ = model.outflow_policy(x)
    assert torch.allclose(model.star_inflow(x), f, atol=1e-12)
    assert torch.allclose(model.terminal(x), torch.ones(len(x), dtype=torch.float64))


def test_star_inflow_matches_naive_loop():
    torch.manual_seed(0)
    model = E.EGF(E.make_maps("sl2"), width=16, depth=2)
    x = _pts(30)
    with torch.no_grad():
        fast = model.star_inflow(x).numpy()
    assert np.allclose(fast, star_inflow_naive(model, x), atol=1e-10)


@pytest.mark.parametrize("kind", E.MAP_KINDS)
def test_virtual_terminal_flow_integrates_to_one(kind):
    torch.manual_seed(1)
    model = E.EGF(E.make_maps(kind), width=16, depth=2)
    x = E.grid_points(256)
    with torch.no_grad():
        f = model.terminal(x)
    assert abs(f.mean().item() - 1.0) < 1e-3


def test_identity_maps_give_the_uniform_density():
    torch.manual_seed(2)
    model = E.EGF(E.make_maps("identity"), width=16, depth=2)
    with torch.no_grad():
        assert torch.allclose(
            model.terminal(_pts()), torch.ones(50, dtype=torch.float64)
        )


def test_moser_divergence_matches_finite_differences_and_integrates_to_one():
    torch.manual_seed(0)
    mf = E.MoserFlow(width=16, depth=2)
    x = _pts(20)
    fast = mf.terminal(x).detach().numpy()
    assert np.allclose(fast, moser_density_naive(mf, x), atol=1e-6)
    q = mf.terminal(E.grid_points(128)).detach()
    assert abs(q.mean().item() - 1.0) < 1e-6


# --- targets, KL, KDE ---


@pytest.mark.parametrize("target", E.TARGETS)
def test_targets_are_normalised_and_samples_follow_them(target):
    x = E.grid_points(256)
    p = E.target_density(x, target)
    assert abs(p.mean().item() - 1.0) < 1e-3
    s = E.sample_target(target, 20000, torch.Generator().manual_seed(0))
    assert s.min() >= 0 and s.max() < 1
    # the share of samples on the board's even cells / near the centres
    assert E.target_density(s, target).mean() > p.pow(2).mean() * 0.9


def test_kl_known_answers():
    p = E.target_density(E.grid_points(64), "checkerboard")
    assert E.kl_to_target(torch.ones_like(p), p) == pytest.approx(np.log(2), abs=1e-9)
    assert E.kl_to_target(p.clone(), p) == pytest.approx(0.0, abs=1e-12)


def test_kde_matches_naive_and_integrates_to_one():
    c = _pts(15, 3)
    x = _pts(10, 4)
    h = 0.05
    assert np.allclose(
        E.kde_density(x, c, h).numpy(), kde_naive(x.numpy(), c.numpy(), h)
    )
    assert abs(E.kde_density(E.grid_points(128), c, h).mean().item() - 1) < 1e-3


# --- losses, training, chain ---


def test_kl_weak_fm_loss_penalises_negative_mass():
    model = E.EGF(E.make_maps("sl2"), width=8, depth=1)
    x = _pts(20)
    base = E.kl_weak_fm_loss(model, x, x, b=1.0).item()
    big = E.kl_weak_fm_loss(model, x, x, b=100.0).item()
    assert base == pytest.approx(big)  # no negative mass at initialisation
    assert np.isfinite(base)


def test_fm_loss_zero_when_reward_is_the_terminal_flow():
    model = E.EGF(E.make_maps("sl2"), width=8, depth=1)
    x = _pts(20)
    with torch.no_grad():
        r = model.terminal(x)
    assert E.fm_loss(model, x, r).item() == pytest.approx(0.0, abs=1e-20)


def test_chain_of_a_uniform_flow_samples_uniformly():
    """f̂ = 1, f→ = c: the chain stops with probability 1/(1+c) and ends uniform."""
    model = E.EGF(E.make_maps("sl2"), width=8, depth=1)
    with torch.no_grad():
        for p in model.net.parameters():
            p.zero_()
        model.net[-1].bias[0] = float(np.log(np.e - 1))  # softplus = 1
    x, steps, done = E.sample_chain(model, 4000, 60, torch.Generator().manual_seed(0))
    assert done.all()
    assert steps.double().mean().item() == pytest.approx(1.0, abs=0.1)  # geometric(1/2)
    assert abs(x[:, 0].mean().item() - 0.5) < 0.02


def test_training_lowers_the_loss_and_beats_identity_maps_at_tiny_size():
    cfg = dataclasses.replace(
        TINY, steps=150, width=32, depth=3, batch=256, n_train=2000, grid=64
    )
    _, e = E.fit_one("egf", "checkerboard", cfg, 0)
    _, t = E.fit_one("egf_identity", "checkerboard", cfg, 0)
    assert np.mean(e["curve"][-10:]) < np.mean(e["curve"][:10]) - 0.1
    assert e["kl"] < t["kl"] - 0.05  # the maps matter: without transport, no fit


def test_measure_claims_shape():
    m = E.measure_claims(TINY, (0, 1))
    assert set(m) == {
        "il-checkerboard",
        "il-mixture",
        "volcano-nll",
        "earth-nll",
        "rl-divergence",
    }
    assert set(m["il-mixture"]["values"]) == {0, 1}
    res = E.judge(m)
    assert len(res) == len(E.CLAIMS)


# --- bad inputs ---


def test_bad_inputs():
    with pytest.raises(ValueError, match="^kind: expected one of"):
        E.make_maps("rotation")
    with pytest.raises(ValueError, match="^target: expected one of"):
        E.target_density(_pts(), "moons")
    with pytest.raises(ValueError, match=r"^x: expected shape \(N, 2\)"):
        E.target_density(torch.zeros(3, 3, dtype=torch.float64), "mixture")
    with pytest.raises(ValueError, match="^x: "):
        E.target_density(
            torch.full((2, 2), float("nan"), dtype=torch.float64), "mixture"
        )
    with pytest.raises(TypeError, match="^maps: expected a TorusMaps or a SphereMaps"):
        E.EGF("sl2")
    with pytest.raises(ValueError, match="^mats: expected integer entries"):
        E.TorusMaps(
            torch.full((1, 2, 2), 0.5, dtype=torch.float64),
            torch.zeros(1, 2, dtype=torch.float64),
        )
    with pytest.raises(ValueError, match="^bandwidth: "):
        E.kde_density(_pts(), _pts(), 0.5)
    with pytest.raises(TypeError, match="^model: expected an EGF or a MoserFlow"):
        E.kl_weak_fm_loss("m", _pts(), _pts())
    with pytest.raises(ValueError, match="^steps: "):
        E.Config(steps=0)
    with pytest.raises(TypeError, match="^cfg: expected an egf.Config"):
        E.run_experiment({"steps": 1})


# --- FULL path, CLI, CUDA ---


def test_presets():
    assert E.SMOKE.seed == E.FULL.seed == E.NOTEBOOK_SEEDS[0]
    assert E.FULL.steps > E.SMOKE.steps and E.FULL.grid >= E.SMOKE.grid


def test_full_path_shrunk():
    """FULL's code path (run_experiment) with every size cut."""
    cfg = dataclasses.replace(
        E.FULL, **{f.name: getattr(TINY, f.name) for f in dataclasses.fields(TINY)}
    )
    res = E.run_experiment(cfg)
    assert set(res) == {"fits", "kde", "chain", "claim_fits", "rl", "claims"}
    assert "rl-divergence" in res["claims"]
    assert res["rl"]["fm"][TINY.claim_seeds[0]]["step"][-1] == TINY.rl_steps
    for t in E.TARGETS:
        assert set(res["fits"][t]) == {"egf", "moser", "moser_large"}
        assert 0 <= res["chain"][t]["tv_model"] <= 1


def test_shared_fits_are_the_claims_fits():
    """With cfg.seed among the claim seeds, the comparison's EGF and small Moser Flow
    are trained once and serve both: the claims' values equal a separate claims run."""
    from lib.egf.claims import claim_fits

    cfg = dataclasses.replace(TINY, seed=TINY.claim_seeds[0])
    n0 = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        res = E.run_comparison(cfg, "cpu")
        alone = claim_fits(cfg, cfg.claim_seeds, "cpu")
        two = E.run_comparison(cfg, "cpu", processes=2)
    finally:
        torch.set_num_threads(n0)
    for t in E.TARGETS:
        for m in ("egf", "moser"):
            assert res["fits"][t][m]["kl"] == alone[t][m][cfg.seed]
            assert res["claim_fits"][t][m] == alone[t][m]
    assert res["claim_fits"]["volcano"] == alone["volcano"]
    assert two["claims"] == res["claims"]
    assert _numbers(two["claim_fits"]) == _numbers(res["claim_fits"])


def _numbers(d):
    """Every result but the wall times."""
    if isinstance(d, dict):
        return {k: _numbers(v) for k, v in d.items() if k != "seconds"}
    return d


def test_worker_processes_give_the_serial_numbers():
    """run_experiment's fits as independent jobs in two one-thread worker processes
    give exactly what the serial run gives on one thread (the notebook uses two)."""
    from lib.egf.experiment import pool_map

    n0 = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        serial = E.run_experiment(TINY, "cpu")
        parallel = E.run_comparison(TINY, "cpu", processes=2, rl=True)
    finally:
        torch.set_num_threads(n0)

    def numbers(d):  # every result but the wall times
        if isinstance(d, dict):
            return {k: numbers(v) for k, v in d.items() if k != "seconds"}
        return d

    assert numbers(parallel) == numbers(serial)
    with pytest.raises(ValueError, match="^processes: expected"):
        pool_map(print, [()], processes=0)
    with pytest.raises(TypeError, match="^jobs: expected a list"):
        pool_map(print, "ab", processes=2)


def test_cli_smoke_writes_smoke_file(smoke_cli):
    assert smoke_cli("egf", TINY)["preset"] == "SMOKE"


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cpu_and_cuda_agree():
    torch.manual_seed(0)
    model = E.EGF(E.make_maps("sl2"), width=16, depth=2)
    x = _pts(64)
    with torch.no_grad():
        cpu = model.terminal(x)
        gpu = model.to("cuda").terminal(x.to("cuda")).cpu()
    assert torch.allclose(cpu, gpu, atol=1e-10)
    mf = E.MoserFlow(16, 2)
    a = mf.terminal(x).detach()
    b = mf.to("cuda").terminal(x.to("cuda")).detach().cpu()
    assert torch.allclose(a, b, atol=1e-10)
    s = E.fibonacci_sphere(64)
    for m in (E.EGF(E.make_rotations("pi4"), 16, 2), E.MoserFlow(16, 2, "sphere")):
        a = m.terminal(s).detach()
        b = m.to("cuda").terminal(s.to("cuda")).detach().cpu()
        assert torch.allclose(a, b, atol=1e-10)


def test_binned_kde_matches_exact_kde_on_the_grid():
    from lib.egf.experiment import binned_kde

    c = E.sample_target("mixture", 300, torch.Generator().manual_seed(0))
    n, h = 64, 0.04
    exact = E.kde_density(E.grid_points(n), c, h).reshape(n, n)
    binned = binned_kde(c, h, n)
    # binning moves each sample by at most half a cell
    assert (binned - exact).abs().max() / exact.max() < 0.1
    assert binned.mean().item() == pytest.approx(1.0, abs=1e-6)


def test_exercise_self_checks():
    from lib.egf import exercises as X

    assert X.ex1(1.0).ok and not X.ex1(3.0).ok
    assert X.ex2(float(np.log(2))).ok and not X.ex2(1.0).ok
    assert X.ex3("no").ok and not X.ex3("yes").ok


def test_rational_maps_have_finite_orbits():
    """The control's maps move every point by multiples of 1/6: orbits are finite."""
    m = E.make_maps("rational")
    x = _pts(20)
    y = m.forward(x)  # (p, N, 2)
    k = torch.remainder(y - x[None], 1.0) * 6
    assert torch.allclose(k, k.round(), atol=1e-9)


def test_chain_check_fails_for_a_uniform_policy():
    """The sampling check discriminates: a sampler that ignores the learned policy
    fails it, the correct one passes."""
    cfg = dataclasses.replace(
        TINY,
        steps=150,
        width=32,
        depth=3,
        batch=256,
        n_train=2000,
        grid=64,
        chain_samples=4000,
        chain_steps=60,
    )
    model, _ = E.fit_one("egf", "checkerboard", cfg, 0)
    ok = E.chain_stats(model, "checkerboard", cfg)
    assert ok["passes"] and not ok["uniform_passes"]


def _constant_flow(c: float) -> "E.EGF":
    """An EGF with constant outflow c and a fixed policy: f̂ = 1 whatever c is."""
    model = E.EGF(E.make_maps("sl2"), width=8, depth=1)
    with torch.no_grad():
        for p in model.net.parameters():
            p.zero_()
        model.net[-1].bias[0] = float(np.log(np.expm1(c)))  # softplus = c
    return model


def test_chain_check_catches_a_biased_stop_that_the_histogram_misses(monkeypatch):
    """A sampler that stops too rarely (it runs the chain of a flow with twice the
    outflow, whose density is the same f̂ = 1) ends uniform, so the histogram check
    passes; only the jump count (mean jumps = ∫f→) catches it."""
    cfg = dataclasses.replace(TINY, grid=32, chain_samples=4000, chain_steps=80)
    model = _constant_flow(1.0)
    honest = E.chain_stats(model, "checkerboard", cfg)
    assert honest["passes"]
    real = E.experiment.sample_chain
    doubled = _constant_flow(2.0)
    monkeypatch.setattr(
        E.experiment,
        "sample_chain",
        lambda egf, *a, **k: real(doubled if egf is model else egf, *a, **k),
    )
    biased = E.chain_stats(model, "checkerboard", cfg)
    assert biased["tv_model"] <= 1.5 * biased["tv_iid"]  # the histogram is fooled
    assert biased["mean_steps"] > honest["mean_steps"] + 0.5
    assert not biased["passes"]  # the jump check is not


def test_orbit_floor_known_answers_and_bad_inputs():
    """Period 1 (no transport): the uniform density's KL; a checkerboard already
    averages to 1 over the orbits of (Z/4)²; the floor falls as the orbits grow."""
    assert E.orbit_floor("checkerboard", 1) == pytest.approx(np.log(2), abs=1e-9)
    assert E.orbit_floor("checkerboard", 2) == pytest.approx(np.log(2), abs=1e-9)
    assert E.orbit_floor("checkerboard", 4) == pytest.approx(0.0, abs=1e-12)
    f = [E.orbit_floor("mixture", q, n=64) for q in (1, 2, 3, 6)]
    assert f[0] == pytest.approx(0.72, abs=0.01)
    assert f[0] > f[1] > f[2] > f[3] >= 0
    with pytest.raises(ValueError, match="period"):
        E.orbit_floor("mixture", 0)
    with pytest.raises(ValueError, match="target"):
        E.orbit_floor("moons", 3)


# --- the sphere ---


def _sphere_pts(n=50, seed=0):
    return E.lonlat_to_xyz(
        torch.rand(
            n, dtype=torch.float64, generator=torch.Generator().manual_seed(seed)
        )
        * 360
        - 180,
        torch.rand(
            n, dtype=torch.float64, generator=torch.Generator().manual_seed(seed + 1)
        )
        * 180
        - 90,
    )


@pytest.mark.parametrize("kind", E.ROTATION_KINDS)
def test_rotations_are_orthogonal_with_det_one_and_invert(kind):
    m = E.make_rotations(kind)
    eye = torch.eye(3, dtype=torch.float64).expand(m.p, 3, 3)
    assert m.p == 6
    assert torch.allclose(m.mats @ m.mats.transpose(1, 2), eye, atol=1e-12)
    assert torch.allclose(torch.linalg.det(m.mats), torch.ones(6, dtype=torch.float64))
    x = _sphere_pts(40)
    y = m.forward(x)  # (p, N, 3)
    for i in range(m.p):
        assert torch.allclose(m.inverse(y[i])[i], x, atol=1e-12)
    # the maps come in inverse pairs (Φ_{i+3} = Φ_i⁻¹), as in the paper
    assert torch.allclose(m.mats[:3] @ m.mats[3:], eye[:3], atol=1e-12)


def _closure(mats, limit=200):
    """The group generated by ``mats`` (rounded to 1e-9), up to ``limit`` elements."""
    key = lambda r: tuple(np.round(r.numpy().ravel(), 9))  # noqa: E731
    seen = {key(torch.eye(3, dtype=torch.float64)): torch.eye(3, dtype=torch.float64)}
    frontier = list(seen.values())
    while frontier and len(seen) < limit:
        nxt = []
        for g in frontier:
            for r in mats:
                h = r @ g
                if key(h) not in seen:
                    seen[key(h)] = h
                    nxt.append(h)
        frontier = nxt
    return len(seen)


def test_pi2_rotations_generate_the_octahedral_group_and_pi4_an_infinite_one():
    assert _closure(E.make_rotations("pi2").mats) == 24
    assert _closure(E.make_rotations("pi4").mats) >= 200
    # R_x(π/4) R_y(π/4) turns by an irrational multiple of π: no power is the identity
    m = E.make_rotations("pi4").mats
    r, p = m[0] @ m[1], torch.eye(3, dtype=torch.float64)
    for _ in range(2000):
        p = p @ r
        assert (p - torch.eye(3, dtype=torch.float64)).abs().max() > 1e-6


@pytest.mark.parametrize("kind", E.ROTATION_KINDS)
def test_sphere_star_inflow_conserves_mass_and_matches_naive_loop(kind):
    torch.manual_seed(3)
    model = E.EGF(E.make_rotations(kind), width=16, depth=2)
    q = E.fibonacci_sphere(20000)
    with torch.no_grad():
        f, _ = model.outflow_policy(q)
        inflow = model.star_inflow(q)
        area = 4 * np.pi
        # ∫f*← = ∫f→ (rotations keep the area), so ∫f̂ = ∫f_init = 1
        assert inflow.mean().item() == pytest.approx(f.mean().item(), rel=1e-4)
        assert model.terminal(q).mean().item() * area == pytest.approx(1.0, abs=1e-4)
        x = _sphere_pts(20)
        fast = model.star_inflow(x).numpy()
    assert np.allclose(fast, sphere_star_inflow_naive(model, x), atol=1e-12)


def test_octahedral_egf_keeps_the_orbit_average_uniform():
    """With a finite group G the chain moves mass only along orbits: Σ_g f̂(g s) =
    |G| f_init for every network, so the control cannot concentrate mass; with the
    π/4 rotations the orbit sum of the same points varies."""
    torch.manual_seed(4)
    mats = E.make_rotations("pi2").mats
    group = [torch.eye(3, dtype=torch.float64)]
    while len(group) < 24:
        group += [r @ g for g in group for r in mats]
        uniq = {tuple(np.round(g.numpy().ravel(), 9)): g for g in group}
        group = list(uniq.values())
    x = _sphere_pts(10)
    imgs = torch.stack([x @ g.T for g in group])  # (24, N, 3)
    for kind, const in (("pi2", True), ("pi4", False)):
        model = E.EGF(E.make_rotations(kind), width=16, depth=2)
        with torch.no_grad():
            total = model.terminal(imgs.reshape(-1, 3)).reshape(24, -1).sum(0)
        same = torch.allclose(total, torch.full_like(total, 24 / (4 * np.pi)))
        assert same == const, kind


def test_surface_divergence_known_fields():
    x = _sphere_pts(30)
    a = torch.tensor([0.3, -1.2, 0.7], dtype=torch.float64)
    # the tangential part of a constant field is the gradient of a·x: Δ(a·x) = −2 a·x
    grad = lambda y: a - (y @ a)[:, None] * y  # noqa: E731
    assert torch.allclose(E.surface_divergence(grad, x), -2 * (x @ a), atol=1e-12)
    # a rotation field ω × x is divergence-free
    rot = lambda y: torch.linalg.cross(a.expand_as(y), y)  # noqa: E731
    assert E.surface_divergence(rot, x).abs().max() < 1e-12


def test_sphere_moser_matches_finite_differences_and_integrates_to_one():
    torch.manual_seed(0)
    mf = E.MoserFlow(16, 2, space="sphere")
    x = _sphere_pts(15)
    div = E.surface_divergence(mf.tangent_field, x).detach().numpy()
    assert np.allclose(div, surface_divergence_naive(mf.tangent_field, x), atol=1e-6)
    q = mf.terminal(E.fibonacci_sphere(20000)).detach()
    assert q.mean().item() * 4 * np.pi == pytest.approx(1.0, abs=1e-4)


def _vmf_sample(mu, kappa, n, seed):
    from scipy.stats import vonmises_fisher

    return vonmises_fisher(mu, kappa).rvs(n, random_state=seed)


def test_vmf_em_recovers_a_known_mixture():
    mu1 = np.array([0.0, 0.0, 1.0])
    mu2 = np.array([1.0, 0.0, 0.0])
    x = np.concatenate(
        [_vmf_sample(mu1, 50.0, 3000, 0), _vmf_sample(mu2, 10.0, 1000, 1)]
    )
    fit = E.fit_vmf_mixture(
        torch.tensor(x), 2, iters=200, generator=torch.Generator().manual_seed(0)
    )
    order = torch.argsort(fit["means"][:, 2], descending=True)  # μ1 first
    means, kap, w = fit["means"][order], fit["kappas"][order], fit["weights"][order]
    assert np.allclose(means.numpy(), np.stack([mu1, mu2]), atol=0.03)
    assert kap.numpy() == pytest.approx([50.0, 10.0], rel=0.1)
    assert w.numpy() == pytest.approx([0.75, 0.25], abs=0.02)


def test_vmf_single_component_is_the_mle_and_matches_scipy():
    from scipy.stats import vonmises_fisher

    x = _vmf_sample(np.array([0.6, 0.0, 0.8]), 5.0, 2000, 2)
    fit = E.fit_vmf_mixture(torch.tensor(x), 1, iters=3)
    mu_s, kappa_s = vonmises_fisher.fit(x)
    assert np.allclose(fit["means"][0].numpy(), mu_s, atol=1e-9)
    assert fit["kappas"][0].item() == pytest.approx(kappa_s, rel=1e-6)
    q = E.fibonacci_sphere(50)
    ours = E.vmf_mixture_logpdf(q, *(fit[k] for k in ("weights", "means", "kappas")))
    ref = vonmises_fisher(mu_s, kappa_s).logpdf(q.numpy())
    assert np.allclose(ours.numpy(), ref, atol=1e-6)


def test_vmf_mixture_density_integrates_to_one():
    w = torch.tensor([0.2, 0.8], dtype=torch.float64)
    mu = E.lonlat_to_xyz(
        torch.tensor([10.0, -100.0], dtype=torch.float64),
        torch.tensor([45.0, -20.0], dtype=torch.float64),
    )
    for kap in (torch.tensor([1e-6, 3.0]), torch.tensor([40.0, 800.0])):
        lp = E.vmf_mixture_logpdf(E.fibonacci_sphere(200000), w, mu, kap.double())
        assert lp.exp().mean().item() * 4 * np.pi == pytest.approx(1.0, abs=2e-3)


def test_volcano_catalogue_and_split():
    from lib.egf.earth import volcano_split

    v = E.load_volcanoes()
    assert v.shape == (1250, 3)
    assert torch.allclose(v.norm(dim=1), torch.ones(1250, dtype=torch.float64))
    tr, va, te = volcano_split(0)
    assert (len(tr), len(va), len(te)) == (875, 125, 250)
    rows = {tuple(r) for r in torch.cat([tr, va, te]).tolist()}
    assert len(rows) == len({tuple(r) for r in v.tolist()})


def test_sphere_chain_of_a_uniform_flow_samples_uniformly():
    model = E.EGF(E.make_rotations("pi4"), width=8, depth=1)
    with torch.no_grad():
        for p in model.net.parameters():
            p.zero_()
        model.net[-1].bias[0] = float(np.log(np.expm1(0.1)))  # softplus = 0.1
    x, steps, done = E.sample_chain(model, 4000, 60, torch.Generator().manual_seed(0))
    assert x.shape == (4000, 3) and done.all()
    assert torch.allclose(x.norm(dim=1), torch.ones(4000, dtype=torch.float64))
    assert x.mean(0).abs().max().item() < 0.03
    # f̂ = 1/(4π) and f→ = 0.1 everywhere: mean jumps = ∫f→ = 0.4π
    assert steps.double().mean().item() == pytest.approx(0.4 * np.pi, rel=0.1)


def test_sphere_fit_and_vmf_shapes_at_tiny_size():
    from lib.egf.earth import MAP_SHAPE, fit_vmf

    _, m = E.fit_sphere("egf", TINY, 0)
    assert np.isfinite(m["test_nll"]) and m["neg_mass"] >= 0
    assert np.array(m["density_map"]).shape == MAP_SHAPE[::-1]
    v = fit_vmf(TINY, 0)
    assert v["k"] in TINY.vmf_components and np.isfinite(v["test_nll"])


def test_sphere_training_beats_the_uniform_density():
    """At a small size the EGF learns the volcanoes: test NLL well below log 4π."""
    cfg = dataclasses.replace(
        TINY, sphere_width=32, sphere_depth=3, sphere_steps=300, sphere_batch=64
    )
    _, m = E.fit_sphere("egf", cfg, 0)
    assert m["test_nll"] < np.log(4 * np.pi) - 0.4


def test_sphere_bad_inputs():
    with pytest.raises(ValueError, match="^kind: expected one of"):
        E.make_rotations("pi3")
    with pytest.raises(ValueError, match="^mats: expected orthogonal"):
        E.SphereMaps(torch.full((1, 3, 3), 0.5, dtype=torch.float64))
    with pytest.raises(ValueError, match=r"^mats: expected det \+1"):
        E.SphereMaps(-torch.eye(3, dtype=torch.float64)[None])
    with pytest.raises(ValueError, match="^space: expected one of"):
        E.MoserFlow(8, 1, space="cube")
    with pytest.raises(TypeError, match="^field: expected a callable"):
        E.surface_divergence("u", _sphere_pts(3))
    with pytest.raises(ValueError, match="^x: expected unit vectors"):
        E.surface_divergence(lambda y: y, 2 * _sphere_pts(3))
    with pytest.raises(ValueError, match=r"^x: expected shape \(N, 3\)"):
        E.fit_vmf_mixture(_pts(), 2)
    with pytest.raises(ValueError, match="^k: expected at most"):
        E.fit_vmf_mixture(_sphere_pts(3), 5)
    with pytest.raises(ValueError, match="^weights: expected non-negative"):
        E.vmf_mixture_logpdf(
            _sphere_pts(3),
            torch.tensor([0.5, 0.6], dtype=torch.float64),
            _sphere_pts(2),
            torch.ones(2, dtype=torch.float64),
        )
    with pytest.raises(ValueError, match="^lat: expected latitudes"):
        E.lonlat_to_xyz(
            torch.zeros(1, dtype=torch.float64), torch.full((1,), 91.0).double()
        )
    sphere_egf = E.EGF(E.make_rotations("pi4"), 8, 1)
    with pytest.raises(ValueError, match=r"^data: expected shape \(N, 3\)"):
        E.kl_weak_fm_loss(sphere_egf, _pts(), _sphere_pts())
    with pytest.raises(ValueError, match="^model: expected a model of the torus"):
        E.density_on_grid(sphere_egf, 4)
    with pytest.raises(ValueError, match="^name: expected one of"):
        E.fit_sphere("kde", TINY, 0)
    with pytest.raises(ValueError, match="^vmf_components"):
        E.Config(vmf_components=(0,))


# --- earthquakes (npm vega-datasets, unpacked by make setup) -----------------------


def test_earthquakes_load_as_unit_vectors():
    from lib.egf.earth import event_split

    x = E.load_earthquakes()
    assert x.shape == (1707, 3) and x.dtype == torch.float64
    assert torch.allclose(x.norm(dim=1), torch.ones(1707, dtype=torch.float64))
    # the first event of the file: near Los Angeles (lon -118.67, lat 34.49)
    lonlat = torch.tensor([[-118.6671667], [34.4945]], dtype=torch.float64)
    assert torch.allclose(x[0], E.lonlat_to_xyz(*lonlat)[0])
    tr, va, te = event_split("earthquake", 3)
    assert (len(tr), len(va), len(te)) == (1195, 171, 341)
    from lib.egf.earth import volcano_split

    assert torch.equal(event_split("volcano", 3)[0], volcano_split(3)[0])
    with pytest.raises(ValueError, match="^dataset: expected"):
        event_split("floods", 3)


def test_claim_jobs_checks_datasets():
    from lib.egf.claims import claim_jobs

    jobs = claim_jobs(TINY, (0,), "cpu", ("earthquake",))
    assert {j[2] for j in jobs if j[0] == "sphere"} == {"earthquake"}
    with pytest.raises(TypeError, match="^datasets: expected"):
        claim_jobs(TINY, (0,), "cpu", ())
    with pytest.raises(ValueError, match="^datasets: expected"):
        claim_jobs(TINY, (0,), "cpu", ("floods",))


def test_quake_record_command_at_a_shrunk_size(tmp_path):
    """What `python -m lib.egf quakes` writes, at TINY size: the same fits as the
    claims' sphere jobs, read back; other settings are refused."""
    from lib.egf.claims import claim_fits
    from lib.egf.quakes import load_quake_record, save_quake_record

    n0 = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        path = save_quake_record(TINY, (0, 1), tmp_path / "q.json", processes=2)
        ref = claim_fits(TINY, (0, 1), "cpu", datasets=("earthquake",))
    finally:
        torch.set_num_threads(n0)
    rec = load_quake_record(TINY, path)
    assert rec["stale"] is False and rec["seeds"] == [0, 1]
    assert set(rec["fits"]) == {*E.SPHERE_MODELS, "vmf"}
    for m in rec["fits"]:
        assert {s: r["test_nll"] for s, r in rec["fits"][m].items()} == ref[
            "earthquake"
        ][m]
    assert "density_map" in rec["fits"]["egf"][0]
    assert "density_map" not in rec["fits"]["egf"][1]
    with pytest.raises(ValueError, match="^cfg: expected the settings"):
        load_quake_record(E.SMOKE, path)
    with pytest.raises(FileNotFoundError, match="python -m lib.egf quakes"):
        load_quake_record(TINY, tmp_path / "none.json")


def test_stored_quake_record_matches_the_code_and_the_ledger():
    """The committed record was written by the current code at SMOKE settings, and
    its Moser − EGF gaps on the notebook seeds are the claims file's values."""
    from lib.common.claims import load_claims_file
    from lib.egf.quakes import load_quake_record

    rec = load_quake_record(E.SMOKE)
    assert rec["stale"] is False, "lib/egf changed: run python -m lib.egf quakes"
    f = rec["fits"]
    assert rec["seeds"] == list(E.NOTEBOOK_SEEDS)
    row = load_claims_file("egf")["claims"]["earth-nll"]["notebook"]
    gaps = [f["moser"][s]["test_nll"] - f["egf"][s]["test_nll"] for s in rec["seeds"]]
    ctrl = [
        f["moser"][s]["test_nll"] - f["egf_pi2"][s]["test_nll"] for s in rec["seeds"]
    ]
    assert row["method"]["seeds"] == rec["seeds"]
    assert row["method"]["values"] == pytest.approx(gaps, abs=1e-12)
    assert row["control"]["values"] == pytest.approx(ctrl, abs=1e-12)


# ---------------------------------------------------------------- the RL toy
def test_rl_maps_are_eight_measure_preserving_maps():
    from lib.egf.rl import rl_maps

    m = rl_maps()
    assert m.p == 8 and torch.allclose(
        m.inv_jacobian, torch.ones(8, dtype=m.mats.dtype)
    )
    x = torch.rand(
        50, 2, dtype=torch.float64, generator=torch.Generator().manual_seed(0)
    )
    back = m.inverse(m.forward(x)[3])[3]  # Φ_4⁻¹(Φ_4(x)) = x on the torus
    d = (back - x).abs()
    assert torch.minimum(d, 1 - d).max() < 1e-9


def test_rl_losses_known_answers():
    """FM: zero when the reward is the flow's own terminal flow; divergence: zero there
    too, unchanged when inflow and outflow scale together, and the regulariser adds
    λ E f→²."""
    from lib.egf.rl import rl_loss, rl_maps

    torch.manual_seed(0)
    egf = E.EGF(rl_maps())
    x = torch.rand(64, 2, dtype=torch.float64)
    with torch.no_grad():
        term = egf.terminal(x)
        out, _ = egf.outflow_policy(x)
        infl = egf.maps.f_init + egf.star_inflow(x)
    assert float(rl_loss(egf, x, term.detach(), "fm").detach()) < 1e-20
    r = term.detach().clamp_min(1e-3)
    want = (torch.log(infl) - torch.log(out + r)).pow(2).mean()
    got = rl_loss(egf, x, r, "divergence")
    assert torch.allclose(got, want)
    reg = rl_loss(egf, x, r, "divergence_reg", lam=0.5)
    assert torch.allclose(reg, want + 0.5 * out.pow(2).mean())


def test_rl_chain_stops_at_once_under_a_huge_reward_and_never_without_one():
    from lib.egf.rl import rl_chain_length, rl_maps

    torch.manual_seed(0)
    egf = E.EGF(rl_maps())
    g = torch.Generator().manual_seed(1)
    # the checkerboard's zero cells never stop a walker, its 2-valued cells often do
    out = rl_chain_length(egf, "checkerboard", 400, 50, g)
    assert 0 < out["tau"] < 50 and out["capped"] < 0.5


def test_train_rl_records_history_and_fm_lowers_the_residual():
    from lib.egf.rl import train_rl

    h = train_rl("fm", 0, steps=40, batch=64, every=20, walkers=32, max_steps=20)
    assert h["step"] == [0, 20, 40] and len(h["loss"]) == 40
    assert h["fm_residual"][-1] < h["fm_residual"][0]
    for k in ("total_flow", "tau", "capped"):
        assert len(h[k]) == 3 and all(np.isfinite(h[k]))


def test_rl_bad_inputs():
    from lib.egf.rl import rl_chain_length, rl_loss, rl_maps, train_rl

    egf = E.EGF(rl_maps())
    x = torch.rand(4, 2, dtype=torch.float64)
    with pytest.raises(TypeError, match="egf"):
        rl_loss("nope", x, torch.ones(4))
    with pytest.raises(ValueError, match="loss"):
        rl_loss(egf, x, torch.ones(4), "l1")
    with pytest.raises(ValueError, match="reward"):
        rl_loss(egf, x, torch.ones(3))
    with pytest.raises(ValueError, match="lam"):
        rl_loss(egf, x, torch.ones(4), "divergence_reg", lam=-1.0)
    with pytest.raises(ValueError, match="n"):
        rl_chain_length(egf, "checkerboard", 0)
    with pytest.raises(ValueError, match="loss"):
        train_rl("bogus", 0)
    with pytest.raises(ValueError, match="steps"):
        train_rl("fm", 0, steps=0)
    sphere = E.EGF(E.make_rotations())
    with pytest.raises(ValueError, match="torus"):
        rl_loss(sphere, x, torch.ones(4))


def test_rl_record_roundtrip_and_measured(tmp_path):
    """The stored RL record (``python -m lib.egf rl`` at a shrunk size): written,
    read back with integer seeds, refused under other settings; its row equals
    rl_measured of the same runs, and the FULL path's run_comparison(rl=True)
    carries the row."""
    from lib.egf.rl import (
        RL_SETTINGS,
        load_rl_record,
        rl_measured,
        rl_runs,
        rl_settings,
        save_rl_record,
    )

    small = {**RL_SETTINGS, "steps": 8, "every": 4, "walkers": 16, "max_steps": 10}
    path = save_rl_record((0,), tmp_path / "rl.json", settings=small)
    rec = load_rl_record(path, settings=small)
    assert rec["seeds"] == [0] and rec["stale"] is False
    assert set(rec["runs"]["fm"]) == {0}
    again = rl_runs((0,), settings=small)
    assert rl_measured(rec["runs"]) == rl_measured(again)
    with pytest.raises(ValueError, match="path"):
        load_rl_record(path)  # the default settings differ
    with pytest.raises(FileNotFoundError, match="python -m lib.egf rl"):
        load_rl_record(tmp_path / "none.json")
    assert rl_settings(TINY)["steps"] == TINY.rl_steps
    with pytest.raises(ValueError, match="runs"):
        rl_measured({"fm": {}})


def test_stored_rl_record_is_fresh_and_matches_the_claims_file():
    """results/egf.rl.json (the notebook's RL runs) is current and its row equals the
    claims file's notebook values."""
    import json

    from lib.egf.rl import load_rl_record, rl_measured

    rec = load_rl_record()
    assert not rec["stale"], "lib/egf changed: run `python -m lib.egf rl`"
    assert rec["seeds"] == list(E.NOTEBOOK_SEEDS)
    row = rl_measured(rec["runs"])["rl-divergence"]
    with open(os.path.join(ROOT, "results", "claims", "egf.json")) as f:
        ledger = json.load(f)["claims"]["rl-divergence"]["notebook"]
    got = [row["values"][s] for s in E.NOTEBOOK_SEEDS]
    ctl = [row["control"][s] for s in E.NOTEBOOK_SEEDS]
    assert np.allclose(got, ledger["method"]["values"], rtol=0, atol=1e-12)
    assert np.allclose(ctl, ledger["control"]["values"], rtol=0, atol=1e-12)
