"""Self-checks of the exercises (#35): the shared helpers, and every chapter's checks
against the solution's answer (must be right) and a wrong answer (must not be)."""

import pytest

from lib.common.exercises import Feedback, check_choice, check_number, check_numbers


def test_check_number_statuses_and_no_answer_in_the_message():
    assert check_number("x", 1.0005, 1.0).ok
    close = check_number("x", 1.1, 1.0, hint="h")
    assert close.status == "close" and "1.0" not in str(close)
    wrong = check_number("x", 3.0, 1.0)
    assert wrong.status == "wrong" and "too large" in str(wrong) and not wrong
    assert check_number("x", float("nan"), 1.0).status == "wrong"
    assert check_number("x", 0.05, 0.0, atol=0.1).ok


def test_check_numbers_and_choice():
    assert check_numbers("x", [1, 2, 3], [1, 2, 3]).ok
    assert check_numbers("x", [1, 2], [1, 2, 3]).status == "wrong"
    assert check_numbers("x", [1, 2.1, 3], [1, 2, 3]).status == "close"
    assert check_choice("x", " No ", "no", ("yes", "no")).ok
    assert not check_choice("x", "yes", "no", ("yes", "no"))


@pytest.mark.parametrize(
    "call, exc, word",
    [
        (lambda: check_number("x", "1", 1.0), TypeError, "answer"),
        (lambda: check_number("x", True, 1.0), TypeError, "answer"),
        (lambda: check_number("x", 1.0, 1.0, rtol=0.5, close=0.1), ValueError, "rtol"),
        (lambda: check_numbers("x", 3, [1]), TypeError, "answer"),
        (lambda: check_numbers("x", [1, "a"], [1, 2]), TypeError, "answer"),
        (lambda: check_choice("x", 1, "no", ("yes", "no")), TypeError, "answer"),
        (lambda: check_choice("x", "maybe", "no", ("yes", "no")), ValueError, "answer"),
        (lambda: Feedback("x", "fine"), ValueError, "status"),
    ],
)
def test_bad_inputs(call, exc, word):
    with pytest.raises(exc, match=word):
        call()


def test_brokerage_checks():
    from lib.brokerage import exercises as e

    assert e.ex1(1 / 8).ok and not e.ex1(1 / 4)  # 1/(4L) at L = 2
    k = [0.125, 0.25, 0.5, 2.0]
    main = {"kappa": {"kappas": k, "final": [10 / x + 40 * x for x in k]}}
    assert e.ex2(0.5, main).ok and not e.ex2(1.0, main)
    assert e.ex3("no").ok and not e.ex3("yes")
    assert e.ex4(1 / 32).ok and not e.ex4(1 / 16)  # a/8 with a = 1/(2L)
    assert e.ex5(0.25).ok and not e.ex5(0.5)
    with pytest.raises(TypeError, match="main"):
        e.ex2(0.5, [1])
    with pytest.raises(ValueError, match="L"):
        e.ex1(0.1, L=-1.0)


def test_diffusion_maps_checks():
    from lib.diffusion_maps import exercises as e
    from lib.diffusion_maps.theory import neumann_ball_nu1

    assert e.ex1(36).ok and not e.ex1(18)
    good = [neumann_ball_nu1(m) - (m + 1) for m in range(1, 61)]
    assert e.ex2(good).ok and not e.ex2([0.0] * 60)
    assert e.ex4((7, 10)).ok and not e.ex4((12, 18))  # not the mean-radius prediction


def test_consistency_gc_checks():
    from lib.consistency_gc import exercises as e

    assert e.ex1(0.5**2 + 2 * 0.01**2 + 2).ok and not e.ex1(2.0)
    assert e.ex3("x*").ok and not e.ex3("z")


def test_wctm_checks():
    from lib.wctm import exercises as e

    assert e.ex1(0.043).ok and not e.ex1(0.763)  # (b) right; (a) is not (b)
    assert e.ex2("uniform").ok and not e.ex2("zero")
    assert e.ex3("fixed").ok and not e.ex3("growing")
    assert e.ex4([0.082, 0.0, 0.006]).ok and not e.ex4([0.0, 0.0, 0.006]).ok


def test_jlde_checks():
    import dataclasses
    import math

    from lib import jlde
    from lib.jlde import exercises as e

    assert e.ex1(1 / math.sqrt(6)).ok and not e.ex1(1 / 3)
    assert e.ex2("yes").ok and not e.ex2("no")
    tiny = dataclasses.replace(jlde.SMOKE, num_nodes=300, epochs=20, probe_steps=20)
    gap = e._joint_gap(tiny, 0)
    assert e.ex3(gap, tiny).ok and not e.ex3(gap + 1.0, tiny)
    with pytest.raises(TypeError, match="cfg"):
        e.ex4(0.0, "cfg")
