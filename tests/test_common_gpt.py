"""Tests for lib.common.gpt: shapes, causality, the loss against a hand computation,
sampling, training on a learnable sequence, and input errors."""

import pytest
import torch
import torch.nn.functional as F

from lib.common.gpt import (
    GPT,
    Block,
    CausalSelfAttention,
    GPTConfig,
    MLP,
    Vocab,
    fit_lm,
    lm_loss,
    sample,
)


def small(**kw):
    torch.manual_seed(0)
    return GPT(
        GPTConfig(vocab_size=11, block_size=16, n_layer=2, n_head=2, d_model=16, **kw)
    )


def test_shapes_and_tied_head():
    m = small()
    idx = torch.randint(0, 11, (3, 7))
    assert m(idx).shape == (3, 7, 11)
    assert m.head.weight.data_ptr() == m.tok.weight.data_ptr()


def test_causal_future_does_not_leak():
    m = small().eval()
    a = torch.randint(0, 11, (1, 10))
    b = a.clone()
    b[0, 6:] = (b[0, 6:] + 1) % 11
    la, lb = m(a), m(b)
    assert torch.allclose(la[:, :6], lb[:, :6], atol=1e-6)
    assert not torch.allclose(la[:, 6:], lb[:, 6:])


def test_attention_matches_naive():
    torch.manual_seed(1)
    att = CausalSelfAttention(8, 2).eval()
    x = torch.randn(2, 5, 8)
    q, k, v = att.qkv(x).split(8, -1)
    heads = lambda t: t.view(2, 5, 2, 4).transpose(1, 2)
    q, k, v = heads(q), heads(k), heads(v)
    s = q @ k.transpose(-1, -2) / 2.0
    s = s.masked_fill(torch.triu(torch.ones(5, 5, dtype=torch.bool), 1), float("-inf"))
    ref = att.proj((s.softmax(-1) @ v).transpose(1, 2).reshape(2, 5, 8))
    assert torch.allclose(att(x), ref, atol=1e-6)


def test_block_is_two_pre_ln_residuals():
    torch.manual_seed(3)
    blk = Block(8, 2, mlp_mult=3)
    assert isinstance(blk.ffn, MLP) and blk.ffn.fc.out_features == 24
    x = torch.randn(1, 3, 8)
    h = x + blk.attn(blk.ln1(x))
    assert torch.allclose(blk(x), h + blk.ffn(blk.ln2(h)), atol=1e-6)


def test_lm_loss_reductions():
    torch.manual_seed(2)
    logits, tgt = torch.randn(2, 4, 5), torch.randint(0, 5, (2, 4))
    mask = torch.tensor([[1, 1, 0, 0], [0, 0, 0, 0]], dtype=torch.bool)
    ce = F.cross_entropy(logits.reshape(8, 5), tgt.reshape(8), reduction="none").view(
        2, 4
    )
    assert torch.allclose(lm_loss(logits, tgt), ce.mean())
    assert torch.allclose(lm_loss(logits, tgt, mask), ce[0, :2].mean())
    ps = lm_loss(logits, tgt, mask, reduction="per_sample")
    assert torch.allclose(ps, torch.stack([ce[0, :2].mean(), torch.tensor(0.0)]))
    assert torch.allclose(lm_loss(logits, tgt, mask, reduction="none"), ce * mask)


def test_vocab_roundtrip_and_specials():
    v = Vocab(list("abca"))
    assert len(v) == 6 and (v.pad_id, v.bos_id, v.eos_id) == (0, 1, 2)
    assert v.decode(v.encode("cab")) == ["c", "a", "b"]
    assert v.decode(torch.tensor(v.encode(["a"]))) == ["a"]
    with pytest.raises(ValueError, match="seq"):
        v.encode("z")
    with pytest.raises(ValueError, match="<eos>"):
        Vocab(["a"], specials=("<pad>",)).eos_id


def test_fit_and_sample_learn_a_cycle():
    # the sequence 3,4,5,6,3,4,5,6,... is learnable: greedy sampling must continue it
    m = small()
    seq = torch.tensor([3, 4, 5, 6] * 5)
    rows = torch.stack([seq[i : i + 9] for i in range(8)])
    g = torch.Generator().manual_seed(0)
    losses = fit_lm(
        m, rows[:, :-1], rows[:, 1:], steps=150, batch_size=8, lr=3e-3, generator=g
    )
    assert losses[-1] < 0.1 * losses[0]
    out = sample(m, torch.tensor([[3, 4]]), 6, temperature=0)
    assert out[0].tolist() == [3, 4, 5, 6, 3, 4, 5, 6]


def test_sample_reproducible_and_eos():
    m = small()
    p = torch.zeros(4, 1, dtype=torch.long)
    a = sample(m, p, 8, generator=torch.Generator().manual_seed(3))
    b = sample(m, p, 8, generator=torch.Generator().manual_seed(3))
    assert torch.equal(a, b) and a.shape == (4, 9)
    c = sample(m, p, 8, generator=torch.Generator().manual_seed(3), eos_id=int(a[0, 1]))
    first = (c[0, 1:] == a[0, 1]).nonzero()[0, 0]
    assert (c[0, 1 + first :] == a[0, 1]).all()
    assert sample(m, p, 4, top_k=1).equal(sample(m, p, 4, temperature=0))


def test_bad_inputs():
    with pytest.raises(ValueError, match="d_model"):
        GPTConfig(vocab_size=5, block_size=4, n_head=3, d_model=16)
    with pytest.raises(TypeError, match="vocab_size"):
        GPTConfig(vocab_size=5.0, block_size=4)
    with pytest.raises(TypeError, match="cfg"):
        GPT({"vocab_size": 5})
    m = small()
    with pytest.raises(ValueError, match="idx"):
        m(torch.zeros(1, 17, dtype=torch.long))
    with pytest.raises(ValueError, match="reduction"):
        lm_loss(
            torch.randn(1, 2, 3), torch.zeros(1, 2, dtype=torch.long), reduction="sum"
        )
    with pytest.raises(ValueError, match="targets"):
        lm_loss(torch.randn(1, 2, 3), torch.zeros(1, 3, dtype=torch.long))
    with pytest.raises(ValueError, match="temperature"):
        sample(m, torch.zeros(1, 1, dtype=torch.long), 2, temperature=-1)
    with pytest.raises(TypeError, match="generator"):
        fit_lm(
            m,
            torch.zeros(2, 3, dtype=torch.long),
            torch.zeros(2, 3, dtype=torch.long),
            steps=1,
            batch_size=1,
            lr=1e-3,
            generator=0,
        )


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cuda_parity():
    m = small().eval()
    idx = torch.randint(0, 11, (2, 9))
    assert torch.allclose(m(idx), m.to("cuda")(idx.cuda()).cpu(), atol=1e-4)


def test_per_sample_grads_under_vmap_match_loop():
    import warnings
    from torch.func import functional_call, grad, vmap

    m = small().eval()
    params = {k: v.detach() for k, v in m.named_parameters()}

    def loss(p, x, y):
        return lm_loss(functional_call(m, p, (x[None],)), y[None])

    x, y = torch.randint(0, 11, (3, 8)), torch.randint(0, 11, (3, 8))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no slow-path fallback warning
        g = vmap(grad(loss), in_dims=(None, 0, 0))(params, x, y)
    for i in range(3):
        names, ps = zip(*m.named_parameters())
        ref = torch.autograd.grad(loss(dict(m.named_parameters()), x[i], y[i]), ps)
        for n, r in zip(names, ref):
            assert torch.allclose(g[n][i], r, atol=1e-5), n


def test_math_attention_equals_fused():
    att = CausalSelfAttention(8, 2).eval()
    x = torch.randn(2, 5, 8)
    fused = att(x)
    att.impl = "math"
    assert torch.allclose(att(x), fused, atol=1e-6)


def test_sample_banned_and_early_stop():
    m = small()
    p = torch.zeros(3, 1, dtype=torch.long)
    out = sample(
        m, p, 10, generator=torch.Generator().manual_seed(0), banned=(0, 1, 2, 3)
    )
    assert not torch.isin(out[:, 1:], torch.tensor([0, 1, 2, 3])).any()
    # greedy decoding whose first token is eos everywhere: stops at once, eos-filled to
    # full length
    first = int(sample(m, p, 1, temperature=0)[0, 1])
    out = sample(m, p, 6, temperature=0, eos_id=first)
    assert out.shape == (3, 7) and (out[:, 1:] == first).all()
