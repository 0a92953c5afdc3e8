"""Tests of lib.memorization: the optimal denoiser against a loop, the ambient loss
(EDM below σ_n, the y-prediction identity, a loop reference), the ensemble against
per-model matmuls, Heun on a Gaussian, the metrics' known answers, bad inputs, the
FULL path shrunk, the claims' controls at tiny size, CUDA parity."""

import dataclasses
import json
import math
import os
import subprocess
import sys

import pytest
import torch

from lib import memorization as Mz
from lib.memorization.reference import (
    ambient_loss_naive,
    ensemble_forward_naive,
    optimal_denoiser_naive,
)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TINY = Mz.Config(
    n_train=8,
    n_pool=40,
    n_heldout=60,
    width=16,
    depth=2,
    steps=30,
    batch=16,
    sigma_n=0.5,
    sigma_ns=(0.5, 1.0),
    sample_steps=4,
    n_samples=40,
    clf_steps=20,
    claim_seeds=(0, 1),
)


def _g(seed=0):
    return torch.Generator().manual_seed(seed)


# --- the optimal denoiser ---


def test_optimal_denoiser_matches_naive_loop():
    train = torch.randn(12, 5, generator=_g(0))
    x = torch.randn(7, 5, generator=_g(1)) * 2
    for s in (0.05, 0.7, 5.0):
        fast = Mz.optimal_denoiser(x, torch.full((7,), s), train)
        assert torch.allclose(fast, optimal_denoiser_naive(x, s, train), atol=1e-5)


def test_optimal_denoiser_limits():
    """σ → 0: the nearest training point; σ → ∞: the training mean."""
    train = torch.randn(10, 4, generator=_g(2))
    x = torch.randn(6, 4, generator=_g(3))
    near = train[torch.cdist(x, train).argmin(1)]
    assert torch.allclose(Mz.optimal_denoiser(x, torch.full((6,), 1e-3), train), near)
    far = Mz.optimal_denoiser(x, torch.full((6,), 1e4), train)
    assert torch.allclose(far, train.mean(0).expand(6, 4), atol=1e-4)


def test_sampling_with_the_optimal_denoiser_reproduces_training_points():
    train = torch.rand(6, 8, generator=_g(4)) * 2 - 1
    sig = Mz.sampling_sigmas(18)
    z = torch.randn(50, 8, generator=_g(5)) * sig[0]
    out = Mz.heun_sample(lambda a, s: Mz.optimal_denoiser(a, s, train), z, sig)
    assert torch.cdist(out, train).min(1).values.max() < 1e-3


# --- the loss ---


def _toy_denoise(x, sigma):
    return 0.3 * x.tanh() + 0.1 * sigma.unsqueeze(-1)


def _loss_inputs(M=2, B=64, D=5):
    x = torch.randn(M, B, D, generator=_g(6))
    eta = torch.randn(M, B, D, generator=_g(7))
    sn = torch.tensor([0.4, 1.2])[:M]
    y = x + sn.view(M, 1, 1) * eta
    sigma = Mz.sample_sigma((M, B), generator=_g(8))
    eps = torch.randn(M, B, D, generator=_g(9))
    return x, y, sigma, sn, eps


def test_ambient_loss_matches_loop():
    x, y, sigma, sn, eps = _loss_inputs()
    fast = Mz.ambient_loss(_toy_denoise, x, y, sigma, sn, eps)
    for m in range(2):
        ref = ambient_loss_naive(
            lambda a, s: _toy_denoise(a, torch.tensor(s)), x[m], y[m], sigma[m],
            float(sn[m]), eps[m],
        )  # fmt: skip
        assert torch.allclose(fast[m], ref, rtol=1e-5, atol=1e-6)


def test_ambient_loss_below_sigma_n_is_edm_and_sigma_n_zero_is_edm():
    x, y, sigma, sn, eps = _loss_inputs()
    low = sigma < sn.view(-1, 1)
    assert low.any() and (~low).any()
    amb = Mz.ambient_loss(_toy_denoise, x, y, sigma, sn, eps)
    edm = Mz.ambient_loss(_toy_denoise, x, x, sigma, torch.zeros(2), eps)
    assert torch.allclose(amb[low], edm[low])
    direct = Mz.edm_weight(sigma) * (
        (_toy_denoise(x + sigma.unsqueeze(-1) * eps, sigma) - x) ** 2
    ).mean(-1)
    assert torch.allclose(edm, direct)


def test_y_prediction_identity_and_tweedie():
    """With the exact posterior mean E[x|x_σ] of a Gaussian prior, the converted ŷ
    equals E[y|x_σ] (Tweedie for y, which is x plus noise σ_n)."""
    s0, sn, s = 0.8, 0.5, 1.3  # x ~ N(0, s0²), y = x + σ_n η, x_σ = y + √(σ²−σ_n²) ε
    xs = torch.linspace(-3, 3, 11)
    ex = s0**2 / (s0**2 + s**2) * xs  # E[x | x_σ]
    ey = (s0**2 + sn**2) / (s0**2 + s**2) * xs  # E[y | x_σ]
    yhat = (s**2 - sn**2) / s**2 * ex + sn**2 / s**2 * xs
    assert torch.allclose(yhat, ey, atol=1e-6)


def test_ambient_gradient_ignores_clean_images_above_sigma_n():
    """Above σ_n the loss never reads x: changing x there changes nothing."""
    x, y, sigma, sn, eps = _loss_inputs()
    hi = sigma >= sn.view(-1, 1)
    x2 = torch.where(hi.unsqueeze(-1), x + 5.0, x)
    a = Mz.ambient_loss(_toy_denoise, x, y, sigma, sn, eps)
    b = Mz.ambient_loss(_toy_denoise, x2, y, sigma, sn, eps)
    assert torch.equal(a, b)


def test_sample_sigma_law_and_floor():
    s = Mz.sample_sigma((20000,), generator=_g(10)).log()
    assert abs(float(s.mean()) + 1.2) < 0.03 and abs(float(s.std()) - 1.2) < 0.03
    f = Mz.sample_sigma((2, 5000), torch.tensor([[0.0], [0.8]]), _g(11))
    assert float(f[1].min()) >= 0.8 - 1e-5 and float(f[0].min()) < 0.05


# --- network and sampler ---


def test_ensemble_matches_per_model_loop_and_seeds():
    model = Mz.EnsembleMLP([3, 4], dim=6, width=10, depth=2)
    with torch.no_grad():
        model.weights[-1].normal_(generator=_g(12))
    x = torch.randn(2, 7, 6, generator=_g(13))
    c = torch.randn(2, 7, generator=_g(14))
    assert torch.allclose(model(x, c), ensemble_forward_naive(model, x, c), atol=1e-6)
    a = Mz.EnsembleMLP([4], dim=6, width=10, depth=2)
    assert torch.equal(a.weights[0][0], model.weights[0][1])  # a model's own seed


def test_heun_on_a_gaussian_target():
    """Data N(0, s0²): D(x, σ) = s0²/(s0²+σ²) x exactly and the probability-flow ODE
    maps x_T to x_T s0/√(s0²+σ_max²); Heun's error shrinks with the steps."""
    s0 = 0.7

    def den(a, s):
        return s0**2 / (s0**2 + s.unsqueeze(-1) ** 2) * a

    z = torch.randn(2000, 2, generator=_g(15), dtype=torch.float64)
    errs = []
    for n in (18, 100):
        sig = Mz.sampling_sigmas(n).double()
        exact = z * sig[0] * s0 / math.sqrt(s0**2 + sig[0] ** 2)
        out = Mz.heun_sample(den, z * sig[0], sig)
        errs.append(float((out - exact).abs().max() / exact.abs().max()))
    assert errs[0] < 0.07 and errs[1] < 0.01 and errs[1] < errs[0] / 4
    # per-model schedules: the second stops at 0.5 and returns D there, E[x | x_0.5]
    sig2 = Mz.sampling_sigmas(100, [0.002, 0.5]).double()
    out2 = Mz.heun_sample(den, torch.stack([z, z]) * 80, sig2)
    exact2 = z * 80 * s0**2 / math.sqrt(s0**2 + 0.25) / math.sqrt(s0**2 + 80**2)
    assert torch.allclose(out2[1], exact2, rtol=0.02, atol=1e-3)


def test_training_lowers_the_loss_and_checkpoints():
    x = torch.rand(2, 8, 4, generator=_g(16)) * 2 - 1
    model = Mz.EnsembleMLP([0, 1], dim=4, width=32, depth=2)
    ema, saved = Mz.train_ensemble(
        model, x, x, [0.0, 0.3], [True, True], steps=40, batch=16, lr=1e-2,
        generator=_g(17), checkpoints=(10, 40),
    )  # fmt: skip
    assert set(saved) == {10, 40}
    sig = torch.full((2, 64), 0.5)
    eps = torch.randn(2, 64, 4, generator=_g(18))
    xb = x[:, torch.arange(64) % 8]
    fresh = Mz.EnsembleMLP([0, 1], dim=4, width=32, depth=2)
    before = Mz.ambient_loss(fresh.denoise, xb, xb, sig, torch.zeros(2), eps).mean()
    after = Mz.ambient_loss(model.denoise, xb, xb, sig, torch.zeros(2), eps).mean()
    assert after < before


# --- metrics ---


def test_metrics_known_answers():
    a = torch.randn(300, 3, generator=_g(19))
    a = a - a.mean(0)
    assert Mz.frechet_distance(a, a) == pytest.approx(0.0, abs=1e-6)
    b = a + torch.tensor([1.0, 2.0, 0.0])
    assert Mz.frechet_distance(a, b) == pytest.approx(5.0, rel=1e-6)
    c = 2 * a  # same mean, covariance × 4: FD = tr(S) (1 + 4 − 4) = tr(S)
    S = torch.cov(a.double().T)
    assert Mz.frechet_distance(a, c) == pytest.approx(float(S.trace()), rel=1e-5)
    train = torch.randn(5, 3, generator=_g(20))
    assert torch.allclose(Mz.nearest_similarity(train * 3, train), torch.ones(5))
    assert torch.equal(Mz.nn_ratio(train, train), torch.zeros(5))


def test_digits_split_is_disjoint_and_scaled():
    d = Mz.load_digits_split(0)
    assert d["pool"].shape == (300, 64) and d["heldout"].shape == (500, 64)
    assert len(d["clf"]) == 1797 - 800
    assert float(d["pool"].min()) >= -1 and float(d["pool"].max()) <= 1
    allx = torch.cat([d["pool"], d["heldout"], d["clf"]])
    assert len(allx) == 1797
    assert not torch.equal(d["pool"], Mz.load_digits_split(1)["pool"])


# --- bad inputs ---


@pytest.mark.parametrize(
    "call, err, name",
    [
        (lambda: Mz.Config(steps=0), ValueError, "steps"),
        (lambda: Mz.Config(sigma_n=0.3), ValueError, "sigma_ns"),
        (lambda: Mz.Config(n_train=200), ValueError, "n_train"),
        (lambda: Mz.Config(lr=-1.0), ValueError, "lr"),
        (lambda: Mz.Config(quantile=1.5), ValueError, "quantile"),
        (lambda: Mz.EnsembleMLP([]), ValueError, "seeds"),
        (lambda: Mz.EnsembleMLP([0], width=0), ValueError, "width"),
        (
            lambda: Mz.optimal_denoiser(
                torch.ones(2, 3), torch.ones(2), torch.ones(4, 5)
            ),
            ValueError,
            "x, train",
        ),
        (
            lambda: Mz.optimal_denoiser([1.0], torch.ones(1), torch.ones(2, 1)),
            TypeError,
            "x",
        ),
        (
            lambda: Mz.heun_sample(lambda a, s: a, torch.ones(2, 3), torch.ones(2, 4)),
            ValueError,
            "sigmas",
        ),
        (lambda: Mz.sampling_sigmas(1), ValueError, "steps"),
        (
            lambda: Mz.frechet_distance(torch.ones(1, 3), torch.ones(4, 3)),
            ValueError,
            "f1",
        ),
        (lambda: Mz.load_digits_split(0, n_pool=1500), ValueError, "n_pool"),
        (lambda: Mz.run_seeds("SMOKE", (0,)), TypeError, "cfg"),
    ],
)
def test_bad_inputs(call, err, name):
    with pytest.raises(err, match=name):
        call()


def test_train_ensemble_bad_inputs():
    x = torch.zeros(2, 4, 3)
    m = Mz.EnsembleMLP([0, 1], dim=3, width=4, depth=1)
    kw = dict(steps=2, batch=2, lr=1e-3, generator=_g())
    with pytest.raises(ValueError, match="sigma_n"):
        Mz.train_ensemble(m, x, x, [0.1, -1.0], [True, True], **kw)
    with pytest.raises(ValueError, match="y"):
        Mz.train_ensemble(m, x, x[:, :2], [0.1, 0.1], [True, True], **kw)
    with pytest.raises(ValueError, match="model"):
        Mz.train_ensemble(
            m, torch.zeros(3, 4, 3), torch.zeros(3, 4, 3), [0.1] * 3, [True] * 3, **kw
        )
    with pytest.raises(ValueError, match="clean_low"):
        Mz.train_ensemble(m, x, x, [0.1, 0.1], [True], **kw)


def test_ragged_sizes_ignore_the_padding():
    """``sizes``: model m never reads rows past sizes[m] (what fills them does not
    matter), and sizes equal to N is the plain path bit for bit."""
    x = torch.randn(2, 6, 4, generator=_g(3))
    y = x + 0.5 * torch.randn(2, 6, 4, generator=_g(4))

    def train(x, y, sizes):
        m = Mz.EnsembleMLP([0, 1], dim=4, width=8, depth=1)
        out, _ = Mz.train_ensemble(
            m, x, y, [0.5, 0.0], [True, True], steps=6, batch=4, lr=1e-2,
            generator=_g(5), sizes=sizes,
        )  # fmt: skip
        return [p.detach().clone() for p in out.parameters()]

    x2, y2 = x.clone(), y.clone()
    x2[0, 3:], y2[0, 3:] = 7.0, -7.0  # model 0's padding
    a, b = train(x, y, [3, 6]), train(x2, y2, [3, 6])
    assert all(torch.equal(p[0], q[0]) for p, q in zip(a, b))  # model 0 unchanged
    assert all(
        torch.equal(p, q) for p, q in zip(train(x, y, None), train(x, y, [6, 6]))
    )
    with pytest.raises(ValueError, match="^sizes: expected sizes <= N = 6"):
        train(x, y, [3, 7])
    with pytest.raises(ValueError, match="^sizes: expected 2 ints"):
        train(x, y, [3])
    with pytest.raises(TypeError, match="^sizes: expected 2 ints"):
        train(x, y, 3)


def test_run_sizes_shrunk():
    """The size sweep: nested training sets, one result per N with EDM, the method at
    σ_n and the fully ambient model; bad sizes are refused."""
    cfg = dataclasses.replace(TINY, n_samples=16)  # every sample kept: scores checkable
    out = Mz.run_sizes(cfg, 0, (4, 8))
    assert set(out) == {4, 8}
    names = ["edm", "ambient_0.5", "fully_ambient"]
    for n, run in out.items():
        assert [v[0] for v in run["variants"]] == names
        assert run["train"][0].shape == (n, 64)
        assert set(run["scores"][0]) == set(names)
        for per in run["scores"][0].values():
            assert list(per) == run["checkpoints"]
            assert all(math.isfinite(sc["fd"]) for sc in per.values())
        assert run["prep"][0]["train"] is run["train"][0]
    assert torch.equal(out[8]["train"][0][:4], out[4]["train"][0])  # nested
    assert torch.equal(out[4]["train"][0], Mz.prepare_seed(cfg, 0, 4)["train"])
    # every stored score is the score of its samples against that N's own training
    # set and threshold (the other N's would give other numbers)
    for n, run in out.items():
        prep = run["prep"][0]
        for v, per in run["samples"][0].items():
            for k, smp in per.items():
                want, got = Mz.score(smp, prep), run["scores"][0][v][k]
                assert all(abs(want[q] - got[q]) < 1e-9 for q in want), (n, v, k)
    assert out[4]["prep"][0]["thr"] != out[8]["prep"][0]["thr"]
    # the preparation hands out copies: editing one does not reach the cache
    out[4]["prep"][0]["train"] += 1.0
    out[4]["prep"][0]["heldout"] += 1.0
    again = Mz.prepare_seed(cfg, 0, 4)
    assert torch.equal(again["train"], out[8]["train"][0][:4])
    with pytest.raises(ValueError, match="^sizes: expected sizes <= n_pool/2"):
        Mz.run_sizes(TINY, 0, (4, 30))
    with pytest.raises(ValueError, match="^sizes: expected distinct"):
        Mz.run_sizes(TINY, 0, (4, 4))
    with pytest.raises(TypeError, match="^sizes: expected a non-empty tuple"):
        Mz.run_sizes(TINY, 0, ())


# --- FULL path, claims, CLI, CUDA ---


def test_presets():
    assert Mz.SMOKE.seed == Mz.FULL.seed == 0
    assert Mz.FULL.steps > Mz.SMOKE.steps and Mz.FULL.n_train > Mz.SMOKE.n_train


def test_full_path_shrunk():
    """FULL's code path (run_experiment) with every size cut."""
    cfg = dataclasses.replace(
        Mz.FULL, **{f.name: getattr(TINY, f.name) for f in dataclasses.fields(TINY)}
    )
    res = Mz.run_experiment(cfg)
    assert set(res) == {"scores", "claims"}
    assert set(res["scores"]) == {"0", "1"}
    ids = {c.id for c in Mz.CLAIMS if c.rule is not None}
    assert set(res["claims"]) == ids
    for v in res["claims"].values():
        assert set(v["values"]) == {0, 1} and set(v["control"]) == {0, 1}


def test_controls_separate_at_tiny_size():
    """A sample of exact training copies copies at rate 1 against its training set and
    at the calibration rate against the decoy set; early stopping picks the best FD
    within the copy budget."""
    cfg = dataclasses.replace(TINY, n_train=16, n_pool=40, clf_steps=200)
    prep = Mz.prepare_seed(cfg, 0)
    copies = prep["train"][torch.arange(200) % 16]
    sc = Mz.score(copies, prep)
    assert sc["copy"] == 1.0 and sc["pixel_copy"] == 1.0
    assert sc["copy_decoy"] < 0.2
    held = Mz.score(prep["heldout"], prep)
    assert held["copy"] <= 0.02 and held["pixel_copy"] == 0.0
    from lib.memorization.claims import early_stop_fd

    edm = {10: {"copy": 0.0, "fd": 50.0}, 20: {"copy": 0.3, "fd": 60.0}}
    assert early_stop_fd(edm, 0.3) == 50.0
    assert early_stop_fd(edm, 0.01) == 50.0
    edm = {10: {"copy": 0.2, "fd": 70.0}, 20: {"copy": 0.3, "fd": 60.0}}
    assert early_stop_fd(edm, 0.1) == 70.0  # none within budget: the earliest


def test_fresh_copies_ignore_the_fixed_copy():
    """The ablation (``fresh``) redraws y = x + σ_n η every step: the fixed copies it is
    given do not matter, while they do for the method."""
    g = lambda: torch.Generator().manual_seed(5)  # noqa: E731
    x = torch.randn(1, 8, 4, generator=g())
    y1, y2 = x + 0.5 * torch.randn(1, 8, 4), x + 0.5 * torch.randn(1, 8, 4)

    def train(y, fresh):
        m = Mz.EnsembleMLP([0], dim=4, width=8, depth=1)
        out, _ = Mz.train_ensemble(
            m, x, y, [0.5], [True], steps=5, batch=4, lr=1e-2, generator=g(),
            fresh=[fresh],
        )  # fmt: skip
        return torch.cat([p.flatten() for p in out.parameters()])

    assert torch.equal(train(y1, True), train(y2, True))
    assert not torch.allclose(train(y1, False), train(y2, False))
    with pytest.raises(ValueError, match="^fresh: expected 1 bools"):
        Mz.train_ensemble(
            Mz.EnsembleMLP([0], dim=4, width=8, depth=1), x, y1, [0.5], [True],
            steps=1, batch=2, lr=1e-2, generator=g(), fresh=[True, False],
        )  # fmt: skip


def test_cli_smoke_writes_smoke_file(tmp_path):
    code = (
        "import runpy, sys, lib.memorization as b; "
        f"b.SMOKE = b.{TINY!r}; "
        "sys.argv = ['lib.memorization', '--preset', 'SMOKE', '--device', 'cpu']; "
        "runpy.run_module('lib.memorization', run_name='__main__', alter_sys=True)"
    )
    env = os.environ | {"BOOK_RESULTS_DIR": str(tmp_path), "TQDM_DISABLE": "1"}
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True,
        text=True, timeout=300,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert not (tmp_path / "memorization.json").exists()
    data = json.loads((tmp_path / "memorization.smoke.json").read_text())
    assert data["preset"] == "SMOKE"


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cpu_and_cuda_agree():
    model = Mz.EnsembleMLP([0, 1], dim=8, width=32, depth=2)
    with torch.no_grad():
        model.weights[-1].normal_(generator=_g(21))
    x = torch.randn(2, 16, 8, generator=_g(22))
    s = torch.rand(2, 16, generator=_g(23)) + 0.1
    cpu = model.denoise(x, s)
    gpu = model.to("cuda").denoise(x.cuda(), s.cuda()).cpu()
    assert torch.allclose(cpu, gpu, atol=1e-4)
    train = torch.randn(10, 8, generator=_g(24))
    a = Mz.optimal_denoiser(x[0], s[0], train)
    b = Mz.optimal_denoiser(x[0].cuda(), s[0].cuda(), train.cuda()).cpu()
    assert torch.allclose(a, b, atol=1e-4)


def test_exercise_self_checks():
    from lib.memorization import exercises as X

    assert X.ex1(1 / (1 + math.exp(-4))).ok and not X.ex1(0.5).ok
    assert X.ex2(0.5625).ok and not X.ex2(0.75).ok
    assert X.ex3("no").ok and not X.ex3("yes").ok
