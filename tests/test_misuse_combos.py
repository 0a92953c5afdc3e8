"""Tests of lib.misuse_combos: the task world's known answers, the padded greedy decoder
against one-prompt-at-a-time sampling, bag-of-words against a loop, the grid against
one attack per checkpoint pair, training and refusal learning at a small size, the
moderation classifier, bad inputs, the FULL path shrunk, the claims' controls, the CLI,
CUDA parity and the exercises."""

import dataclasses
import json
import os
import random
import subprocess
import sys

import pytest
import torch

from lib import misuse_combos as Mc
from lib.misuse_combos.reference import (
    bag_of_words_naive,
    generate_naive,
    grid_naive,
)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TINY = Mc.Config(
    max_digits=2,
    block_size=32,
    strong_d=16,
    strong_layers=1,
    strong_steps=6,
    weak_d=8,
    weak_layers=1,
    weak_steps=4,
    n_train_strong=64,
    n_train_weak=64,
    batch_size=16,
    strong_checkpoints=(0.5, 1.0),
    weak_checkpoints=(0.0, 1.0),
    n_eval=6,
    n_moderation=40,
    n_moderation_test=40,
    claim_seeds=(0, 1),
)


def _g(seed=0):
    return torch.Generator().manual_seed(seed)


def _model(d=16, layers=1, seed=0, block=32):
    return Mc.make_model(Mc.build_vocab(), d, layers, block, _g(seed)).eval()


# --- the task world ---


def test_numbers_and_goal_known_answers():
    assert Mc.number(123) == ["3", "2", "1"] and Mc.number(0) == ["0"]
    assert Mc.number(12, 4) == ["2", "1", "0", "0"]
    assert Mc.value(["3", "2", "1"]) == 123 and Mc.value([]) is None
    assert Mc.value(["1", "refuse"]) is None and Mc.value(["2", "1", "0"]) == 12
    assert Mc.h_sum(47, 85, 2) == ["2", "3", "1"]  # 132
    assert Mc.g_edit(["2", "3", "1", "9"]) == ["5", "6", "4", "2"]
    assert Mc.target(47, 85, 2) == ["5", "6", "4"]
    assert Mc.target(1, 2, 3) == ["6", "3", "3", "3"]  # 0003 shifted
    for n in (0, 7, 12345):
        assert Mc.value(Mc.number(n)) == n


def test_prompts_and_labels():
    assert Mc.add_prompt(12, 3, 2) == ["add", "2", "1", "+", "3", "0"]
    assert Mc.task_prompt(12, 3, "mask", 2) == ["mask", "add", "2", "1", "+", "3", "0"]
    rng = random.Random(0)
    vocab = Mc.build_vocab()
    for _ in range(300):
        p, label, ans = Mc.labelled_prompt(rng, 4)
        assert label == int(any(w in p for w in Mc.FORBIDDEN_WORDS))
        assert all(t in vocab.stoi for t in p + ans)
        sp, sa = Mc.strong_example(rng, 4)
        if any(w in sp for w in Mc.FORBIDDEN_WORDS):
            assert sa == [Mc.REFUSE]
        wp, wa = Mc.weak_example(rng, 4, 2)
        assert Mc.REFUSE not in wa  # the weak model never refuses
    t = Mc.random_task(random.Random(1), 3, 4)
    assert 100 <= t["a"] <= 999 and t["goal"] == Mc.target(t["a"], t["b"], 4)
    assert len(t["prompt"]) == 2 * 4 + 3  # a fixed layout


def test_encode_examples_masks_the_answer():
    vocab = Mc.build_vocab()
    x, y, m = Mc.encode_examples(vocab, [(["add", "1", "+", "2"], ["3"])], 16)
    toks = vocab.decode(x[0, : int((x[0] != 0).sum())])
    assert toks == ["<bos>", "add", "1", "+", "2", "=", "3"]
    assert vocab.decode(y[0][m[0]]) == ["3", "<eos>"]


# --- kernels against their naive references ---


def test_generate_matches_naive_sampling():
    vocab = Mc.build_vocab()
    model = _model(d=16, seed=3)
    with torch.no_grad():
        for p in model.parameters():
            p.normal_(0, 0.5, generator=_g(4))  # a model that does not emit eos at once
    rng = random.Random(2)
    prompts = [Mc.random_task(rng, rng.randint(1, 3), 3)["prompt"] for _ in range(9)]
    fast = Mc.generate(model, vocab, prompts, 6)
    slow = generate_naive(model, vocab, prompts, 6)
    assert fast == slow
    assert any(len(a) > 0 for a in fast)


def test_bag_of_words_matches_loop():
    vocab = Mc.build_vocab()
    prompts = [["add", "1", "1", "+", "1"], ["mask", "copy", "mask"], []]
    X = Mc.bag_of_words(vocab, prompts)
    assert X.tolist() == bag_of_words_naive(vocab, prompts)
    assert X[1, vocab.stoi["mask"]] == 2


def test_grid_matches_one_attack_per_pair():
    vocab = Mc.build_vocab()
    strong, weak = _model(16, seed=5), _model(8, seed=6)
    ss = {k: {n: v + 0.01 * k for n, v in strong.state_dict().items()} for k in (1, 2)}
    ws = {k: {n: v - 0.01 * k for n, v in weak.state_dict().items()} for k in (0, 3)}
    tasks = Mc.make_tasks(0, (2,), 5)
    fast = Mc.grid(ss, ws, strong, weak, vocab, tasks, 2, "cpu")
    slow = grid_naive(ss, ws, strong, weak, vocab, tasks, 2)
    assert fast == slow


# --- training, refusal, moderation ---


def test_training_learns_refusal_and_checkpoints():
    """A small strong model learns to refuse forbidden prompts and to answer benign
    ones (a learned behaviour, not a rule)."""
    cfg = dataclasses.replace(
        TINY, strong_d=32, strong_layers=2, strong_steps=150, n_train_strong=2000,
        lr=3e-3, strong_checkpoints=(0.0, 1.0),
    )  # fmt: skip
    vocab = Mc.build_vocab()
    model, states = Mc.train_model("strong", cfg, vocab, 0)
    assert sorted(states) == [0, 150]
    assert not torch.equal(states[0]["tok.weight"], states[150]["tok.weight"])
    final = Mc.at_checkpoint(model, states[150])
    tasks = Mc.make_tasks(3, (1, 2), 20)
    out = Mc.generate(final, vocab, [t["prompt"] for t in tasks], 4)
    assert sum(o[:1] == [Mc.REFUSE] for o in out) / len(out) > 0.9
    subs = Mc.generate(
        final, vocab, [Mc.add_prompt(t["a"], t["b"], 2) for t in tasks], 4
    )
    assert sum(o[:1] == [Mc.REFUSE] for o in subs) / len(subs) < 0.1


def test_unaligned_model_shares_prompts_and_answers_forbidden_ones():
    """The control model of alone-rare sees the strong model's prompts in the same
    order; only the forbidden ones get their real answer instead of a refusal."""
    a = Mc.training_set("strong", 300, 3, random.Random(4))
    u = Mc.training_set("unaligned", 300, 3, random.Random(4))
    assert [p for p, _ in a] == [p for p, _ in u]
    diff = [(x, y) for (_, x), (_, y) in zip(a, u) if x != y]
    assert diff and all(x == [Mc.REFUSE] and y != [Mc.REFUSE] for x, y in diff)
    for p, ans in u:
        if p[0] in Mc.FORBIDDEN_WORDS and p[1] == "add":
            assert ans == Mc.g_edit(Mc.h_sum(Mc.value(p[2:5]), Mc.value(p[6:9]), 3))
    cfg = dataclasses.replace(TINY, strong_checkpoints=(0.5, 1.0))
    _, states = Mc.train_model("unaligned", cfg, Mc.build_vocab(), 0)
    assert sorted(states) == [TINY.strong_steps]  # only the final checkpoint
    with pytest.raises(TypeError, match="aligned: expected a bool, got int"):
        Mc.strong_example(random.Random(0), 3, aligned=1)


def test_moderator_learns_the_labels():
    vocab = Mc.build_vocab()
    mod = Mc.Moderator(vocab).fit(*Mc.labelled_set(400, 3, random.Random(0)))
    p, lab = Mc.labelled_set(300, 3, random.Random(1))
    pred = mod.flag(p)
    assert (pred == torch.tensor(lab, dtype=torch.bool)).double().mean() > 0.95
    assert not mod.flag([Mc.add_prompt(123, 456, 3)]).any()


# --- bad inputs ---


@pytest.mark.parametrize(
    "call, err, name",
    [
        (lambda: Mc.number(-1), ValueError, "n"),
        (lambda: Mc.number(1.5), TypeError, "n"),
        (lambda: Mc.g_edit(["1", "x"]), ValueError, "digits"),
        (lambda: Mc.task_prompt(1, 2, "add", 2), ValueError, "word"),
        (lambda: Mc.number(123, 2), ValueError, "width"),
        (lambda: Mc.random_task(random.Random(0), 3, 2), ValueError, "width"),
        (lambda: Mc.draw_operands(random.Random(0), 0), ValueError, "d"),
        (lambda: Mc.training_set("medium", 3, 2, random.Random(0)), ValueError, "kind"),
        (lambda: Mc.Config(max_digits=0), ValueError, "max_digits"),
        (lambda: Mc.Config(block_size=20), ValueError, "block_size"),
        (lambda: Mc.Config(lr=0), ValueError, "lr"),
        (lambda: Mc.Config(weak_checkpoints=(1.5,)), ValueError, "weak_checkpoints"),
        (lambda: Mc.Config(claim_seeds=(1, 1)), ValueError, "claim_seeds"),
        (lambda: Mc.Config(n_eval=True), TypeError, "n_eval"),
        (lambda: Mc.generate(_model(), Mc.build_vocab(), [], 3), ValueError, "prompts"),
        (
            lambda: Mc.generate(_model(), Mc.build_vocab(), [["add"] * 30], 5),
            ValueError,
            "max_new",
        ),
        (
            lambda: Mc.encode_examples(Mc.build_vocab(), [(["add"] * 40, ["1"])], 16),
            ValueError,
            "block_size",
        ),
        (lambda: Mc.Moderator(Mc.build_vocab()).flag([["add"]]), RuntimeError, "fit"),
        (
            lambda: Mc.Moderator(Mc.build_vocab()).fit([["add"], ["add"]], [0, 0]),
            ValueError,
            "labels",
        ),
        (
            lambda: Mc.make_model(Mc.build_vocab(), 8, 1, 16, None),
            TypeError,
            "generator",
        ),
    ],
)
def test_bad_inputs(call, err, name):
    with pytest.raises(err, match=name):
        call()


def test_train_checkpoints_bad_inputs():
    m = _model()
    x = torch.zeros(4, 5, dtype=torch.long)
    kw = dict(steps=3, batch_size=2, lr=1e-3, generator=_g())
    with pytest.raises(ValueError, match="checkpoints"):
        Mc.train_checkpoints(m, x, x, x.bool(), checkpoints=[5], **kw)
    with pytest.raises(ValueError, match="steps"):
        Mc.train_checkpoints(m, x, x, x.bool(), checkpoints=[0], **(kw | {"steps": 0}))


# --- FULL path, claims, CLI, CUDA ---


def test_presets():
    assert Mc.SMOKE.seed == Mc.FULL.seed == 0
    assert Mc.FULL.strong_steps > Mc.SMOKE.strong_steps
    assert Mc.FULL.max_digits >= Mc.SMOKE.max_digits
    assert not set(Mc.NOTEBOOK_SEEDS) & set(Mc.TUNING_SEEDS)


def test_full_path_shrunk():
    """FULL's code path (run_experiment) with every size cut."""
    cfg = dataclasses.replace(
        Mc.FULL, **{f.name: getattr(TINY, f.name) for f in dataclasses.fields(TINY)}
    )
    res = Mc.run_experiment(cfg, "cpu")
    assert set(res) == {"runs", "claims"} and set(res["runs"]) == {"0", "1"}
    ids = {c.id for c in Mc.CLAIMS if c.rule is not None}
    assert set(res["claims"]) == ids
    for v in res["claims"].values():
        assert set(v["values"]) == {0, 1} and set(v["control"]) == {0, 1}
    json.dumps(res)  # plain numbers only
    r = res["runs"]["0"]
    for c in Mc.CONDITIONS:
        assert len(r["grid"][c]) == 2 and len(r["grid"][c][0]) == 2
        assert all(0 <= v <= 1 for row in r["grid"][c] for v in row)


def _fake_run(
    manual, auto, gold, strong, weak, refused, sub_refused, flags, unaligned=0.7,
    strong_self=0.0, unaligned_self=0.7,
):  # fmt: skip
    d = [1, 2]
    by = {
        "strong": [0.0, strong], "weak": [0.9, weak], "manual": [1.0, manual],
        "auto": [1.0, auto], "auto_gold": [1.0, gold], "refused": [refused] * 2,
        "sub_refused": [sub_refused] * 2, "sub_ok": [1.0, 1.0],
        "self": [0.0, strong_self],
    }  # fmt: skip
    return {
        "digits": d, "by_d": by,
        "unaligned_by_d": {"alone": [1.0, unaligned], "refused": [0.0, 0.0],
                           "self": [1.0, unaligned_self]},
        "control_by_d": by | {"manual": [0.9, weak], "auto": [0.9, weak],
                              "refused": [0.0, 0.0], "sub_refused": [0.0, 0.0]},
        "grid": {
            "manual": [[0.0, 0.1, 0.2], [0.0, 0.2, manual]],
            "auto": [[0.0, 0.0, 0.0], [0.0, 0.0, auto]],
            "strong": [[0.0] * 3, [0.0] * 3], "weak": [[0.0] * 3, [0.0] * 3],
            "control_axes": {"row": [0.0, 0.0, 0.0], "col": [0.0, 0.0, 0.01]},
        },
        "strong_steps": [10, 20], "weak_steps": [0, 5, 10],
        "moderation": {"manual_strong": flags, "auto_strong": flags, "task": 0.97},
    }  # fmt: skip


def test_claim_statistics_and_controls_separate():
    """On runs where the combination works, every tested claim holds and its control
    fails; with the strong model's capability removed the combination claims fail."""
    runs = {s: _fake_run(0.8, 0.6, 0.8, 0.0, 0.02, 1.0, 0.0, 0.0) for s in (1, 2, 3)}
    res = {r.claim.id: r for r in Mc.judge(Mc.measure_claims(None, (1, 2, 3),
                                                             runs=runs))}  # fmt: skip
    for cid, r in res.items():
        if r.summary is None:
            continue
        assert r.claim.rule.holds(r.summary.mean), cid
        assert not r.control_holds, cid
    bad = {s: _fake_run(0.03, 0.02, 0.03, 0.0, 0.02, 1.0, 0.0, 0.5) for s in (1, 2, 3)}
    res = {r.claim.id: r for r in Mc.judge(Mc.measure_claims(None, (1, 2, 3),
                                                             runs=bad))}  # fmt: skip
    for cid in ("combo-beats", "auto-works", "moderation-passes"):
        assert not res[cid].claim.rule.holds(res[cid].summary.mean), cid
    # scales-both fails on a flat last row (success that does not grow with the
    # weak model's training)
    assert not res["scales-both"].claim.rule.holds(res["scales-both"].summary.mean)
    # alone-rare: when the strong model without refusal training also fails, alone
    # and decomposing the task itself, the control holds and the claim is no evidence
    weak_u = {s: _fake_run(0.8, 0.6, 0.8, 0.0, 0.02, 1.0, 0.0, 0.0, unaligned=0.03,
                           unaligned_self=0.05)
              for s in (1, 2, 3)}  # fmt: skip
    res = {r.claim.id: r for r in Mc.judge(Mc.measure_claims(None, (1, 2, 3),
                                                             runs=weak_u))}  # fmt: skip
    assert res["alone-rare"].control_holds
    assert res["alone-rare"].verdict == "partly reproduced"
    # ... and when the aligned strong model decomposes the task itself and succeeds
    # (it does not refuse the edit), each model alone does not fail: the claim fails
    leaky = {s: _fake_run(0.8, 0.6, 0.8, 0.0, 0.02, 1.0, 0.0, 0.0, strong_self=0.6)
             for s in (1, 2, 3)}  # fmt: skip
    res = {r.claim.id: r for r in Mc.judge(Mc.measure_claims(None, (1, 2, 3),
                                                             runs=leaky))}  # fmt: skip
    assert not res["alone-rare"].claim.rule.holds(res["alone-rare"].summary.mean)
    assert not res["combo-beats"].claim.rule.holds(res["combo-beats"].summary.mean)
    assert res["auto-below-manual"].verdict == "not tested here"


def test_spearman_known_answers():
    from lib.misuse_combos.claims import spearman

    assert spearman([1, 2, 3, 4], [0.0, 0.1, 0.5, 0.9]) == pytest.approx(1.0)
    assert spearman([1, 2, 3, 4], [0.9, 0.5, 0.1, 0.0]) == pytest.approx(-1.0)
    assert spearman([1, 2, 3], [0.2, 0.2, 0.2]) == 0.0  # constant: no rise
    assert spearman([1, 2, 3, 4], [0, 0, 0.5, 0.5]) == pytest.approx(0.894, abs=1e-3)
    with pytest.raises(ValueError, match="x, y: expected"):
        spearman([1, 2], [1.0])


def test_weak_in_strong_place_control_at_small_size():
    """The control attack (weak + weak) runs on the same tasks and its strong-alone
    condition never refuses (the weak model was never taught to)."""
    r = Mc.seed_run(TINY, 0)
    assert sum(r["control_by_d"]["refused"]) == 0.0
    assert set(r["moderation"]) >= {"task", "manual_strong", "auto_strong", "accuracy"}


def test_tune_weak_steps_shrunk():
    """The tuning table has every budget and seed, and at the seed run's own budget it
    gives the weak model's edit skill that the seed run measures on the hard tasks."""
    out = Mc.tune_weak_steps(TINY, (0, 1), (2, TINY.weak_steps))
    assert set(out) == {2, TINY.weak_steps}
    assert all(set(v) == {0, 1} for v in out.values())
    assert all(0 <= a <= 1 for v in out.values() for a in v.values())
    r = Mc.seed_run(TINY, 0)
    assert out[TINY.weak_steps][0] == r["by_d"]["weak_edit"][-1]
    with pytest.raises(ValueError, match="options: expected at least one value"):
        Mc.tune_weak_steps(TINY, (0,), ())
    with pytest.raises(ValueError, match="trained: expected"):
        Mc.seed_run(TINY, 0, trained={"strong": None})


def test_choose_weak_steps_rule():
    t = {320: {0: 1.0, 1: 0.2}, 400: {0: 0.95, 1: 0.9}, 480: {0: 1.0, 1: 1.0}}
    assert Mc.choose_weak_steps(t) == 400
    assert Mc.choose_weak_steps(t, gate=0.99) == 480
    assert Mc.choose_weak_steps({320: {0: 0.1}, 400: {0: 0.5}}) == 400  # none passes
    with pytest.raises(ValueError, match="table: expected at least one budget"):
        Mc.choose_weak_steps({})
    with pytest.raises(TypeError, match="table"):
        Mc.choose_weak_steps([1])


def test_worker_processes_give_the_same_runs():
    one = Mc.run_seeds(TINY, (0, 1), processes=1)
    two = Mc.run_seeds(TINY, (0, 1), processes=2)
    assert json.dumps(one, sort_keys=True) == json.dumps(two, sort_keys=True)


# --- the stored weak models of the notebook seeds and the command that makes them ----


def test_weak_models_command_reproduces_training_shrunk(tmp_path):
    """``python -m lib.misuse_combos weak-models`` (at TINY size) stores checkpoints
    bit-identical to a fresh training, and runs that load them equal runs that train
    everything."""
    code = (
        "import runpy, sys, lib.misuse_combos as b; "
        f"b.SMOKE = b.{TINY!r}; "
        f"sys.argv = ['lib.misuse_combos', 'weak-models', '--out', "
        f"{str(tmp_path / 'w.pt')!r}]; "
        "runpy.run_module('lib.misuse_combos', run_name='__main__', alter_sys=True)"
    )
    env = os.environ | {"TQDM_DISABLE": "1"}
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True,
        text=True, timeout=300,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    stored = Mc.load_weak_models(TINY, (0, 1), tmp_path / "w.pt")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # the command trains in one-thread workers
    try:
        fresh_states = {
            s: Mc.train_model("weak", TINY, Mc.build_vocab(), s)[1] for s in (0, 1)
        }
    finally:
        torch.set_num_threads(threads)
    for s in (0, 1):
        fresh = fresh_states[s]
        _, got = stored[s]["weak"]
        assert sorted(got) == sorted(fresh)
        for k in fresh:
            assert all(torch.equal(fresh[k][n], got[k][n]) for n in fresh[k])
    loaded = Mc.run_seeds(TINY, (0, 1), processes=2, pretrained=stored)
    trained = Mc.run_seeds(TINY, (0, 1), processes=1)
    assert json.dumps(loaded, sort_keys=True) == json.dumps(trained, sort_keys=True)
    one = Mc.run_seeds(TINY, (0, 1), processes=1, pretrained={1: stored[1]})
    assert json.dumps(one, sort_keys=True) == json.dumps(trained, sort_keys=True)


def test_load_weak_models_refuses_other_settings(tmp_path):
    states = Mc.train_weak_models(TINY, (0,))
    path = Mc.save_weak_models(states, TINY, tmp_path / "w.pt")
    with pytest.raises(ValueError, match=r"cfg: the stored weak models .*weak_steps"):
        Mc.load_weak_models(dataclasses.replace(TINY, weak_steps=5), (0,), path)
    with pytest.raises(ValueError, match=r"seeds: expected seeds among the stored"):
        Mc.load_weak_models(TINY, (0, 3), path)
    with pytest.raises(FileNotFoundError, match="weak-models"):
        Mc.load_weak_models(TINY, (0,), tmp_path / "none.pt")
    with pytest.raises(ValueError, match=r"pretrained: expected"):
        Mc.run_seeds(TINY, (0,), pretrained={5: {}})
    with pytest.raises(ValueError, match=r"pretrained\[0\]: expected"):
        Mc.run_seeds(TINY, (0,), pretrained={0: {"weak": None}})


def test_stored_weak_models_match_the_notebook_and_the_code():
    """The committed file holds the notebook seeds' weak models at SMOKE's settings,
    trained by the code as it is now (re-run the command when the training code
    changes)."""
    from lib.misuse_combos.pretrained import COMMAND, training_code_digest

    blob = torch.load(Mc.WEAK_FILE, map_location="cpu", weights_only=True)
    assert blob["command"] == COMMAND
    assert sorted(blob["states"]) == sorted(Mc.SMOKE.claim_seeds)
    assert blob["code"] == training_code_digest(), f"stale: run `{COMMAND}`"
    stored = Mc.load_weak_models(Mc.SMOKE, Mc.SMOKE.claim_seeds)  # settings match
    steps = [round(f * Mc.SMOKE.weak_steps) for f in Mc.SMOKE.weak_checkpoints]
    assert all(sorted(v["weak"][1]) == steps for v in stored.values())


def test_cli_smoke_writes_smoke_file(tmp_path):
    code = (
        "import runpy, sys, lib.misuse_combos as b; "
        f"b.SMOKE = b.{TINY!r}; "
        "sys.argv = ['lib.misuse_combos', '--preset', 'SMOKE', '--device', 'cpu']; "
        "runpy.run_module('lib.misuse_combos', run_name='__main__', alter_sys=True)"
    )
    env = os.environ | {"BOOK_RESULTS_DIR": str(tmp_path), "TQDM_DISABLE": "1"}
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True,
        text=True, timeout=300,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert not (tmp_path / "misuse_combos.json").exists()
    data = json.loads((tmp_path / "misuse_combos.smoke.json").read_text())
    assert data["preset"] == "SMOKE"


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cpu_and_cuda_agree():
    vocab = Mc.build_vocab()
    model = _model(d=16, seed=7)
    with torch.no_grad():
        for p in model.parameters():
            p.normal_(0, 0.5, generator=_g(8))
    rng = random.Random(3)
    prompts = [Mc.random_task(rng, 2, 2)["prompt"] for _ in range(6)]
    x = torch.tensor([vocab.encode(["<bos>"] + prompts[0])])
    a = model(x)
    b = model.to("cuda")(x.cuda()).cpu()
    assert torch.allclose(a, b, atol=1e-4)
    assert Mc.generate(model, vocab, prompts, 4, "cuda") == Mc.generate(
        model.cpu(), vocab, prompts, 4, "cpu"
    )


def test_exercise_self_checks():
    from lib.misuse_combos import exercises as X

    assert X.ex1(465).ok and not X.ex1(132).ok
    assert X.ex2(0.684).ok and not X.ex2(0.9).ok
    rate = X.unseen_word_flag_rate()
    assert 0.0 <= rate <= 1.0 and X.ex3(rate).ok
    assert X.ex4("edit").ok and not X.ex4("none").ok
