"""Tests of lib.proofaug: the checker, the tactics, the semi-proof and coarsening rules,
the budget curve against its naive reference, the proposer's encoding, bad inputs, the
CLI and CPU/CUDA parity."""

import os
import random
import subprocess
import sys

import numpy as np
import pytest
import torch

from lib import proofaug as PA
from lib.proofaug.reference import budget_curve_naive

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STMT = PA.Statement(
    ("a", "b"),
    "real",
    (("h0", "a + b = 5"), ("h1", "a * b = 6")),
    "a ** 2 + b ** 2 = 13",
)
GOLD = "\n".join(
    [
        "proof",
        "have h2 : ( a + b ) ** 2 = 5 ** 2 by simp",
        "have h3 : a ** 2 + b ** 2 = ( a + b ) ** 2 - 2 * ( a * b ) by algebra",
        "show ?thesis by arith",
        "qed",
    ]
)


@pytest.fixture(scope="module")
def prover():
    return PA.Prover(600, 1000)


# --- language -------------------------------------------------------------------------


def test_tokenize_and_steps_known_answer():
    assert PA.tokenize("have h2 : ( a + b ) ** 2 = 25 by simp") == [
        "have",
        "h2",
        ":",
        "(",
        "a",
        "+",
        "b",
        ")",
        "**",
        "2",
        "=",
        "25",
        "by",
        "simp",
    ]
    steps = PA.parse_steps(GOLD)
    assert steps[:3] == ["proof", "have h2 : ( a + b ) ** 2 = 5 ** 2", "by simp"]
    assert PA.join_steps(steps) == GOLD


def test_levels_follow_isabelle():
    st = PA.initial_state(STMT)
    assert (st.mode, st.level) == ("prove", 1)
    levels = []
    for step in PA.parse_steps(GOLD):
        levels.append(st.level)
        st = PA.run_step(st, step, STMT, lambda *a: True).state
    assert levels == [1, 2, 3, 2, 3, 2, 3, 2] and st.done and st.level == 0


def test_checker_errors_by_mode(prover):
    st = PA.initial_state(STMT)
    assert (
        PA.run_step(st, "have h : a = 1", STMT, prover).kind == "illegal"
    )  # prove mode
    st = PA.run_step(st, "proof", STMT, prover).state
    assert PA.run_step(st, "by simp", STMT, prover).kind == "illegal"  # state mode
    assert PA.run_step(st, "qed", STMT, prover).kind == "structure"  # nothing shown
    assert PA.run_step(st, "have h : a + = 1", STMT, prover).kind == "parse"
    assert PA.run_step(st, "show a = 1", STMT, prover).kind == "structure"  # wrong goal


def test_gold_proof_checks_and_whole_theorem_needs_structure(prover):
    assert PA.check_proof(STMT, GOLD, prover)
    assert not PA.check_proof(STMT, GOLD.replace("5 ** 2", "24"), prover)


# --- tactics --------------------------------------------------------------------------


def _f(text, vars_=("a", "b"), dom="real"):
    return PA.parse_formula(text, vars_, dom)


def test_tactics_known_answers(prover):
    hyps = (("h0", _f("a + b = 5")), ("h1", _f("a * b = 6")))
    call = lambda goal, tac: prover(hyps, _f(goal), tac, STMT)
    assert call("( a + b ) ** 2 = 5 ** 2", "simp")
    assert call("a ** 2 - b ** 2 = ( a - b ) * ( a + b )", "algebra")
    assert not call("a ** 2 = b", "algebra")
    assert call("( a - b ) ** 2 >= 0", "sos") and not call("a - b >= 0", "sos")
    assert call("2 + 2 = 4", "eval") and not call("2 + 2 = 5", "eval")
    assert not call("a = 7", "hammer")  # false claims never pass


def test_z3_rlimit_is_deterministic_and_monotone():
    hyps, goal = [_f("a + b = 5"), _f("a * b = 6")], _f("a ** 3 + b ** 3 = 35")
    runs = [PA.z3_prove(hyps, goal, ("a", "b"), "real", 100000) for _ in range(3)]
    assert runs == [True] * 3
    assert not PA.z3_prove(hyps, goal, ("a", "b"), "real", 10)


def test_prover_cache_counts_each_query_once():
    p = PA.Prover(600, 1000)
    hyps = (("h0", _f("a + b = 5")),)
    for _ in range(3):
        p(hyps, _f("a + b + 1 = 6"), "arith", STMT)
    assert p.calls == 1


# --- ProofAug -------------------------------------------------------------------------


def test_gold_is_init_proof(prover):
    o = PA.proof_aug(STMT, GOLD, prover)
    assert o.success and o.stage == "init_proof" and o.extra_calls == 0


def test_wrong_tactic_becomes_sorry_then_atp(prover):
    bad = GOLD.replace("by simp", "by sos")
    assert not PA.dsp(STMT, bad, prover).success
    o = PA.proof_aug(STMT, bad, prover, trace=True)
    assert o.success and o.stage == "init_atp"
    assert any(k == "sorry" for k, _ in o.events)


def test_broken_block_is_erased_and_outside_failure_abandons(prover):
    nested = "\n".join(
        [
            "proof",
            "have h4 : a ** 2 + b ** 2 = 13",
            "proof",
            "have h5 : a = ( oops",
            "show ?thesis by arith",
            "qed",
            "show ?thesis by arith",
            "qed",
        ]
    )
    steps = PA.semi_proof(STMT, nested, prover)
    assert steps == [
        "proof",
        "have h4 : a ** 2 + b ** 2 = 13",
        "sorry",
        "show ?thesis",
        "by arith",
        "qed",
    ]
    # a failure inside the theorem's own block erases it: the root hole (ATP on the
    # whole theorem)
    assert PA.semi_proof(
        STMT, "proof\nhave h4 : ( oops\nshow ?thesis by arith\nqed", prover
    ) == ["sorry"]
    assert (
        PA.semi_proof(STMT, "proof\nhave h4 : a = 1 by simp", prover) is None
    )  # never finishes


def test_coarsening_replaces_the_enclosing_block(prover):
    # the inner lemma is false, so its sorry cannot be closed; the block h4 is coarsened
    # to one sorry
    nested = "\n".join(
        [
            "proof",
            "have h4 : a ** 2 + b ** 2 = 13",
            "proof",
            "have h5 : a = 7 by arith",
            "show ?thesis by arith",
            "qed",
            "show ?thesis by arith",
            "qed",
        ]
    )
    o = PA.proof_aug(STMT, nested, prover, trace=True)
    assert o.success and o.stage == "coarse_atp"
    coarse = [t for k, t in o.events if k == "coarsen"]
    assert coarse and coarse[0].splitlines() == [
        "proof",
        "have h4 : a ** 2 + b ** 2 = 13 sorry",
        "show ?thesis by arith",
        "qed",
    ]
    assert PA.check_proof(STMT, o.proof, prover)


def test_erp_counts_extra_calls(prover):
    nested = "\n".join(
        [
            "proof",
            "have h4 : a ** 2 + b ** 2 = 13 by oops",
            "show ?thesis by arith",
            "qed",
        ]
    )
    calls = []

    def propose(sub):
        calls.append(sub)
        return "sorry"

    o = PA.proof_aug(STMT, nested, prover, propose=propose)
    assert o.success  # callATP closes h4, so ERP is never asked
    assert o.extra_calls == len(calls) == 0


def test_problem_set_gold_proofs_check(prover):
    probs = PA.make_problems(10, 3, prover)
    assert len({p.family for p in probs}) >= 4 and len({p.stmt for p in probs}) == 10
    assert all(PA.check_proof(p.stmt, p.gold, prover) for p in probs)


# --- budget curve: vectorised against the naive loop ----------------------------------


def test_budget_curve_matches_naive():
    rng = np.random.default_rng(0)
    s = rng.random((30, 8)) < 0.3
    c = rng.integers(1, 4, (30, 8))
    budgets = [1, 2, 4, 8, 16, 32]
    assert np.allclose(
        PA.budget_curve(s, c, budgets), budget_curve_naive(s, c, budgets)
    )
    assert PA.budget_curve(np.ones((2, 3), bool), np.ones((2, 3)), [1]).tolist() == [
        1.0
    ]


# --- proposers ------------------------------------------------------------------------


def test_encoding_round_trip_and_claims(prover):
    toks = PA.encode_pair(STMT, GOLD)
    assert PA.decode_proof(toks[toks.index("<sep>") + 1 :]) == GOLD
    ex = PA.claim_examples(STMT, GOLD, prover)
    assert len(ex) == 3 and ex[1][1] == "by simp"


def test_noisy_oracle_rate_zero_is_gold():
    assert PA.corrupt(GOLD, 0.0, random.Random(0)) == GOLD
    assert PA.corrupt(GOLD, 1.0, random.Random(0)) != GOLD


def test_sampling_is_seeded(prover):
    vocab = PA.build_vocab([STMT], [GOLD])
    model, _ = PA.train_proposer(
        [(STMT, GOLD)],
        vocab,
        steps=2,
        block_size=96,
        d_model=32,
        n_layer=1,
        batch_size=1,
        lr=1e-3,
        seed=0,
    )
    a = PA.sample_proofs(
        model, vocab, STMT, 2, 1.0, torch.Generator().manual_seed(0), max_new=10
    )
    b = PA.sample_proofs(
        model, vocab, STMT, 2, 1.0, torch.Generator().manual_seed(0), max_new=10
    )
    assert a == b and len(a) == 2


# --- bad inputs -----------------------------------------------------------------------


def test_bad_inputs_raise_clear_errors(prover):
    with pytest.raises(TypeError, match="text"):
        PA.tokenize(3)
    with pytest.raises(TypeError, match="text"):
        PA.parse_steps(None)
    with pytest.raises(ValueError, match="cannot parse"):
        PA.parse_formula("a + = 1", ("a",), "real")
    with pytest.raises(ValueError, match="family"):
        PA.sample_theorem("geometry", random.Random(0))
    with pytest.raises(ValueError, match="rate"):
        PA.corrupt(GOLD, 1.5, random.Random(0))
    with pytest.raises(ValueError, match="success, cost"):
        PA.budget_curve(np.ones((2, 3), bool), np.ones((3, 2)), [1])
    vocab = PA.build_vocab([STMT], [GOLD])
    model, _ = PA.train_proposer(
        [(STMT, GOLD)],
        vocab,
        steps=1,
        block_size=96,
        d_model=32,
        n_layer=1,
        batch_size=1,
        lr=1e-3,
        seed=0,
    )
    with pytest.raises(ValueError, match="temperature"):
        PA.sample_proofs(model, vocab, STMT, 1, 0.0, torch.Generator())
    with pytest.raises(TypeError, match="n"):
        PA.sample_proofs(model, vocab, STMT, 1.5, 1.0, torch.Generator())


def test_cli_help():
    out = subprocess.run(
        [sys.executable, "-m", "lib.proofaug", "--help"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0 and "--preset" in out.stdout


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cpu_cuda_parity_of_the_proposer():
    vocab = PA.build_vocab([STMT], [GOLD])
    model, _ = PA.train_proposer(
        [(STMT, GOLD)],
        vocab,
        steps=2,
        block_size=96,
        d_model=32,
        n_layer=1,
        batch_size=1,
        lr=1e-3,
        seed=0,
    )
    x = torch.tensor([vocab.encode(PA.encode_pair(STMT, GOLD))])
    cpu = model(x)
    gpu = model.to("cuda")(x.to("cuda")).cpu()
    assert torch.allclose(cpu, gpu, atol=1e-4)


def test_z3_and_config_reject_bad_input():
    """z3 never proves a goal under a bogus domain or a negative resource limit, configs
    are checked (issue 37)."""
    f = PA.parse_formula("a + b = 5", ("a", "b"), "real")
    with pytest.raises(ValueError, match="domain: expected one of"):
        PA.z3_prove([f], f, ("a", "b"), "complex", 1000)
    with pytest.raises(ValueError, match="rlimit: expected an int >= 1"):
        PA.z3_prove([f], f, ("a", "b"), "real", -1)
    with pytest.raises(TypeError, match="hyps: expected a list of Formula"):
        PA.z3_prove("a + b = 5", f, ("a", "b"), "real", 1000)
    with pytest.raises(ValueError, match="domain"):
        PA.Statement(("a",), "complex", (), "a = 1")
    for bad, words in (
        (dict(n_samples=-1), "n_samples"),
        (dict(claim_seeds=(-1,)), "claim_seeds"),
        (dict(oracle_rate=1.5), "oracle_rate"),
        (dict(rlimit_hammer=-5), "rlimit_hammer"),
        (dict(noise_rates=(0.1, 1.5)), "noise_rates"),
        (dict(temperature=float("nan")), "temperature"),
    ):
        with pytest.raises((TypeError, ValueError), match=words):
            PA.Config(**bad)


# --- the breakdown and the claims ------------------------------------------------

EASY = PA.Statement(("x",), "real", (("h0", "x = 2"),), "x + 1 = 3")
FALSE_LEMMA = "\n".join(
    ["proof", "have h1 : x = 5 by arith", "show ?thesis by arith", "qed"]
)


def test_root_level_success_is_staged_and_coarsen_false_stops(prover):
    """A proposal whose only hole is a false lemma at the top of the proof coarsens to
    the whole theorem: the success is the hammer's call (``root_atp``), and without
    coarsening ProofAug fails; the nested example needs coarsening too."""
    o = PA.proof_aug(EASY, FALSE_LEMMA, prover)
    assert o.success and o.stage == "root_atp" and len(PA.parse_steps(o.proof)) == 1
    assert PA.hammer_only(EASY, prover).success
    assert not PA.proof_aug(EASY, FALSE_LEMMA, prover, coarsen=False).success
    assert not PA.dsp(EASY, FALSE_LEMMA, prover).success
    wrong_tactic = GOLD.replace("by simp", "by sos")  # repaired at its own level
    nc = PA.proof_aug(STMT, wrong_tactic, prover, coarsen=False)
    assert nc.success and nc.stage == "init_atp"
    with pytest.raises(TypeError, match="coarsen"):
        PA.proof_aug(STMT, GOLD, prover, coarsen="no")


def _run(seed, curves, hammer, dsp_or_hammer, beyond, oracle):
    return dict(
        seed=seed,
        curves=curves,
        hammer=hammer,
        dsp_or_hammer=dsp_or_hammer,
        beyond_hammer=beyond,
        oracle=oracle,
    )


def test_measure_claims_reads_the_runs_known_answer():
    """Each statistic and control is the difference the claim names, at the largest
    budget; a control that equals the statistic makes the claim partly reproduced at
    best, a zero control lets it be reproduced."""
    curves = dict(
        dsp=[0.1, 0.2],
        proofaug=[0.5, 0.6],
        proofaug_erp=[0.4, 0.65],
        proofaug_noroot=[0.2, 0.3],
        proofaug_nocoarse=[0.1, 0.2],
        erp_control=[0.4, 0.55],
    )
    oracle = dict(dsp=0.4, proofaug_noroot=0.7, proofaug_nocoarse=0.45)
    runs = [
        _run(s, curves, 0.5, 0.6, dict(dsp=0.0, proofaug=0.1), oracle)
        for s in (1, 2, 3)
    ]
    m = PA.measure_claims(PA.SMOKE, (1, 2, 3), main={"runs": runs})
    assert m["beats-dsp"]["values"][2] == pytest.approx(0.4)
    assert m["beats-dsp"]["control"][2] == pytest.approx(0.4)  # 0.6 − 0.2
    assert m["beyond-hammer"]["values"][1] == pytest.approx(0.1)
    assert m["below-root"]["values"][3] == pytest.approx(0.1)
    assert m["below-root"]["control"][3] == pytest.approx(0.0)
    assert m["oracle-below-root"]["values"][1] == pytest.approx(0.3)
    assert m["oracle-below-root"]["control"][1] == pytest.approx(0.05)
    assert m["erp"]["values"][1] == pytest.approx(0.05)
    assert m["erp"]["control"][1] == pytest.approx(-0.05)  # 0.55 − 0.6
    v = {r.claim.id: r.verdict for r in PA.judge(m)}
    assert v["beats-dsp"] == "partly reproduced"  # the hammer alone explains it
    assert v["below-root"] == "reproduced" and v["oracle-below-root"] == "reproduced"
    assert v["beyond-hammer"] == "reproduced"
    assert v["erp"] == "reproduced"  # useless re-queries lose: the control fails
    assert v["minif2f"] == "not tested here"
    with pytest.raises(ValueError, match="main"):
        PA.measure_claims(PA.SMOKE, (1, 4), main={"runs": runs})


def test_seed_run_on_a_tiny_proposer_and_fresh_problems_exclude_training():
    import dataclasses

    cfg = dataclasses.replace(
        PA.SMOKE, n_train=40, n_test=3, train_steps=2, n_samples=2, oracle_samples=1
    )
    env = PA.setup(cfg)
    test = PA.fresh_problems(env, 3, 5)
    train = {p.stmt for p in env["train"]}
    assert len(test) == 3 and not any(p.stmt in train for p in test)
    assert [p.stmt for p in PA.fresh_problems(env, 3, 5)] == [p.stmt for p in test]
    r = PA.seed_run(cfg, env, 5)
    assert r["budgets"] == [1, 2] and set(r["curves"]) == set(PA.VARIANTS)
    for m, c in r["curves"].items():
        assert all(0 <= x <= 1 for x in c) and c == sorted(c), m
    # below the root can only lose successes; ProofAug never loses to DSP on a proposal
    assert r["curves"]["proofaug_noroot"][-1] <= r["curves"]["proofaug"][-1]
    assert r["per_proposal"]["proofaug"] >= r["per_proposal"]["dsp"]
    assert r["dsp_or_hammer"] >= r["hammer"]
    with pytest.raises(ValueError, match="n"):
        PA.fresh_problems(env, 10_000, 0)


def test_full_preset_fits_the_template_space():
    """FULL draws its split from the same templates, which yield only a few hundred
    distinct theorems: its split must be buildable (an earlier FULL asked for 700)."""
    probs = PA.make_problems(PA.FULL.n_train + PA.FULL.n_test, PA.FULL.seed)
    assert len({p.stmt for p in probs}) == PA.FULL.n_train + PA.FULL.n_test
    with pytest.raises(RuntimeError, match="gold proofs check"):
        PA.make_problems(700, 0)


def test_seeds_in_worker_processes_give_the_same_records():
    """main_experiment(processes=2) spawns workers; each seed's record is identical to
    the sequential run's (only the count of computed tactic calls and the measured CPU
    seconds may differ)."""
    import dataclasses

    cfg = dataclasses.replace(
        PA.SMOKE, n_train=40, n_test=3, train_steps=2, n_samples=2, oracle_samples=1
    )
    env = PA.setup(cfg)
    seq = PA.main_experiment(cfg, env, (10, 11))
    par = PA.main_experiment(cfg, env, (10, 11), processes=2)

    def strip(m):
        skip = ("atp_calls", "cpu_seconds")
        return [{k: v for k, v in r.items() if k not in skip} for r in m["runs"]]

    assert strip(seq) == strip(par) and seq["curves"] == par["curves"]
    for r in seq["runs"]:  # timed: sampling and each method's checking
        assert set(r["cpu_seconds"]) == {"sampling", *PA.VARIANTS} - {
            "proofaug_noroot"
        }
        assert all(v >= 0 for v in r["cpu_seconds"].values())


# --- the hammer-hard test set and DSP-style sketches (HARD preset) -------------------


def test_dsp_sketch_turns_every_tactic_into_a_hammer_hole(prover):
    """The sketch keeps every claim and block and makes each ``by TAC`` a ``by hammer``
    hole; DSP fills every hole of the gold proof's sketch (its claims are right)."""
    sk = PA.dsp_sketch(GOLD)
    assert [ln.split(" by ")[0] for ln in sk.split("\n")] == [
        ln.split(" by ")[0] for ln in GOLD.split("\n")
    ]
    assert sk.count("by hammer") == 3 and "by simp" not in sk
    assert PA.dsp(STMT, sk, prover).success
    prob = PA.Problem("p0", "vieta", STMT, GOLD)
    assert PA.sketch_examples([prob]) == [(STMT, sk)]
    with pytest.raises(TypeError, match="problems"):
        PA.sketch_examples("p0")
    with pytest.raises(TypeError, match=r"problems\[0\]"):
        PA.sketch_examples([STMT])


def _identity(t):
    stmt = PA.Statement(
        ("x",),
        "real",
        (("h0", "x != 0"), ("h1", f"x + 1 / x = {t}")),
        f"x ** 2 + 1 / x ** 2 = {t * t - 2}",
    )
    gold = "\n".join(
        [
            "proof",
            f"have h2 : ( x + 1 / x ) ** 2 = {t} ** 2 by simp",
            "have h3 : x ** 2 + 1 / x ** 2 = ( x + 1 / x ) ** 2 - 2 by algebra",
            "show ?thesis by arith",
            "qed",
        ]
    )
    return PA.Problem(f"identity-{t}", "identity", stmt, gold)


def test_hard_split_keeps_only_hammer_failures_out_of_training(prover):
    """The test set is the first n theorems the hammer cannot prove, in pool order;
    every other theorem (hammer-proved or after the n-th) trains."""
    easy = PA.Problem("e", "vieta", STMT, GOLD)
    hard, hard2 = _identity(3), _identity(4)
    assert PA.hammer_only(STMT, prover).success
    assert not PA.hammer_only(hard.stmt, prover).success
    train, test, n_easy = PA.hard_split([easy, hard, hard2], prover, 1)
    assert test == [hard] and train == [easy, hard2] and n_easy == 1
    with pytest.raises(ValueError, match="n_test"):
        PA.hard_split([easy, hard], prover, 2)
    with pytest.raises(TypeError, match=r"problems\[0\]"):
        PA.hard_split([STMT], prover, 1)


def test_hammer_budget_a_larger_limit_proves_what_the_chapters_limit_does_not():
    """The hammer alone at its chapter limit fails on a hard identity; at a larger
    resource limit it proves it (the HARD set is hard at the chapter's limit only)."""
    hard = _identity(3)
    got = PA.hammer_budget([hard], 600, (1000, 30000))
    assert got["rlimits"] == [1000, 30000]
    assert got["pass"][0] == 0.0
    assert all(t >= 0 for t in got["cpu_s_per_theorem"])
    with pytest.raises(TypeError, match="problems"):
        PA.hammer_budget([STMT], 600, (1000,))
    with pytest.raises(ValueError, match=r"rlimits\[0\]"):
        PA.hammer_budget([hard], 600, (0,))


def test_wide_templates_reach_beyond_the_narrow_constants():
    """``wide=True`` draws constants outside the narrow ranges (identities up to
    t = 15); the default draws are unchanged by the new argument."""
    narrow = PA.make_problems(3, 0)
    assert [p.stmt for p in narrow] == [
        p.stmt for p in PA.make_problems(3, 0, wide=False)
    ]
    rng = random.Random(0)
    ts = {
        int(
            PA.sample_theorem("identity", rng, wide=True)[0]
            .assumptions[1][1]
            .split()[-1]
        )
        for _ in range(200)
    }
    assert max(ts) == 15 and min(ts) == 2
    rng = random.Random(0)
    ts = {
        int(PA.sample_theorem("identity", rng)[0].assumptions[1][1].split()[-1])
        for _ in range(200)
    }
    assert max(ts) == 9
    with pytest.raises(TypeError, match="wide"):
        PA.make_problems(3, 0, wide=1)


def test_hard_preset_code_path_at_a_shrunk_size(monkeypatch):
    """The HARD preset's path (wide pool, hard split, sketches in the training pairs,
    every test theorem on every seed, ERP's control) runs end to end. The proposer is
    replaced by the gold proof's DSP sketch (a known answer: every method proves the
    theorem with it, the hammer alone does not)."""
    import dataclasses

    from lib.proofaug import experiment

    cfg = dataclasses.replace(
        PA.HARD, n_pool=12, n_test=1, train_steps=1, n_samples=2, claim_seeds=(3,)
    )
    env = PA.setup(cfg)
    assert len(env["test"]) == 1 and env["hard"]
    assert not {p.stmt for p in env["test"]} & {p.stmt for p in env["train"]}
    assert (env["train"][0].stmt, PA.dsp_sketch(env["train"][0].gold)) in env["pairs"]
    gold = {p.stmt: p.gold for p in env["test"]}
    monkeypatch.setattr(
        experiment.NeuralProposer,
        "proposals",
        lambda self, stmt, n: [PA.dsp_sketch(gold[stmt])] * n,
    )
    r = PA.seed_run(cfg, env, 3)
    assert set(r["curves"]) == set(PA.HARD_VARIANTS) and r["hammer"] == 0.0
    assert all(c == [1.0, 1.0] for c in r["curves"].values()), r["curves"]
    m = PA.measure_claims(cfg, (3,), main={"runs": [r]})
    assert m["erp"]["control"][3] == 0.0 and m["beats-dsp"]["values"][3] == 0.0
