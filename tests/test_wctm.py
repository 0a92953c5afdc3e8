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


# naive references: lib/wctm/reference.py (shared with the benchmark and the notebook)
from lib.wctm.reference import (  # noqa: E402
    naive_ctm,
    naive_jumper,
    naive_weighted,
    naive_wquantile,
)


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
    alarm = out["watch_ville"]
    assert bool(((alarm >= cfg.changepoint) | (alarm < 0)).all())  # no false alarm
    assert bool((out["adapt_start"] >= cfg.changepoint).all())
    # with the calibration set alone as reference (our first version) every stream
    # alarms and is diagnosed as extreme shift
    cal_only, _, _ = wctm.run_synthetic(cfg, "extreme", pr=False, reference="cal")
    assert bool((cal_only["watch_ville"] >= cfg.changepoint).all())
    assert bool((cal_only["diagnosis"] == 3).all())


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


# ---------------------------------------------------------------- official adaptation
def test_adaptation_start_follows_the_official_triggers():
    g = gen(3)
    p = torch.rand(4, 300, generator=g, dtype=torch.float64) ** 3  # wealth grows
    lm = composite_jumper(p)
    ville = first_alarm(lm, 100.0)
    start = wctm.adaptation_start(lm, "ville", 100.0, 1000.0)
    assert torch.equal(start, torch.where(ville >= 0, ville, 300))
    sr = first_alarm(shiryaev_roberts(lm), 1000.0)
    start = wctm.adaptation_start(lm, "sr", 100.0, 1000.0)
    want = torch.where((sr >= 0) & ((ville < 0) | (sr < ville)), sr, 300)
    assert torch.equal(start, want)
    flat = torch.zeros(2, 50, dtype=torch.float64)  # M_t = 1: never adapts
    assert torch.equal(
        wctm.adaptation_start(flat, "sr", 100.0, 1000.0), torch.full((2,), 50)
    )
    with pytest.raises(ValueError, match="trigger: expected one of"):
        wctm.adaptation_start(flat, "cusum", 100.0, 1000.0)


@pytest.mark.parametrize("reference", ["cal+pre", "cal"])
def test_adaptive_pvalues_match_naive_reference_set(reference):
    """With unit weights (classifier never fitted) the p-values and radii are the
    naive ones over calibration + pre-adaptation test points (official) or cal only."""
    g = gen(4)
    S, n, T = 3, 40, 30
    cal = torch.randint(0, 8, (S, n), generator=g).double()
    test = torch.randint(0, 9, (S, T), generator=g).double()
    cx, tx = (
        torch.rand(S, n, 1, generator=g).double(),
        torch.rand(S, T, 1, generator=g).double(),
    )
    u = torch.rand(S, T, generator=g, dtype=torch.float64)
    adapt = torch.tensor([5, 12, 30])
    out = wctm.adaptive_pvalues(
        cal,
        test,
        cx,
        tx,
        u,
        adapt,
        0.1,
        ratio="logistic",
        reference=reference,
        min_fit=1000,
    )
    for s in range(S):
        a = int(adapt[s])
        ref = (
            cal[s].numpy()
            if reference == "cal"
            else torch.cat([cal[s], test[s, :a]]).numpy()
        )
        if a == T:
            assert bool(torch.isnan(out["p"][s]).all())
            continue
        want = naive_weighted(
            ref,
            np.ones(len(ref)),
            test[s, a:].numpy(),
            np.ones(T - a),
            u[s, a:].numpy(),
            0.1,
        )
        np.testing.assert_allclose(out["p"][s, a:].numpy(), want, atol=1e-12)
        q = naive_wquantile(ref, np.ones(len(ref)), np.ones(T - a), 0.1)
        np.testing.assert_allclose(out["q"][s, a:].numpy(), q)
        assert bool(torch.isnan(out["p"][s, :a]).all())


@pytest.mark.parametrize("ratio", ["mlp", "logistic"])
def test_online_ratio_learns_the_tilt(ratio):
    """Benign tilt exp(3x): the weight of the current point grows with x, for both
    classifiers (MLP every step, logistic every 10 steps)."""
    g = gen(5)
    b, _ = wctm.synthetic_streams("benign", 4, g, 3.0, n_cal=300, T=400, changepoint=0)
    u = wctm.uniforms(4, 400, g)
    out = wctm.adaptive_pvalues(
        b.cal_scores,
        b.test_scores,
        b.cal_x,
        b.test_x,
        u,
        torch.zeros(4, dtype=torch.long),
        ratio=ratio,
        refit_every=1 if ratio == "mlp" else 10,
    )
    w, x = out["w_test"][:, 200:], b.test_x[:, 200:, 0]
    hi, lo = w[x > 0.8].mean(), w[x < 0.2].mean()
    assert float(hi / lo) > 5  # true ratio e^{3 * 0.8} / e^{3 * 0.2} ~ 6.0 on average
    assert bool(((out["p"][:, 200:] >= 0) & (out["p"][:, 200:] <= 1)).all())


def test_adaptive_pvalues_bad_inputs():
    x = torch.zeros(2, 5, dtype=torch.float64)
    f = torch.zeros(2, 5, 1, dtype=torch.float64)
    ok = torch.zeros(2, dtype=torch.long)
    with pytest.raises(ValueError, match="adapt: expected test indices"):
        wctm.adaptive_pvalues(x, x, f, f, x, ok - 1)
    with pytest.raises(ValueError, match="ratio: expected one of"):
        wctm.adaptive_pvalues(x, x, f, f, x, ok, ratio="forest")
    with pytest.raises(ValueError, match="reference: expected one of"):
        wctm.adaptive_pvalues(x, x, f, f, x, ok, reference="all")
    with pytest.raises(ValueError, match="alpha: expected a level"):
        wctm.adaptive_pvalues(x, x, f, f, x, ok, alpha=1.0)
    with pytest.raises(TypeError, match="anticonservative: expected a bool"):
        wctm.adaptive_pvalues(x, x, f, f, x, ok, anticonservative=1)
    with pytest.raises(ValueError, match="mlp_batch"):
        wctm.adaptive_pvalues(x, x, f, f, x, ok, mlp_batch=0)
    with pytest.raises(TypeError, match="params: expected the dict of mlp_init"):
        wctm.mlp_logit({}, f)
    with pytest.raises(ValueError, match="trigger"):
        wctm.Config(trigger="cusum")
    with pytest.raises(ValueError, match="ratio"):
        wctm.Config(ratio="forest")


def test_naive_references_reject_bad_inputs():
    with pytest.raises(ValueError, match="cal: expected a non-empty 1-D array"):
        naive_ctm([], [1.0], [0.5])
    with pytest.raises(ValueError, match="u: expected shape"):
        naive_ctm([1.0], [1.0, 2.0], [0.5])
    with pytest.raises(ValueError, match="alpha: expected a number"):
        naive_weighted([1.0], [1.0], [1.0], [1.0], [0.5], 0.0)
    np.testing.assert_allclose(
        naive_jumper(np.full((1, 3), 0.5)), np.zeros((1, 3)), atol=1e-12
    )


def _new_check_calls():
    """Calls with one bad argument each, for the checks added for the bad-input sweep:
    (argument name, exception, thunk)."""
    g = gen(7)
    S, n, T = 2, 20, 30
    b, _ = wctm.synthetic_streams("benign", S, g, None, 40, n, T, 10)
    u = torch.rand(S, T, generator=g, dtype=torch.float64)
    lm = torch.randn(S, T, generator=g, dtype=torch.float64).cumsum(1)
    ad = dict(
        cal_scores=b.cal_scores,
        test_scores=b.test_scores,
        cal_x=b.cal_x,
        test_x=b.test_x,
        u=u,
        adapt=torch.tensor([5, 10]),
        ratio="logistic",
    )
    nan_u = u.clone()
    nan_u[0, 0] = float("nan")
    inf_lm = lm.clone()
    inf_lm[0, 0] = float("inf")
    return [
        (
            "adapt_threshold",
            ValueError,
            lambda: wctm.watch_monitor(b, u, pr=False, adapt_threshold=0.0),
        ),
        (
            "adapt_threshold",
            TypeError,
            lambda: wctm.watch_monitor(b, u, pr=False, adapt_threshold="x"),
        ),
        (
            "x_sched_threshold",
            ValueError,
            lambda: wctm.watch_monitor(b, u, pr=False, x_sched_threshold=float("inf")),
        ),
        (
            "log_m_x",
            ValueError,
            lambda: wctm.adaptation_start(lm[:0], "ville", 100.0, 100.0),
        ),
        (
            "log_m_x",
            ValueError,
            lambda: wctm.adaptation_start(inf_lm, "ville", 100.0, 100.0),
        ),
        (
            "cal_scores",
            ValueError,
            lambda: wctm.adaptive_pvalues(**{**ad, "cal_scores": b.cal_scores[:0]}),
        ),
        ("u", ValueError, lambda: wctm.adaptive_pvalues(**{**ad, "u": nan_u})),
        ("alpha", TypeError, lambda: wctm.adaptive_pvalues(**ad, alpha="x")),
        ("cfg", TypeError, lambda: wctm.values_from_runs("cfg", {})),
        ("runs", TypeError, lambda: wctm.values_from_runs(wctm.SMOKE, "runs")),
    ]


@pytest.mark.parametrize("i", range(10))
def test_new_input_checks_name_the_argument(i):
    name, exc, call = _new_check_calls()[i]
    with pytest.raises(exc, match=rf"^{name}: expected"):
        call()


def test_adam_state_lives_on_the_parameters_device():
    """The per-stream step count sits with the moments (on a GPU the FULL run once mixed
    a CPU step count into CUDA moments); 'meta' stands in for a second device here."""
    from lib.wctm.density_ratio import adam_state, mlp_init

    p = mlp_init(3, 2, 4, torch.Generator().manual_seed(0))
    st = adam_state({k: v.to("meta") for k, v in p.items()})
    assert st["k"].device.type == "meta" and st["k"].shape == (3,)
    assert all(v.device.type == "meta" for v in st["m"].values())
