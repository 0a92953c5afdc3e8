"""Tests of lib.kgmark: the data, every kernel against its naive reference (relational
adjacency, filtered link prediction, DDIM in its usual VP form, the key's injection and
distance, AUC), known answers (the learned mask finds the frequencies where the key
already agrees; inversion refinements shrink the round-trip error), the alignment's
permutation invariance, the attacks' bookkeeping, bad inputs, the FULL path shrunk,
the claims' bookkeeping, CUDA parity."""

import dataclasses

import pytest
import torch

from lib import kgmark as K
from lib.kgmark.reference import (
    naive_adjacency,
    naive_auc,
    naive_ddim_vp,
    naive_distance,
    naive_inject,
    naive_link_prediction,
)

TINY = dataclasses.replace(
    K.SMOKE, gae_steps=3, diff_steps=5, diff_batch=16, hidden=16, ddim_steps=3,
    mask_steps=(1, 2), mask_epochs=2, n_keys=3, n_lp=1, clusters=2, claim_seeds=(0,),
)  # fmt: skip


def g(seed=0):
    return torch.Generator().manual_seed(seed)


@pytest.fixture(scope="module")
def prepared():
    return K.prepare_seed(TINY, 0)


# --- data and the graph autoencoder ---------------------------------------------------


def test_umls_from_the_wheel():
    kg = K.load_kg("umls")
    assert (kg.n_entities, kg.n_relations) == (135, 46)
    assert [len(kg.train), len(kg.valid), len(kg.test)] == [5216, 652, 661]
    assert int(kg.train.max()) < 135 and kg.train.dtype == torch.long


def test_adjacency_matches_naive():
    kg = K.load_kg("nations")
    A = K.relational_adjacency(kg.train, kg.n_entities, kg.n_relations)
    assert torch.equal(A, naive_adjacency(kg.train, kg.n_entities, kg.n_relations))
    rows = A.sum(-1)
    assert torch.allclose(rows[rows > 0], torch.ones_like(rows[rows > 0]))


def test_link_prediction_matches_naive():
    kg = K.load_kg("nations")
    Z, R = (
        torch.randn(kg.n_entities, 8, generator=g(1)),
        torch.randn(110, 8, generator=g(2)),
    )
    ours, ref = K.link_prediction(Z, R, kg), naive_link_prediction(Z, R, kg)
    assert ours["mrr"] == pytest.approx(ref["mrr"], abs=1e-6)
    assert ours["hits10"] == pytest.approx(ref["hits10"], abs=1e-6)


def test_gae_learns_nations():
    kg = K.load_kg("nations")
    Z, R = K.train_gae(kg, dim=16, steps=60, generator=g(0))
    assert (
        K.link_prediction(Z, R, kg)["mrr"]
        > K.link_prediction(torch.randn_like(Z), R, kg)["mrr"]
    )


# --- diffusion ------------------------------------------------------------------------


def test_ddim_is_the_usual_vp_update():
    m = K.LatentDiffusion((2, 4, 4), 32, generator=g(0)).eval()
    s, n = K.sigma_grid(6), torch.randn(3, 2, 4, 4, generator=g(1))
    with torch.no_grad():
        assert torch.allclose(K.ddim_sample(m, n, s), naive_ddim_vp(m, n, s), atol=1e-5)


def test_fixed_point_refinement_makes_inversion_more_exact():
    m = K.LatentDiffusion((2, 4, 4), 32, generator=g(0)).eval()
    s, x0 = K.sigma_grid(8), torch.randn(4, 2, 4, 4, generator=g(2))
    err = [
        (K.ddim_sample(m, K.ddim_invert(m, x0, s, fp), s) - x0).abs().max()
        for fp in (0, 3)
    ]
    assert err[1] < 0.1 * err[0]


# --- the watermark --------------------------------------------------------------------


def test_inject_and_distance_match_naive():
    key = K.make_key((2, 8, 8), 10, 4, g(1))
    mask, n = K.ring_mask((2, 8, 8), 1.0, 2.1), torch.randn(5, 2, 8, 8, generator=g(2))
    ours, ref = K.inject(n, mask, key.signature), naive_inject(n, mask, key.signature)
    assert torch.allclose(ours, ref, atol=1e-5)
    d, ref = K.distance(n, mask, key.signature), naive_distance(n, mask, key.signature)
    assert torch.allclose(d, ref, atol=1e-4)


def test_injected_key_is_read_back_exactly():
    """The ring is symmetric under k → −k and the key is the FFT of real noise, so
    taking the real part loses nothing: the distance is zero and p is tiny."""
    key = K.make_key((4, 8, 8), 10, 4, g(3))
    mask = K.ring_mask((4, 8, 8), 1.0, 1.5)
    n = torch.randn(6, 4, 8, 8, generator=g(4))
    w = K.inject(n, mask, key.signature)
    assert K.distance(w, mask, key.signature).max() < 1e-4
    assert K.distance(n, mask, key.signature).min() > 1.0
    assert K.p_value(w, mask, key.signature) < 1e-6 < K.p_value(n, mask, key.signature)


def test_learned_mask_keeps_frequencies_where_the_key_already_agrees():
    x = torch.randn(1, 1, 2, 8, 8, generator=g(5))
    X = torch.fft.fft2(x)[0, 0]
    agree = K.ring_mask((2, 8, 8), 1.0, 1.5)  # 16 symmetric frequencies
    sig = torch.where(agree, X, torch.fft.fft2(torch.randn(2, 8, 8, generator=g(6))))
    m = K.learn_mask(x, x, sig, int(agree.sum()), epochs=60, generator=g(7))
    assert torch.equal(m, agree)


def test_random_mask_is_symmetric_and_sized():
    from lib.kgmark.watermark import _mirror, random_mask

    m = random_mask((4, 8, 8), 32, g(1))
    assert torch.equal(m, _mirror(m)) and 0 < int(m.sum()) <= 32


def test_alignment_ignores_node_ids():
    kg = K.load_kg("umls")
    key = K.make_key((4, 8, 8), 92, 64, g(1))
    X = K.structural_features(kg.train, 135, 46)
    perm = torch.randperm(135, generator=g(2))
    a = K.aligned_groups(X, 4, 4, key.direction)
    b = K.aligned_groups(X[perm], 4, 4, key.direction)
    assert torch.equal(perm[b], a)  # the same nodes in the same slots


def test_shuffle_keeps_each_nodes_profile():
    kg = K.load_kg("umls")
    Z = torch.randn(135, 64, generator=g(0))
    Z2, T2 = K.attack((Z, kg.train), "shuffle", TINY, g(1))
    X, X2 = K.structural_features(kg.train, 135, 46), K.structural_features(T2, 135, 46)
    idx = torch.cdist(Z2, Z).argmin(1)  # where each shuffled row came from
    assert torch.equal(X2, X[idx])
    Zd, Td = K.attack((Z, kg.train), "delete", TINY, g(2))
    assert len(Zd) == 135 - round(0.2 * 135) and int(Td[:, [0, 2]].max()) < len(Zd)
    Zi, Ti = K.attack((Z, kg.train), "insert", TINY, g(3))
    assert len(Zi) == 135 + round(0.1 * 135) and len(Ti) > len(kg.train)
    # reorder: every node kept, 10 % of the triples cut, the ids shuffled; the profiles
    # the alignment reads change, so (unlike a shuffle) it has something to recover
    Zr, Tr = K.attack((Z, kg.train), "reorder", TINY, g(4))
    m = len(kg.train)
    assert len(Zr) == 135 and len(Tr) == m - round(TINY.edge_delete * m)
    idx = torch.cdist(Zr, Z).argmin(1)
    assert not torch.equal(K.structural_features(Tr, 135, 46), X[idx])
    assert sorted(idx.tolist()) == list(range(135))


def test_auc_matches_naive():
    pos = torch.randn(20, generator=g(1)).tolist()
    neg = torch.randn(30, generator=g(2)).tolist()
    assert K.auc(pos, neg) == pytest.approx(naive_auc(pos, neg))
    assert K.auc([1.0, 1.0], [1.0]) == 0.5
    assert K.tpr_at_fpr([10.0, 11.0], [0.0, 1.0, 0.5]) == 1.0


# --- the pipeline at a tiny size ------------------------------------------------------


def test_detector_is_blind_to_a_permutation_only_with_alignment(prepared):
    """The controls separate: with alignment the score of a shuffled KG is the score
    of the KG itself; without it the latents are different ones."""
    P, T = prepared, prepared.kg.train
    key = K.make_key(P.shape, 92, 64, g(4))
    for name, same in (("kgmark", True), ("no-align", False)):
        s = K.SCHEMES[name]
        Zw, mask = K.watermark(P, key, s, TINY, g(5))
        a = K.detect(P, (Zw, T), key, mask, s, TINY)
        b = K.detect(P, K.attack((Zw, T), "shuffle", TINY, g(6)), key, mask, s, TINY)
        assert (abs(a - b) < 1e-4) == same


def test_full_path_shrunk():
    out = K.run_experiment(TINY)
    assert set(out["measured"]) == {c.id for c in K.CLAIMS if c.rule is not None}
    r = out["runs"]["0"]
    assert 0 <= r["kgmark"]["none"]["auc"] <= 1 and r["original"]["mrr"] > 0
    results = K.judge(
        {
            k: {kk: {int(s): x for s, x in vv.items()} for kk, vv in v.items()}
            for k, v in out["measured"].items()
        }
    )  # noqa: E501
    assert len(results) == len(K.CLAIMS)


# --- bad inputs -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "kw, err, words",
    [
        (dict(grid=(4, 8)), ValueError, "grid"),
        (dict(n_lp=30), ValueError, "n_lp"),
        (dict(mask_steps=(99,)), ValueError, "mask_steps"),
        (dict(dataset="fb15k"), ValueError, "dataset"),
        (dict(n_keys=1.5), TypeError, "n_keys"),
        (dict(delete=1.5), ValueError, "delete"),
    ],
)
def test_config_rejects_bad_values(kw, err, words):
    with pytest.raises(err, match=words):
        dataclasses.replace(K.SMOKE, **kw)


def test_bad_inputs_name_the_argument():
    with pytest.raises(ValueError, match="name"):
        K.load_kg("wordnet")
    with pytest.raises(ValueError, match="triples"):
        K.relational_adjacency(torch.zeros(4, 2, dtype=torch.long), 3, 1)
    m = K.LatentDiffusion((2, 4, 4), 8).eval()
    with pytest.raises(ValueError, match="fixed_point"):
        K.ddim_invert(m, torch.zeros(1, 2, 4, 4), K.sigma_grid(2), -1)
    with pytest.raises(ValueError, match="x0"):
        K.ddim_invert(m, torch.zeros(2, 4, 4), K.sigma_grid(2))
    with pytest.raises(ValueError, match="kind"):
        K.attack(
            (torch.zeros(3, 2), torch.zeros(0, 3, dtype=torch.long)), "melt", TINY, g()
        )
    with pytest.raises(ValueError, match="size"):
        K.learn_mask(
            torch.zeros(1, 1, 1, 2, 2),
            torch.zeros(1, 1, 1, 2, 2),
            torch.zeros(1, 2, 2, dtype=torch.complex64),
            0,
        )  # noqa: E501


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cuda_parity():
    m = K.LatentDiffusion((2, 4, 4), 32, generator=g(0)).eval()
    s, n = K.sigma_grid(5), torch.randn(3, 2, 4, 4, generator=g(1))
    cpu = K.ddim_sample(m, n, s)
    gpu = K.ddim_sample(m.cuda(), n.cuda(), s.cuda()).cpu()
    assert torch.allclose(cpu, gpu, atol=1e-4)
