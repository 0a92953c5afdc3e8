"""Tests of lib.itformer: known answers (the generated units and questions, the spliced
LM pass), every kernel against its naive reference, bad inputs, the FULL path shrunk
(a Hugging Face-style LM behind the adapter), the claims' bookkeeping, CUDA parity."""

import dataclasses
import math

import pytest
import torch

from lib import itformer as It
from lib.common.gpt import GPT, GPTConfig
from lib.itformer.claims import measure_from_runs
from lib.itformer.reference import (
    ita_naive,
    lcs_naive,
    lm_logits_naive,
    masked_patch_loss_naive,
)

TINY = It.Config(
    n_pretrain=60,
    n_train=60,
    n_test=40,
    enc_steps=2,
    lm_steps=2,
    steps=2,
    batch=8,
    d_enc=16,
    d_lm=16,
    d_bridge=16,
    claim_seeds=(0, 1),
)


def g(seed=0):
    return torch.Generator().manual_seed(seed)


# --- data: known answers -------------------------------------------------------------


def test_units_follow_their_faults():
    u = It.make_units(200, noise=1e-6, generator=g(1))
    x, fc, d = u["x"], u["fault_cycle"], u["fault_dir"]
    assert x.shape == (200, 6, 120)
    assert ((fc >= 0).sum(1) == u["n_fault"]).all()
    cl = u["cycle_len"]
    for i in range(20):
        for v in torch.nonzero(fc[i] >= 0).squeeze(1).tolist():
            w = int(fc[i, v])
            jump = x[i, v, w * cl] - x[i, v, w * cl - 1]
            assert jump * d[i, v] > 1.0  # a step of 1.6–2.4 in the fault's direction


def test_answers_match_the_ground_truth():
    u = It.make_units(50, generator=g(2))
    for i, qtype, q, a in It.make_qa(u, 3, g(3)):
        fc = u["fault_cycle"][i]
        if qtype == "any_fault":
            assert a == (["yes"] if (fc >= 0).any() else ["no"])
        if qtype == "onset":
            ch = int(q[7][1:])
            assert a == ([f"w{int(fc[ch])}"] if fc[ch] >= 0 else ["none"])
        if qtype == "describe":
            n = int((fc >= 0).sum())
            assert a[-1] in ("accel", "steady") and len(a) == 1 + max(3 * n, 1)


def test_encoding_masks_only_the_answer():
    v = It.make_vocab()
    qa = [(0, "any_fault", ["is", "there", "any", "fault", "?"], ["yes"])]
    e = It.encode_qa(qa, v, n_slots=4)
    words = v.decode(e["targets"][0][e["loss_mask"][0]])
    assert words == ["yes", "<eos>"]
    assert e["slot"].sum() == 4 and v.decode(e["ids"][0][e["slot"]]) == ["<ts>"] * 4
    f = It.encode_qa(qa, v, n_slots=4, facts=[["c1", "up"]])
    assert v.decode(f["ids"][0][f["slot"]]) == ["c1", "up", "<ts>", "<ts>"]


# --- kernels against their naive references ------------------------------------------


def test_ita_matches_loops():
    torch.manual_seed(0)
    ita = It.InstructTimeAttention(8, 2)
    p, mem = torch.randn(2, 3, 8), torch.randn(2, 4, 5, 8)
    with torch.no_grad():
        assert torch.allclose(ita(p, mem), ita_naive(ita, p, mem), atol=1e-5)
    w = ita.last_channel_weights
    assert w.shape == (2, 2, 3, 4) and torch.allclose(w.sum(-1), torch.ones(2, 2, 3))


def test_ita_reads_the_channel_its_query_picks():
    """A known answer: with identity projections and a query equal to channel 2's key,
    the channel stage puts (almost) all weight on channel 2."""
    ita = It.InstructTimeAttention(4, 1)
    for lin in (ita.cq, ita.ck, ita.cv):
        lin.weight.data = torch.eye(4)
    mem = torch.zeros(1, 3, 2, 4)
    mem[0, 2, :, 0] = 50.0
    p = torch.tensor([[[1.0, 0, 0, 0]]])
    ita(p, mem)
    assert ita.last_channel_weights[0, 0, 0, 2] > 0.99


@pytest.mark.parametrize("a,b", [("abcbdab", "bdcaba"), ("", "ab"), ("xyz", "xyz")])
def test_lcs_matches_brute_force(a, b):
    assert It.lcs_length(list(a), list(b)) == lcs_naive(list(a), list(b))


def test_rouge_l_known_values():
    assert It.rouge_l(["a", "b"], ["a", "b"]) == 1.0
    assert It.rouge_l(["a"], ["b"]) == 0.0
    assert abs(It.rouge_l(["a", "b", "c"], ["a", "c"]) - 0.8) < 1e-9


def test_corpus_bleu_known_values():
    hyp, ref = "the cat sat on the mat".split(), "the cat is on the mat".split()
    # clipped precisions 5/6, 3/5, 1/4 and equal lengths: (1/8)^(1/3) = 0.5
    assert It.corpus_bleu([hyp], [ref], max_n=3) == pytest.approx(0.5)
    assert It.corpus_bleu([hyp], [ref]) == 0.0  # no 4-gram in common
    assert It.corpus_bleu([ref, hyp], [ref, hyp]) == pytest.approx(1.0)
    # brevity penalty exp(1 - 4/2) on a short but exact hypothesis
    b = It.corpus_bleu([["a", "b"]], [["a", "b", "c", "d"]], max_n=1)
    assert b == pytest.approx(math.exp(-1))
    with pytest.raises(ValueError, match="refs"):
        It.corpus_bleu([hyp], [])
    with pytest.raises(TypeError, match="hyps"):
        It.corpus_bleu("a b", [ref])
    with pytest.raises(ValueError, match="max_n"):
        It.corpus_bleu([hyp], [ref], max_n=0)


def test_spliced_pass_equals_the_gpt():
    torch.manual_seed(0)
    gpt = GPT(GPTConfig(vocab_size=30, block_size=12, n_layer=2, n_head=2, d_model=16))
    ids = torch.randint(30, (3, 12))
    with torch.no_grad():
        got = It.lm_logits(gpt, gpt.tok(ids))
    assert torch.allclose(got, lm_logits_naive(gpt, ids), atol=1e-5)


def test_masked_patch_loss_matches_loops():
    torch.manual_seed(0)
    enc = It.TSEncoder(3, 4, 5, d=8, n_layer=1, n_head=2)
    x = torch.randn(2, 3, 20)
    mask = torch.rand(2, 3, 4, generator=g(1)) < 0.5
    fast = It.masked_patch_loss(enc, x, 0.5, None, mask=mask)
    assert torch.allclose(fast, masked_patch_loss_naive(enc, x, mask), atol=1e-6)


def test_tpe_distinguishes_cycles_and_channels():
    tpe = It.TPE(3, 4, 2, 8)
    out = tpe(torch.zeros(1, 3, 4, 8))
    assert not torch.allclose(out[0, 0, 0], out[0, 0, 2])  # another cycle
    assert not torch.allclose(out[0, 0, 0], out[0, 1, 0])  # another channel


def test_bridges_emit_k_tokens_and_read_the_question():
    cfg, B = TINY, 2
    h, q = torch.randn(B, 6, cfg.n_patches, 16), torch.randn(B, 10, 16)
    qm = torch.ones(B, 10, dtype=torch.bool)
    for name in It.BRIDGES:
        torch.manual_seed(0)
        out = It.make_bridge(name, cfg, 16, 16)(h, q, qm)
        assert out.shape == (B, cfg.n_slots, 16), name
    torch.manual_seed(0)
    it = It.make_bridge("itformer", cfg, 16, 16)
    assert not torch.allclose(it(h, q, qm), it(h, q + 1, qm))
    ni = It.make_bridge("no_instruct", cfg, 16, 16)
    assert torch.allclose(ni(h, q, qm), ni(h, q + 1, qm))


# --- bad inputs ----------------------------------------------------------------------


def test_bad_inputs_name_the_argument():
    with pytest.raises(ValueError, match="n_channels"):
        It.make_units(5, n_channels=9, generator=g())
    with pytest.raises(TypeError, match="n"):
        It.make_units(2.5, generator=g())
    with pytest.raises(ValueError, match="name"):
        It.make_bridge("mlp", TINY, 16, 16)
    with pytest.raises(ValueError, match="qa"):
        It.encode_qa([], It.make_vocab(), 4)
    with pytest.raises(TypeError, match="hyp"):
        It.rouge_l("a b", ["a"])
    with pytest.raises(ValueError, match="patch"):
        It.Config(patch=5)
    with pytest.raises(ValueError, match="lm"):
        It.Config(lm="gpt2")
    with pytest.raises(ValueError, match="p_facts"):
        It.Config(p_facts=1.5)


# --- the experiment at a tiny size, the FULL path shrunk -----------------------------


def test_tiny_run_and_claims_bookkeeping():
    runs = It.run_seeds(TINY, [0])
    for r in runs.values():
        assert set(It.BRIDGES) | {"itformer_shuffled"} <= set(r)
        assert 0 <= r["itformer"]["closed"] <= 1 and 0 <= r["text"]["rouge_l"] <= 1
    m = measure_from_runs(runs)
    assert set(m) == {c.id for c in It.CLAIMS if c.rule is not None}
    assert len(It.judge(m)) == len(It.CLAIMS)


def test_the_comparisons_are_judged_only_when_the_series_is_read():
    """reads-series gates the comparisons between bridges: where ITFormer scores the
    same with the right and a shuffled series, they are "not tested here"; where it
    reads the series, they are judged by their own rules."""
    from lib.itformer.claims import GATED

    seeds = (10, 11, 12)

    def measured(read: float) -> dict:
        m = {
            c.id: {
                "values": dict.fromkeys(seeds, 0.2),
                "control": dict.fromkeys(seeds, 0.0),
            }
            for c in It.CLAIMS
            if c.rule is not None
        }
        m["reads-series"] = {"values": dict.fromkeys(seeds, read), "control": {}}
        return m

    closed = {r.claim.id: r.verdict for r in It.judge(measured(0.0))}
    assert closed["reads-series"] == "not reproduced"
    assert all(closed[g] == "not tested here" for g in GATED)
    opened = {r.claim.id: r.verdict for r in It.judge(measured(0.2))}
    assert opened["reads-series"] == "partly reproduced"  # no negative control
    assert all(opened[g] in ("reproduced", "partly reproduced") for g in GATED)


def test_joint_training_equals_training_alone():
    bb = It.prepare_backbone(TINY)
    prep = It.prepare_seed(TINY, 3, backbone=bb)
    alone, _ = It.train_bridge("qformer", prep, TINY, 3)
    (_, joint), _ = It.train_bridges(
        [("linear", prep, 3, None, False), ("qformer", prep, 3, None, False)], TINY
    )
    for a, b in zip(alone.parameters(), joint.parameters()):
        assert torch.allclose(a, b, atol=1e-6)


def test_diagnostics_known_answers_and_bad_inputs():
    """feature_share: 0 when every unit has the same tokens, 1 when they average to 0;
    series_sensitivity: 0 for a bridge that never reads the series, > 0 for one that
    does."""
    same = torch.randn(1, 3, 4, 8).expand(5, -1, -1, -1)
    assert It.feature_share(same) == pytest.approx(0.0, abs=1e-6)
    h = torch.randn(4, 3, 4, 8)
    assert It.feature_share(torch.cat([h, -h])) == pytest.approx(1.0)
    bb = It.prepare_backbone(TINY)
    prep = It.prepare_seed(TINY, 3, backbone=bb)
    d_enc, d_lm = prep["h_test"].shape[-1], prep["lm"].d_model
    torch.manual_seed(0)
    text = It.make_bridge("text", TINY, d_enc, d_lm)
    linear = It.make_bridge("linear", TINY, d_enc, d_lm)
    assert It.series_sensitivity(text, prep) == 0.0
    assert It.series_sensitivity(linear, prep) > 0.05
    with pytest.raises(ValueError, match="h: expected at least 2 units"):
        It.feature_share(torch.randn(1, 3, 4, 8))
    with pytest.raises(ValueError, match="h"):
        It.feature_share(torch.randn(3, 4, 8))
    with pytest.raises(ValueError, match="n"):
        It.series_sensitivity(linear, prep, n=1)
    with pytest.raises(TypeError, match="bridge"):
        It.series_sensitivity("linear", prep)


def test_stored_bridges_command_at_a_shrunk_size(tmp_path):
    """The committed bridges' recipe at TINY size: saved and loaded, the bridges give
    the scores they were saved with; another seed or config is refused."""
    from lib.itformer import stored

    runs = It.run_seeds(TINY, [3], keep=True)
    stored.save_runs(runs, TINY, 3, tmp_path / "b.pt")
    back = stored.load_runs(TINY, 3, path=tmp_path / "b.pt")[3]
    for arm in It.BRIDGES:
        assert It.score(back["_bridges"][arm], back["_prep"]) == runs[3][arm], arm
    assert back["_params"] == runs[3]["_params"]
    assert stored.load_runs(TINY, 4, path=tmp_path / "b.pt") is None
    other = dataclasses.replace(TINY, steps=3)
    assert stored.load_runs(other, 3, path=tmp_path / "b.pt") is None
    with pytest.raises(ValueError, match="runs"):
        stored.save_runs({3: {"text": {}}}, TINY, 3, tmp_path / "c.pt")


def test_committed_bridges_are_fresh():
    """results/itformer_bridges.pt was written by the current code with SMOKE's
    settings (else: python -m lib.itformer.stored)."""
    from lib.itformer import stored

    assert stored.PATH.exists()
    st = torch.load(stored.PATH, map_location="cpu", weights_only=False)
    from lib.common.claims import lib_hash

    assert st["lib_hash"] == lib_hash("itformer"), "run python -m lib.itformer.stored"
    assert st["key"] == stored._key(It.SMOKE, It.NOTEBOOK_SEEDS[0])


class _FakeHF(torch.nn.Module):
    """A Hugging Face-style causal LM (get_input_embeddings, inputs_embeds=, .logits)
    around the shared GPT: the FULL path's adapter without downloading anything."""

    def __init__(self, vocab_size=100, d=16):
        super().__init__()
        self.gpt = GPT(
            GPTConfig(
                vocab_size=vocab_size, block_size=40, n_layer=1, n_head=2, d_model=d
            )
        )

    def get_input_embeddings(self):
        return self.gpt.tok

    def forward(self, inputs_embeds):
        return type("Out", (), {"logits": It.lm_logits(self.gpt, inputs_embeds)})()


def test_full_path_with_a_hugging_face_style_lm(monkeypatch):
    from lib.itformer import experiment

    vocab = It.make_vocab()
    fake = It.HFAdapter(_FakeHF(), torch.arange(len(vocab)) + 3).eval()
    fake.requires_grad_(False)
    monkeypatch.setattr(experiment, "load_smollm2", lambda v, d="cpu": fake)
    cfg = dataclasses.replace(TINY, lm="smollm2", n_head=2, bridge_layers=2)
    r = It.run_seed(cfg, 0, arms=("itformer", "qformer"), controls=False)
    assert 0 <= r["itformer"]["closed"] <= 1
    assert r["_lm_params"] == sum(p.numel() for p in fake.parameters())


def test_word_ids_are_distinct():
    class Tok:
        eos_token_id, bos_token_id, pad_token_id = 0, 1, None

        def __call__(self, text, add_special_tokens=False):
            return {"input_ids": [5 + len(text) % 3, 9]}  # many collisions

    ids = It.word_ids(Tok(), It.make_vocab())
    assert ids.unique().numel() == ids.numel()


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cuda_parity():
    torch.manual_seed(0)
    ita = It.InstructTimeAttention(8, 2)
    p, mem = torch.randn(2, 3, 8), torch.randn(2, 4, 5, 8)
    with torch.no_grad():
        cpu = ita(p, mem)
        gpu = ita.cuda()(p.cuda(), mem.cuda()).cpu()
    assert torch.allclose(cpu, gpu, atol=1e-4)


def test_backbone_command_rebuilds_an_equal_backbone(tmp_path):
    """The committed backbone's recipe at a shrunk size: built twice it is the same,
    and it survives the save/load round trip; the committed file matches SMOKE."""
    from lib.itformer import backbone as B

    a, b = It.build_backbone(TINY), It.build_backbone(TINY)
    for x, y in zip(a["lm"].parameters(), b["lm"].parameters()):
        assert torch.equal(x, y)
    B.save_backbone(a, TINY, tmp_path / "bb.pt")
    c = B.load_backbone(TINY, tmp_path / "bb.pt")
    for x, y in zip(a["enc"].parameters(), c["enc"].parameters()):
        assert torch.equal(x, y)
    assert (
        B.load_backbone(dataclasses.replace(TINY, noise=0.5), tmp_path / "bb.pt")
        is None
    )
    assert B.load_backbone(It.SMOKE) is not None  # results/itformer_backbone.pt
