"""The consistency_gc claims ledger: interface, seeds, controls at a tiny size, and the
pieces the controls need (untrained generator, decoupled x̂, EMA warm-up)."""

import dataclasses

import pytest
import torch

from lib import consistency_gc as cg
from lib.common.claims import HELDOUT_SEEDS, check_seeds

TC = cg.TrainConfig(steps=300, batch=64, hidden=32, depth=1, n_checkpoints=2, loss="l2")
SMALL = dataclasses.replace(
    cg.SMOKE,
    toy=TC,
    n_seeds=1,
    widget_mus=(),
    n_test=64,
    ode_steps=40,
    diag_sigmas=(0.5, 5.0),
    n_diag=512,
    images=False,
)


@pytest.fixture(scope="module")
def measured():
    return cg.measure_claims(SMALL, (7,))


def test_interface_and_seeds():
    ids = [c.id for c in cg.CLAIMS]
    assert len(ids) == len(set(ids))
    check_seeds(cg.NOTEBOOK_SEEDS)
    assert len(cg.NOTEBOOK_SEEDS) >= 5
    sets = [set(cg.NOTEBOOK_SEEDS), set(cg.TUNING_SEEDS), set(HELDOUT_SEEDS)]
    assert all(not (a & b) for i, a in enumerate(sets) for b in sets[i + 1 :])
    tested = {c.id for c in cg.CLAIMS if c.rule is not None}
    assert tested == {
        "gc-gap",
        "gc-faster",
        "cd-best",
        "transport",
        "discrepancy",
        "mnist-fd",
    }


def test_measure_claims_shape(measured):
    # images=False: every tested claim but the MNIST one
    assert set(measured) == {c.id for c in cg.CLAIMS if c.rule is not None} - {
        "mnist-fd"
    }
    for v in measured.values():
        assert set(v["values"]) == set(v["control"]) == {7}
        assert all(isinstance(x, float) for x in v["values"].values())
    results = cg.judge(measured)
    assert [r.claim.id for r in results] == [c.id for c in cg.CLAIMS]


def test_controls_separate_at_a_tiny_size(measured):
    # the coupling is what lowers GC's transport cost and discrepancy: built from an
    # independent noise, the same x̂ loses it
    for k in ("transport", "discrepancy"):
        assert measured[k]["values"][7] < measured[k]["control"][7], k
    # an untrained generator gives bad endpoints: far behind the trained one
    assert measured["gc-gap"]["control"][7] < measured["gc-gap"]["values"][7]
    # the exact teacher beats IC's one-sample velocity
    assert measured["cd-best"]["values"][7] > measured["cd-best"]["control"][7]


def test_seed_result_does_not_depend_on_other_seeds():
    tiny = dataclasses.replace(
        SMALL, toy=dataclasses.replace(TC, steps=20), n_test=8, n_diag=16
    )
    a = cg.toy_claims(cg.toy_experiment(tiny, "cpu", (3,)))
    b = cg.toy_claims(cg.toy_experiment(tiny, "cpu", (5, 3)))
    for k in a:
        assert a[k]["values"][3] == pytest.approx(b[k]["values"][3], rel=1e-5), k


def test_init_generator_uses_the_frozen_initial_network():
    tr = cg.Trainer(TC, 2, [0.5, 0.5], seed=1, init_generator=[False, True])
    g = torch.Generator().manual_seed(0)
    for _ in range(5):
        tr.step(tr.draw(cg.two_gaussians().sample, g))
    x = torch.randn(2, 4, 2, generator=g)
    s = torch.full((2, 4), 1.0)
    out = tr.generator(x, s)
    assert torch.equal(out[1], tr.init_model(x, s)[1])
    assert torch.equal(out[0], tr.ema(x, s)[0])
    assert not torch.equal(out[0], tr.init_model(x, s)[0])  # the EMA has moved


def test_ema_warmup_schedule():
    assert cg.TrainConfig(ema_decay=0.99).ema_decay_at(5) == 0.99
    warm = cg.TrainConfig(ema_decay=0.9999, ema_warmup=True)
    assert warm.ema_decay_at(0) == 0.0
    assert warm.ema_decay_at(7) == pytest.approx(0.75)  # 1 − 8^(−2/3)
    assert warm.ema_decay_at(10**9) == 0.9999


def test_flow_diagnostics_generator_z():
    g = torch.Generator().manual_seed(2)
    x0, z = torch.randn(1, 50, 2, generator=g), torch.randn(1, 50, 2, generator=g)
    net = cg.ConsistencyEnsemble(cg.EnsembleMLP(1, 2, 8, 1), 1e-3)
    den = cg.two_gaussians().denoise
    same = cg.flow_diagnostics(x0, z, 0.5, den, net, generator_z=z)
    plain = cg.flow_diagnostics(x0, z, 0.5, den, net)
    assert torch.equal(same["transport"], plain["transport"])
    with pytest.raises(ValueError, match="generator_z"):
        cg.flow_diagnostics(x0, z, 0.5, den, None, generator_z=z)
    with pytest.raises(ValueError, match="generator_z"):
        cg.flow_diagnostics(x0, z, 0.5, den, net, generator_z=z[:, :3])


@pytest.mark.parametrize(
    "call, exc, words",
    [
        (lambda: cg.toy_claims({"a": 1}), TypeError, "toy"),
        (lambda: cg.measure_claims(SMALL, (-1,)), ValueError, "seeds"),
        (lambda: cg.measure_claims("SMOKE", (1,)), TypeError, "cfg"),
        (lambda: cg.toy_seeds(SMALL, "12"), TypeError, "seeds"),
        (
            lambda: cg.Trainer(TC, 2, [0.5], init_generator=[True, False]),
            ValueError,
            "init_generator",
        ),
        (lambda: cg.TrainConfig(ema_warmup=1), TypeError, "ema_warmup"),
        (lambda: cg.TrainConfig().ema_decay_at(-1), ValueError, "step"),
        (lambda: cg.Config(image_seeds=0), ValueError, "image_seeds"),
    ],
)
def test_bad_inputs(call, exc, words):
    with pytest.raises(exc, match=words):
        call()


def test_image_claims_and_its_control():
    ctl = cg.CONTROL
    runs = {
        3: {"fd": {"IC": 10.0, "GC": 8.0, ctl: 300.0}},
        4: {"fd": {"IC": 5.0, "GC": 5.5, ctl: 50.0}},
    }
    got = cg.image_claims(runs)["mnist-fd"]
    assert got["values"] == pytest.approx({3: 0.2, 4: -0.1})
    assert got["control"] == pytest.approx({3: -29.0, 4: -9.0})
    with pytest.raises(TypeError, match="runs"):
        cg.image_claims({})
    with pytest.raises(ValueError, match="runs"):
        cg.image_claims({3: {"skipped": "no MNIST"}})


def test_image_experiment_has_the_control_member():
    tiny = dataclasses.replace(
        SMALL,
        images=True,
        image=dataclasses.replace(cg.SMOKE.image, steps=3, hidden=16, depth=1),
        classifier_steps=3,
        n_fd=32,
    )
    r = cg.image_experiment(tiny)
    if "skipped" in r:
        pytest.fail(r["skipped"])  # MNIST ships with the project's install
    assert set(r["fd"]) == {"IC", "GC", cg.CONTROL}
    assert r["samples"].shape[0] == 2  # IC and GC only


def test_file_measured_reads_the_notebook_seeds_back():
    file = {
        "claims": {
            "mnist-fd": {
                "notebook": {
                    "method": {"seeds": [10, 11], "values": [0.2, 0.1]},
                    "control": {"seeds": [10, 11], "values": [-3.0, -2.0]},
                }
            }
        }
    }
    got = cg.file_measured(file, ["mnist-fd", "absent"])
    assert got == {
        "mnist-fd": {"values": {10: 0.2, 11: 0.1}, "control": {10: -3.0, 11: -2.0}}
    }
    assert cg.file_measured(None, ["mnist-fd"]) == {}
    with pytest.raises(TypeError, match="claims_file"):
        cg.file_measured({"x": 1}, ["mnist-fd"])
