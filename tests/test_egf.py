"""Tests of lib.egf: the torus maps, the closed-form star inflow against a naive loop,
normalisation, Moser's divergence against finite differences, the KDE, the chain,
bad inputs, the FULL path shrunk, the claims' control, CUDA parity."""

import dataclasses
import os

import numpy as np
import pytest
import torch

from lib import egf as E
from lib.egf.reference import kde_naive, moser_density_naive, star_inflow_naive

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
    assert set(m) == {"il-checkerboard", "il-mixture"}
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
    with pytest.raises(TypeError, match="^maps: expected a TorusMaps"):
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
    assert E.SMOKE.seed == E.FULL.seed == 0
    assert E.FULL.steps > E.SMOKE.steps and E.FULL.grid >= E.SMOKE.grid


def test_full_path_shrunk():
    """FULL's code path (run_experiment) with every size cut."""
    cfg = dataclasses.replace(
        E.FULL, **{f.name: getattr(TINY, f.name) for f in dataclasses.fields(TINY)}
    )
    res = E.run_experiment(cfg)
    assert set(res) == {"fits", "kde", "chain", "claim_fits", "claims"}
    for t in E.TARGETS:
        assert set(res["fits"][t]) == {"egf", "moser", "moser_large"}
        assert 0 <= res["chain"][t]["tv_model"] <= 1


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
