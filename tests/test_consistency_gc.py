"""Unit tests of lib.consistency_gc: exact toy answers, pair construction, the batched
ensemble against per-member references, the Fréchet distance, bad inputs and CPU/CUDA
parity."""

from __future__ import annotations

import dataclasses
import math

import pytest
import torch

import lib.consistency_gc as cg
from lib.consistency_gc.diffusion import karras_sigmas

CUDA = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")


def _g(seed=0):
    return torch.Generator().manual_seed(seed)


# ---------------------------------------------------------------- the exact toy
def test_exact_denoiser_matches_monte_carlo():
    gmm = cg.GaussianMixture(
        [(0.0, -0.5), (0.0, 0.5), (0.7, 0.1)], std=0.2, weights=[0.5, 0.3, 0.2]
    )
    x0 = gmm.sample(400_000, _g(0)).double()  # (N, 2) data samples
    x = torch.tensor([[0.1, 0.2], [-0.3, -0.4], [0.5, 0.5]], dtype=torch.float64)
    for sigma in (0.1, 0.5, 2.0):
        # self-normalised importance estimate: E[x* | x] = Σ x*_j N(x; x*_j, σ²) / Σ
        # N(x; x*_j, σ²)
        logw = -0.5 * ((x[:, None, :] - x0[None]) ** 2).sum(-1) / sigma**2  # (3, N)
        w = torch.softmax(logw, dim=1)
        mc = w @ x0
        assert torch.allclose(
            gmm.denoise(x, torch.tensor(sigma, dtype=torch.float64)), mc, atol=0.01
        )


def test_denoiser_limits():
    gmm = cg.two_gaussians()
    x = torch.tensor([[0.3, 0.45], [0.0, -0.2]])
    assert torch.allclose(
        gmm.denoise(x, torch.tensor(1e-4)), x, atol=1e-3
    )  # σ → 0: identity
    far = gmm.denoise(x, torch.tensor(1e4))
    assert torch.allclose(far, torch.zeros_like(far), atol=1e-3)  # σ → ∞: the mean


def test_pf_ode_map_single_gaussian_is_affine():
    # data N(m, s²I): x(σ) = m + (x − m) √(s² + σ²)/√(s² + σ_max²) solves dx/dσ = (x −
    # D)/σ
    m, s = torch.tensor([[0.3, -0.2]]), 0.4
    gmm = cg.GaussianMixture(m, std=s)
    x = torch.randn(50, 2, generator=_g(1), dtype=torch.float64) * 5
    out = cg.pf_ode_map(gmm, x, 5.0, 0.01, steps=200)
    exact = m.double() + (x - m.double()) * math.sqrt(s**2 + 0.01**2) / math.sqrt(
        s**2 + 25
    )
    assert torch.allclose(out, exact, atol=5e-4)


# ---------------------------------------------------------------- pairs and training
def _batch(m=3, b=8, d=2, seed=0):
    g = _g(seed)
    x0, z = torch.randn(m, b, d, generator=g), torch.randn(m, b, d, generator=g)
    s = karras_sigmas(11, 0.01, 5.0)
    idx = torch.randint(10, (m, b), generator=g)
    return x0, z, s[idx], s[idx + 1], torch.rand(m, b, generator=g)


def test_ic_pairs_share_noise():
    x0, z, si, sip1, _ = _batch()
    x_i, x_ip1, x_end = cg.consistency_pairs(x0, z, si, sip1)
    assert torch.equal(x_end, x0)
    assert torch.allclose(x_i, x0 + si[..., None] * z) and torch.allclose(
        x_ip1, x0 + sip1[..., None] * z
    )


def test_gc_pairs_use_generator_endpoint_with_same_z():
    x0, z, si, sip1, u = _batch()
    gen = lambda x, s: 0.5 * x + s[..., None]  # noqa: E731  — a known "generator"
    mu = torch.tensor([0.0, 0.5, 1.0])
    x_i, x_ip1, x_end = cg.consistency_pairs(x0, z, si, sip1, u, mu, gen)
    x_hat = gen(x0 + si[..., None] * z, si)  # x̂ = f(x* + σ_i z, σ_i)
    assert torch.equal(x_end[0], x0[0])  # μ = 0: IC
    assert torch.allclose(x_end[2], x_hat[2])  # μ = 1: all GC
    use = u[1] < 0.5
    assert torch.allclose(x_end[1][use], x_hat[1][use]) and torch.equal(
        x_end[1][~use], x0[1][~use]
    )
    # both points of a pair lie on the same straight line x_end + σ z
    assert torch.allclose(x_i, x_end + si[..., None] * z) and torch.allclose(
        x_ip1, x_end + sip1[..., None] * z
    )


def test_cd_pairs_take_an_euler_step_of_the_exact_ode():
    gmm = cg.two_gaussians()
    x0, z, si, sip1, _ = _batch()
    cd = torch.tensor([True, False, True])
    x_i, x_ip1, _ = cg.consistency_pairs(x0, z, si, sip1, cd=cd, denoiser=gmm.denoise)
    v = (x_ip1 - gmm.denoise(x_ip1, sip1)) / sip1[..., None]
    assert torch.allclose(x_i[0], (x_ip1 - (sip1 - si)[..., None] * v)[0], atol=1e-6)
    assert torch.allclose(x_i[1], x0[1] + si[1, :, None] * z[1])  # not CD: IC pair


def test_ensemble_matches_per_member_reference():
    net = cg.EnsembleMLP(3, 2, 16, depth=2, seeds=[0, 1, 0])
    x, c = torch.randn(3, 5, 2, generator=_g(2)), torch.randn(3, 5, generator=_g(3))
    out = net(x, c)
    for m in range(3):  # naive reference: member m as plain matrix products
        h = torch.nn.functional.gelu(x[m] @ net.inp.weight[m] + net.inp.bias[m])
        h = torch.cat([h, cg.noise_embedding(c[m], 16)], -1)
        for layer in net.layers:
            h = torch.nn.functional.gelu(h @ layer.weight[m] + layer.bias[m])
        assert torch.allclose(
            out[m], h @ net.out.weight[m] + net.out.bias[m], atol=1e-6
        )
    assert torch.equal(net.inp.weight[0], net.inp.weight[2])  # same seed, same init


def test_members_train_independently_and_boundary_holds():
    cfg = cg.TrainConfig(steps=6, batch=16, hidden=16, n_checkpoints=2)
    gmm = cg.two_gaussians()
    both = cg.Trainer(cfg, 2, [0.0, 0.5], seed=3, denoiser=gmm.denoise).fit(
        gmm.sample, _g(4)
    )
    alone = cg.Trainer(cfg, 2, [0.5], seed=3).fit(gmm.sample, _g(4))
    assert torch.allclose(
        both.model.net.out.weight[1], alone.model.net.out.weight[0], atol=1e-5
    )
    x = torch.randn(2, 7, 2, generator=_g(5))
    assert torch.allclose(
        both.model(x, torch.full((2, 7), cfg.sigma_min)), x
    )  # f(x, σ_min) = x
    assert both.checkpoint_steps() == [3, 6]


def test_gc_lowers_transport_cost_for_a_perfect_generator():
    # with the exact one-step map as generator, x̂ is coupled to z: E‖x̂ − z‖² < E‖x* −
    # z‖²
    gmm = cg.two_gaussians()
    g = _g(6)
    x0, z = gmm.sample(2000, g)[None], torch.randn(1, 2000, 2, generator=g)
    gen = lambda x, s: cg.pf_ode_map(gmm, x[0] * 5.0 / s[0, 0], 5.0, 1e-3, 100)[
        None
    ].float()  # noqa: E731
    ic = cg.flow_diagnostics(x0, z, 5.0, gmm.denoise)
    gc = cg.flow_diagnostics(x0, z, 5.0, gmm.denoise, generator_fn=gen)
    assert ic["transport"].item() == pytest.approx(2.25, abs=0.1)  # E‖x*‖² + E‖z‖²
    assert gc["transport"].item() < 0.7 * ic["transport"].item()


def test_frechet_distance_known_answers():
    g = _g(7)
    a = torch.randn(20000, 3, generator=g, dtype=torch.float64)
    b = torch.randn(20000, 3, generator=g, dtype=torch.float64)
    assert cg.frechet_distance(a, b) < 0.01
    # N(0, I) vs N(m, 4I) in 3-d: ‖m‖² + 3 (1 + 4 − 2·2) = ‖m‖² + 3
    assert cg.frechet_distance(a, 2 * b + 1.0) == pytest.approx(3 + 3, rel=0.03)


def test_config_presets_share_keys():
    assert cg.SMOKE.seed == cg.FULL.seed == 0
    assert dataclasses.asdict(cg.SMOKE).keys() == dataclasses.asdict(cg.FULL).keys()
    names, mu, cd, seed = cg.toy_members(cg.SMOKE)
    assert names.count("GC") == cg.SMOKE.n_seeds and len(names) == len(mu) == len(
        cd
    ) == len(seed)


# ---------------------------------------------------------------- bad inputs
@pytest.mark.parametrize(
    "call, exc, words",
    [
        (lambda: cg.GaussianMixture([0.0, 1.0], std=0.1), ValueError, "means"),
        (lambda: cg.GaussianMixture([[0.0, 1.0]], std=-1.0), ValueError, "std"),
        (
            lambda: cg.GaussianMixture([[0.0], [1.0]], std=0.1, weights=[0.9, 0.2]),
            ValueError,
            "weights",
        ),
        (
            lambda: cg.two_gaussians().denoise(torch.zeros(4, 3), torch.tensor(1.0)),
            ValueError,
            "x",
        ),
        (
            lambda: cg.consistency_pairs(
                torch.zeros(2, 3), torch.zeros(2, 3), torch.ones(2), torch.ones(2)
            ),
            ValueError,
            "x0",
        ),
        (
            lambda: cg.consistency_pairs(
                torch.zeros(1, 2, 2),
                torch.zeros(1, 2, 2),
                torch.ones(1, 2),
                torch.ones(1, 2),
                generator_fn=lambda x, s: x,
            ),
            ValueError,
            "u",
        ),
        (lambda: cg.Trainer(cg.TrainConfig(), 2, [1.5]), ValueError, "mu"),
        (
            lambda: cg.Trainer(cg.TrainConfig(), 2, [0.0], cd=[True]),
            ValueError,
            "denoiser",
        ),
        (lambda: cg.EnsembleMLP(2, 2, 8, seeds=[0]), ValueError, "seeds"),
        (
            lambda: cg.frechet_distance(torch.zeros(5, 2), torch.zeros(5, 3)),
            ValueError,
            "f2",
        ),
        (lambda: cg.mnist_data(size=5), ValueError, "size"),
        (
            lambda: cg.consistency_loss(None, None, None, None, None, None, loss="l1"),
            ValueError,
            "loss",
        ),
    ],
)
def test_bad_inputs(call, exc, words):
    with pytest.raises(exc, match=words):
        call()


# ---------------------------------------------------------------- maybe_compile (the
# benchmark's)
def _pointwise(x):
    return torch.tanh(x) * torch.sigmoid(2 * x) + x.clamp(min=0) ** 2


def test_maybe_compile_matches_eager(monkeypatch):
    monkeypatch.delenv("LIB_NO_COMPILE", raising=False)
    x = torch.randn(64, 32, generator=_g(0))
    compiled = cg.maybe_compile(_pointwise)
    assert compiled is not _pointwise
    torch.testing.assert_close(compiled(x), _pointwise(x), rtol=1e-5, atol=1e-6)


def test_maybe_compile_can_be_switched_off(monkeypatch):
    monkeypatch.setenv("LIB_NO_COMPILE", "1")
    assert cg.maybe_compile(_pointwise) is _pointwise
    with pytest.raises(TypeError, match="fn"):
        cg.maybe_compile(3)


def test_config_lives_in_the_package_and_old_path_still_imports():
    from lib.consistency_gc.experiment import Config

    assert Config is cg.Config and Config.__module__ == "lib.consistency_gc"


# ---------------------------------------------------------------- CPU / CUDA parity
@CUDA
def test_cpu_cuda_parity():
    cfg = cg.TrainConfig(steps=20, batch=64, hidden=32, n_checkpoints=1)
    gmm = cg.two_gaussians()
    runs = [
        cg.Trainer(
            cfg,
            2,
            [0.0, 0.5, 0.0],
            cd=[False, False, True],
            seed=0,
            denoiser=gmm.denoise,
            device=dev,
        ).fit(gmm.sample, _g(0))
        for dev in ("cpu", "cuda")
    ]
    z = torch.randn(100, 2, generator=_g(1))
    a, b = (r.one_step(z).cpu() for r in runs)
    assert torch.allclose(a, b, atol=1e-3)


@pytest.mark.parametrize(
    "bad, words",
    [
        (dict(steps=-1), "steps"),
        (dict(batch=0), "batch"),
        (dict(sigma_min=float("nan")), "sigma_min"),
        (dict(ema_decay=1.5), "ema_decay"),
        (dict(loss="l1"), "loss"),
        (dict(s0=20, s1=10), "s1"),
        (dict(sigma_max=1e-4), "sigma_max"),
        (dict(hidden=7), "hidden"),
    ],
)
def test_train_config_rejects_bad_fields(bad, words):
    with pytest.raises((TypeError, ValueError), match=words):
        cg.TrainConfig(**bad)


def test_config_rejects_bad_fields():
    for bad, words in (
        (dict(n_seeds=0), "n_seeds"),
        (dict(image_mu=1.5), "image_mu"),
        (dict(diag_sigmas=(0.1, -1.0)), "diag_sigmas"),
        (dict(image_size=5), "image_size"),
        (dict(toy="fast"), "toy"),
    ):
        with pytest.raises((TypeError, ValueError), match=words):
            cg.Config(**bad)


def test_nan_inputs_are_rejected():
    x0 = torch.zeros(1, 2, 2)
    sig = torch.ones(1, 2)
    with pytest.raises(ValueError, match="x0: expected finite values"):
        cg.consistency_pairs(x0 + float("nan"), x0, sig, 2 * sig)
    with pytest.raises(ValueError, match="sigma: expected finite noise levels"):
        cg.edm_scalings(torch.tensor([float("nan")]))
    with pytest.raises(ValueError, match="f1: expected finite values"):
        cg.frechet_distance(torch.full((4, 2), float("nan")), torch.zeros(4, 2))
