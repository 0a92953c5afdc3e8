"""Tests of lib.ood_shaping: every batched score against a plain reference written from
its formula, known answers and invariants of the KL + IB functional, bad inputs, and
CPU/GPU parity."""

import dataclasses
import math
import subprocess
import sys

import numpy as np
import pytest
import torch
from sklearn.metrics import roc_auc_score, roc_curve

import lib.ood_shaping as O
from lib.ood_shaping import scores as S


@pytest.fixture(scope="module")
def head():
    g = torch.Generator().manual_seed(0)
    h = torch.relu(
        torch.randn(30, 12, generator=g, dtype=torch.float64) + 0.3
    )  # (N, D) after ReLU
    W = torch.randn(4, 12, generator=g, dtype=torch.float64)
    b = torch.randn(4, generator=g, dtype=torch.float64)
    return h, W, b


# --- naive references, one sample and one unit at a time ------------------------------
def ref_logits(row, W, b):
    return [
        sum(W[c][j] * row[j] for j in range(len(row))) + b[c] for c in range(len(b))
    ]


def ref_energy(row, W, b):
    z = ref_logits(row, W, b)
    m = max(z)
    return m + math.log(sum(math.exp(v - m) for v in z))


def as_lists(h, W, b):
    return h.tolist(), W.tolist(), b.tolist()


def test_logit_scores_match_reference(head):
    h, W, b = head
    H, Wl, bl = as_lists(h, W, b)
    ref_msp = [
        max(math.exp(v) for v in ref_logits(r, Wl, bl))
        / sum(math.exp(v) for v in ref_logits(r, Wl, bl))
        for r in H
    ]
    np.testing.assert_allclose(S.msp(h, W, b), ref_msp, rtol=1e-10)
    np.testing.assert_allclose(
        S.max_logit(h, W, b), [max(ref_logits(r, Wl, bl)) for r in H], rtol=1e-10
    )
    np.testing.assert_allclose(
        S.energy(h, W, b), [ref_energy(r, Wl, bl) for r in H], rtol=1e-10
    )


def test_react_and_vra_match_reference(head):
    h, W, b = head
    H, Wl, bl = as_lists(h, W, b)
    c = 0.8
    np.testing.assert_allclose(
        S.react(h, W, b, c), [ref_energy([min(v, c) for v in r], Wl, bl) for r in H]
    )
    x1, x2 = 0.3, 1.0

    def vra(v):  # clip at x2, then zero at or below x1
        v = min(v, x2)
        return v if v > x1 else 0.0

    np.testing.assert_allclose(
        S.vra_p(h, W, b, x1, x2), [ref_energy([vra(v) for v in r], Wl, bl) for r in H]
    )


@pytest.mark.parametrize("p", [0, 40, 65, 100])
def test_ash_matches_reference(head, p):
    h, W, b = head
    H, Wl, bl = as_lists(h, W, b)
    D = len(H[0])
    k = D - int(round(D * p / 100))
    ref_p, ref_s = [], []
    for r in H:
        top = sorted(range(D), key=lambda j: -r[j])[:k]  # indices of the k largest
        pruned = [r[j] if j in top else 0.0 for j in range(D)]
        ref_p.append(ref_energy(pruned, Wl, bl))
        if k > 0:
            scale = math.exp(sum(r) / sum(pruned))
            ref_s.append(ref_energy([v * scale for v in pruned], Wl, bl))
    np.testing.assert_allclose(S.ash_p(h, W, b, p), ref_p, rtol=1e-10)
    if k > 0:
        np.testing.assert_allclose(S.ash_s(h, W, b, p), ref_s, rtol=1e-10)


def test_dice_matches_reference(head):
    h, W, b = head
    hn, Wn = h.numpy(), W.numpy()
    contrib = hn.mean(0)[None, :] * Wn
    mask = contrib > np.percentile(contrib, 70)
    np.testing.assert_array_equal(S.dice_mask(h, W, 70).numpy(), mask)
    Wm = (Wn * mask).tolist()
    ref = [ref_energy(r, Wm, b.tolist()) for r in h.tolist()]
    np.testing.assert_allclose(S.dice(h, W, b, torch.as_tensor(mask)), ref, rtol=1e-10)


def test_optfs_matches_reference(head):
    h, W, b = head
    hn, Wn, bn = h.numpy(), W.numpy(), b.numpy()
    lo, hi = np.quantile(hn, 1e-3), np.quantile(hn, 1 - 1e-3)
    width = (hi - lo) / 10
    left = lo + width * np.arange(10)
    pred = np.argmax(hn @ Wn.T + bn, axis=1)
    lc = Wn[pred] * hn
    theta = np.array(
        [np.mean(np.sum(((hn >= x) & (hn < x + width)) * lc, axis=1)) for x in left]
    )
    theta = theta / np.linalg.norm(theta)
    l_t, w_t, th_t = S.optfs_fit(h, W, b, n_bins=10)
    np.testing.assert_allclose(l_t.numpy(), left, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(th_t.numpy(), theta, rtol=1e-8, atol=1e-12)
    feat_p = np.zeros_like(hn)
    for i, x in enumerate(left):
        feat_p += ((hn >= x) & (hn < x + width)) * hn * theta[i]
    ref = np.sum(Wn[pred] * feat_p, axis=1)
    np.testing.assert_allclose(
        S.optfs(h, W, b, l_t, w_t, th_t).numpy(), ref, rtol=1e-8, atol=1e-12
    )


def test_interp_and_shaped_energy(head):
    h, W, b = head
    knots = torch.tensor([0.0, 0.5, 1.0, 2.0], dtype=torch.float64)
    values = torch.tensor([0.0, 0.1, 0.9, 1.0], dtype=torch.float64)
    np.testing.assert_allclose(
        S.interp(h, knots, values).numpy(), np.interp(h.numpy(), knots, values)
    )
    # identity shaping = the energy score
    np.testing.assert_allclose(
        S.shaped_energy(h, W, b, knots, knots), S.energy(h.clamp(max=2.0), W, b)
    )


def test_metrics_match_sklearn():
    g = torch.Generator().manual_seed(1)
    s_id = torch.round(torch.randn(300, generator=g) * 4) / 4 + 1.0  # ties on purpose
    s_ood = torch.round(torch.randn(200, generator=g) * 4) / 4
    y = np.r_[np.ones(300), np.zeros(200)]
    s = np.r_[s_id.numpy(), s_ood.numpy()]
    assert S.auroc(s_id, s_ood) == pytest.approx(roc_auc_score(y, s), abs=1e-12)
    fpr, tpr, _ = roc_curve(y, s, drop_intermediate=False)
    assert S.fpr_at_95_tpr(s_id, s_ood) == pytest.approx(
        fpr[np.argmax(tpr >= 0.95)], abs=1e-12
    )
    assert (
        S.auroc(s_id + 100, s_ood) == 1.0 and S.fpr_at_95_tpr(s_id + 100, s_ood) == 0.0
    )


# --- the KL + IB functional -----------------------------------------------------------
def two_atoms(a=1, c=3, K=4):
    grid = O.make_grid(4.0, K)
    p_id = torch.zeros(K + 1, dtype=torch.float64)
    p_ood = torch.zeros(K + 1, dtype=torch.float64)
    p_id[a], p_ood[c] = 1.0, 1.0
    return grid, p_id, p_ood


def test_kl_of_two_gaussians_known_answer():
    grid, p_id, p_ood = two_atoms()
    sigma = 0.7
    t = O.kl_ib_terms(grid.knots, p_id, p_ood, sigma, n_z=4000)
    gap = float(grid.knots[3] - grid.knots[1])
    assert float(t["kl"]) == pytest.approx(
        gap**2 / (2 * sigma**2), rel=1e-4
    )  # KL(N(a,σ²)‖N(c,σ²))
    # I(Z;Y) for two equiprobable Gaussians lies in (0, log 2); I(X;Z) = I(Z;Y) here (X
    # determines Y)
    assert 0 < float(t["i_zy"]) < math.log(2)
    assert float(t["i_xz"]) == pytest.approx(float(t["i_zy"]), abs=1e-6)


def test_kl_data_processing_and_invariance():
    g = torch.Generator().manual_seed(0)
    grid = O.make_grid(1.0, 8)
    p_id = torch.rand(9, generator=g, dtype=torch.float64)
    p_id /= p_id.sum()
    p_ood = torch.rand(9, generator=g, dtype=torch.float64)
    p_ood /= p_ood.sum()
    kl_x = float((p_id * (p_id / p_ood).log()).sum())
    shapes = [
        grid.knots,
        grid.knots**3 + grid.knots,
        torch.tensor([0, 5, 1, 4, 2, 8, 3, 7, 6.0], dtype=torch.float64),
    ]
    for (
        gx
    ) in shapes:  # any injective g: KL → KL(p_ID‖p_OOD) as σ → 0, and never above it
        for sigma, tol in ((1e-3, 1e-3), (0.3, None)):
            kl = float(O.kl_ib_terms(gx, p_id, p_ood, sigma, n_z=20000)["kl"])
            assert kl <= kl_x + 1e-6
            if tol:
                assert kl == pytest.approx(kl_x, abs=tol)
    base = O.kl_ib_loss(grid.knots, p_id, p_ood, beta=0.7, sigma=0.05)
    shifted = O.kl_ib_loss(grid.knots + 3.0, p_id, p_ood, beta=0.7, sigma=0.05)
    assert float(shifted) == pytest.approx(float(base), abs=1e-8)  # g ↦ g + c
    flipped = O.kl_ib_loss(-grid.knots, p_id, p_ood, beta=0.7, sigma=0.05)
    assert float(flipped) == pytest.approx(float(base), abs=1e-8)  # g ↦ −g


def test_solver_decreases_loss_and_is_monotone():
    g = torch.Generator().manual_seed(0)
    x = torch.relu(torch.randn(20000, generator=g, dtype=torch.float64))
    grid = O.make_grid(3.0, 24)
    p_id = O.histogram(x, grid)
    p_ood = O.histogram(O.ood_law_samples(x, "weaker+tail", 1.0, generator=g), grid)
    assert float(p_id.sum()) == pytest.approx(1.0) and float(p_id[0]) == pytest.approx(
        0.5, abs=0.02
    )
    gx, hist = O.solve_shaping(p_id, p_ood, grid, beta=1.0, sigma=0.05, steps=60)
    assert hist[-1] < hist[0]
    assert float(gx[0]) == 0.0 and bool((torch.diff(gx) >= 0).all())
    go = O.orient_and_scale(gx, p_id, p_ood, grid.knots)
    assert float(p_id @ go**2) == pytest.approx(float(p_id @ grid.knots**2))


def test_assumptions_build_the_expected_laws():
    g = torch.Generator().manual_seed(0)
    x = torch.relu(torch.randn(50000, generator=g, dtype=torch.float64))
    assert float(O.ood_law_samples(x, "weaker", 1.0).mean()) == pytest.approx(
        float(x.mean()) / 2
    )
    tail = O.ood_law_samples(x, "weaker+tail", 1.0, generator=g)
    assert float(tail.max()) > 2.5 * float(x.max()) * 0.9
    floor = O.ood_law_samples(x, "floor", 1.0, generator=g)
    assert float((floor == 0).float().mean()) == pytest.approx(
        float((x == 0).float().mean())
    )
    sur = torch.ones(7, dtype=torch.float64)
    assert torch.equal(O.ood_law_samples(x, "surrogate", x_surrogate=sur), sur)


# --- bad inputs -----------------------------------------------------------------------
def test_bad_inputs(head):
    h, W, b = head
    with pytest.raises(ValueError, match=r"W: expected shape \(C, 12\)"):
        S.energy(h, W[:, :5], b)
    with pytest.raises(ValueError, match="b: expected shape"):
        S.energy(h, W, b[:2])
    with pytest.raises(TypeError, match="h: expected a torch.Tensor"):
        S.msp(h.numpy(), W, b)
    with pytest.raises(
        ValueError, match=r"percentile: expected a number in \[0, 100\], got 120"
    ):
        S.ash_p(h, W, b, 120)
    with pytest.raises(TypeError, match="percentile"):
        S.ash_s(h, W, b, "65")
    with pytest.raises(ValueError, match="x1, x2: expected x1 < x2"):
        S.vra_p(h, W, b, 1.0, 0.5)
    with pytest.raises(ValueError, match="score_id, score_ood: expected non-empty"):
        S.auroc(torch.zeros(0), torch.ones(3))
    with pytest.raises(ValueError, match="assumption: expected one of"):
        O.ood_law_samples(h.flatten(), "heavier")
    with pytest.raises(ValueError, match="x_surrogate"):
        O.ood_law_samples(h.flatten(), "surrogate")
    with pytest.raises(ValueError, match="x: expected non-negative activations"):
        O.histogram(-h, O.make_grid(1.0, 4))
    with pytest.raises(ValueError, match="n_bins: expected an int >= 2"):
        O.make_grid(1.0, 1)
    grid = O.make_grid(1.0, 4)
    p = torch.full((5,), 0.2, dtype=torch.float64)
    with pytest.raises(ValueError, match="sigma: expected a finite number > 0"):
        O.solve_shaping(p, p, grid, sigma=0.0)
    with pytest.raises(ValueError, match="beta: expected a finite number >= 0"):
        O.solve_shaping(p, p, grid, beta=-1.0)
    with pytest.raises(ValueError, match=r"p_ood: expected shape \(5\)"):
        O.solve_shaping(p, p[:3], grid)
    with pytest.raises(ValueError, match="init: expected a shaping that starts at 0"):
        O.solve_shaping(p, p, grid, init=grid.knots + 1.0)
    with pytest.raises(ValueError, match="init: expected a shaping that starts at 0"):
        O.solve_shaping(p, p, grid, init=grid.knots.flip(0) - grid.knots[-1])
    with pytest.raises(ValueError, match=r"init: expected shape \(5\)"):
        O.solve_shaping(p, p, grid, init=grid.knots[:3])
    with pytest.raises(ValueError, match="arch: expected 'mlp' or 'cnn'"):
        O.Net("resnet")
    with pytest.raises(ValueError, match="n: expected a positive int"):
        O.ood_sets(0, torch.Generator(), torch.zeros(3, 784), None)


# --- data, presets, the pipeline ------------------------------------------------------
def test_load_fashion_mnist():
    try:
        x, y = O.load_fashion_mnist("test")
    except FileNotFoundError as e:
        pytest.fail(
            f"Fashion-MNIST must be fetched by the set-up (scripts/fetch_data.sh): {e}"
        )
    assert x.shape == (10000, 784) and x.dtype == torch.float32
    assert y.shape == (10000,) and y.dtype == torch.int64
    assert (
        0 <= float(x.min())
        and float(x.max()) <= 1
        and set(y.unique().tolist()) == set(range(10))
    )
    assert 0.2 < float(x.mean()) < 0.4  # Fashion-MNIST's mean pixel is about 0.29
    with pytest.raises(ValueError, match="split"):
        O.load_fashion_mnist("valid")


def test_ood_sets_and_missing_fashion():
    g = torch.Generator().manual_seed(0)
    mnist = torch.rand(50, 784, generator=g)
    sets, notes = O.ood_sets(20, g, mnist, None)
    assert "fashion" not in sets and any("fashion" in n for n in notes)
    for name, x in sets.items():
        assert x.shape[1] == 784 and 0 <= float(x.min()) and float(x.max()) <= 1, name
        assert x.shape[0] == 20
    assert set(sets) == set(O.OOD_SETS) - {"fashion"}


def test_presets_and_light_imports():
    assert {f.name for f in dataclasses.fields(O.SMOKE)} == {
        f.name for f in dataclasses.fields(O.FULL)
    }
    assert O.SMOKE.seed == O.FULL.seed == 0
    code = (
        "import sys, lib.ood_shaping, lib.ood_shaping.__main__; "
        "print('skimage' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert (
        out.stdout.strip() == "False"
    )  # the FULL path imports scikit-image only lazily


def test_networks_give_penultimate_features():
    x = torch.rand(3, 784, generator=torch.Generator().manual_seed(0))
    for arch in ("mlp", "cnn"):
        net = O.Net(arch, width=16)
        h = net.features(x)
        assert h.shape == (3, 16) and bool((h >= 0).all()) and net(x).shape == (3, 10)


def test_run_experiment_tiny():
    cfg = dataclasses.replace(
        O.SMOKE,
        n_seeds=2,
        n_train=1000,
        epochs=1,
        n_fit=300,
        n_test=200,
        n_ood=50,
        steps=20,
        n_activations=20000,
        width=32,
    )
    res = O.run_experiment(cfg, torch.device("cpu"))
    assert res["methods"] == list(O.METHODS) and res["sets"][-1] == "average"
    for m in O.METHODS:
        assert 0 <= res["table"][m]["average"]["auroc"] <= 100
    assert len(res["accuracy"]) == 2
    assert all(m in O.SHAPING for m in res["best_on_validation"])
    for chosen in res["chosen"]:
        assert all(chosen[m] in O.GRIDS[m] for m in O.GRIDS)


# --- CPU / GPU parity -----------------------------------------------------------------
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_cpu_gpu_parity(head):
    h, W, b = head
    p = {
        "react_c": 0.8,
        "vra_x1": 0.3,
        "vra_x2": 1.0,
        "ash_p": 65.0,
        "dice_mask": S.dice_mask(h, W, 70),
        "optfs": S.optfs_fit(h, W, b, 10),
        "kl_ib": (
            torch.tensor([0.0, 1.0, 2.0], dtype=torch.float64),
            torch.tensor([0.0, 0.5, 0.7], dtype=torch.float64),
        ),
    }
    cpu = O.score_all(h, W, b, p)
    to = lambda v: (
        tuple(t.cuda() for t in v)
        if isinstance(v, tuple)
        else (v.cuda() if torch.is_tensor(v) else v)
    )
    gpu = O.score_all(h.cuda(), W.cuda(), b.cuda(), {k: to(v) for k, v in p.items()})
    for m in cpu:
        np.testing.assert_allclose(
            gpu[m].cpu().numpy(), cpu[m].numpy(), rtol=1e-6, atol=1e-9, err_msg=m
        )
    grid = O.make_grid(3.0, 16)
    x = h.flatten()
    pi, po = O.histogram(x, grid), O.histogram(x / 2, grid)
    g_cpu, _ = O.solve_shaping(pi, po, grid, steps=30)
    grid_gpu = O.Grid(grid.knots.cuda(), grid.edges.cuda())
    g_gpu, _ = O.solve_shaping(pi.cuda(), po.cuda(), grid_gpu, steps=30)
    np.testing.assert_allclose(g_gpu.cpu().numpy(), g_cpu.numpy(), rtol=1e-6, atol=1e-8)


def test_nan_activations_and_bad_config_are_rejected():
    """NaN never reads as a dead unit, a score or a probability; the variational terms
    check their inputs and Config fields are checked on construction (issue 37)."""
    grid = O.make_grid(1.0, 8)
    x = torch.rand(50)
    x[3] = float("nan")
    with pytest.raises(ValueError, match="x: expected finite values, got NaN"):
        O.histogram(x, grid)
    p = O.histogram(torch.rand(50), grid)
    g = grid.knots.clone()
    with pytest.raises(ValueError, match="p_ood: expected probabilities"):
        O.kl_ib_terms(g, p, torch.full_like(p, float("nan")), 0.05)
    with pytest.raises(ValueError, match="sigma: expected a finite number > 0"):
        O.channel_densities(g, p, p, 0.0)
    with pytest.raises(ValueError, match="prior: expected a number in"):
        O.kl_ib_loss(g, p, p, 1.0, 0.05, prior=1.5)
    h, W, b = torch.rand(4, 3), torch.randn(2, 3), torch.zeros(2)
    with pytest.raises(ValueError, match="h: expected finite values"):
        O.energy(h * float("nan"), W, b)
    with pytest.raises(ValueError, match="score_ood: expected scores without NaN"):
        O.auroc(torch.rand(5), torch.tensor([0.1, float("nan")]))
    for bad, words in (
        (dict(arch="resnet"), "arch"),
        (dict(epochs=0), "epochs"),
        (dict(sigma=float("nan")), "sigma"),
        (dict(react_p=120.0), "react_p"),
        (dict(vra_p=(95.0, 50.0)), "vra_p"),
    ):
        with pytest.raises((TypeError, ValueError), match=words):
            O.Config(**bad)


def test_solve_shaping_starts_from_init():
    """One step with lr ≈ 0 returns the starting shape: ``init`` is where the flow
    starts, and the default start is the identity."""
    grid = O.make_grid(2.0, 8)
    p_id = torch.linspace(1, 2, 9, dtype=torch.float64)
    p_id = p_id / p_id.sum()
    p_ood = p_id.flip(0)
    g0 = torch.sqrt(grid.knots * grid.knots[-1])
    kw = dict(steps=1, lr=1e-12, smooth=0.0)
    g, _ = O.solve_shaping(p_id, p_ood, grid, init=g0, scale="unconstrained", **kw)
    assert torch.allclose(g, g0, rtol=1e-6, atol=1e-9)
    # with the scale fixed, the start is g0 rescaled to E_ID[g²] = E_ID[X²]
    g, _ = O.solve_shaping(p_id, p_ood, grid, init=g0, **kw)
    c = float((p_id @ grid.knots**2 / (p_id @ g0**2)).sqrt())
    assert torch.allclose(g, c * g0, rtol=1e-6, atol=1e-9) and abs(c - 1) > 0.05
    for scale in O.SCALES:
        g, _ = O.solve_shaping(p_id, p_ood, grid, scale=scale, **kw)
        assert torch.allclose(g, grid.knots, rtol=1e-6, atol=1e-9)


def test_fixed_scale_prevents_the_collapse():
    """At a large β the unconstrained flow lowers L by shrinking g below the channel
    noise (every term of eq. 2 tends to 0 with g/σ); with the scale fixed the second
    moment stays E_ID[X²] at every step and g keeps a range far above σ."""
    g = torch.Generator().manual_seed(0)
    x = torch.relu(torch.randn(20000, generator=g, dtype=torch.float64))
    grid = O.make_grid(3.0, 24)
    p_id = O.histogram(x, grid)
    p_ood = O.histogram(O.ood_law_samples(x, "weaker+tail", 1.0, generator=g), grid)
    kw = dict(beta=2.0, sigma=0.05, steps=150)
    g_un, h_un = O.solve_shaping(p_id, p_ood, grid, scale="unconstrained", **kw)
    g_fx, h_fx = O.solve_shaping(p_id, p_ood, grid, **kw)
    sigma_x = 0.05 * 3.0  # σ in units of x
    assert float(g_un.max() - g_un.min()) < sigma_x  # collapsed below the noise
    assert abs(h_un[-1]) < 0.05 < h_un[0]  # L → 0, the value of a constant g
    assert float(g_fx.max() - g_fx.min()) > 5 * sigma_x
    assert float(p_id @ g_fx**2) == pytest.approx(float(p_id @ grid.knots**2))
    assert h_fx[-1] < h_fx[0]
    with pytest.raises(ValueError, match="scale: expected one of"):
        O.solve_shaping(p_id, p_ood, grid, scale="free")
    with pytest.raises(TypeError, match="scale: expected one of"):
        O.solve_shaping(p_id, p_ood, grid, scale=1.0)
    assert O.SMOKE.g_scale == "fixed"
    with pytest.raises(ValueError, match="g_scale: expected one of"):
        O.Config(g_scale="free")


# --- validation sets, the selection procedure, the free family, the claims -----------
def test_jigsaw_permutes_blocks_and_validation_sets():
    g = torch.Generator().manual_seed(0)
    x = torch.rand(5, 784, generator=g)
    y = O.jigsaw(x, g)
    blocks = lambda t: (
        t.reshape(-1, 4, 7, 4, 7).permute(0, 1, 3, 2, 4).reshape(-1, 16, 49)
    )
    for i in range(5):  # the same 16 blocks, in another order
        a = sorted(map(tuple, blocks(x)[i].tolist()))
        b = sorted(map(tuple, blocks(y)[i].tolist()))
        assert a == b
    assert not torch.equal(x, y)
    noise = O.smooth_noise(7, g)
    assert (
        noise.shape == (7, 784) and 0 <= float(noise.min()) <= float(noise.max()) <= 1
    )
    sets = O.validation_sets(6, g, torch.rand(20, 784, generator=g))
    assert tuple(sets) == O.VAL_SETS and all(v.shape == (6, 784) for v in sets.values())
    with pytest.raises(ValueError, match="block: expected a divisor of 28"):
        O.jigsaw(x, g, block=5)
    with pytest.raises(ValueError, match="n: expected an int"):
        O.smooth_noise(0, g)
    with pytest.raises(ValueError, match="mnist_valid: expected shape"):
        O.validation_sets(3, g, torch.rand(4, 10))


def test_selection_budget_and_choice(head):
    h, W, b = head
    assert all(len(v) == O.BUDGET for v in O.GRIDS.values())
    g = torch.Generator().manual_seed(0)
    h_val = {"a": h * 3.0, "b": h[:, torch.randperm(12, generator=g)]}
    cfg = dataclasses.replace(O.SMOKE, steps=5, n_activations=1000)
    for m in ("react", "ash_s", "dice", "vra_p", "optfs"):
        setting, fitted, table = O.select(cfg, m, W, b, h, h, h_val, g)
        assert set(table) == set(O.GRIDS[m])
        assert table[setting] == max(table.values())
        first_best = next(k for k, v in table.items() if v == max(table.values()))
        assert setting == first_best  # ties go to the first in the grid
        s = O.score_method(m, fitted, h, W, b)
        assert s.shape == (h.shape[0],)
    assert O.percentile_values(h, [10, 90]) == pytest.approx(
        [O.percentile_value(h, 10), O.percentile_value(h, 90)]
    )
    with pytest.raises(ValueError, match="method: expected one of"):
        O.fit_setting(cfg, "msp", None, W, b, h, g)
    with pytest.raises(TypeError, match="fitted: expected the dict"):
        O.score_method("react", None, h, W, b)
    with pytest.raises(TypeError, match="h_val_ood: expected a non-empty dict"):
        O.select(cfg, "react", W, b, h, h, {}, g)
    with pytest.raises(TypeError, match="ps: expected a non-empty sequence"):
        O.percentile_values(h, [])
    with pytest.raises(ValueError, match=r"ps\[1\]: expected a number in \[0, 100\]"):
        O.percentile_values(h, [5, 150])


def test_free_family_can_turn_down_and_same_law():
    """The free family reaches shapes the non-decreasing one cannot: with OOD mass only
    in the top bins, the flow moves them (either way) and slopes may become negative;
    the non-decreasing family keeps every slope positive."""
    grid = O.make_grid(1.0, 16)
    p_id = torch.zeros(17, dtype=torch.float64)
    p_id[1:9] = 1.0
    p_id /= p_id.sum()
    p_ood = 0.5 * p_id.clone()
    p_ood[12:] += 0.5 / 5
    g_mono, _ = O.solve_shaping(p_id, p_ood, grid, beta=0.5, sigma=0.05, steps=100)
    assert bool((torch.diff(g_mono) > 0).all())
    g_free, _ = O.solve_shaping(
        p_id, p_ood, grid, beta=0.5, sigma=0.05, steps=100, family="free"
    )
    assert g_free.shape == g_mono.shape and float(g_free[0]) == 0.0
    g_down = O.solve_shaping(
        p_id,
        p_ood,
        grid,
        steps=1,
        lr=1e-12,
        smooth=0.0,
        family="free",
        init=torch.sin(3 * grid.knots),
    )[0]
    assert float(torch.diff(g_down).min()) < 0  # a start that turns down is allowed
    with pytest.raises(ValueError, match="family: expected one of"):
        O.solve_shaping(p_id, p_ood, grid, family="convex")
    x = torch.rand(100, dtype=torch.float64)
    assert torch.equal(O.ood_law_samples(x, "same"), x)


def test_slope_ratios_identity_and_clip():
    g = torch.Generator().manual_seed(0)
    h = torch.relu(torch.randn(200, 8, generator=g, dtype=torch.float64))
    knots = torch.linspace(0, 5, 51, dtype=torch.float64)
    r = O.slope_ratios(h, knots, knots)
    assert r["top"] == pytest.approx(1.0) and r["bottom"] == pytest.approx(1.0)
    clipped = knots.clamp(max=float(h[h > 0].quantile(0.9)))
    assert O.slope_ratios(h, knots, clipped)["top"] < 0.2


def test_claims_are_declared():
    ids = [c.id for c in O.CLAIMS]
    assert len(set(ids)) == len(ids) >= 3
    assert all(c.control for c in O.CLAIMS if c.rule is not None)
    assert not set(O.NOTEBOOK_SEEDS) & set(O.TUNING_SEEDS)


def _tiny_run(h, W, b):
    return O.SeedRun(
        0,
        W,
        b,
        h,
        h,
        {"a": h},
        0.9,
        {m: 0 for m in O.METHODS},
        {},
        {m: {0: 0.5} for m in O.METHODS},
        {m: {"id": torch.rand(5), "a": torch.rand(5)} for m in O.METHODS},
        [],
    )


@pytest.mark.parametrize(
    "call, err, name",
    [
        (
            lambda h, W, b, g: O.fit_setting("x", "react", 90.0, W, b, h, g),
            TypeError,
            "cfg",
        ),
        (
            lambda h, W, b, g: O.fit_setting(O.SMOKE, "react", 101.0, W, b, h, g),
            ValueError,
            "setting",
        ),
        (
            lambda h, W, b, g: O.fit_setting(
                O.SMOKE, "vra_p", (95.0, 50.0), W, b, h, g
            ),
            ValueError,
            "setting",
        ),
        (
            lambda h, W, b, g: O.fit_setting(O.SMOKE, "optfs", 0, W, b, h, g),
            ValueError,
            "setting",
        ),
        (
            lambda h, W, b, g: O.fit_setting(
                O.SMOKE, "kl_ib", ("x", "free", 1.0), W, b, h, g
            ),
            ValueError,
            r"setting\[0\]",
        ),
        (
            lambda h, W, b, g: O.fit_setting(O.SMOKE, "react", 90.0, W[:, :3], b, h, g),
            ValueError,
            "W",
        ),
        (
            lambda h, W, b, g: O.fit_setting(
                O.SMOKE, "react", 90.0, W, b, h * math.nan, g
            ),
            ValueError,
            "h_fit",
        ),
        (
            lambda h, W, b, g: O.select(O.SMOKE, "bogus", W, b, h, h, {"a": h}, g),
            ValueError,
            "method",
        ),
        (
            lambda h, W, b, g: O.select(O.SMOKE, "react", W, b, h, h[:0], {"a": h}, g),
            ValueError,
            "h_val_id",
        ),
        (
            lambda h, W, b, g: O.select(
                O.SMOKE, "react", W, b, h, h, {"a": h.long()}, g
            ),
            TypeError,
            "h_val_ood",
        ),
        (
            lambda h, W, b, g: O.slope_ratios(h * math.nan, h[0], h[0]),
            ValueError,
            "h_fit",
        ),
        (lambda h, W, b, g: O.slope_ratios(h, "x", h[0]), TypeError, "knots"),
        (
            lambda h, W, b, g: O.slope_ratios(
                h, torch.linspace(0, 1, 5, dtype=h.dtype), h[0, :4]
            ),
            ValueError,
            "g",
        ),
        (
            lambda h, W, b, g: O.slope_ratios(
                -h - 1, torch.linspace(0, 1, 4, dtype=h.dtype), h[0, :4]
            ),
            ValueError,
            "h_fit",
        ),
        (lambda h, W, b, g: O.claims_from_runs(O.SMOKE, []), ValueError, "runs"),
        (lambda h, W, b, g: O.claims_from_runs(O.SMOKE, 3), TypeError, "runs"),
        (
            lambda h, W, b, g: O.best_on_validation(_tiny_run(h, W, b), 3),
            TypeError,
            "methods",
        ),
        (
            lambda h, W, b, g: O.best_on_validation(_tiny_run(h, W, b), ()),
            ValueError,
            "methods",
        ),
        (
            lambda h, W, b, g: O.best_on_validation(_tiny_run(h, W, b), ["bogus"]),
            ValueError,
            "methods",
        ),
    ],
)
def test_selection_and_claims_inputs_are_checked(head, call, err, name):
    h, W, b = head
    with pytest.raises(err, match=rf"{name}.*: expected"):
        call(h, W, b, torch.Generator().manual_seed(0))
