"""Self-checks of the exercises (#35): the shared helpers, and every chapter's checks
against the solution's answer (must be right) and a wrong answer (must not be)."""

import pytest
import torch

from lib.common.exercises import Feedback, check_choice, check_number, check_numbers


def test_check_number_statuses_and_no_answer_in_the_message():
    assert check_number("x", 1.0005, 1.0).ok
    close = check_number("x", 1.1, 1.0, hint="h")
    assert close.status == "close" and "1.0" not in str(close)
    wrong = check_number("x", 3.0, 1.0)
    assert wrong.status == "wrong" and "too large" in str(wrong) and not wrong
    assert check_number("x", float("nan"), 1.0).status == "wrong"
    assert check_number("x", 0.05, 0.0, atol=0.1).ok


def test_check_numbers_and_choice():
    assert check_numbers("x", [1, 2, 3], [1, 2, 3]).ok
    assert check_numbers("x", [1, 2], [1, 2, 3]).status == "wrong"
    assert check_numbers("x", [1, 2.1, 3], [1, 2, 3]).status == "close"
    assert check_choice("x", " No ", "no", ("yes", "no")).ok
    assert not check_choice("x", "yes", "no", ("yes", "no"))


@pytest.mark.parametrize(
    "call, exc, word",
    [
        (lambda: check_number("x", "1", 1.0), TypeError, "answer"),
        (lambda: check_number("x", True, 1.0), TypeError, "answer"),
        (lambda: check_number("x", 1.0, 1.0, rtol=0.5, close=0.1), ValueError, "rtol"),
        (lambda: check_numbers("x", 3, [1]), TypeError, "answer"),
        (lambda: check_numbers("x", [1, "a"], [1, 2]), TypeError, "answer"),
        (lambda: check_choice("x", 1, "no", ("yes", "no")), TypeError, "answer"),
        (lambda: check_choice("x", "maybe", "no", ("yes", "no")), ValueError, "answer"),
        (lambda: Feedback("x", "fine"), ValueError, "status"),
    ],
)
def test_bad_inputs(call, exc, word):
    with pytest.raises(exc, match=word):
        call()


def test_brokerage_checks():
    from lib.brokerage import exercises as e

    assert e.ex1(1 / 8).ok and not e.ex1(1 / 4)  # 1/(4L) at L = 2
    k = [0.125, 0.25, 0.5, 2.0]
    main = {"kappa": {"kappas": k, "final": [10 / x + 40 * x for x in k]}}
    assert e.ex2(0.5, main).ok and not e.ex2(1.0, main)
    assert e.ex3("no").ok and not e.ex3("yes")
    assert e.ex4(1 / 32).ok and not e.ex4(1 / 16)  # a/8 with a = 1/(2L)
    assert e.ex5(0.25).ok and not e.ex5(0.5)
    with pytest.raises(TypeError, match="main"):
        e.ex2(0.5, [1])
    with pytest.raises(ValueError, match="L"):
        e.ex1(0.1, L=-1.0)


def test_diffusion_maps_checks():
    from lib.diffusion_maps import exercises as e
    from lib.diffusion_maps.theory import neumann_ball_nu1

    assert e.ex1(36).ok and not e.ex1(18)
    good = [neumann_ball_nu1(m) - (m + 1) for m in range(1, 61)]
    assert e.ex2(good).ok and not e.ex2([0.0] * 60)
    assert e.ex4((7, 10)).ok and not e.ex4((12, 18))  # not the mean-radius prediction


def test_consistency_gc_checks():
    from lib.consistency_gc import exercises as e
    from lib.consistency_gc import two_gaussians

    assert e.ex1(0.5**2 + 2 * 0.01**2 + 2).ok and not e.ex1(2.0)
    assert e.ex3("x*").ok and not e.ex3("z")
    gmm = two_gaussians()

    def tweedie(x, sigma, var_of=lambda s: gmm.std**2 + s**2):
        x = x.detach().requires_grad_(True)
        logp = torch.logsumexp(
            gmm.weights.log()
            - 0.5 * ((x[:, None] - gmm.means) ** 2).sum(-1) / var_of(sigma),
            dim=1,
        )
        (grad,) = torch.autograd.grad(logp.sum(), x)
        return x.detach() + sigma**2 * grad

    assert e.ex2(tweedie).ok
    assert not e.ex2(lambda x, s: tweedie(x, s, var_of=lambda t: t**2))  # no s²
    assert not e.ex2(lambda x, s: x)
    assert e.ex2(lambda x, s: 1 / 0).status == "wrong"
    with pytest.raises(TypeError, match="tweedie"):
        e.ex2(0.5)


def test_wctm_checks():
    from lib.wctm import exercises as e

    assert e.ex1(0.043).ok and not e.ex1(0.763)  # (b) right; (a) is not (b)
    assert e.ex2("uniform").ok and not e.ex2("zero")
    assert e.ex3("fixed").ok and not e.ex3("growing")
    assert e.ex4([0.082, 0.0, 0.006]).ok and not e.ex4([0.0, 0.0, 0.006]).ok


def test_local_ect_checks():
    import torch

    from lib.local_ect import exercises as e

    # the numbers the solutions print
    assert e.ex1({"lect": 0.99, "gbdt_mean": 0.51, "gbdt_m2": 0.98, "gin": 0.99}).ok
    assert not e.ex1([0.99, 0.51, 0.51, 0.99])  # "the mean/std aggregator fails"
    pts, edg = [0.44, 0.78, 0.77, 0.82], [0.46, 0.63, 0.61, 0.63]
    assert e.ex2(pts, edg).ok and not e.ex2(edg, pts)

    def ecdf(h, t):
        return (h[:, None] <= t[None, :]).double().mean(0)

    def count(h, t):  # the ℓ-ECT before normalisation
        return (h[:, None] <= t[None, :]).double().sum(0)

    assert e.ex3(ecdf).ok and not e.ex3(count) and not e.ex3(lambda h: h)
    assert not e.ex3(lambda h, t: torch.zeros(3))
    smooth, exact = [1.19, 1.008, 0.998], [1.216, 1.039, 1.035]
    assert e.ex4(smooth, exact).ok and not e.ex4(smooth, smooth)
    # the answer is a training run's accuracy, which moves with the machine's float
    # arithmetic: take it from the check's own computation, then swap it for a wrong one
    train_acc, test_acc = e._ex5_truth()
    assert e.ex5(train_acc, test_acc).ok and not e.ex5(test_acc, train_acc)
    with pytest.raises(TypeError, match="answer"):
        e.ex1(0.99)
    with pytest.raises(ValueError, match="answer"):
        e.ex1({"lect": 0.99})
    with pytest.raises(TypeError, match="ecdf"):
        e.ex3([0.1])


def _fake_run(seed: int = 0):
    """Features of a pretend network: a run0 stand-in (training one costs ~20 s)."""
    import types

    import torch

    g = torch.Generator().manual_seed(seed)

    def feats(n, scale, shift):
        return (scale * torch.randn(n, 24, generator=g) + shift).relu()

    return types.SimpleNamespace(
        h_fit=feats(3000, 1.0, 0.3),
        h_id=feats(400, 1.0, 0.3),
        h_ood={"weak": feats(400, 0.6, 0.0), "wide": feats(400, 1.8, 0.0)},
        W=torch.randn(5, 24, generator=g) / 5,
        b=torch.zeros(5),
    )


def test_ood_shaping_checks():
    """Each check against the notebook's solution code run on a stand-in run."""
    import dataclasses

    import torch

    from lib import ood_shaping as ood
    from lib.common import seed_everything
    from lib.ood_shaping import exercises as e
    from lib.ood_shaping import scores as S

    run0, cfg = _fake_run(), ood.SMOKE
    # ood-shaping-deterministic, as in the solution
    x = run0.h_fit.flatten().double().cpu()
    grid = ood.make_grid(float(x.quantile(0.999)), 64)
    p_id = ood.histogram(x, grid)
    p_ood = ood.histogram(ood.ood_law_samples(x, "weaker"), grid)
    k = grid.knots
    starts = {"identity": None, "sqrt": torch.sqrt(k * k[-1])}

    def shape(g):
        return g / g[-1]

    gaps = []
    for sigma in (1e-4, 0.05):
        sol = {
            name: ood.solve_shaping(p_id, p_ood, grid, beta=2.0, sigma=sigma, init=g0)[
                0
            ]
            for name, g0 in starts.items()
        }
        gaps.append(float((shape(sol["identity"]) - shape(sol["sqrt"])).abs().max()))
    assert e.ex1(gaps, run0).ok and not e.ex1([gaps[1], gaps[0] + 0.5], run0)

    # ood-shaping-direction
    def avg_auroc(run, knots, g):
        s_id = S.shaped_energy(run.h_id, run.W, run.b, knots, g)
        vals = [
            S.auroc(s_id, S.shaped_energy(h, run.W, run.b, knots, g))
            for h in run.h_ood.values()
        ]
        return 100 * sum(vals) / len(vals)

    au, top = [], None
    for family in ("monotone", "free"):
        kn, g = ood.kl_ib_shaping(
            cfg, run0.h_fit, seed_everything(10), "weaker+tail", 2.0, family=family
        )
        au.append(avg_auroc(run0, kn, g))
        top = float(g[-1] / g.abs().max())
    assert e.ex3(au, run0, top=top).ok and e.ex3(au, run0).ok
    assert not e.ex3([au[0] - 5, au[1] + 5], run0)
    assert not e.ex3(au, run0, top=top - 0.5)

    # ood-shaping-beta, the fixed scale
    ratios = []
    for beta in (0.1, 0.5, 1, 2, 5):
        kn, g = ood.kl_ib_shaping(
            dataclasses.replace(cfg, g_scale="fixed"),
            run0.h_fit,
            seed_everything(10),
            "weaker+tail",
            beta,
        )
        ratios.append(ood.slope_ratios(run0.h_fit, kn, g)["top"])
    assert e.ex4(ratios, run0).ok and not e.ex4([r * 1.5 for r in ratios], run0)
    with pytest.raises(TypeError, match="run"):
        e.ex1(gaps, {"h_fit": run0.h_fit})
    with pytest.raises(ValueError, match="scale"):
        e.ex4(ratios, run0, scale="free")


def _fake_scores(seed: int = 0):
    """A pool's scores shaped like the notebook's sw['scores'] (the real ones need the
    small GPT trained, ~1 min)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    n = 400
    fam = [str(f) for f in rng.choice(["copy", "story", "capital", "capital_new"], n)]
    fam[:40] = ["compare"] * 40
    ln = rng.integers(1, 20, n)
    si = np.exp(rng.normal(0, 1, n)) * ln**-0.8
    triv = [f == "compare" and i % 2 == 0 for i, f in enumerate(fam)]
    sn = np.log1p(si) + np.log1p(ln)
    return {
        "self_inf": si.tolist(),
        "self_inf_n": sn.tolist(),
        "length": ln.tolist(),
        "family": fam,
        "trivial": triv,
    }


def test_self_inf_n_checks():
    import numpy as np

    from lib.self_inf_n import exercises as e

    sc = _fake_scores()
    si, sn, ln = (np.array(sc[k]) for k in ("self_inf", "self_inf_n", "length"))
    # self_inf_n-ex1, as in the solution
    sel_ = np.array(sc["family"]) == "copy"
    slope = np.polyfit(np.log(ln[sel_]), np.log(si[sel_]), 1)[0]
    assert e.ex1(slope, sc).ok and not e.ex1(-1.0, sc)
    # self_inf_n-ex2
    top = np.argsort(-sn, kind="stable")[:120]
    count = int(np.array(sc["trivial"])[top].sum())
    assert count > 0 and e.ex2(count, sc).ok and not e.ex2(0, sc)
    # self_inf_n-ex3: the split of the selection
    triv = np.array(sc["trivial"])
    sel = [int(i) for i in np.argsort(-sn, kind="stable") if not triv[i]][:100]
    sw = {"scores": sc, "selections": {"self_inf_n": sel}}
    part_new = np.array([f.endswith("_new") for f in sc["family"]])[sel]
    sizes = (int(part_new.sum()), int((~part_new).sum()))
    assert e.ex3(sizes, sw).ok and not e.ex3(sizes[::-1], sw)
    with pytest.raises(TypeError, match="sc"):
        e.ex1(slope, [1, 2])
    with pytest.raises(TypeError, match="sw"):
        e.ex3(sizes, sc)
    with pytest.raises(ValueError, match="family"):
        e.ex1(slope, sc, family="poem")


def test_scmoe_checks():
    from lib.scmoe import exercises as e

    # scmoe-ex1: the solution's formula q - 1/E, as a number and as a function
    assert e.ex1(0.4 - 1 / 4).ok and not e.ex1(0.4)
    assert e.ex1(lambda q, E: q - 1 / E).ok
    assert not e.ex1(lambda q, E: q) and not e.ex1(lambda q: q)
    # scmoe-ex2: ρ = 2(1 + a/f)/(3 + 2a/f) and 2/3; the peak 10/13 at a/f = 2/3
    dispatch, combine = (lambda x: 2 * (1 + x) / (3 + 2 * x)), (lambda x: 2 / 3)
    assert e.ex2(dispatch, combine, peak=10 / 13).ok and e.ex2(dispatch, combine).ok
    assert not e.ex2(combine, dispatch)
    assert not e.ex2(dispatch, combine, peak=2 / 3)
    # scmoe-ex3: one All-to-All, behind the shared expert
    assert e.ex3(1, "shared expert").ok
    assert not e.ex3(2, "shared expert") and not e.ex3(1, "attention")
    with pytest.raises(TypeError, match="answer"):
        e.ex2(0.7, combine)
    with pytest.raises(ValueError, match="answer"):
        e.ex3(1, "the router")


def test_jlde_checks():
    import dataclasses
    import math

    from lib import jlde
    from lib.jlde import exercises as e

    assert e.ex1(1 / math.sqrt(6)).ok and not e.ex1(1 / 3)
    assert e.ex2("yes").ok and not e.ex2("no")
    tiny = dataclasses.replace(jlde.SMOKE, num_nodes=300, epochs=20, probe_steps=20)
    gap = e._joint_gap(tiny, 0)
    assert e.ex3(gap, tiny).ok and not e.ex3(gap + 1.0, tiny)
    with pytest.raises(TypeError, match="cfg"):
        e.ex4(0.0, "cfg")


def test_proofaug_checks():
    import numpy as np

    from lib.proofaug import Prover, hammer_only, make_problems
    from lib.proofaug import exercises as e

    assert e.ex1((4, 10)).ok  # the inner `proof` and `have h6`
    assert e.ex1([4, 10]).ok
    assert not e.ex1((5, 7))  # the rule with ℓ−1
    assert "ℓ−1" in e.ex1((5, 7)).hint
    assert e.ex1((5, 11)).status == "close"  # counted from 1
    assert not e.ex1((0, 18))
    env = {"test": make_problems(6, seed=3)}
    rate = float(
        np.mean([hammer_only(p.stmt, Prover(600, 20_000)).success for p in env["test"]])
    )
    assert e.ex3(rate, env).ok
    assert not e.ex3(rate - 0.5, env)
    with pytest.raises(TypeError, match="answer"):
        e.ex1("4, 10")
    with pytest.raises(TypeError, match="answer"):
        e.ex1((4.0, 10.0))
    with pytest.raises(TypeError, match="env"):
        e.ex3(0.5, [1])
