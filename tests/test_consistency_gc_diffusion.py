"""Unit tests of lib.consistency_gc.diffusion: EDM/iCT pieces with known answers and bad
inputs."""

from __future__ import annotations

import math

import pytest
import torch

from lib.consistency_gc.diffusion import (
    edm_scalings,
    ema_update,
    ict_loss_weights,
    ict_num_scales,
    karras_sigmas,
    lognormal_indices,
    lognormal_probs,
    precondition,
    pseudo_huber,
)


def test_karras_endpoints_order_and_rho():
    s = karras_sigmas(11, 0.002, 80.0, dtype=torch.float64)
    assert s.shape == (11,)
    assert s[0].item() == pytest.approx(0.002, rel=1e-12) and s[
        -1
    ].item() == pytest.approx(80.0, rel=1e-12)
    assert bool((s[1:] > s[:-1]).all())
    # σ^{1/ρ} is evenly spaced (the definition of the ρ = 7 grid)
    r = s ** (1 / 7)
    assert torch.allclose(r[1:] - r[:-1], (r[1] - r[0]).expand(10), rtol=1e-9)


def test_edm_scalings_boundary_and_edm_limit():
    sig = torch.tensor([0.002, 0.5, 80.0], dtype=torch.float64)
    c_skip, c_out, c_in = edm_scalings(sig, 0.5, sigma_min=0.002)
    assert c_skip[0].item() == pytest.approx(1.0) and c_out[0].item() == pytest.approx(
        0.0
    )  # f(x, σ_min) = x
    # plain EDM (σ_min = 0): c_skip = σ_d²/(σ²+σ_d²), c_out = σ σ_d/√(σ²+σ_d²), c_in =
    # 1/√(σ²+σ_d²)
    c_skip, c_out, c_in = edm_scalings(sig, 0.5)
    assert torch.allclose(c_skip, 0.25 / (sig**2 + 0.25))
    assert torch.allclose(c_out, 0.5 * sig / (sig**2 + 0.25).sqrt())
    assert torch.allclose(c_in, 1 / (sig**2 + 0.25).sqrt())
    # c_in scales x_σ (variance σ² + σ_d²) to unit variance
    assert torch.allclose(c_in**2 * (sig**2 + 0.25), torch.ones(3, dtype=torch.float64))


def test_precondition_boundary_condition_and_ensemble_shapes():
    # any F: f(x, σ_min) must still be x
    net = lambda x, c: torch.ones_like(x) * 7.0  # noqa: E731
    x = torch.randn(3, 5, 2)
    sig = torch.full((3, 5), 0.002)
    assert torch.allclose(precondition(net, x, sig, 0.5, 0.002), x)
    big = precondition(net, x, torch.full((3, 5), 80.0), 0.5, 0.002)
    assert big.shape == (3, 5, 2)
    assert torch.allclose(
        precondition(net, x[0], sig[0], 0.5, 0.002), x[0]
    )  # (B, d) with σ (B,)
    with pytest.raises(ValueError, match="sigma"):
        precondition(net, x, torch.ones(5), 0.5)


def test_ict_num_scales_known_values():
    # K = 400k, s0 = 10, s1 = 1280: K' = ⌊400000/8⌋ = 50000, N doubles every 50k steps
    assert ict_num_scales(0, 400_000) == 11
    assert ict_num_scales(49_999, 400_000) == 11
    assert ict_num_scales(50_000, 400_000) == 21
    assert ict_num_scales(350_000, 400_000) == 1281
    assert ict_num_scales(399_999, 400_000) == 1281
    # the toy: s1/s0 = 10 -> K' = ⌊3000/(log2 10 + 1)⌋ = 694 (the log is not rounded,
    # so the fifth stage reaches s1 = 100 and N = 101)
    got = [ict_num_scales(k, 3000, 10, 100) for k in (0, 693, 694, 2775, 2776, 2999)]
    assert got == [11, 11, 21, 81, 101, 101]


def test_lognormal_probs_match_normal_cdf_and_sampling():
    s = karras_sigmas(21, 0.002, 80.0, dtype=torch.float64)
    p = lognormal_probs(s)

    def phi(t):
        return 0.5 * (1 + math.erf((math.log(t) + 1.1) / (2.0 * math.sqrt(2))))

    raw = torch.tensor(
        [phi(b) - phi(a) for a, b in zip(s[:-1].tolist(), s[1:].tolist())],
        dtype=torch.float64,
    )
    assert torch.allclose(p, raw / raw.sum())
    idx = lognormal_indices(20000, s, generator=torch.Generator().manual_seed(0))
    assert idx.dtype == torch.int64 and int(idx.min()) >= 0 and int(idx.max()) <= 19
    freq = torch.bincount(idx, minlength=20).double() / 20000
    assert (freq - p).abs().max().item() < 0.015


def test_loss_weights_and_pseudo_huber():
    s = torch.tensor([0.1, 0.3, 1.0])
    assert torch.allclose(ict_loss_weights(s), torch.tensor([5.0, 1 / 0.7]))
    a, b = torch.zeros(2, 3), torch.tensor([[3.0, 4.0, 0.0], [0.0, 0.0, 0.0]])
    c = 0.00054 * math.sqrt(3)
    d = pseudo_huber(a, b)
    assert (
        d[0].item() == pytest.approx(math.sqrt(25 + c * c) - c, rel=1e-6)
        and d[1].item() == 0.0
    )
    assert pseudo_huber(a, b, c=1.0)[0].item() == pytest.approx(
        math.sqrt(26) - 1, rel=1e-6
    )


def test_ema_update_is_a_lerp():
    m, e = torch.nn.Linear(2, 2), torch.nn.Linear(2, 2)
    before = e.weight.detach().clone()
    ema_update(e, m, 0.9)
    assert torch.allclose(e.weight, 0.9 * before + 0.1 * m.weight.detach())
    ema_update(e, m, 0.0)
    assert torch.allclose(e.weight, m.weight.detach())


@pytest.mark.parametrize(
    "call, exc, words",
    [
        (lambda: karras_sigmas(1), ValueError, "n"),
        (lambda: karras_sigmas(5, 1.0, 0.5), ValueError, "sigma_max"),
        (lambda: karras_sigmas(5.0), TypeError, "n"),
        (lambda: ict_num_scales(-1, 10), ValueError, "step"),
        (lambda: ict_num_scales(0, 10, 20, 10), ValueError, "s1"),
        (lambda: lognormal_probs(torch.tensor([1.0, 0.5])), ValueError, "sigmas"),
        (lambda: pseudo_huber(torch.zeros(2, 3), torch.zeros(2, 4)), ValueError, "b"),
        (lambda: pseudo_huber([0.0], torch.zeros(1)), TypeError, "a"),
        (lambda: edm_scalings(torch.ones(2), sigma_data=0.0), ValueError, "sigma_data"),
        (
            lambda: ema_update(torch.nn.Linear(2, 2), torch.nn.Linear(2, 2), 1.5),
            ValueError,
            "decay",
        ),
    ],
)
def test_bad_inputs(call, exc, words):
    with pytest.raises(exc, match=words):
        call()
