"""Tests of lib.smooth_sb: known answers, the naive references, the claims' controls at
a tiny size, bad inputs, CUDA parity."""

import dataclasses
import math

import numpy as np
import pytest
import torch

from lib import smooth_sb as S
from lib.smooth_sb import clouds as C
from lib.smooth_sb.reference import (
    chain_bruteforce,
    matern_cov,
    propagate_naive,
    sinkhorn_naive,
)

TINY = S.Config(
    n1=8,
    n2=8,
    steps=6,
    M1=6,
    M2=3,
    sweeps=4,
    per_start=4,
    ell_grid=(3.0,),
    width_grid=(5.0,),
    bsb_grid=(0.1,),
    nb_n=4,
    nb_steps=5,
    nb_M=3,
    cl_n=6,
    cl_steps=3,
    cl_M=3,
    cl_per_start=2,
    nb_c_grid=(4.0,),
    nb_bsb_grid=(0.2,),
    cl_ell_grid=(3.0,),
    cl_c_grid=(1.0,),
    cl_bsb_grid=(0.5,),
    claim_seeds=(0, 1),
)


@pytest.mark.parametrize("nu", S.NUS)
def test_matern_sde_covariance_is_the_matern_kernel(nu):
    sde = S.matern_sde(nu, ell=1.7, sigma=1.3)
    assert np.isclose(sde.P_inf[0, 0], 1.3**2)
    for tau in (0.1, 0.5, 2.0):
        Phi, Q = S.transition(sde, tau)
        cov = (Phi @ sde.P_inf)[0, 0]  # Cov(x_{t+τ}, x_t)
        assert np.isclose(cov, matern_cov(tau, nu, 1.7, 1.3), rtol=1e-8)
        assert np.linalg.eigvalsh(Q).min() > -1e-12


def test_matern32_stationary_covariance_known_answer():
    sde = S.matern_sde(1.5, ell=2.0, sigma=0.5)
    lam = math.sqrt(3) / 2.0
    assert np.allclose(sde.P_inf, np.diag([0.25, 0.25 * lam**2]))
    assert np.isclose(sde.q, 4 * 0.25 * lam**3)


def test_simulate_tracks_shapes_labels_and_positions():
    tr = S.simulate_tracks(7, 5, 2, seed=3)
    assert tr.shape == (6, 7, 2) and tr.states.shape == (6, 7, 2, 2)
    for k in range(6):
        assert sorted(tr.labels[k].tolist()) == list(range(7))
        assert torch.equal(tr.obs[k], tr.states[k, tr.labels[k], :, 0])
    again = S.simulate_tracks(7, 5, 2, seed=3)
    assert torch.equal(tr.obs, again.obs)


def test_simulated_variance_is_stationary():
    tr = S.simulate_tracks(4000, 3, 1, nu=2.5, ell=1.0, sigma=2.0, seed=0)
    var = tr.states[..., 0].var(dim=1)  # (K, 1)
    assert torch.allclose(var, torch.full_like(var, 4.0), rtol=0.08)


@pytest.mark.parametrize("d", (1, 2))
def test_propagate_matches_naive(d):
    tr = S.simulate_tracks(3, 2, d, ell=1.0, seed=1)
    lk, _ = S.smooth_log_kernels(tr.obs, tr.times, 1.0, 1.0, M=3, sub=2)
    f = torch.randn((3,) + (3,) * d, dtype=torch.float64, generator=torch.Generator())
    g = S.propagate(f, lk[0])
    assert np.allclose(g.numpy(), propagate_naive(f.numpy(), lk[0].numpy()))
    keep = S.propagate(f, lk[0], keep_source=True)
    assert torch.allclose(torch.logsumexp(keep, 0), g)


def test_propagate_underflow_falls_back_to_log_domain():
    # a kernel whose blocks reach no target within e^-700 of its shift: the
    # exponential-domain contraction would lose everything, the fallback must not
    tr = S.simulate_tracks(3, 2, 2, ell=1.0, seed=1)
    lk, _ = S.smooth_log_kernels(tr.obs, tr.times, 1.0, 1.0, M=3, sub=2)
    lk = lk[0].clone()
    lk[0, :, 0] += 2000.0  # source cell 0 of coordinate 1 dominates every shift
    f = torch.zeros((3, 3, 3), dtype=torch.float64)
    f[:, 0] = -3000.0  # … but carries almost no message mass
    g = S.propagate(f, lk)
    assert torch.isfinite(g).all()
    assert np.allclose(g.numpy(), propagate_naive(f.numpy(), lk.numpy()))


@pytest.mark.parametrize("d", (1, 2))
def test_chain_solver_matches_bruteforce(d):
    tr = S.simulate_tracks(3, 2, d, ell=1.0, seed=1)
    lk, lp = S.smooth_log_kernels(tr.obs, tr.times, 1.0, 1.0, M=2, sub=2, width=2.0)
    sol = S.chain_sinkhorn(lk, lp, sweeps=500, tol=1e-12)
    bf = chain_bruteforce(lk.numpy(), lp.numpy(), sweeps=300)
    assert sol.error < 1e-9
    for k in range(2):
        pm = sol.pair_marginal(k).numpy()
        assert np.allclose(pm, bf[k], atol=1e-10)
        assert np.allclose(pm.sum(0), 1 / 3) and np.allclose(pm.sum(1), 1 / 3)


@pytest.mark.parametrize("d", (1, 2))
def test_one_cell_fast_path_matches_bruteforce(d):
    # M = 1 (the Brownian reference) takes the vector path of the solver
    tr = S.simulate_tracks(3, 3, d, ell=1.0, seed=5)
    lk, lp = S.brownian_log_kernels(tr.obs, tr.times, 3.0)
    sol = S.chain_sinkhorn(lk, lp, sweeps=2000, tol=1e-13)
    bf = chain_bruteforce(lk.numpy(), lp.numpy(), sweeps=300)
    assert sol.error < 1e-9
    assert sol.alpha[1].shape == (3,) + (1,) * d == sol.beta[1].shape
    for k in range(3):
        assert np.allclose(sol.pair_marginal(k).numpy(), bf[k], atol=1e-10)
    paths = S.sample_paths(sol, 4, torch.Generator().manual_seed(0))
    assert paths.shape == (12, 4)


def test_two_marginal_case_is_sinkhorn():
    tr = S.simulate_tracks(6, 1, 1, ell=1.0, seed=2)
    lk, lp = S.brownian_log_kernels(tr.obs, tr.times, 0.5)
    sol = S.chain_sinkhorn(lk, lp, sweeps=3000, tol=1e-13)
    P = sinkhorn_naive(np.exp(lk[0, 0, :, 0, :, 0].numpy()), *[np.ones(6) / 6] * 2)
    assert np.allclose(sol.pair_marginal(0).numpy(), P, atol=1e-10)
    # the smooth kernel: Sinkhorn on the kernel with the velocities summed out
    lk, lp = S.smooth_log_kernels(tr.obs, tr.times, 1.0, 1.0, M=4, sub=2)
    sol = S.chain_sinkhorn(lk, lp, sweeps=3000, tol=1e-13)
    keff = torch.logsumexp(lk[0, 0] + lp[0][None, :, None, None], dim=(1, 3))
    P = sinkhorn_naive(np.exp(keff.numpy()), *[np.ones(6) / 6] * 2)
    assert np.allclose(sol.pair_marginal(0).numpy(), P, atol=1e-10)


def test_sampled_links_follow_the_pair_marginal():
    tr = S.simulate_tracks(3, 2, 1, ell=1.0, seed=4)
    lk, lp = S.smooth_log_kernels(tr.obs, tr.times, 1.0, 1.0, M=3, sub=1)
    sol = S.chain_sinkhorn(lk, lp, sweeps=300, tol=1e-12)
    paths = S.sample_paths(sol, 4000, torch.Generator().manual_seed(0))
    for k in range(2):
        emp = np.zeros((3, 3))
        np.add.at(emp, (paths[:, k].numpy(), paths[:, k + 1].numpy()), 1)
        assert np.abs(emp / len(paths) - sol.pair_marginal(k).numpy()).max() < 0.03


def test_correct_rates_known_answers():
    labels = torch.tensor([[0, 1], [1, 0], [0, 1], [0, 1], [1, 0], [1, 0]])
    right = torch.tensor([[0, 1, 0, 0, 1, 1], [1, 0, 1, 1, 0, 0]])
    r = S.correct_rates(right, labels)
    assert r == {"one-step": 1.0, "3-step": 1.0, "5-step": 1.0, "whole": 1.0}
    one_jump = torch.tensor([[0, 1, 0, 1, 0, 0]])  # link 2→3 jumps
    r = S.correct_rates(one_jump, labels)
    assert r["one-step"] == 4 / 5 and r["3-step"] == 2 / 4
    assert r["5-step"] == 0.0 and r["whole"] == 0.0


def test_w2_matching_is_monotone_in_1d():
    tr = S.simulate_tracks(12, 8, 1, ell=1.0, seed=5)
    paths = S.w2_matching(tr.obs)
    pos = tr.obs[torch.arange(9)[None, :], paths, 0]  # (n, K)
    order = pos.argsort(0)
    assert (order == order[:, :1]).all()  # the ranking never changes: no crossings


def test_oracle_and_velocity_tracker_on_well_separated_tracks():
    tr = S.simulate_tracks(5, 10, 2, ell=3.0, sigma=5.0, seed=6)
    for paths in (
        S.oracle_matching(tr, 1.5, 3.0, 5.0),
        S.velocity_matching(tr.obs),
    ):
        assert S.correct_rates(paths, tr.labels)["whole"] == 1.0


def test_velocity_tracker_backward_first_link_follows_an_early_crossing():
    # two particles at constant speed that cross between the first two snapshots
    k = torch.arange(6, dtype=torch.float64)
    obs = torch.stack([-0.1 + 0.2 * k, 0.1 - 0.2 * k], 1)[..., None]  # (K, 2, 1)
    labels = torch.tensor([[0, 1]] * 6)  # (K, n)
    fwd = S.correct_rates(S.velocity_matching(obs, first="w2"), labels)
    both = S.correct_rates(S.velocity_matching(obs, first="backward"), labels)
    assert fwd["whole"] == 0.0 and both["whole"] == 1.0
    with pytest.raises(ValueError, match="first"):
        S.velocity_matching(obs, first="forward")
    with pytest.raises(ValueError, match="obs"):
        S.velocity_matching(obs[:2])


def test_exercise_checks():
    from lib.smooth_sb import exercises as e

    assert e.ex1(True).ok and not e.ex1(False)
    assert e.ex3(2.1e-17).ok and not e.ex3(0.05)
    assert e.ex5(0.435).ok and not e.ex5(0.1)
    assert e.ex2([0.758, 0.756, 0.371]).ok and not e.ex2([0.725, 0.725, 0.371])
    assert e.ex4([0.680, 0.927]).ok and not e.ex4([0.927, 0.680])
    with pytest.raises(TypeError, match="answer"):
        e.ex1("yes")


def test_controls_separate_at_tiny_size():
    m = S.measure_claims(TINY, (0, 1))
    assert set(m) == {c.id for c in S.CLAIMS if c.rule is not None}
    for s in (0, 1):
        assert m["ssb-2d-5step"]["values"][s] > m["ssb-2d-5step"]["control"][s]
    tuned = C.tune_clouds(TINY, (0,))
    assert set(tuned["nbody"]) == {"smooth_sb", "brownian_sb"}
    assert set(tuned["holdout"]["smooth_sb"]) == {"3,1"}


def test_full_code_path_at_tiny_size():
    out = S.run_experiment(TINY)
    assert set(out) == {"tracking", "nbody", "holdout", "claims", "seconds"}
    assert set(out["tracking"]["2"]["5-step"]) == set(S.METHODS)
    tuned = S.tune(TINY, (0,), dims=(1,))
    assert tuned["chosen"] == {
        "smooth_sb": {"1": [3.0, 5.0]},
        "brownian_sb": {"1": 0.1},
    }
    cfg = S.tuned_config(TINY, tuned)
    assert (cfg.ell1, cfg.width1, cfg.bsb_c1) == (3.0, 5.0, 0.1)
    assert S.FULL.M2 > S.SMOKE.M2 and len(S.FULL.claim_seeds) >= 3


def test_bad_inputs():
    with pytest.raises(ValueError, match="nu"):
        S.matern_sde(1.0)
    with pytest.raises(ValueError, match="ell"):
        S.matern_sde(1.5, ell=0.0)
    with pytest.raises(ValueError, match="dt"):
        S.transition(S.matern_sde(), -1.0)
    with pytest.raises(ValueError, match="n"):
        S.simulate_tracks(1, 5)
    with pytest.raises(ValueError, match="noise"):
        S.simulate_tracks(3, 5, noise=-1.0)
    with pytest.raises(TypeError, match="obs"):
        S.smooth_log_kernels(np.zeros((3, 2, 1)), torch.zeros(3))
    with pytest.raises(ValueError, match="times"):
        S.smooth_log_kernels(torch.zeros(3, 2, 1), torch.zeros(4))
    with pytest.raises(ValueError, match="log_k"):
        S.chain_sinkhorn(torch.zeros(2, 1, 3, 2, 3, 3), torch.zeros(1, 2))
    with pytest.raises(ValueError, match="log_p0"):
        S.chain_sinkhorn(torch.zeros(2, 1, 3, 2, 3, 2), torch.zeros(1, 3))
    with pytest.raises(ValueError, match="paths"):
        S.correct_rates(torch.zeros(2, 3, dtype=torch.long), torch.zeros(4, 2).long())
    with pytest.raises(ValueError, match="method"):
        S.track(S.simulate_tracks(3, 4), "kalman")
    with pytest.raises(ValueError, match="truth"):
        S.track(S.simulate_tracks(3, 4), "oracle")
    with pytest.raises(ValueError, match="steps"):
        dataclasses.replace(S.SMOKE, steps=3)
    with pytest.raises(ValueError, match="data_nu"):
        dataclasses.replace(S.SMOKE, data_nu=1.0)
    with pytest.raises(ValueError, match="dim"):
        S.make_tracks(S.SMOKE, 3, 0)
    with pytest.raises(ValueError, match="dim"):
        S.method_kwargs(S.SMOKE, "smooth_sb", 3)
    with pytest.raises(ValueError, match="metric"):
        S.tune(TINY, (0,), metric="7-step")


def test_a_column_of_zero_mass_stays_zero():
    g = torch.Generator().manual_seed(0)
    lk = torch.randn(1, 3, 4, 3, 4, generator=g, dtype=torch.float64)
    lk[0, :, :, 1, 2] = -torch.inf  # no source reaches cell 2 of target 1
    f = torch.randn(3, 4, generator=g, dtype=torch.float64)
    out = S.propagate(f, lk)
    assert out[1, 2] == -torch.inf and bool(torch.isfinite(out[0]).all())
    assert np.allclose(out.numpy(), propagate_naive(f.numpy(), lk.numpy()))


def test_underflow_of_a_whole_observation_is_recomputed_exactly(monkeypatch):
    # a case where the fast step's underflow leaves an observation with no mass
    tr = S.simulate_tracks(5, 8, 2, nu=2.5, ell=1.3, seed=2)
    lk, lp = S.smooth_log_kernels(tr.obs, tr.times, 24.0, 1.0, 8, 2, 10.0)
    sol = S.chain_sinkhorn(lk, lp, sweeps=10)
    assert bool(torch.isfinite(sol.u).all())
    import lib.smooth_sb.solver as solver

    def exact(f, k, keep_source=True):
        g = solver._propagate_lse(f, k.log_k)
        return g if keep_source else torch.logsumexp(g, dim=0)

    monkeypatch.setattr(solver, "_propagate_exp", exact)
    ref = S.chain_sinkhorn(lk, lp, sweeps=10)  # every step in the log domain
    for k in (0, 4, 7):
        assert np.allclose(sol.pair_marginal(k), ref.pair_marginal(k), atol=1e-6)


def test_two_marginal_case_is_pots_sinkhorn():
    ot = pytest.importorskip("ot")
    tr = S.simulate_tracks(7, 1, 1, ell=1.0, seed=3)
    lk, lp = S.brownian_log_kernels(tr.obs, tr.times, 0.5)
    sol = S.chain_sinkhorn(lk, lp, sweeps=3000, tol=1e-13)
    u = np.ones(7) / 7
    P = ot.sinkhorn(
        u, u, -lk[0, 0, :, 0, :, 0].numpy(), 1.0, stopThr=1e-14, numItermax=100000
    )
    assert np.allclose(sol.pair_marginal(0).numpy(), P, atol=1e-9)


def test_nbody_conserves_momentum_and_energy():
    tr = C.simulate_nbody(5, 10, seed=1)
    x, v = tr.states[..., 0], tr.states[..., 1]  # (K, n, 3)
    assert torch.allclose(v.sum(1), torch.zeros(11, 3, dtype=v.dtype), atol=1e-10)
    soft, gm, n = 0.2, 9.0, 5
    r = torch.cdist(x, x)  # (K, n, n)
    pot = -(gm / n) * (1 / torch.sqrt(r**2 + soft**2)).triu(1).sum((1, 2))
    energy = 0.5 * (v**2).sum((1, 2)) + pot  # per unit mass gm/n
    assert (energy - energy[0]).abs().max() < 1e-3 * energy.abs().max()
    # observations are the states, shuffled by the labels
    assert torch.equal(
        tr.obs, torch.gather(x, 1, tr.labels[..., None].expand(-1, -1, 3))
    )


def test_clouds_shapes_and_fresh_cells():
    for kind in C.DATASETS:
        tr = C.simulate_cloud(kind, n=10, steps=4, seed=2)
        assert tr.obs.shape == (5, 10, 2) and tr.times[-1] == 2.0
    p = C.simulate_cloud("petal", n=200, steps=4, noise=0.0, seed=0)
    radius = p.obs.norm(dim=-1)  # 0.2 + sin(πt/2) at every point
    expect = 0.2 + torch.sin(math.pi * p.times / 2)
    assert torch.allclose(radius, expect[:, None].expand_as(radius), atol=1e-12)


def test_bridge_moments_match_joint_gaussian_conditioning():
    sde = S.matern_sde(1.5, 2.0, 1.3)
    t0, t1, t2 = 0.0, 0.3, 0.8
    A, B, cov = C.bridge_moments(sde, t0, t1, t2)
    P = sde.P_inf

    def cross(s, t):  # Cov(η_t, η_s), t ≥ s
        return S.transition(sde, t - s)[0] @ P if t > s else P

    # joint covariance of (η_t1 | η_t0, η_t2)
    c12 = np.hstack([cross(t0, t1), cross(t1, t2).T])  # Cov(η1, (η0, η2))
    c22 = np.block([[P, cross(t0, t2).T], [cross(t0, t2), P]])
    G = c12 @ np.linalg.inv(c22)
    assert np.allclose(np.hstack([A, B]), G, atol=1e-10)
    assert np.allclose(cov, P - G @ c12.T, atol=1e-10)


def test_w1_and_mmd_against_references():
    ot = pytest.importorskip("ot")
    g = torch.Generator().manual_seed(0)
    a = torch.randn(6, 2, generator=g, dtype=torch.float64)
    b = torch.randn(9, 2, generator=g, dtype=torch.float64) + 0.5
    ref = ot.emd2(
        np.ones(6) / 6,
        np.ones(9) / 9,
        ot.dist(a.numpy(), b.numpy(), metric="euclidean"),
    )
    assert abs(C.w1_distance(a, b) - ref) < 1e-10
    k = lambda x, y: math.exp(-float(((x - y) ** 2).sum()) / 2)  # noqa: E731
    naive = (
        np.mean([k(x, y) for x in a for y in a])
        + np.mean([k(x, y) for x in b for y in b])
        - 2 * np.mean([k(x, y) for x in a for y in b])
    )
    assert abs(C.mmd_gaussian(a, b) - naive) < 1e-12
    assert C.w1_distance(a, a) == 0.0


def test_holdout_interpolations_known_answers():
    # straight, well separated paths: McCann and the spline recover the missing time
    K, n = 5, 4
    t = torch.linspace(0, 2, K, dtype=torch.float64)
    start = torch.tensor([[0.0, 0.0], [5.0, 0.0], [0.0, 5.0], [5.0, 5.0]])
    x = start[None].double() + t[:, None, None] * torch.tensor([0.3, -0.2]).double()
    tr = S.Tracks(x, torch.arange(n).repeat(K, 1), x[..., None], t)
    for m in ("w2", "spline"):
        pts = C.holdout_points(tr, 2, m)
        assert torch.allclose(pts, x[2], atol=1e-10)
    # the smooth SB's points lie near the missing snapshot, the sampled count is n·r
    pts = C.holdout_points(tr, 2, "smooth_sb", M=6, per_start=3, sweeps=10)
    assert pts.shape == (12, 2)
    near = torch.cdist(pts, x[2]).argmin(1)  # (12,) the cluster of each point
    assert torch.equal(near, torch.arange(n).repeat_interleave(3))
    means = torch.stack([pts[near == i].mean(0) for i in range(n)])
    assert (means - x[2]).norm(dim=1).max() < 0.5


def test_bad_cloud_inputs():
    with pytest.raises(ValueError, match="kind"):
        C.simulate_cloud("spiral")
    with pytest.raises(ValueError, match="kick"):
        C.simulate_nbody(kick=-1.0)
    with pytest.raises(ValueError, match="soft"):
        C.simulate_nbody(soft=0.0)
    tr = C.simulate_cloud("petal", n=5, steps=3)
    with pytest.raises(ValueError, match="k"):
        C.holdout_points(tr, 3, "w2")
    with pytest.raises(ValueError, match="method"):
        C.holdout_points(tr, 1, "mioflow")
    with pytest.raises(ValueError, match="b"):
        C.w1_distance(torch.zeros(3, 2), torch.zeros(3, 3))
    with pytest.raises(ValueError, match="t0, t1, t2"):
        C.bridge_moments(S.matern_sde(), 0.5, 0.2, 1.0)
    with pytest.raises(TypeError, match="cells"):
        S.sample_paths(
            S.chain_sinkhorn(*S.brownian_log_kernels(tr.obs, tr.times), sweeps=2),
            cells=1,
        )


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cuda_matches_cpu():
    tr = S.simulate_tracks(6, 5, 2, ell=2.0, seed=0)
    lk, lp = S.smooth_log_kernels(tr.obs, tr.times, 3.0, 1.0, M=4, sub=2)
    a = S.chain_sinkhorn(lk, lp, sweeps=20)
    b = S.chain_sinkhorn(lk.cuda(), lp.cuda(), sweeps=20)
    assert torch.allclose(a.pair_marginal(3), b.pair_marginal(3).cpu(), atol=1e-9)
