"""The proof language: tokens, formulas, statements, mini-steps and the step-by-step
checker.

A proof is Isar-like text, one command per line, tokens separated by spaces::

    proof
    have h2 : ( a + b ) ** 2 = 5 ** 2 by simp
    have h3 : a ** 2 + b ** 2 = 13
    proof
    have h4 : a ** 2 + b ** 2 = ( a + b ) ** 2 - 2 * ( a * b ) by algebra
    show ?thesis by arith
    qed
    show ?thesis by arith
    qed

:func:`parse_steps` splits it into **mini-steps** as Isabelle's ``parse_text`` does
(``have h : φ`` and ``by simp`` are two steps); :func:`run_step` executes one mini-step
on a :class:`ProofState`. A state is in **prove mode** when a claim is pending
(``by``/``proof``/``sorry`` expected) and in **state mode** otherwise
(``have``/``show``/``qed`` expected), as in Isabelle.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

RELATIONS = ("<=", ">=", "!=", "=", "<", ">")
_TOKEN = re.compile(
    r"\?thesis|\*\*|<=|>=|!=|[A-Za-z_][A-Za-z_0-9]*|\d+|[-+*/()%:|=<>,;]"
)
_NAME = re.compile(r"^[A-Za-z_][A-Za-z_0-9]*$")
KEYWORDS = ("proof", "qed", "have", "show", "by", "sorry", "?thesis", ":")


def tokenize(text: str) -> list[str]:
    """Split ``text`` into the language's tokens (numbers are whole tokens)."""
    if not isinstance(text, str):
        raise TypeError(f"text: expected a str, got {type(text).__name__}")
    return _TOKEN.findall(text)


@dataclass(frozen=True)
class Formula:
    """A disjunction of relations ``lhs OP rhs`` over sympy expressions (usually one
    relation)."""

    text: str
    atoms: tuple  # ((op, lhs, rhs), ...) with sympy lhs/rhs, read as a disjunction

    def __str__(self):
        return self.text


@dataclass(frozen=True)
class Statement:
    """A theorem: typed variables, named assumptions and a goal (all formulas as token
    text)."""

    variables: tuple  # variable names
    domain: str  # "int" or "real"
    assumptions: tuple  # ((name, formula_text), ...)
    goal: str

    def __post_init__(self):
        _check_variables(self.variables)
        _check_domain(self.domain)
        if (
            isinstance(self.assumptions, (str, bytes))
            or not isinstance(self.assumptions, (tuple, list))
            or not all(
                isinstance(a, (tuple, list))
                and len(a) == 2
                and all(isinstance(t, str) for t in a)
                for a in self.assumptions
            )
        ):
            raise TypeError(
                f"assumptions: expected a tuple of (name, formula text) pairs, got "
                f"{self.assumptions!r:.80}"
            )
        _check_text("goal", self.goal)

    def prompt(self) -> str:
        """The statement as the proposer reads it."""
        parts = [f"{self.domain} {' '.join(self.variables)}"]
        parts += [f"assume {n} : {f}" for n, f in self.assumptions]
        return " ; ".join(parts) + f" ; goal {self.goal}"


DOMAINS = ("int", "real")


def _check_text(name: str, text) -> str:
    if not isinstance(text, str):
        raise TypeError(f"{name}: expected a str, got {type(text).__name__}")
    return text


def _check_domain(domain) -> str:
    if domain not in DOMAINS:
        if not isinstance(domain, str):
            raise TypeError(
                f"domain: expected one of {DOMAINS}, got {type(domain).__name__} "
                f"({domain!r})"
            )
        raise ValueError(f"domain: expected one of {DOMAINS}, got {domain!r}")
    return domain


def _check_variables(variables) -> None:
    if (
        isinstance(variables, (str, bytes))
        or not isinstance(variables, (tuple, list))
        or not all(isinstance(v, str) and _NAME.match(v) for v in variables)
    ):
        raise TypeError(
            f"variables: expected a tuple of variable names, got {variables!r:.80}"
        )


def _check_stmt(stmt) -> None:
    if not isinstance(stmt, Statement):
        raise TypeError(f"stmt: expected a Statement, got {type(stmt).__name__}")


def _check_prover(prover, atp: bool = False) -> None:
    """A prover ``prover(hyps, goal, tactic, stmt) -> bool`` (with ``call_atp`` when
    ``atp``)."""
    if not callable(prover) or (
        atp and not callable(getattr(prover, "call_atp", None))
    ):
        raise TypeError(
            f"prover: expected a "
            f"Prover{' (with call_atp)' if atp else ' (a callable)'}, "
            f"got {type(prover).__name__}"
        )


def _check_steps(steps) -> None:
    if (
        isinstance(steps, (str, bytes))
        or not isinstance(steps, (list, tuple))
        or not all(isinstance(t, str) for t in steps)
    ):
        raise TypeError(
            f"steps: expected a list of mini-steps (str), got {steps!r:.80}"
        )


_SYMBOLS: dict = {}


def symbols_for(variables: tuple, domain: str) -> dict:
    """sympy symbols (integer or real, cached) for the variable names."""
    import sympy as sp

    key = (tuple(variables), domain)
    if key not in _SYMBOLS:
        kw = {"integer": True} if domain == "int" else {"real": True}
        _SYMBOLS[key] = {v: sp.Symbol(v, **kw) for v in variables}
    return _SYMBOLS[key]


def _expr(tokens: list[str], syms: dict):
    import sympy as sp
    from sympy.parsing.sympy_parser import parse_expr

    for t in tokens:
        if t.isidentifier() and t not in syms:
            raise ValueError(f"unknown name {t!r}")
        if t in (":", ";", ",", "|", "?thesis"):
            raise ValueError(f"unexpected {t!r} in an expression")
    if not tokens:
        raise ValueError("empty expression")
    out = parse_expr(
        " ".join(tokens),
        local_dict=dict(syms),
        global_dict={
            "Integer": sp.Integer,
            "Rational": sp.Rational,
            "Symbol": sp.Symbol,
            "Mod": sp.Mod,
            "Float": sp.Float,
        },
        evaluate=True,
    )
    if not isinstance(out, sp.Expr):
        raise ValueError("not an expression")
    return out


_FORMULA_CACHE: dict = {}


def parse_formula(text: str, variables: tuple, domain: str) -> Formula:
    """Parse ``lhs OP rhs ( | lhs OP rhs )*``; raises ``ValueError`` on malformed
    text."""
    _check_text("text", text)
    _check_variables(variables)
    _check_domain(domain)
    key = (text, tuple(variables), domain)
    if key in _FORMULA_CACHE:
        out = _FORMULA_CACHE[key]
        if isinstance(out, Exception):
            raise out
        return out
    try:
        syms = symbols_for(variables, domain)
        atoms = []
        for part in " ".join(tokenize(text)).split(" | "):
            toks = part.split()
            ops = [i for i, t in enumerate(toks) if t in RELATIONS]
            if len(ops) != 1:
                raise ValueError(f"expected one relation in {part!r}")
            i = ops[0]
            atoms.append((toks[i], _expr(toks[:i], syms), _expr(toks[i + 1 :], syms)))
        out = Formula(" ".join(tokenize(text)), tuple(atoms))
    except Exception as exc:  # sympy raises many kinds of errors on garbage
        out = ValueError(f"cannot parse formula {text!r}: {exc}")
    _FORMULA_CACHE[key] = out
    if isinstance(out, Exception):
        raise out
    return out


# --- mini-steps -----------------------------------------------------------------------


def parse_steps(text: str) -> list[str]:
    """Split proof text into mini-steps: ``have h : φ`` / ``show φ`` / ``by TAC`` /
    ``proof`` / ``qed`` / ``sorry``; a line that is none of these stays one (failing)
    step."""
    if not isinstance(text, str):
        raise TypeError(f"text: expected a str, got {type(text).__name__}")
    steps = []
    for line in text.split("\n"):
        toks = tokenize(line)
        if not toks:
            continue
        cut = [i for i, t in enumerate(toks) if t in ("by", "sorry") and i > 0]
        if toks[0] in ("have", "show") and cut:
            steps.append(" ".join(toks[: cut[0]]))
            steps.append(" ".join(toks[cut[0] :]))
        else:
            steps.append(" ".join(toks))
    return steps


def join_steps(steps: list[str]) -> str:
    """Proof text from mini-steps (``by``/``sorry`` go back on their claim's line)."""
    _check_steps(steps)
    lines: list[str] = []
    for s in steps:
        if not s:
            continue
        if (
            (s.startswith("by ") or s == "sorry")
            and lines
            and lines[-1].split()[0] in ("have", "show")
            and " by " not in lines[-1]
            and not lines[-1].endswith(" sorry")
        ):
            lines[-1] += " " + s
        else:
            lines.append(s)
    return "\n".join(lines)


# --- proof states ---------------------------------------------------------------------


@dataclass(frozen=True)
class Frame:
    """One open block: the facts in scope, the block's goal, whether it has been shown,
    and the claim (name, formula, is_show) that the block proves for its parent."""

    hyps: tuple
    goal: Formula
    shown: bool
    claim: tuple


@dataclass(frozen=True)
class ProofState:
    """Frames (the root frame holds the assumptions) and the pending claim (prove mode)
    or None."""

    frames: tuple
    pending: tuple | None  # (name, Formula, is_show)
    done: bool = False

    @property
    def mode(self) -> str:
        return (
            "done" if self.done else ("prove" if self.pending is not None else "state")
        )

    @property
    def level(self) -> int:
        """Isabelle-style proof level: 2·depth (+1 in prove mode); 0 when the theorem is
        done."""
        if self.done:
            return 0
        return 2 * (len(self.frames) - 1) + (1 if self.pending is not None else 0)

    @property
    def hyps(self) -> tuple:
        return self.frames[-1].hyps

    def describe(self) -> str:
        """A short human-readable proof state."""
        if self.done:
            return "no goals"
        facts = ", ".join(f"{n}: {f}" for n, f in self.hyps)
        tail = (
            f"prove {self.pending[1]}"
            if self.pending is not None
            else f"block goal {self.frames[-1].goal}"
        )
        return f"[{facts}] ⊢ {tail}"


@dataclass
class StepResult:
    """What one mini-step did: the new state (None on error), the error text, the tactic
    used."""

    state: ProofState | None
    error: str | None = None
    kind: str = ""  # "illegal", "tactic", "structure", "parse"
    tactic: str | None = None
    info: dict = field(default_factory=dict)


def initial_state(stmt: Statement) -> ProofState:
    """The state right after the theorem statement: prove mode on the goal."""
    _check_stmt(stmt)
    hyps = tuple(
        (n, parse_formula(f, stmt.variables, stmt.domain)) for n, f in stmt.assumptions
    )
    goal = parse_formula(stmt.goal, stmt.variables, stmt.domain)
    root = Frame(hyps, goal, False, ("thesis", goal, True))
    return ProofState((root,), ("thesis", goal, True))


def _close(state: ProofState, name: str, formula: Formula, is_show: bool) -> ProofState:
    """The pending claim is proved: add it as a fact, or mark the block's goal shown."""
    frames = list(state.frames)
    if len(frames) == 1 and is_show:  # the theorem itself (one-line proof)
        return ProofState(tuple(frames), None, done=True)
    top = frames[-1]
    if is_show:
        frames[-1] = Frame(top.hyps + ((name, formula),), top.goal, True, top.claim)
    else:
        frames[-1] = Frame(
            top.hyps + ((name, formula),), top.goal, top.shown, top.claim
        )
    return ProofState(tuple(frames), None)


def run_step(state: ProofState, step: str, stmt: Statement, prover) -> StepResult:
    """Execute one mini-step. ``prover(hyps, goal, tactic, stmt) -> bool`` decides ``by
    TAC``."""
    if not isinstance(state, ProofState):
        raise TypeError(
            f"state: expected a ProofState (see initial_state), got "
            f"{type(state).__name__}"
        )
    _check_text("step", step)
    _check_stmt(stmt)
    _check_prover(prover)
    toks = step.split()
    if state.done:
        return StepResult(None, "no goals left", "illegal")
    if not toks:
        return StepResult(None, "empty step", "parse")
    head = toks[0]
    if head in ("by", "sorry", "proof"):
        if state.pending is None:
            return StepResult(
                None,
                f"illegal application of proof command in state mode: {step}",
                "illegal",
            )
        name, formula, is_show = state.pending
        if head == "sorry":
            if len(toks) != 1:
                return StepResult(None, f"bad sorry: {step}", "parse")
            return StepResult(_close(state, name, formula, is_show), tactic="sorry")
        if head == "proof":
            if len(toks) != 1:
                return StepResult(None, f"bad proof: {step}", "parse")
            frame = Frame(state.hyps, formula, False, state.pending)
            return StepResult(ProofState(state.frames + (frame,), None))
        if len(toks) != 2:
            return StepResult(None, f"bad tactic call: {step}", "tactic")
        ok = prover(state.hyps, formula, toks[1], stmt)
        if not ok:
            return StepResult(
                None, f"tactic {toks[1]} failed on {formula}", "tactic", tactic=toks[1]
            )
        return StepResult(_close(state, name, formula, is_show), tactic=toks[1])
    if state.pending is not None:
        return StepResult(
            None,
            f"illegal application of proof command in prove mode: {step}",
            "illegal",
        )
    if head == "qed":
        if len(toks) != 1 or len(state.frames) == 1:
            return StepResult(None, f"bad qed: {step}", "structure")
        top = state.frames[-1]
        if not top.shown:
            return StepResult(
                None, f"failed to finish proof: {top.goal} not shown", "structure"
            )
        parent = ProofState(state.frames[:-1], None)
        name, formula, is_show = top.claim
        if len(state.frames) == 2:  # the theorem's own proof block
            return StepResult(ProofState(state.frames[:-1], None, done=True))
        return StepResult(_close(parent, name, formula, is_show))
    if head == "have":
        if (
            len(toks) < 4
            or toks[2] != ":"
            or not _NAME.match(toks[1])
            or toks[1] in KEYWORDS
        ):
            return StepResult(None, f"bad have: {step}", "parse")
        try:
            f = parse_formula(" ".join(toks[3:]), stmt.variables, stmt.domain)
        except ValueError as exc:
            return StepResult(None, str(exc), "parse")
        return StepResult(ProofState(state.frames, (toks[1], f, False)))
    if head == "show":
        if len(state.frames) == 1:
            return StepResult(None, "show outside a block", "structure")
        goal = state.frames[-1].goal
        if toks[1:] == ["?thesis"]:
            f = goal
        else:
            try:
                f = parse_formula(" ".join(toks[1:]), stmt.variables, stmt.domain)
            except ValueError as exc:
                return StepResult(None, str(exc), "parse")
            if f.atoms != goal.atoms:
                return StepResult(
                    None,
                    f"show {f} does not match the block's goal {goal}",
                    "structure",
                )
        return StepResult(ProofState(state.frames, ("thesis", f, True)))
    return StepResult(None, f"unknown command {head!r}", "parse")
