"""lib.common.claims: rules, the interval, the verdict rule, the modelled flag,
rendering, bad input."""

import json
import math

import pytest

from lib.common import claims as C
from lib.common.claims import (
    Claim,
    Rule,
    assert_claims,
    decide,
    evaluate,
    summarize,
    worse,
)


def claim(**kw):
    base = dict(
        id="x",
        statement="s",
        paper="p",
        where="Table 1",
        statistic="stat",
        rule=Rule.at_least(0.5),
        control="ingredient removed",
    )
    return Claim(**(base | kw))


# ------------------------------------------------------------------ rules
def test_rule_regions_and_descriptions():
    assert Rule.at_least(1).holds(1.0) and not Rule.at_least(1).holds(0.99)
    assert Rule.at_most(1).holds(-5) and not Rule.at_most(1).holds(1.01)
    r = Rule.between(0.4, 0.7)
    assert r.holds(0.55) and not r.holds(0.71) and not r.holds(float("nan"))
    assert r.holds_interval(0.45, 0.6) and not r.holds_interval(0.3, 0.6)
    n = Rule.near(2.0, 0.1)
    assert n.holds(2.19) and not n.holds(2.21) and n.holds(1.81) and not n.holds(1.79)
    assert Rule.at_least(0.9).describe() == "≥ 0.90"
    assert Rule.at_most(1.5).describe(".1f") == "≤ 1.5"
    assert r.describe() == "in [0.40, 0.70]"


@pytest.mark.parametrize(
    "make, err",
    [
        (lambda: Rule(1.0, 0.0), ValueError),
        (lambda: Rule(), ValueError),
        (lambda: Rule.at_least("1"), TypeError),
        (lambda: Rule.at_least(float("nan")), ValueError),
        (lambda: Rule.at_least(math.inf), ValueError),
        (lambda: Rule.near(-1.0, 0.1), ValueError),
        (lambda: Rule.near(1.0, 1.5), ValueError),
    ],
)
def test_rule_rejects_bad_input(make, err):
    with pytest.raises(err):
        make()


@pytest.mark.parametrize(
    "kw, match",
    [
        (dict(id="Bad Id"), "id"),
        (dict(statement=""), "statement"),
        (dict(where=3), "where"),
        (dict(rule="≥ 1"), "rule"),
        (dict(expect="maybe"), "expect"),
        (dict(rule=None), "expect"),
        (dict(statistic=""), "statistic"),
        (dict(control=""), "control"),
        (dict(modelled=True), "expect"),
        (dict(modelled="yes", expect="partly reproduced"), "modelled"),
        (dict(fmt="%d"), "fmt"),
    ],
)
def test_claim_rejects_bad_fields(kw, match):
    with pytest.raises((ValueError, TypeError), match=match):
        claim(**kw)


# ------------------------------------------------------------------ the interval
def test_summary_t_interval_matches_scipy():
    from scipy import stats

    vals = [1.0, 2.0, 4.0, 3.5]
    s = summarize(vals, Rule.at_least(2.0))
    lo, hi = stats.t.interval(
        0.95, len(vals) - 1, loc=sum(vals) / 4, scale=stats.sem(vals)
    )
    assert (
        s.mean == pytest.approx(2.625)
        and s.lo == pytest.approx(lo)
        and s.hi == pytest.approx(hi)
    )
    assert s.holding == 3 and s.n == 4 and s.share == 0.75


def test_summary_with_seed_mapping_and_one_value():
    s = summarize({7: 1.0, 9: 3.0})
    assert s.seeds == (7, 9) and s.mean == 2.0
    one = summarize([1.0])
    assert one.lo == -math.inf and one.hi == math.inf


def test_paired_interval_is_narrower_than_unpaired_for_correlated_methods():
    a = [10.0, 20.0, 30.0, 40.0]  # a large seed effect shared by both methods
    b = [9.0, 19.2, 28.9, 39.1]
    diffs = [x - y for x, y in zip(a, b)]
    paired = summarize(diffs)
    assert paired.lo > 0  # the paired difference is clearly positive
    unpaired_half = C.t_quantile(4) * math.sqrt(
        (summarize(a).hi - summarize(a).mean) ** 2
        + (summarize(b).hi - summarize(b).mean) ** 2
    )
    assert paired.hi - paired.mean < unpaired_half


@pytest.mark.parametrize(
    "values, kw, err",
    [
        ([], {}, ValueError),
        ("abc", {}, TypeError),
        ([1.0, "x"], {}, TypeError),
        ([1.0, float("nan")], {}, ValueError),
        ([1.0, 2.0], dict(seeds=[1]), ValueError),
        ([1.0, 2.0], dict(seeds=[1, 1]), ValueError),
        ({1: 1.0}, dict(seeds=[1]), ValueError),
        ([1.0, 2.0], dict(level=1.5), ValueError),
    ],
)
def test_summarize_rejects_bad_input(values, kw, err):
    with pytest.raises(err):
        summarize(values, **kw)


# ------------------------------------------------------------------ the verdict rule
GOOD = [0.9, 1.0, 1.1, 0.95, 1.05]
CTRL_FAILS = [0.1, 0.2, 0.0, 0.1, 0.15]


def test_verdict_reproduced_needs_everything():
    c = claim()
    assert evaluate(c, GOOD, control=CTRL_FAILS).verdict == "reproduced"
    # a control that also holds: not evidence
    r = evaluate(c, GOOD, control=GOOD)
    assert r.verdict == "partly reproduced" and r.control_holds
    # no control run
    assert evaluate(c, GOOD).verdict == "partly reproduced"
    # too few seeds
    assert evaluate(c, GOOD[:2], control=CTRL_FAILS[:2]).verdict == "partly reproduced"
    # interval crossing the boundary
    assert (
        evaluate(c, [0.45, 0.9, 0.55, 1.4, 0.6], control=CTRL_FAILS).verdict
        == "partly reproduced"
    )


def test_verdict_modelled_never_reproduced():
    c = claim(modelled=True, expect="partly reproduced")
    assert evaluate(c, GOOD, control=CTRL_FAILS).verdict == "partly reproduced"


def test_verdict_not_reproduced_and_not_tested():
    c = claim()
    assert (
        evaluate(c, [0.1, 0.2, 0.3], control=CTRL_FAILS[:3]).verdict == "not reproduced"
    )
    # majority of seeds holding keeps it "partly" even if the mean fails
    assert (
        evaluate(c, [0.6, 0.6, -3.0], control=CTRL_FAILS[:3]).verdict
        == "partly reproduced"
    )
    untested = Claim("y", "s", "p", "abstract", expect="not tested here")
    assert evaluate(untested, None).verdict == "not tested here"
    assert decide(c, None) == "not tested here"


def test_worse_orders_verdicts():
    assert worse("reproduced", "partly reproduced") == "partly reproduced"
    assert worse("reproduced", "reproduced") == "reproduced"
    assert (
        worse("partly reproduced", "not reproduced", "reproduced") == "not reproduced"
    )
    with pytest.raises(ValueError, match="verdicts"):
        worse("fine")


def test_assert_claims_fails_when_a_recorded_claim_breaks():
    ok = evaluate(claim(), GOOD, control=CTRL_FAILS)
    assert_claims([ok])
    broken = evaluate(claim(), [0.1, 0.2, 0.3], control=CTRL_FAILS[:3])
    with pytest.raises(AssertionError, match="expected 'reproduced'"):
        assert_claims([ok, broken])
    with pytest.raises(AssertionError, match="control also holds"):
        assert_claims([evaluate(claim(), GOOD, control=GOOD)])
    with pytest.raises(AssertionError, match="control not run"):
        assert_claims([evaluate(claim(), GOOD)])
    # a claim recorded as partly reproduced may be partly because its control holds
    assert_claims([evaluate(claim(expect="partly reproduced"), GOOD, control=GOOD)])
    with pytest.raises(AssertionError, match="expected 'partly reproduced'"):
        assert_claims([evaluate(claim(expect="partly reproduced"), [0.1, 0.2, 0.3])])
    # claims recorded as not reproduced are not asserted
    assert_claims([evaluate(claim(expect="not reproduced"), [0.1, 0.2, 0.3])])
    with pytest.raises(TypeError, match="results"):
        assert_claims(["reproduced"])


def test_control_on_a_tiny_example_is_a_real_control():
    """The rule with the ingredient removed must be able to come out false."""
    c = claim(rule=Rule.at_least(0.5))
    r = evaluate(c, GOOD, control=CTRL_FAILS)
    assert r.control_holds is False
    assert r.to_dict()["control_holds"] is False
    json.dumps(r.to_dict())


# ------------------------------------------------------------------ rendering and files
def test_claims_table_is_a_myst_table_with_every_column():
    rs = [
        evaluate(claim(statement="a | b"), GOOD, control=CTRL_FAILS),
        evaluate(
            Claim("z", "untested", "p", "abstract", expect="not tested here"), None
        ),
    ]
    held = {
        "claims": {
            "x": {
                "heldout": {
                    "verdict": "partly reproduced",
                    "method": {"holding": 4, "values": [1] * 5},
                }
            }
        }
    }
    md = C.claims_table(rs, full=None, claims_file=held)
    lines = md.strip().splitlines()
    assert lines[0].count("|") == 8 and set(lines[1]) <= set("|-")
    assert "a \\| b" in md and "not run" in md and "4/5" in md
    assert "**partly reproduced**" in lines[2]  # held-out verdict is the weaker one
    assert "**not tested here**" in lines[3]
    md_full = C.claims_table(rs[:1], full={"x": 1.234})
    assert "1.23" in md_full and "5/5 · not run" in md_full


def test_lib_hash_changes_with_the_code(tmp_path):
    (tmp_path / "lib" / "demo").mkdir(parents=True)
    f = tmp_path / "lib" / "demo" / "__init__.py"
    f.write_text("x = 1\n")
    h1 = C.lib_hash("demo", tmp_path)
    f.write_text("x = 2\n")
    assert C.lib_hash("demo", tmp_path) != h1
    with pytest.raises(ValueError, match="slug"):
        C.lib_hash("missing", tmp_path)


def test_lib_hash_ignores_layout_comments_and_docstrings(tmp_path):
    (tmp_path / "lib" / "demo").mkdir(parents=True)
    f = tmp_path / "lib" / "demo" / "m.py"
    f.write_text('def f(a, b):\n    """Doc."""\n    return a + b  # sum\n')
    h1 = C.lib_hash("demo", tmp_path)
    f.write_text(
        'def f(\n    a,\n    b,\n):\n    """Other doc."""\n    return (a + b)\n'
    )
    assert C.lib_hash("demo", tmp_path) == h1
    f.write_text('def f(a, b):\n    return a - b\n')
    assert C.lib_hash("demo", tmp_path) != h1


def test_seed_sets_must_be_disjoint():
    C.check_seeds((0, 1, 2))
    with pytest.raises(ValueError, match="overlap"):
        C.check_seeds((1000,))
    with pytest.raises(ValueError, match="at least 5"):
        C.check_seeds((0,), (7, 8))


def test_load_claims_file(tmp_path, monkeypatch):
    monkeypatch.setenv("BOOK_RESULTS_DIR", str(tmp_path))
    assert C.load_claims_file("demo") is None
    path = C.claims_path("demo")
    path.parent.mkdir(parents=True)
    path.write_text("{not json")
    with pytest.raises(ValueError, match="demo.json"):
        C.load_claims_file("demo")
    path.write_text(json.dumps({"claims": {}, "provenance": {}}))
    assert C.load_claims_file("demo") == {"claims": {}, "provenance": {}}


def test_a_stale_claims_file_is_flagged_and_not_used():
    rs = [evaluate(claim(), GOOD, control=CTRL_FAILS)]
    held = {
        "lib_hash": "0" * 64,
        "claims": {
            "x": {
                "heldout": {
                    "verdict": "not reproduced",
                    "method": {"holding": 0, "values": [0] * 5},
                }
            }
        },
    }
    md = C.claims_table(rs, claims_file=held, slug="brokerage")
    assert "stale" in md and "**reproduced**" in md


def test_judge_all_and_mean_values():
    c1 = C.Claim(
        "a",
        "x is at least 1",
        paper="p",
        where="w",
        statistic="x",
        rule=C.Rule.at_least(1.0),
        control="none",
    )
    c2 = C.Claim("b", "untested", paper="p", where="w", expect="not tested here")
    measured = {"a": {"values": {0: 2.0, 1: 3.0, 2: 4.0}, "control": {}}}
    res = C.judge_all((c1, c2), measured)
    assert [r.claim.id for r in res] == ["a", "b"]
    assert res[0].control is None  # an empty control counts as not run
    assert res[1].verdict == "not tested here"
    assert C.mean_values(measured) == {"a": 3.0}
    assert C.mean_values(None) is None
    with pytest.raises(TypeError, match="measured: expected the dict"):
        C.judge_all((c1,), [1, 2])
