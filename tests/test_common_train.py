"""Unit tests of lib.common.train: the small-classifier loop (determinism, the global
random state left alone, the sampling schemes against a written-out loop, learning) and
its bad-input errors."""

import pytest
import torch
import torch.nn as nn

from lib.common import fit_classifier, make_generator, seeded_init

CUDA = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")


def _data(n=96, d=6, seed=0):
    g = make_generator(seed)
    x = torch.randn(n, d, generator=g)
    y = (x[:, 0] + 0.5 * x[:, 1] > 0).long() + (
        x[:, 2] > 1
    ).long()  # 3 classes, learnable
    return x, y


def _net(d=6, seed=1):
    return seeded_init(
        lambda: nn.Sequential(nn.Linear(d, 16), nn.ReLU(), nn.Linear(16, 3)), seed
    )


def _params(model):
    return [p.detach().clone() for p in model.parameters()]


def test_same_seed_same_weights_and_losses():
    x, y = _data()
    runs = []
    for _ in range(2):
        m = _net()
        losses = fit_classifier(m, x, y, generator=7, epochs=3, batch_size=10, lr=1e-2)
        runs.append((losses, _params(m)))
    assert runs[0][0] == runs[1][0]
    assert all(torch.equal(a, b) for a, b in zip(runs[0][1], runs[1][1]))
    m = _net()
    other = fit_classifier(m, x, y, generator=8, epochs=3, batch_size=10, lr=1e-2)
    assert other != runs[0][0]


def test_int_seed_equals_generator_and_stream_continues():
    x, y = _data()
    m1, m2 = _net(), _net()
    l1 = fit_classifier(m1, x, y, generator=3, steps=20, batch_size=8, lr=1e-2)
    g = make_generator(3)
    l2 = fit_classifier(m2, x, y, generator=g, steps=20, batch_size=8, lr=1e-2)
    assert l1 == l2
    ref = make_generator(3)
    for _ in range(20):
        torch.randint(len(x), (8,), generator=ref)
    assert torch.equal(
        g.get_state(), ref.get_state()
    )  # exactly steps × batch_size draws were taken


def test_global_random_state_untouched():
    x, y = _data()
    torch.manual_seed(1234)
    before = torch.get_rng_state()
    m = _net()
    fit_classifier(m, x, y, generator=0, epochs=2, batch_size=16, lr=1e-2)
    fit_classifier(m, x, y, generator=0, steps=5, batch_size=16, lr=1e-2)
    assert torch.equal(torch.get_rng_state(), before)


def test_seeded_init_matches_manual_seed_and_restores_state():
    build = lambda: nn.Linear(5, 4)  # noqa: E731
    torch.manual_seed(11)
    ref = build()
    torch.manual_seed(99)
    before = torch.get_rng_state()
    m = seeded_init(build, 11)
    assert torch.equal(m.weight, ref.weight) and torch.equal(m.bias, ref.bias)
    assert torch.equal(torch.get_rng_state(), before)


def _naive(model, x, y, g, lr, batch_size, epochs=None, steps=None):
    """The loop written out, as the chapters wrote it before the helper."""
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    if epochs is not None:
        idx = [
            o[i : i + batch_size]
            for _ in range(epochs)
            for o in [torch.randperm(len(x), generator=g)]
            for i in range(0, len(x), batch_size)
        ]
    else:
        idx = [torch.randint(len(x), (batch_size,), generator=g) for _ in range(steps)]
    losses = []
    for b in idx:
        loss = nn.functional.cross_entropy(model(x[b]), y[b])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        losses.append(float(loss.detach()))
    return losses


@pytest.mark.parametrize("scheme", [{"epochs": 2}, {"steps": 13}])
def test_matches_the_written_out_loop(scheme):
    x, y = _data(n=50)  # 50 rows, batches of 16: the last batch of an epoch has 2
    m1, m2 = _net(), _net()
    got = fit_classifier(m1, x, y, generator=5, batch_size=16, lr=1e-2, **scheme)
    want = _naive(m2, x, y, make_generator(5), 1e-2, 16, **scheme)
    assert got == want
    assert len(got) == (2 * 4 if "epochs" in scheme else 13)
    assert all(torch.equal(a, b) for a, b in zip(_params(m1), _params(m2)))
    assert not m1.training


def test_tuple_output_uses_the_first_element_and_it_learns():
    class WithFeatures(nn.Module):
        def __init__(self):
            super().__init__()
            self.body, self.head = (
                nn.Sequential(nn.Linear(6, 32), nn.ReLU()),
                nn.Linear(32, 3),
            )

        def forward(self, x):
            h = self.body(x)
            return self.head(h), h

    x, y = _data(n=400)
    m = seeded_init(WithFeatures, 0)
    losses = fit_classifier(m, x, y, generator=0, epochs=30, batch_size=32, lr=1e-2)
    with torch.no_grad():
        acc = float((m(x)[0].argmax(1) == y).float().mean())
    assert sum(losses[-10:]) / 10 < 0.5 * sum(losses[:10]) / 10 and acc > 0.9


@pytest.mark.parametrize(
    "kwargs, exc, words",
    [
        ({"model": "net"}, TypeError, "model"),
        ({"x": [[0.0]]}, TypeError, "x"),
        ({"y": torch.zeros(5, dtype=torch.long)}, ValueError, "y"),
        ({"y": torch.zeros(96)}, TypeError, "y: expected int64"),
        ({"batch_size": 0}, ValueError, "batch_size"),
        ({"lr": -1.0}, ValueError, "lr"),
        ({"epochs": None}, ValueError, "exactly one of epochs and steps"),
        ({"steps": 3}, ValueError, "exactly one of epochs and steps"),
        ({"epochs": 0}, ValueError, "epochs"),
        ({"epochs": None, "steps": 1.5}, TypeError, "steps"),
        ({"generator": "seed"}, TypeError, "generator"),
        ({"generator": -1}, ValueError, "generator"),
        ({"weight_decay": -0.1}, ValueError, "weight_decay"),
    ],
)
def test_bad_inputs_name_the_argument(kwargs, exc, words):
    x, y = _data()
    args = {
        "model": _net(),
        "x": x,
        "y": y,
        "generator": 0,
        "batch_size": 8,
        "lr": 1e-2,
        "epochs": 1,
    }
    args.update(kwargs)
    with pytest.raises(exc, match=words):
        fit_classifier(args.pop("model"), args.pop("x"), args.pop("y"), **args)


def test_seeded_init_bad_inputs():
    with pytest.raises(TypeError, match="build"):
        seeded_init(3, 0)
    with pytest.raises(TypeError, match="build"):
        seeded_init(lambda: 3, 0)
    with pytest.raises(ValueError, match="seed"):
        seeded_init(lambda: nn.Linear(2, 2), -1)


@CUDA
def test_cpu_cuda_parity():
    x, y = _data()
    runs = []
    for dev in ("cpu", "cuda"):
        m = _net().to(dev)
        runs.append(
            fit_classifier(
                m, x, y, generator=2, epochs=2, batch_size=16, lr=1e-2, device=dev
            )
        )
        assert next(m.parameters()).device.type == dev
    assert torch.allclose(torch.tensor(runs[0]), torch.tensor(runs[1]), atol=1e-4)
    gen = torch.Generator(device="cuda")
    with pytest.raises(ValueError, match="generator"):
        fit_classifier(_net(), x, y, generator=gen, epochs=1, batch_size=8, lr=1e-2)
