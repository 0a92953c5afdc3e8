"""The claims ledger: a paper's claims as rules that can fail, judged over several
seeds.

Every chapter states its paper's claims as :class:`Claim` objects. A claim names the
paper's evidence (value and where it is: table, figure, section, or ``repo`` when the
number comes from the official code), how the chapter measures it, and a :class:`Rule`
that decides it (an ordering with a margin, a slope window, a ratio with a tolerance).
The rule is written once and used by the results table, the notebook's assert and the
book's ledger page (``book/claims.md``).

A chapter measures each claim on several seeds, and once more with the method's key
ingredient removed (the **negative control**). :func:`evaluate` turns those per-seed
values into a :class:`ClaimResult` with a seed-aggregated mean, a 95 % t-interval and
the share of seeds on which the rule holds; comparisons are passed as per-seed
differences of methods run on the same seeds, so the interval is a paired one. The
verdict follows one rule for the whole book (:func:`decide`):

- ``reproduced``: at least :data:`MIN_SEEDS` seeds; the rule holds on the mean and on
  the whole interval; it holds on at least :data:`REPRODUCED_SHARE` of the seeds; the
  negative control was run and does not hold; and the evidence is measured, not
  modelled;
- ``partly reproduced``: the rule holds on the mean or on at least half of the seeds,
  but one of the conditions above is missing (too few seeds, an interval that crosses
  the boundary, a control that also passes or was not run, or evidence that is only
  modelled);
- ``not reproduced``: the rule fails on the mean and on at least half of the seeds;
- ``not tested here``: the chapter has no measurement for the claim.

A control **holds** when its mean satisfies the rule or the rule holds on at least half
of its seeds; a claim whose control holds is not evidence and cannot be asserted
(:func:`assert_claims`).

Held-out seeds (:data:`HELDOUT_SEEDS`) are used only by ``make claims``, which writes
``results/claims/<slug>.json``; they must never be used to choose a setting.
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
import pathlib
import re
from typing import Mapping, Sequence

VERDICTS = ("reproduced", "partly reproduced", "not reproduced", "not tested here")
#: fewest seeds that can earn ``reproduced``
MIN_SEEDS = 3
#: share of seeds on which the rule must hold for ``reproduced``
REPRODUCED_SHARE = 0.8
#: the held-out seeds of ``make claims`` (never used to tune anything; disjoint from
# notebook seeds)
HELDOUT_SEEDS = tuple(range(1000, 1008))
_ID = re.compile(r"^[a-z][a-z0-9_-]*$")
_RANK = {
    v: i for i, v in enumerate(VERDICTS)
}  # lower is better; "not tested here" is worst


def _number(name: str, x, *, allow_inf: bool = True) -> float:
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        raise TypeError(f"{name}: expected a number, got {type(x).__name__} {x!r}")
    x = float(x)
    if math.isnan(x) or (not allow_inf and math.isinf(x)):
        raise ValueError(
            f"{name}: expected a {'finite ' if not allow_inf else ''}number, got {x}"
        )
    return x


def _text(name: str, x, *, empty: bool = False) -> str:
    if not isinstance(x, str):
        raise TypeError(f"{name}: expected a str, got {type(x).__name__}")
    if not empty and not x.strip():
        raise ValueError(f"{name}: expected a non-empty string, got {x!r}")
    return x


@dataclasses.dataclass(frozen=True)
class Rule:
    """The accepting region ``lo <= value <= hi`` of a claim's statistic (either end may
    be infinite).

    Build one with :meth:`at_least`, :meth:`at_most`, :meth:`between` or :meth:`near`.
    """

    lo: float = -math.inf
    hi: float = math.inf

    def __post_init__(self):
        lo, hi = _number("lo", self.lo), _number("hi", self.hi)
        if not lo <= hi or (math.isinf(lo) and math.isinf(hi)):
            raise ValueError(
                f"lo, hi: expected lo <= hi with at least one finite, got [{lo}, {hi}]"
            )

    @classmethod
    def at_least(cls, x: float) -> "Rule":
        return cls(lo=_number("x", x, allow_inf=False))

    @classmethod
    def at_most(cls, x: float) -> "Rule":
        return cls(hi=_number("x", x, allow_inf=False))

    @classmethod
    def between(cls, lo: float, hi: float) -> "Rule":
        return cls(
            lo=_number("lo", lo, allow_inf=False), hi=_number("hi", hi, allow_inf=False)
        )

    @classmethod
    def near(cls, target: float, rtol: float) -> "Rule":
        """A ratio with a tolerance: ``|value / target - 1| <= rtol`` (target > 0)."""
        target, rtol = (
            _number("target", target, allow_inf=False),
            _number("rtol", rtol, allow_inf=False),
        )
        if target <= 0 or not 0 < rtol < 1:
            raise ValueError(
                f"target, rtol: expected target > 0 and 0 < rtol < 1, got {target}, "
                f"{rtol}"
            )
        return cls(lo=target * (1 - rtol), hi=target * (1 + rtol))

    def holds(self, value: float) -> bool:
        """Whether ``value`` lies in the region; NaN never holds."""
        return (
            value is not None and not math.isnan(value) and self.lo <= value <= self.hi
        )

    def holds_interval(self, lo: float, hi: float) -> bool:
        """Whether the whole interval [lo, hi] lies in the region."""
        return self.holds(lo) and self.holds(hi)

    def describe(self, fmt: str = ".2f") -> str:
        if math.isinf(self.hi):
            return f"≥ {self.lo:{fmt}}"
        if math.isinf(self.lo):
            return f"≤ {self.hi:{fmt}}"
        return f"in [{self.lo:{fmt}}, {self.hi:{fmt}}]"


@dataclasses.dataclass(frozen=True)
class Claim:
    """One claim of a paper, in our words, with the rule that decides it.

    ``paper`` is the paper's evidence (a number or a rate) and ``where`` where it stands
    (``"Thm 2"``, ``"Table 3"``, ``"repo: src/main.py"``). ``statistic`` says how the
    chapter measures it (one number per seed); ``control`` what the negative control
    removes. ``expect`` is the verdict the chapter records and asserts. ``rule=None``
    marks a claim the chapter does not test.
    """

    id: str
    statement: str
    paper: str
    where: str
    statistic: str = ""
    rule: Rule | None = None
    control: str = ""
    modelled: bool = False
    expect: str = "reproduced"
    fmt: str = ".2f"

    def __post_init__(self):
        if not isinstance(self.id, str) or not _ID.match(self.id):
            raise ValueError(
                f"id: expected a lowercase identifier like 'full-log', got {self.id!r}"
            )
        for name in ("statement", "paper", "where"):
            _text(name, getattr(self, name))
        for name in ("statistic", "control"):
            _text(name, getattr(self, name), empty=True)
        if self.rule is not None and not isinstance(self.rule, Rule):
            raise TypeError(
                f"rule: expected a Rule or None, got {type(self.rule).__name__}"
            )
        if not isinstance(self.modelled, bool):
            raise TypeError(
                f"modelled: expected a bool, got {type(self.modelled).__name__}"
            )
        if self.expect not in VERDICTS:
            raise ValueError(f"expect: expected one of {VERDICTS}, got {self.expect!r}")
        if self.rule is None and self.expect != "not tested here":
            raise ValueError(
                f"expect: a claim without a rule can only be 'not tested here', got "
                f"{self.expect!r}"
            )
        if self.rule is not None and not self.statistic.strip():
            raise ValueError(
                f"statistic: expected a description of the measurement for claim "
                f"{self.id!r}"
            )
        if self.expect == "reproduced" and (self.modelled or not self.control.strip()):
            raise ValueError(
                f"expect: claim {self.id!r} can only expect 'reproduced' with a "
                f"negative "
                f"control and measured evidence (control={self.control!r}, "
                f"modelled={self.modelled})"
            )
        try:
            format(1.0, self.fmt)
        except (ValueError, TypeError):
            raise ValueError(
                f"fmt: expected a float format spec such as '.2f', got {self.fmt!r}"
            ) from None


@dataclasses.dataclass(frozen=True)
class Summary:
    """Per-seed values of one statistic, with their mean, 95 % t-interval and share
    holding."""

    seeds: tuple
    values: tuple
    mean: float
    lo: float
    hi: float
    holding: int

    @property
    def n(self) -> int:
        return len(self.values)

    @property
    def share(self) -> float:
        return self.holding / self.n if self.n else 0.0


@dataclasses.dataclass(frozen=True)
class ClaimResult:
    """A claim judged on some seeds: the method's summary, the control's, and the
    verdict."""

    claim: Claim
    summary: Summary | None
    control: Summary | None
    verdict: str
    paired: bool = False

    @property
    def control_holds(self) -> bool | None:
        """Whether the negative control satisfies the rule (``None`` when it was not
        run)."""
        if self.control is None or self.claim.rule is None:
            return None
        return self.claim.rule.holds(self.control.mean) or self.control.share >= 0.5

    def to_dict(self) -> dict:
        def s(x):
            return (
                None
                if x is None
                else {
                    k: _finite(v)
                    if isinstance(v, float)
                    else list(v)
                    if isinstance(v, tuple)
                    else v
                    for k, v in dataclasses.asdict(x).items()
                }
            )

        return {
            "id": self.claim.id,
            "verdict": self.verdict,
            "paired": self.paired,
            "method": s(self.summary),
            "control": s(self.control),
            "control_holds": self.control_holds,
        }


def _finite(x):
    return x if math.isfinite(x) else str(x)


def t_quantile(n: int, level: float = 0.95) -> float:
    """The two-sided Student-t quantile for ``n`` values (``n - 1`` degrees of
    freedom)."""
    from scipy.stats import t

    return float(t.ppf(0.5 + level / 2, n - 1))


def summarize(
    values: Mapping[int, float] | Sequence[float],
    rule: Rule | None = None,
    *,
    seeds: Sequence[int] | None = None,
    level: float = 0.95,
) -> Summary:
    """Mean, ``level`` t-interval and (given a ``rule``) the number of seeds on which it
    holds.

    ``values`` is a ``{seed: value}`` mapping or a sequence aligned with ``seeds``.
    """
    if isinstance(values, Mapping):
        if seeds is not None:
            raise ValueError(
                "seeds: expected None when values is a {seed: value} mapping"
            )
        seeds, values = tuple(values), tuple(values.values())
    else:
        if isinstance(values, (str, bytes)) or not isinstance(values, Sequence):
            raise TypeError(
                f"values: expected a sequence or a {{seed: value}} mapping, got "
                f"{type(values).__name__}"
            )
        values = tuple(values)
        seeds = tuple(range(len(values))) if seeds is None else tuple(seeds)
    if not values:
        raise ValueError("values: expected at least one value, got none")
    if len(seeds) != len(values):
        raise ValueError(
            f"seeds: expected {len(values)} seeds (one per value), got {len(seeds)}"
        )
    if len(set(seeds)) != len(seeds):
        raise ValueError(f"seeds: expected distinct seeds, got {seeds}")
    vals = tuple(_number(f"values[{i}]", v) for i, v in enumerate(values))
    if not 0 < level < 1:
        raise ValueError(f"level: expected a number in (0, 1), got {level!r}")
    n, mean = len(vals), sum(vals) / len(vals)
    if n >= 2 and all(math.isfinite(v) for v in vals):
        sd = math.sqrt(sum((v - mean) ** 2 for v in vals) / (n - 1))
        half = t_quantile(n, level) * sd / math.sqrt(n)
        lo, hi = mean - half, mean + half
    else:
        lo, hi = -math.inf, math.inf
    holding = sum(rule.holds(v) for v in vals) if rule is not None else 0
    return Summary(tuple(seeds), vals, mean, lo, hi, holding)


def decide(
    claim: Claim, summary: Summary | None, control: Summary | None = None
) -> str:
    """The book's verdict rule (see the module docstring)."""
    if claim.rule is None or summary is None or summary.n == 0:
        return "not tested here"
    rule = claim.rule
    on_mean, majority = rule.holds(summary.mean), summary.share >= 0.5
    if not on_mean and not majority:
        return "not reproduced"
    control_holds = control is None or rule.holds(control.mean) or control.share >= 0.5
    strong = (
        summary.n >= MIN_SEEDS
        and on_mean
        and rule.holds_interval(summary.lo, summary.hi)
        and summary.share >= REPRODUCED_SHARE
        and not control_holds
        and not claim.modelled
    )
    return "reproduced" if strong else "partly reproduced"


def evaluate(
    claim: Claim,
    values,
    *,
    control=None,
    seeds: Sequence[int] | None = None,
    paired: bool = False,
    level: float = 0.95,
) -> ClaimResult:
    """Judge ``claim`` from per-seed ``values`` and the negative ``control``'s per-seed
    values.

    For a comparison pass the per-seed differences (or ratios) of two methods run on the
    same seeds and ``paired=True``: the interval is then the paired one.
    """
    if not isinstance(claim, Claim):
        raise TypeError(f"claim: expected a Claim, got {type(claim).__name__}")
    if claim.rule is None or values is None:  # untested, or not measurable here
        return ClaimResult(claim, None, None, "not tested here", paired)
    summary = summarize(values, claim.rule, seeds=seeds, level=level)
    ctrl = (
        None
        if control is None
        else summarize(control, claim.rule, seeds=seeds, level=level)
    )
    return ClaimResult(claim, summary, ctrl, decide(claim, summary, ctrl), bool(paired))


def worse(*verdicts: str) -> str:
    """The weaker of several verdicts (for a claim judged on notebook seeds and on
    held-out seeds)."""
    for v in verdicts:
        if v not in VERDICTS:
            raise ValueError(f"verdicts: expected values from {VERDICTS}, got {v!r}")
    return max(verdicts, key=_RANK.__getitem__)


def judge_all(claims: Sequence[Claim], measured: Mapping) -> list:
    """:func:`evaluate` for every claim of a chapter, in order, from the dict a
    chapter's ``measure_claims`` returns (``{id: {"values": {seed: v}, "control":
    {seed: v}}}``); a claim missing from it (untested, or not measurable here) is
    judged without values."""
    if not isinstance(measured, Mapping):
        raise TypeError(
            f"measured: expected the dict of measure_claims, got "
            f"{type(measured).__name__}"
        )
    return [
        evaluate(c, measured[c.id]["values"], control=measured[c.id]["control"] or None)
        if c.id in measured
        else evaluate(c, None)
        for c in claims
    ]


def mean_values(measured: Mapping | None) -> dict | None:
    """Mean over seeds of each measured claim's statistic (a table's "ours FULL"
    column), or None without a run."""
    if measured is None:
        return None
    return {
        k: float(sum(v["values"].values()) / len(v["values"]))
        for k, v in measured.items()
    }


def assert_claims(results: Sequence[ClaimResult]) -> None:
    """Fail when a claim the chapter records as ``reproduced`` (or ``partly``) no longer
    earns it.

    Also fails when a claim recorded as ``reproduced`` has a negative control that was
    not run or that holds: such a claim is not evidence. (A claim recorded as ``partly
    reproduced`` may be partly precisely because its control holds.)
    """
    problems = []
    for r in results:
        if not isinstance(r, ClaimResult):
            raise TypeError(
                f"results: expected ClaimResult items, got {type(r).__name__}"
            )
        want = r.claim.expect
        if want not in ("reproduced", "partly reproduced"):
            continue
        if want == "reproduced" and r.control_holds is not False:
            problems.append(
                f"{r.claim.id}: negative control "
                f"{'not run' if r.control is None else 'also holds'}"
                f" ({r.claim.control or 'none named'})"
            )
        if _RANK[r.verdict] > _RANK[want]:
            s = r.summary
            got = (
                "no values"
                if s is None
                else (
                    f"mean {s.mean:{r.claim.fmt}} [{s.lo:{r.claim.fmt}}, "
                    f"{s.hi:{r.claim.fmt}}], {s.holding}/{s.n} seeds"
                )
            )
            problems.append(
                f"{r.claim.id}: expected {want!r}, got {r.verdict!r} "
                f"(rule {r.claim.rule.describe(r.claim.fmt)}; {got})"
            )
    if problems:
        raise AssertionError("claims that no longer hold:\n  " + "\n  ".join(problems))


# ---------------------------------------------------------------- rendering
def _esc(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _cell(s: Summary | None, fmt: str) -> str:
    if s is None:
        return "—"
    if s.n == 1:
        return f"{s.mean:{fmt}}"
    return f"{s.mean:{fmt}} [{s.lo:{fmt}}, {s.hi:{fmt}}]"


def claims_table(
    results: Sequence[ClaimResult],
    *,
    full: Mapping[str, float] | None = None,
    claims_file: Mapping | None = None,
    slug: str | None = None,
) -> str:
    """The chapter's "Results against the paper" table as MyST Markdown.

    ``full`` maps claim ids to the FULL run's value (``None`` when there is no FULL
    result: the column shows "not run"); ``claims_file`` is
    ``results/claims/<slug>.json`` as loaded by :func:`load_claims_file` (held-out
    seeds); with ``slug`` given, a file computed from an older ``lib/<slug>/`` is marked
    "stale". The verdict is the weaker of the notebook seeds' and the held-out seeds'
    verdicts.
    """
    held_all = {
        k: v.get("heldout") for k, v in (claims_file or {}).get("claims", {}).items()
    }
    stale = bool(claims_file and slug and claims_file.get("lib_hash") != lib_hash(slug))
    head = (
        "| claim | paper (where) | criterion | ours FULL | ours SMOKE: mean [95% CI] "
        "| seeds holding "
        "(notebook · held-out) | verdict |"
    )
    lines = [head, "|---|---|---|---|---|---|---|"]
    for r in results:
        c, s = r.claim, r.summary
        crit = "—" if c.rule is None else f"{c.statistic} {c.rule.describe(c.fmt)}"
        if c.modelled:
            crit += " (modelled)"
        if r.control is not None:
            crit += f"; control ({c.control}): {r.control.mean:{c.fmt}}"
        fv = (
            "—"
            if c.rule is None
            else (
                "not run"
                if full is None
                else ("—" if full.get(c.id) is None else f"{full[c.id]:{c.fmt}}")
            )
        )
        held = held_all.get(c.id)
        seeds = "—" if s is None else f"{s.holding}/{s.n}"
        verdict = r.verdict
        if held is not None and held.get("method") is not None and stale:
            seeds += " · stale (run make claims)"  # an old file's verdict is not used
        elif held is not None and held.get("method") is not None:
            seeds += f" · {held['method']['holding']}/{len(held['method']['values'])}"
            verdict = worse(verdict, held["verdict"])
        elif c.rule is not None:
            seeds += " · not run"
        lines.append(
            f"| **{_esc(c.id)}**: {_esc(c.statement)} | {_esc(c.paper)} "
            f"({_esc(c.where)}) | "
            f"{_esc(crit)} | {fv} | {_cell(s, c.fmt)} | {seeds} | **{verdict}** |"
        )
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------- held-out seeds and
# the ledger file
def _code_fingerprint(source: bytes) -> bytes:
    """What a file computes, without its layout: the syntax tree with docstrings
    removed.

    Re-wrapping lines (``ruff format``), editing comments or docstrings leaves it
    unchanged; any change to the code itself changes it. A file that does not parse
    falls back to its bytes."""
    import ast

    try:
        tree = ast.parse(source)
    except SyntaxError:
        return source
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if (
            isinstance(
                node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
            )
            and body
            and isinstance(body[0], ast.Expr)
            and isinstance(body[0].value, ast.Constant)
            and isinstance(body[0].value.value, str)
        ):
            node.body = body[1:] or [ast.Pass()]
    return ast.dump(tree, include_attributes=False).encode()


def lib_hash(slug: str, root: pathlib.Path | None = None) -> str:
    """sha256 over the code of ``lib/<slug>/`` (file names and syntax trees), to detect
    a stale claims file. Layout, comments and docstrings do not count
    (`_code_fingerprint`), nor does ``exercises.py``: the self-checks of the
    exercises measure no claim."""
    root = (
        pathlib.Path(root)
        if root is not None
        else pathlib.Path(__file__).resolve().parents[2]
    )
    folder = root / "lib" / slug
    if not folder.is_dir():
        raise ValueError(
            f"slug: expected a chapter with a lib/{slug}/ folder, got {slug!r}"
        )
    h = hashlib.sha256()
    for path in sorted(folder.rglob("*.py")):
        if path.relative_to(folder).as_posix() == "exercises.py":
            continue
        code = _code_fingerprint(path.read_bytes())
        h.update(path.relative_to(folder).as_posix().encode() + b"\0" + code + b"\0")
    return h.hexdigest()


def claims_path(slug: str) -> pathlib.Path:
    """``results/claims/<slug>.json`` (next to the FULL results, ``BOOK_RESULTS_DIR``
    honoured)."""
    from .cache import results_path

    return results_path(slug).parent / "claims" / f"{slug}.json"


def load_claims_file(slug: str) -> dict | None:
    """The committed ``results/claims/<slug>.json`` as a dict, or ``None`` when it is
    absent."""
    import json

    path = claims_path(slug)
    if not path.exists():
        return None
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as err:
        raise ValueError(f"{path}: unreadable claims file ({err})") from None
    if not isinstance(data, dict) or "claims" not in data or "provenance" not in data:
        raise ValueError(
            f"{path}: expected keys 'claims' and 'provenance', got "
            f"{sorted(data) if isinstance(data, dict) else type(data).__name__}"
        )
    return data


def check_seeds(
    notebook: Sequence[int], heldout: Sequence[int] = HELDOUT_SEEDS
) -> None:
    """Raise unless notebook seeds and held-out seeds are disjoint and there are ≥ 5
    held-out seeds."""
    overlap = set(notebook) & set(heldout)
    if overlap:
        raise ValueError(
            f"seeds: notebook seeds must not overlap the held-out seeds, both have "
            f"{sorted(overlap)}"
        )
    if len(set(heldout)) < 5:
        raise ValueError(
            f"heldout: expected at least 5 distinct held-out seeds, got "
            f"{len(set(heldout))}"
        )


def seed_list(seeds) -> tuple:
    """``seeds`` as a tuple of distinct non-negative ints (what a chapter's
    ``measure_claims`` takes)."""
    if isinstance(seeds, (str, bytes)) or not isinstance(seeds, (list, tuple, range)):
        raise TypeError(
            f"seeds: expected a list or tuple of ints, got {type(seeds).__name__} "
            f"({seeds!r})"
        )
    for i, s in enumerate(seeds):
        if isinstance(s, bool) or not isinstance(s, int):
            raise TypeError(
                f"seeds[{i}]: expected an int, got {type(s).__name__} ({s!r})"
            )
    seeds = tuple(int(s) for s in seeds)
    if not seeds or len(set(seeds)) != len(seeds) or min(seeds) < 0:
        raise ValueError(f"seeds: expected distinct non-negative seeds, got {seeds}")
    return seeds
