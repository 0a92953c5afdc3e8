"""Tactics: cheap built-ins (sympy, small-budget z3) and the "hammer" (z3 with a larger
budget).

Every z3 call is bounded by a deterministic **resource limit** (``rlimit``), never by
wall-clock time, so a tactic succeeds or fails identically on every run and machine.
:class:`Prover` caches results per (facts, goal, tactic): proposals repeat most of their
steps.
"""

from __future__ import annotations

from lib.common import check_int

from .language import Formula, _check_domain, _check_variables

BUILTINS = (
    "simp",
    "algebra",
    "arith",
    "sos",
    "eval",
    "auto",
)  # tried in this order, then the hammer
TACTICS = BUILTINS + ("hammer",)
_NEG = {"=": "!=", "!=": "=", "<": ">=", "<=": ">", ">": "<=", ">=": "<"}


def _rel(op, a, b):
    return {
        "=": a == b,
        "!=": a != b,
        "<": a < b,
        "<=": a <= b,
        ">": a > b,
        ">=": a >= b,
    }[op]


def to_z3(expr, env: dict, atoms: dict | None = None, domain: str = "real"):
    """sympy expression → z3 term. With ``atoms`` (a dict), every nonlinear monomial
    becomes a fresh variable (linear arithmetic over atoms, as Isabelle's ``linarith``
    treats products)."""
    import sympy as sp
    import z3

    ctx = env["__ctx__"]
    if expr.is_Integer:
        return (
            z3.IntVal(int(expr), ctx) if domain == "int" else z3.RealVal(int(expr), ctx)
        )
    if expr.is_Rational:
        if domain == "int":
            raise ValueError("fraction in an integer problem")
        return z3.RealVal(f"{expr.p}/{expr.q}", ctx)
    if expr.is_Symbol:
        return env[expr.name]
    if atoms is not None and expr.is_Mul:
        coeff, rest = expr.as_coeff_Mul()
        if coeff != 1:
            return to_z3(coeff, env, atoms, domain) * to_z3(rest, env, atoms, domain)
    if atoms is not None and not (
        expr.is_Symbol or expr.is_number or _is_linear_node(expr)
    ):
        key = sp.srepr(expr)
        if key not in atoms:
            atoms[key] = (z3.Int if domain == "int" else z3.Real)(
                f"atom{len(atoms)}", ctx
            )
        return atoms[key]
    if expr.is_Add:
        out = to_z3(expr.args[0], env, atoms, domain)
        for a in expr.args[1:]:
            out = out + to_z3(a, env, atoms, domain)
        return out
    if expr.is_Mul:
        out = to_z3(expr.args[0], env, atoms, domain)
        for a in expr.args[1:]:
            out = out * to_z3(a, env, atoms, domain)
        return out
    if expr.is_Pow and expr.exp.is_Integer:
        base, n = to_z3(expr.base, env, atoms, domain), int(expr.exp)
        if n == 0:
            return z3.IntVal(1, ctx) if domain == "int" else z3.RealVal(1, ctx)
        out = base
        for _ in range(abs(n) - 1):
            out = out * base
        if n < 0:
            if domain == "int":
                raise ValueError("negative power in an integer problem")
            return 1 / out
        return out
    if isinstance(expr, sp.Mod):
        return to_z3(expr.args[0], env, atoms, domain) % to_z3(
            expr.args[1], env, atoms, domain
        )
    raise ValueError(f"unsupported expression {expr}")


def _is_linear_node(expr) -> bool:
    """True for nodes linear arithmetic may look inside: sums, constant multiples."""
    if expr.is_Add:
        return True
    if expr.is_Mul:
        return sum(1 for a in expr.args if not a.is_number) <= 1
    import sympy as sp

    return isinstance(expr, sp.Mod) and expr.args[1].is_number


def _formula_z3(f: Formula, env, atoms, domain):
    import z3

    parts = [
        _rel(op, to_z3(l, env, atoms, domain), to_z3(r, env, atoms, domain))
        for op, l, r in f.atoms
    ]
    return parts[0] if len(parts) == 1 else z3.Or(*parts)


def _z3_usage(s) -> int:
    st = s.statistics()
    return int(st.get_key_value("rlimit count")) if "rlimit count" in st.keys() else 0


def z3_prove(
    hyps: list,
    goal: Formula,
    variables: tuple,
    domain: str,
    rlimit: int,
    linear: bool = False,
    nlsat: bool = False,
) -> bool:
    """Is ``hyps ⊢ goal`` valid? z3 checks hyps ∧ ¬goal for unsatisfiability within
    ``rlimit``.

    A bogus ``domain`` or a ``rlimit`` < 1 raises (z3 would read the first as "real" and
    wrap the second into a huge budget)."""
    if (
        isinstance(hyps, (str, bytes))
        or not isinstance(hyps, (list, tuple))
        or not all(isinstance(f, Formula) for f in hyps)
    ):
        raise TypeError(f"hyps: expected a list of Formula, got {hyps!r:.80}")
    if not isinstance(goal, Formula):
        raise TypeError(
            f"goal: expected a Formula (see parse_formula), got {type(goal).__name__}"
        )
    _check_variables(variables)
    _check_domain(domain)
    check_int("rlimit", rlimit, 1)
    import sympy as sp
    import z3

    ctx = z3.Context()  # a fresh context: no history, same answer every time
    env = {v: (z3.Int if domain == "int" else z3.Real)(v, ctx) for v in variables}
    env["__ctx__"] = ctx
    atoms = {} if linear else None
    if linear:  # normalise polynomials, then products are atoms
        hyps = [_expanded(f) for f in hyps]
        goal = _expanded(goal)
    try:
        facts = [_formula_z3(f, env, atoms, domain) for f in hyps]
        neg = z3.Not(_formula_z3(goal, env, atoms, domain), ctx)
    except (ValueError, ZeroDivisionError, z3.Z3Exception, TypeError, sp.SympifyError):
        return False
    if nlsat and domain == "real":
        s = z3.Tactic("qfnra-nlsat", ctx).solver()
    else:
        s = z3.Solver(ctx=ctx)
    s.set("rlimit", int(rlimit))
    s.add(*facts)
    s.add(neg)
    out = s.check() == z3.unsat
    LAST_USAGE[0] = _z3_usage(s)
    return out


LAST_USAGE = [0]


def _expanded(f: Formula) -> Formula:
    import sympy as sp

    return Formula(
        f.text, tuple((op, sp.expand(l - r), sp.Integer(0)) for op, l, r in f.atoms)
    )


def _subst_map(hyps: list):
    """Equalities ``x = e`` (or ``e = x``) among the facts, as a substitution x ↦ e."""
    sub = {}
    for f in hyps:
        if len(f.atoms) != 1 or f.atoms[0][0] != "=":
            continue
        _, l, r = f.atoms[0]
        if l.is_Symbol and l not in sub and l not in r.free_symbols:
            sub[l] = r
        elif r.is_Symbol and r not in sub and r not in l.free_symbols:
            sub[r] = l
    return sub


def _zero(e) -> bool:
    import sympy as sp

    try:
        return sp.cancel(sp.together(sp.expand(e))) == 0
    except (sp.PolynomialError, TypeError, ValueError):
        return False


def simp(hyps, goal: Formula) -> bool:
    """Rewrite with the facts' equations ``x = e`` (3 passes) and with facts ``e1 = e2``
    whose side is a subterm; then the goal must be an identity (or match a fact)."""
    if len(goal.atoms) != 1:
        return False
    op, l, r = goal.atoms[0]
    sub = _subst_map(hyps)
    for _ in range(3):
        l, r = l.subs(sub), r.subs(sub)
    eqs = [
        (a[0][1], a[0][2])
        for a in (f.atoms for f in hyps)
        if len(a) == 1 and a[0][0] == "="
    ]
    eqs = [(a, b) for a, b in eqs if not a.is_Symbol and not a.is_number]
    if eqs:  # rewrite every lhs -> rhs where it occurs
        l, r = l.subs(eqs, simultaneous=True), r.subs(eqs, simultaneous=True)
    d = l - r
    if op == "=":
        if _zero(d):
            return True
    elif d.is_number:
        return bool(_rel(op, d, 0))
    for f in hyps:  # the goal is a fact, up to the rewriting
        if (
            len(f.atoms) == 1
            and f.atoms[0][0] == op
            and _zero((f.atoms[0][1] - f.atoms[0][2]).subs(sub) - d)
        ):
            return True
    return False


def algebra(hyps, goal: Formula) -> bool:
    """A ring/field identity: lhs − rhs simplifies to 0 (no facts used)."""
    return (
        len(goal.atoms) == 1
        and goal.atoms[0][0] == "="
        and _zero(goal.atoms[0][1] - goal.atoms[0][2])
    )


def sos(hyps, goal: Formula) -> bool:
    """``p ≥ q`` (or ≤) when p − q factors into a syntactically non-negative form: sums
    and products of positive constants, even powers and variables that a fact ``x > 0``
    (or ≥ 0) makes positive."""
    import sympy as sp

    if len(goal.atoms) != 1 or goal.atoms[0][0] not in (">=", "<=", ">", "<"):
        return False
    op, l, r = goal.atoms[0]
    d = sp.factor(sp.expand(l - r if op in (">=", ">") else r - l))
    pos = {
        f.atoms[0][1]
        for f in hyps
        if len(f.atoms) == 1
        and f.atoms[0][0] in (">", ">=")
        and f.atoms[0][2] == 0
        and f.atoms[0][1].is_Symbol
    }

    def nonneg(e) -> bool:
        if e.is_number:
            return bool(e >= 0)
        if e.is_Symbol:
            return e in pos
        if e.is_Pow and e.exp.is_Integer:
            return int(e.exp) % 2 == 0 or nonneg(e.base)
        if e.is_Add or e.is_Mul:
            return all(nonneg(a) for a in e.args)
        return False

    if op in (">", "<"):
        return False if d == 0 else nonneg(d) and d.is_positive is True
    return nonneg(d)


def eval_(hyps, goal: Formula) -> bool:
    """Ground evaluation: substitute the facts' ``x = constant`` and evaluate."""
    sub = {}
    for f in hyps:
        if (
            len(f.atoms) == 1
            and f.atoms[0][0] == "="
            and f.atoms[0][1].is_Symbol
            and f.atoms[0][2].is_number
        ):
            sub.setdefault(f.atoms[0][1], f.atoms[0][2])
    vals = []
    for op, l, r in goal.atoms:
        d = (l - r).subs(sub)
        if not d.is_number:
            return False
        vals.append(bool(_rel(op, d, 0)))
    return any(vals)


class Prover:
    """Decides ``by TAC`` steps, with a cache per (facts, goal, tactic).

    ``small`` is the rlimit of the built-in z3 tactics (``arith``, ``auto``), ``large``
    the hammer's. ``calls`` counts the tactic applications that were really computed
    (cache misses).
    """

    def __init__(self, small: int = 2000, large: int = 30000):
        check_int("small", small, 1)
        check_int("large", large, 1)
        self.small, self.large = int(small), int(large)
        self.cache: dict = {}
        self.calls = 0

    def __call__(self, hyps, goal: Formula, tactic: str, stmt) -> bool:
        if tactic not in TACTICS:
            return False
        facts = tuple(f for _, f in hyps)
        key = (
            stmt.variables,
            stmt.domain,
            tuple(f.text for f in facts),
            goal.text,
            tactic,
        )
        if key not in self.cache:
            self.calls += 1
            self.cache[key] = self._run(list(facts), goal, tactic, stmt)
        return self.cache[key]

    def _run(self, facts, goal, tactic, stmt) -> bool:
        if tactic == "simp":
            return simp(facts, goal)
        if tactic == "algebra":
            return algebra(facts, goal)
        if tactic == "sos":
            return sos(facts, goal)
        if tactic == "eval":
            return eval_(facts, goal)
        if tactic == "arith":
            return z3_prove(
                facts, goal, stmt.variables, stmt.domain, self.small, linear=True
            )
        if tactic == "auto":
            return z3_prove(facts, goal, stmt.variables, stmt.domain, self.small)
        return z3_prove(
            facts, goal, stmt.variables, stmt.domain, self.large
        ) or z3_prove(facts, goal, stmt.variables, stmt.domain, self.large, nlsat=True)

    def call_atp(
        self, hyps, goal: Formula, stmt, use_hammer: bool = True
    ) -> str | None:
        """The paper's ``callATP``: the built-in tactics in order, then the hammer; the
        first that works (``"by TAC"``) or None."""
        for tac in BUILTINS + (("hammer",) if use_hammer else ()):
            if self(hyps, goal, tac, stmt):
                return f"by {tac}"
        return None
