"""Unit tests for lib.wctm: known answers, naive references, online-cp cross-checks, bad
inputs."""

import math

import numpy as np
import pytest
import torch

from lib import wctm
from lib.wctm import (
    composite_jumper,
    ctm_pvalues,
    cusum,
    first_alarm,
    shiryaev_roberts,
    weighted_pvalues,
    weighted_quantile_upper,
)


def gen(seed=0):
    return torch.Generator().manual_seed(seed)


# ---------------------------------------------------------------- naive references
def naive_ctm(cal, test, u):
    z = np.concatenate([cal, test])
    n = len(cal)
    out = []
    for t in range(len(test)):
        k = n + t
        gt = np.sum(z[:k] > z[k])
        eq = np.sum(z[: k + 1] == z[k])
        out.append((gt + u[t] * eq) / (k + 1))
    return np.array(out)


def naive_weighted(cal, cal_w, test, test_w, u, alpha):
    out = []
    for t in range(len(test)):
        s = np.append(cal, test[t])
        w = np.append(cal_w, test_w[t])
        w = w / w.sum()
        tied = w[s == test[t]].sum()
        greater = w[s > test[t]].sum()
        out.append(greater + u[t] * tied if tied < alpha else greater)
    return np.array(out)


def naive_wquantile(cal, cal_w, test_w, alpha):
    out = []
    for t in range(len(test_w)):
        s = np.append(cal, np.inf)
        w = np.append(cal_w, test_w[t])
        w = w / w.sum()
        o = np.argsort(s, kind="stable")
        c = np.cumsum(w[o])
        out.append(s[o][np.argmax(c >= (1 - alpha) * (1 - 1e-12))])
    return np.array(out)


# ---------------------------------------------------------------- p-values
def test_ctm_pvalues_match_naive_with_ties():
    g = gen(1)
    cal = torch.randint(0, 5, (3, 20), generator=g).double()
    test = torch.randint(0, 5, (3, 30), generator=g).double()
    u = torch.rand(3, 30, generator=g, dtype=torch.float64)
    p = ctm_pvalues(cal, test, u, chunk=7)
    for s in range(3):
        np.testing.assert_allclose(
            p[s].numpy(), naive_ctm(cal[s].numpy(), test[s].numpy(), u[s].numpy())
        )


def test_ctm_pvalues_uniform_under_exchangeability():
    g = gen(2)
    cal, test = (
        torch.randn(200, 50, generator=g, dtype=torch.float64),
        torch.randn(200, 50, generator=g, dtype=torch.float64),
    )
    p = ctm_pvalues(cal, test, torch.rand(200, 50, generator=g, dtype=torch.float64))
    assert abs(float(p.mean()) - 0.5) < 0.01
    assert abs(float((p < 0.1).double().mean()) - 0.1) < 0.01


@pytest.mark.parametrize("alpha", [0.1, 0.3])
def test_weighted_pvalues_match_naive(alpha):
    g = gen(3)
    S, n, T, R = 2, 40, 25, 3
    cal = torch.randint(0, 8, (S, n), generator=g).double()
    test = torch.randint(0, 9, (S, T), generator=g).double()
    cal_w = torch.rand(S, R, n, generator=g, dtype=torch.float64) + 0.1
    test_w = (
        torch.rand(S, T, generator=g, dtype=torch.float64)
        * torch.tensor([1.0, 40.0]).double()[:, None]
    )
    u = torch.rand(S, T, generator=g, dtype=torch.float64)
    block = torch.arange(T) % R
    p = weighted_pvalues(cal, cal_w, test, test_w, u, alpha, block)
    for s in range(S):
        for t in range(T):
            ref = naive_weighted(
                cal[s].numpy(),
                cal_w[s, block[t]].numpy(),
                test[s, t : t + 1].numpy(),
                test_w[s, t : t + 1].numpy(),
                u[s, t : t + 1].numpy(),
                alpha,
            )
            assert abs(float(p[s, t]) - ref[0]) < 1e-12


def test_weighted_with_unit_weights_is_fixed_cal_conformal():
    g = gen(4)
    cal, test = (
        torch.randn(1, 99, generator=g, dtype=torch.float64),
        torch.randn(1, 10, generator=g, dtype=torch.float64),
    )
    u = torch.rand(1, 10, generator=g, dtype=torch.float64)
    p = weighted_pvalues(cal, torch.ones_like(cal), test, torch.ones_like(test), u, 0.1)
    gt = (cal[:, None, :] > test[..., None]).sum(-1)
    torch.testing.assert_close(p, (gt + u) / 100)


def test_anticonservative_rule_when_test_weight_dominates():
    cal = torch.arange(10.0, dtype=torch.float64)[None]
    test = torch.tensor([[4.5]], dtype=torch.float64)
    u = torch.tensor([[0.7]], dtype=torch.float64)
    p = weighted_pvalues(
        cal,
        torch.ones_like(cal),
        test,
        torch.tensor([[90.0]], dtype=torch.float64),
        u,
        0.1,
    )
    assert float(p) == pytest.approx(5 / 100)  # deterministic: no u * w~_t term
    q = weighted_quantile_upper(
        cal, torch.ones_like(cal), torch.tensor([[90.0]], dtype=torch.float64), 0.1
    )
    assert math.isinf(float(q))


def test_weighted_quantile_matches_naive():
    g = gen(5)
    cal = torch.randn(2, 30, generator=g, dtype=torch.float64)
    cw = torch.rand(2, 30, generator=g, dtype=torch.float64)
    tw = torch.rand(2, 12, generator=g, dtype=torch.float64) * 0.5
    q = weighted_quantile_upper(cal, cw, tw, 0.2)
    for s in range(2):
        np.testing.assert_allclose(
            q[s].numpy(),
            naive_wquantile(cal[s].numpy(), cw[s].numpy(), tw[s].numpy(), 0.2),
        )


# ---------------------------------------------------------------- martingales
def _online_cp_composite(p, epsilons):
    from online_cp.martingale import SimpleJumper

    jumpers = [
        SimpleJumper(J=j, E=list(epsilons), store_p_values=False) for j in wctm.JUMPS
    ]
    out = []
    for x in p:
        for m in jumpers:
            m.update(float(x))
        out.append(
            np.logaddexp.reduce([m.logM for m in jumpers]) - math.log(len(jumpers))
        )
    return np.array(out)


@pytest.mark.parametrize("epsilons", [(-1.0, 0.0, 1.0), (-1.0, -0.5, 0.0, 0.5, 1.0)])
def test_composite_jumper_matches_online_cp(epsilons):
    pytest.importorskip("online_cp")
    g = gen(6)
    p = torch.rand(2, 200, generator=g, dtype=torch.float64) ** 1.5
    lm = composite_jumper(p, epsilons=epsilons)
    for s in range(2):
        np.testing.assert_allclose(
            lm[s].numpy(), _online_cp_composite(p[s].numpy(), epsilons), atol=1e-10
        )


def test_sr_and_cusum_match_online_cp_wrappers():
    oc = pytest.importorskip("online_cp.martingale")
    g = gen(7)
    p = torch.rand(1, 150, generator=g, dtype=torch.float64) ** 2
    lm = composite_jumper(p, epsilons=(-1, -0.5, 0, 0.5, 1))
    sr, cu = (
        oc.ShiryaevRobertsWrapper(oc.CompositeJumper()),
        oc.CUSUMWrapper(oc.CompositeJumper()),
    )
    for x in p[0].tolist():
        sr.update(x)
        cu.update(x)
    np.testing.assert_allclose(
        shiryaev_roberts(lm)[0].numpy(), np.log(sr._sr_values[1:]), atol=1e-10
    )
    np.testing.assert_allclose(
        cusum(lm)[0].numpy(), np.array(cu._log_gamma_values[1:]), atol=1e-10
    )


def test_martingale_known_answers():
    half = torch.full((1, 50), 0.5, dtype=torch.float64)
    assert (
        float(composite_jumper(half).abs().max()) < 1e-12
    )  # f(1/2) = 1: no wealth change
    zeros = torch.zeros(1, 30, dtype=torch.float64)
    lm = composite_jumper(zeros)
    assert bool((lm.diff(dim=1) > 0).all())  # p = 0 always gains
    assert int(first_alarm(lm, 100.0)) == int(torch.nonzero(lm[0] >= math.log(100))[0])
    sr_naive = [
        math.log(
            sum(math.exp(lm[0, t] - (lm[0, i - 1] if i else 0.0)) for i in range(t + 1))
        )
        for t in range(30)
    ]
    np.testing.assert_allclose(shiryaev_roberts(lm)[0].numpy(), sr_naive, atol=1e-10)


def test_ville_false_alarm_rate_under_null():
    g = gen(8)
    p = torch.rand(400, 500, generator=g, dtype=torch.float64)
    rate = float((first_alarm(composite_jumper(p), 20.0) >= 0).double().mean())
    assert rate <= 0.05 + 3 * math.sqrt(0.05 * 0.95 / 400)


# ---------------------------------------------------------------- density ratio,
# baselines, pipeline
def test_logistic_recovers_exponential_tilt():
    g = gen(9)
    S, n = 4, 4000
    x0 = torch.rand(S, n, generator=g, dtype=torch.float64)
    x1 = (
        torch.log1p(
            torch.rand(S, n, generator=g, dtype=torch.float64) * math.expm1(3.0)
        )
        / 3.0
    )
    x = torch.cat([x0, x1], 1)[..., None]
    y = torch.cat([torch.zeros(S, n), torch.ones(S, n)], 1).double()
    beta = wctm.fit_logistic(
        x, y, torch.full((S, 2 * n), 1.0 / n, dtype=torch.float64), l2=1e-6
    )
    assert torch.allclose(
        beta[:, 0], torch.full((S,), 3.0, dtype=torch.float64), atol=0.35
    )


def test_pr_bounds_are_sane():
    g = gen(10)
    x = (torch.rand(3, 400, generator=g, dtype=torch.float64) < 0.3).double()
    lcb = wctm.betting_cs_lower(x, 0.005)
    ucb = wctm.betting_ci_upper(x, 0.005)
    assert (
        bool((lcb.diff(dim=1) >= 0).all())
        and bool((lcb[:, -1] < 0.3).all())
        and bool((ucb > 0.3).all())
    )
    assert bool((wctm.pr_st_alarm(x[:, :200], x) == -1).all())


def test_diagnosis_rule():
    d = wctm.diagnose(torch.tensor([-1, 5, -1, 5]), torch.tensor([-1, -1, 9, 9]))
    assert [wctm.DIAGNOSES[i] for i in d] == list(wctm.DIAGNOSES)


def test_pipeline_small_synthetic():
    cfg = wctm.Config(n_seeds=6, T=300, n_cal=200, n_train=200)
    out, batch, _ = wctm.run_synthetic(cfg, "extreme")
    assert out["p_watch"].shape == (6, 300) and bool(
        ((out["p_watch"] >= 0) & (out["p_watch"] <= 1)).all()
    )
    assert bool((out["watch_ville"] >= cfg.changepoint).all())
    assert bool((out["diagnosis"] == 3).all())


# ---------------------------------------------------------------- bad inputs
def test_bad_inputs_raise_clear_errors():
    x = torch.zeros(2, 5, dtype=torch.float64)
    with pytest.raises(ValueError, match="p: expected p-values in"):
        composite_jumper(x + 2)
    with pytest.raises(TypeError, match="p: expected a floating-point tensor"):
        composite_jumper(torch.zeros(2, 5, dtype=torch.long))
    with pytest.raises(ValueError, match="test_scores: expected shape"):
        ctm_pvalues(
            x,
            torch.zeros(3, 4, dtype=torch.float64),
            torch.zeros(3, 4, dtype=torch.float64),
        )
    with pytest.raises(
        ValueError, match="cal_weights/test_weights: expected non-negative"
    ):
        weighted_pvalues(x, -torch.ones_like(x), x, torch.ones_like(x), x, 0.1)
    with pytest.raises(ValueError, match="alpha: expected a number in"):
        weighted_pvalues(x, torch.ones_like(x), x, torch.ones_like(x), x, 1.5)
    with pytest.raises(ValueError, match="block: expected indices"):
        weighted_pvalues(
            x, torch.ones_like(x), x, torch.ones_like(x), x, 0.1, torch.full((5,), 3)
        )
    with pytest.raises(ValueError, match="scenario: expected one of"):
        wctm.synthetic_streams("drift", 2, gen())
    with pytest.raises(ValueError, match="changepoint: expected a value in"):
        wctm.synthetic_streams("none", 2, gen(), T=10, changepoint=20)
    with pytest.raises(TypeError, match="S: expected an int"):
        wctm.synthetic_streams("none", 2.0, gen())
    with pytest.raises(ValueError, match="threshold: expected a finite number > 0"):
        first_alarm(x, 0.0)


def test_nan_never_reads_as_a_decision():
    """A NaN statistic or score raises instead of reading as "no alarm" or as a p-value
    (issue 37)."""
    x = torch.zeros(2, 5, dtype=torch.float64)
    stat = x.clone()
    stat[0, 2] = float("nan")
    with pytest.raises(ValueError, match="log_stat: expected a statistic without NaN"):
        first_alarm(stat, 10.0)
    with pytest.raises(ValueError, match="cal_scores: expected finite values, got NaN"):
        ctm_pvalues(stat, x, x)
    with pytest.raises(
        ValueError, match="test_scores: expected finite values, got NaN"
    ):
        ctm_pvalues(x, stat, x)
    with pytest.raises(ValueError, match="u: expected uniforms in"):
        ctm_pvalues(x, x, stat)
    with pytest.raises(ValueError, match="p: expected p-values in"):
        composite_jumper(stat)


def test_config_rejects_bad_fields():
    for bad, match in (
        (dict(n_seeds=0), "n_seeds"),
        (dict(T=-5), "T: expected an int >= 1"),
        (dict(alpha=1.5), "alpha"),
        (dict(ville_alpha=float("nan")), "ville_alpha"),
        (dict(l2=-1.0), "l2"),
        (dict(mag_benign=float("inf")), "mag_benign"),
        (dict(changepoint=5000), "changepoint"),
        (dict(n_cal=1), "n_cal"),
    ):
        with pytest.raises((TypeError, ValueError), match=match):
            wctm.Config(**bad)


# ---------------------------------------------------------------- CPU / GPU parity
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cpu_cuda_parity():
    cfg = wctm.Config(n_seeds=4, T=300, n_cal=200, n_train=200)
    a, _, _ = wctm.run_synthetic(cfg, "benign", "cpu")
    b, _, _ = wctm.run_synthetic(cfg, "benign", "cuda")
    torch.testing.assert_close(a["p_watch"], b["p_watch"].cpu(), atol=1e-6, rtol=1e-6)
    torch.testing.assert_close(
        a["log_m_watch"], b["log_m_watch"].cpu(), atol=1e-5, rtol=1e-6
    )
