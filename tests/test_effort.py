"""Tests of lib.effort: the SVD residual layer (exact reconstruction, only the residual
triplets train, the frozen principal subspace does not move), every kernel against its
naive reference, the generators' invariants, bad inputs, the stored foundation model
and the command that reproduces it (shrunk), the FULL path shrunk, the claims'
bookkeeping, CUDA parity."""

import dataclasses
import math

import numpy as np
import pytest
import torch

from lib import effort as E
from lib.effort import data as Ed
from lib.effort.reference import (
    attention_loops,
    auc_pairs,
    dct_fake_scipy,
    effective_rank_eig,
    principal_angles_scipy,
    svd_residual_weight,
)

TINY = E.Config(n_train=64, n_val=32, n_test=32, steps=3, batch=16, claim_seeds=(0,))


def g(seed=0):
    return torch.Generator().manual_seed(seed)


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    """A 2-block ViT on 16×16 patches runs fastest on one thread (as in the chapter)."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="module")
def found():
    return E.load_foundation()


def lin(m=8, n=6, seed=0):
    torch.manual_seed(seed)
    return torch.nn.Linear(n, m)


# --- the SVD residual layer -------------------------------------------------------


@pytest.mark.parametrize("which", ["last", "first", "middle"])
@pytest.mark.parametrize("n_train", [1, 3])
def test_svd_residual_reconstructs_the_weight(which, n_train):
    layer = lin()
    svd = E.SVDResidualLinear(layer, n_train, which)
    assert torch.allclose(svd.weight, layer.weight, atol=1e-5)
    x = torch.randn(5, 6)
    assert torch.allclose(svd(x), layer(x), atol=1e-5)
    names = {n for n, p in svd.named_parameters() if p.requires_grad}
    assert names == {"U_res", "S_res", "V_res"}
    assert svd.U_res.shape == (8, n_train) and svd.V_res.shape == (n_train, 6)


def test_effort_trains_the_smallest_triplet_and_principal_the_largest():
    layer = lin()
    s = torch.linalg.svdvals(layer.weight.detach())
    last = E.SVDResidualLinear(layer, 1, "last")
    first = E.SVDResidualLinear(layer, 1, "first")
    assert torch.isclose(last.S_res[0], s[-1], atol=1e-6)
    assert torch.isclose(first.S_res[0], s[0], atol=1e-6)
    main, rest = svd_residual_weight(layer.weight.detach(), 5)
    assert torch.allclose(last.weight_main.double(), main, atol=1e-5)
    assert torch.allclose(((last.U_res * last.S_res) @ last.V_res).double(), rest,
                          atol=1e-5)  # fmt: skip


def test_training_leaves_the_principal_subspace_exactly():
    layer = lin(16, 16)
    svd = E.SVDResidualLinear(layer, 1, "last")
    before = svd.weight_main.clone()
    opt = torch.optim.Adam(svd.parameters(), lr=0.1)
    for _ in range(5):
        loss = svd(torch.randn(8, 16)).square().mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert torch.equal(svd.weight_main, before)
    # the change is the new residual triplet minus the old one: rank at most two
    delta = svd.weight.detach() - layer.weight.detach()
    assert torch.linalg.matrix_rank(delta, atol=1e-5) <= 2


def test_regularisers_vanish_at_initialisation_and_grow_with_drift():
    svd = E.SVDResidualLinear(lin(12, 12), 1)
    assert float(svd.orth_loss().detach()) < 1e-5
    assert float(svd.ksv_loss().detach()) < 1e-5
    with torch.no_grad():
        svd.U_res.mul_(2.0)
        svd.S_res.add_(1.0)
    assert float(svd.orth_loss().detach()) > 0.5
    assert float(svd.ksv_loss().detach()) > 0.1


def test_lora_starts_at_the_pretrained_weight():
    layer = lin()
    lo = E.LoRALinear(layer, 4, g())
    assert torch.equal(lo.weight, layer.weight)
    assert {n for n, p in lo.named_parameters()} == {"A", "B"}


def test_parameter_accounting(found):
    vit = found["vit"]
    d, depth = vit.arch["dim"], vit.arch["depth"]
    counts = {arm: E.trainable_parameters(E.Detector(E.adapt(vit, arm, 1, g())))
              for arm in E.ARMS}  # fmt: skip
    head = 2 * d + 2
    assert counts["probe"] == head
    assert counts["effort"] == E.effort_parameter_count(d, depth) + head
    assert counts["principal"] == counts["middle"] == counts["effort"]
    assert counts["lora1"] == depth * 4 * 2 * d + head
    assert counts["lora4"] == 4 * depth * 4 * 2 * d + head
    assert counts["full"] == sum(p.numel() for p in vit.parameters()) + head
    assert E.effort_parameter_count(1024, 24) == 196_704  # the paper's 0.19M


def test_adapt_leaves_the_backbone_alone(found):
    vit = found["vit"]
    before = {k: v.clone() for k, v in vit.state_dict().items()}
    E.adapt(vit, "effort")
    assert all(torch.equal(before[k], v) for k, v in vit.state_dict().items())
    x = torch.rand(4, 1, 16, 16)
    for arm in ("effort", "principal", "lora4"):
        assert torch.allclose(E.adapt(vit, arm, 1, g()).features(x), vit.features(x),
                              atol=1e-4)  # fmt: skip


def test_attention_matches_the_loop_reference():
    torch.manual_seed(0)
    attn = E.model.Attention(12, 3)
    x = torch.randn(2, 5, 12)
    assert torch.allclose(attn(x), attention_loops(x, attn), atol=1e-5)


# --- metrics -----------------------------------------------------------------------


def test_auc_known_answers_and_references():
    assert E.auc(torch.tensor([0.1, 0.2, 0.8, 0.9]), torch.tensor([0, 0, 1, 1])) == 1.0
    assert E.auc(torch.tensor([0.5, 0.5]), torch.tensor([0, 1])) == 0.5
    s = torch.randn(300, generator=g()).round(decimals=1)  # with ties
    y = (torch.rand(300, generator=g(1)) < 0.4).long()
    assert math.isclose(E.auc(s, y), auc_pairs(s, y), abs_tol=1e-12)
    from sklearn.metrics import roc_auc_score

    assert math.isclose(E.auc(s, y), roc_auc_score(y.numpy(), s.numpy()), abs_tol=1e-12)


def test_effective_rank_known_answers():
    x = torch.randn(20000, 6, generator=g())
    assert abs(E.effective_rank(x) - 6) < 0.05
    v = torch.randn(500, 1, generator=g()) * torch.randn(1, 6, generator=g(1))
    assert abs(E.effective_rank(v) - 1) < 1e-6
    z = torch.randn(200, 5, generator=g(2)) * torch.tensor([3.0, 2, 1, 0.5, 0.1])
    assert math.isclose(E.effective_rank(z), effective_rank_eig(z), rel_tol=1e-6)
    ev = E.explained_variance(z)
    assert math.isclose(float(ev.sum()), 1.0, rel_tol=1e-5) and bool(ev[0] >= ev[-1])


def test_principal_angles_match_scipy():
    a, b = torch.randn(10, 10, generator=g()), torch.randn(10, 10, generator=g(1))
    ours = E.principal_angles(a, b, 3).numpy()
    assert np.allclose(ours, principal_angles_scipy(a, b, 3), atol=1e-5)
    assert float(E.principal_angles(a, a, 3).max()) < 1e-3


def test_asymmetry():
    c = torch.tensor([[2.0, 1.0], [1.0, 0.5]])
    assert math.isclose(E.asymmetry(c), 2.0, rel_tol=1e-6)


# --- the generators ----------------------------------------------------------------


def test_dct_matches_scipy_and_is_orthonormal():
    d = E.dct_matrix(8)
    assert torch.allclose(d @ d.T, torch.eye(8), atol=1e-6)
    x, _ = E.sample_patches(6, "train", g())
    assert torch.allclose(E.dct_fake(x, 30), dct_fake_scipy(x, 30), atol=1e-5)
    assert (E.dct_fake(x, 100) - x).abs().max() < 0.01  # near-lossless at q = 100


def test_generators_invariants():
    x, src = E.sample_patches(40, "test", g())
    assert x.shape == (40, 1, 16, 16) and 0 <= float(x.min()) <= float(x.max()) <= 1
    assert int(src.max()) < len(E.real_images())
    up = E.upsample_fake(x, "nearest")
    assert torch.equal(up[..., ::2, ::2], up[..., 1::2, 1::2])  # 2×2 blocks constant
    mean, basis = E.pca_basis(x.double(), 256)
    assert torch.allclose(E.pca_fake(x.double(), mean, basis), x.double(), atol=1e-6)
    assert torch.allclose(E.blend_fake(x, x, g()), x)
    tools = {"pca": E.pca_basis(x, 8), "ae": Ed.PatchAE()}
    for name in E.GENERATORS:
        f = E.make_fakes(name, x, x.flip(0), tools, g())
        assert f.shape == x.shape and bool(torch.isfinite(f).all())


def test_bands_do_not_overlap():
    lo = {b: v for b, v in Ed._BANDS.items()}
    assert lo["pretrain"][1] <= lo["train"][0] and lo["train"][1] <= lo["test"][0]


# --- bad inputs --------------------------------------------------------------------


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: E.sample_patches(0, "train", g()), "n:"),
        (lambda: E.sample_patches(4, "val", g()), "band:"),
        (lambda: E.upsample_fake(torch.rand(2, 16, 16), "nearest"), "x:"),
        (lambda: E.upsample_fake(torch.rand(1, 1, 16, 16), "area"), "mode:"),
        (lambda: E.dct_fake(torch.rand(1, 1, 12, 12), 30), "quality, x:"),
        (lambda: E.dct_fake(torch.rand(1, 1, 16, 16), 0), "quality:"),
        (lambda: E.make_fakes("gan", torch.rand(1, 1, 16, 16), None, {}, g()), "name:"),
        (lambda: E.SVDResidualLinear(lin(), 7), "n_train:"),
        (lambda: E.SVDResidualLinear(lin(), 1, "top"), "which:"),
        (lambda: E.adapt(E.ViT(), "dora"), "arm:"),
        (lambda: E.ViT(img=15), "img, patch"),
        (lambda: E.auc(torch.rand(3), torch.zeros(3)), "labels:"),
        (lambda: E.auc(torch.rand(3), torch.zeros(4)), "labels:"),
        (lambda: E.effective_rank(torch.rand(1, 3)), "features:"),
        (lambda: E.principal_angles(torch.rand(3, 3), torch.rand(4, 3), 1), "b:"),
        (lambda: E.Config(seen="gan"), "seen:"),
        (lambda: E.Config(steps=0), "steps:"),
        (lambda: E.Config(lrs={"full": 1e-3}), "lrs:"),
        (lambda: E.Config(w_orth=-1.0), "w_orth:"),
        (lambda: E.PretrainConfig(lr=0.0), "lr:"),
    ],
)
def test_bad_inputs_raise_clear_errors(call, match):
    with pytest.raises((ValueError, TypeError), match=match):
        call()


def test_missing_foundation_file_says_how_to_make_it(tmp_path):
    with pytest.raises(FileNotFoundError, match="python -m lib.effort pretrain"):
        E.load_foundation(tmp_path / "none.pt")


# --- the stored foundation model and the command that makes it ----------------------


def test_stored_foundation_records_its_command(found):
    assert found["command"] == "python -m lib.effort pretrain"
    assert found["config"] == dataclasses.asdict(E.PRETRAIN)
    assert found["pretext_accuracy"] > 10 * found["pretext_chance"]
    assert E.FOUNDATION_FILE.stat().st_size < 10 * 2**20


def test_pretrain_command_reproduces_the_model_shrunk(found, tmp_path):
    cfg = dataclasses.replace(E.PRETRAIN, n_patches=1000, steps=80, ae_steps=3)
    state = E.pretrain(cfg)
    assert {k: v.shape for k, v in state["vit"].items()} == {
        k: v.shape for k, v in found["vit"].state_dict().items()
    }
    assert state["pretext_accuracy"] > 2 * state["pretext_chance"]
    path = E.save_foundation(state, tmp_path / "f.pt")
    assert E.load_foundation(path)["vit"].arch == found["vit"].arch


# --- the experiment, shrunk --------------------------------------------------------


def test_run_seed_shrunk(found):
    out = E.run_seed(TINY, 0, found)
    assert set(out) == set(E.CLAIM_ARMS) | {"real_vs_real"}
    for arm in E.CLAIM_ARMS:
        r = out[arm]
        assert 0 <= r["seen"] <= 1 and 0 <= r["unseen"] <= 1 and r["erank"] > 0
        assert r["curves"].shape == (TINY.steps, 2)
    assert out["effort"]["angle"] < out["principal"]["angle"]  # top subspace kept
    measured = E.claims.measure_from_runs(TINY, {0: out})
    assert set(measured) == {c.id for c in E.CLAIMS if c.rule is not None}


def test_full_path_shrunk(monkeypatch, found):
    monkeypatch.setattr(E, "load_foundation", lambda: found)
    res = E.run_experiment(TINY, "cpu")
    assert set(res) == {"runs", "claims"} and 0 in res["runs"]


def test_controls_separate_at_a_small_size(found):
    """The rank claim's control (full fine-tuning) at 40 steps on one seed: the
    features' effective rank falls further than Effort's. (The asymmetry does not
    separate from its control even at the chapter's size: not reproduced.)"""
    cfg = dataclasses.replace(TINY, n_train=300, n_val=50, n_test=50, steps=40,
                              batch=32)  # fmt: skip
    data = E.prepare_seed(cfg, 0, found)
    rank = {}
    for arm in ("effort", "full"):
        net, _ = E.train_detector(cfg, found["vit"], arm, cfg.lrs[arm], data, 0)
        rank[arm] = E.evaluate(net, data)["erank"]
    assert rank["effort"] > rank["full"]


def test_claims_interface():
    assert len(E.NOTEBOOK_SEEDS) >= 3 and not set(E.NOTEBOOK_SEEDS) & set(
        E.TUNING_SEEDS
    )
    ids = [c.id for c in E.CLAIMS]
    assert len(ids) == len(set(ids))
    for c in E.CLAIMS:
        if c.rule is not None:
            assert c.control


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cpu_cuda_parity(found):
    data = E.prepare_seed(TINY, 0, found)
    out = {}
    for dev in ("cpu", "cuda"):
        net, _ = E.train_detector(TINY, found["vit"], "effort", 1e-2, data, 0, dev)
        out[dev] = E.evaluate(net, data, dev)
    for k in E.GENERATORS:
        assert abs(out["cpu"][k] - out["cuda"][k]) < 1e-3


def test_every_arm_starts_from_the_same_head(found):
    data = E.prepare_seed(TINY, 0, found)
    heads = [
        E.train_detector(TINY, found["vit"], a, 1e-12, data, 0)[0].head.weight
        for a in ("probe", "lora4", "effort", "full")
    ]
    assert all(torch.allclose(heads[0], h, atol=1e-8) for h in heads)


def test_exercise_self_checks():
    from lib.effort import exercises as ex

    assert ex.ex1(73_776).ok and not ex.ex1(196_704)
    assert ex.ex2(196_608).ok and not ex.ex2(98_304)
    assert ex.ex3(4.0).ok and not ex.ex3(32)
    assert ex.ex4("full").ok and not ex.ex4("effort")
