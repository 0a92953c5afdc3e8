"""ProofAug on one proposal, and the two baselines (DSP, hammer on the whole theorem).

Follows the official ``main.py::proof_aug_1dp``: (1) replay the proposal and derive the
**maximal compatible semi-proof** (a failed tactic becomes ``sorry``; a failed
structural step erases its innermost ``proof … qed`` block, which becomes ``sorry``; a
failure outside every block abandons the proposal); (2) for each ``sorry`` in order,
``callATP`` (built-ins, then the hammer), optionally **ERP** (re-query the proposer for
that subgoal), else **coarsen**: replace the enclosing block — from the last step at
proof level ≤ ℓ−2 before the ``sorry`` to the next one after it — by one ``sorry`` and
start again, up to the whole theorem.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .language import (
    Statement,
    _check_prover,
    _check_steps,
    _check_stmt,
    _check_text,
    initial_state,
    join_steps,
    parse_steps,
    run_step,
)


@dataclass
class Outcome:
    """Result of one method on one proposal: success, the stage that closed it
    (``init_proof``, ``init_atp``, ``coarse_atp``, ``erp``; ``hammer`` for the
    baseline), the final proof, the extra proposer calls (ERP) and a trace of (kind,
    text) events."""

    success: bool
    stage: str | None = None
    proof: str | None = None
    extra_calls: int = 0
    events: list = field(default_factory=list)


def _flatten(steps: list) -> list:
    out = []
    for s in steps:
        if s:
            out.extend(parse_steps(s) if "\n" in s else [s])
    return out


def replay(stmt: Statement, steps: list, prover):
    """States before each step and the final state; ``None`` from the first failing step
    on."""
    _check_stmt(stmt)
    _check_steps(steps)
    _check_prover(prover)
    state, before = initial_state(stmt), []
    for step in steps:
        before.append(state)
        res = run_step(state, step, stmt, prover)
        if res.error:
            return before, None, res
        state = res.state
    return before, state, None


def check_proof(stmt: Statement, text: str, prover) -> bool:
    """Does ``text`` prove ``stmt`` as written (no ``sorry``, every tactic succeeds)?"""
    _check_stmt(stmt)
    _check_text("text", text)
    _check_prover(prover)
    steps = parse_steps(text)
    if "sorry" in steps:
        return False
    _, final, _ = replay(stmt, steps, prover)
    return final is not None and final.done


def blocks_of(steps: list) -> list:
    """``(proof index, qed index)`` pairs, innermost first (in the order their ``qed``
    closes)."""
    _check_steps(steps)
    opened, blocks = [], []
    for i, s in enumerate(steps):
        if s.startswith("proof"):
            opened.append(i)
        if s == "qed":
            if not opened:
                break
            blocks.append((opened.pop(), i))
    return blocks


def semi_proof(stmt: Statement, text: str, prover, events: list | None = None):
    """Stage 1: the maximal compatible semi-proof of a proposal, as mini-steps, or None
    (abandoned)."""
    _check_stmt(stmt)
    _check_text("text", text)
    _check_prover(prover)
    if events is not None and not isinstance(events, list):
        raise TypeError(
            f"events: expected a list (the trace is appended to it) or None, got "
            f"{type(events).__name__}"
        )
    ev = events if events is not None else []
    init = parse_steps(text)
    if not init:
        return None
    blocks = blocks_of(init)
    steps, before = list(init), [None] * len(init)
    state, i = initial_state(stmt), 0
    while i < len(steps):
        step = steps[i]
        before[i] = state
        res = run_step(state, step, stmt, prover)
        if not res.error:
            ev.append(("ok", step))
            state, i = res.state, i + 1
            continue
        if state.mode != "prove":  # a structural step failed
            if res.kind == "illegal":
                ev.append(("drop", f"{step}   ({res.error})"))
                steps[i], i = "", i + 1
                continue
            block = next(((a, b) for a, b in blocks if a < i < b), None)
            if block is None:
                ev.append(("abandon", f"{step}   ({res.error})"))
                return None
            ev.append(
                (
                    "erase",
                    f"{step}   ({res.error}) -> block {block[0]}..{block[1]} becomes "
                    f"sorry",
                )
            )
            for j in range(block[0], block[1]):
                steps[j] = ""
            steps[block[1]], state, i = "sorry", before[block[0]], block[1]
        else:  # a tactic failed: it becomes sorry
            if step == "sorry":
                ev.append(("abandon", f"sorry failed: {res.error}"))
                return None
            ev.append(("sorry", f"{step}   ({res.error})"))
            steps[i] = "sorry"
    if not state.done:
        ev.append(("abandon", "the proof does not finish the theorem"))
        return None
    return [s for s in steps if s]


def _erp(stmt, prover, propose, before, i, expected, ev):
    """ERP: ask the proposer for a proof of the subgoal at ``before[i]``; accept it if,
    with ATP patching its failed tactics, it reaches the state the ``sorry`` would have
    reached."""
    state = before[i]
    sub = Statement(
        stmt.variables,
        stmt.domain,
        tuple((n, f.text) for n, f in state.hyps),
        state.pending[1].text,
    )
    text = propose(sub)
    ev.append(
        ("erp", f"re-query for {state.pending[1]}: {' | '.join(text.splitlines())}")
    )
    out = []
    for s in [
        x.replace("hammer", "sorry") if x == "by hammer" else x
        for x in parse_steps(text)
    ]:
        res = run_step(state, s, stmt, prover) if s != "sorry" else None
        if res is None or res.error:
            if state.mode != "prove":
                return None
            tac = prover.call_atp(state.hyps, state.pending[1], stmt)
            if tac is None:
                return None
            s, res = tac, run_step(state, tac, stmt, prover)
        out.append(s)
        state = res.state
        if state == expected:
            return "\n".join(out)
    return None


def proof_aug(
    stmt: Statement,
    text: str,
    prover,
    propose=None,
    trace: bool = False,
    coarsen: bool = True,
) -> Outcome:
    """ProofAug on one proposal (``propose(subgoal_statement) -> text`` turns on
    ERP).

    ``coarsen=False`` is the ablation without multi-granularity: the holes of the
    semi-proof are filled at their own level or not at all (no enclosing block, no
    whole-theorem call). A success whose final proof is one tactic on the whole
    theorem is staged ``root_atp``: the same call the hammer-only baseline makes."""
    _check_stmt(stmt)
    _check_text("text", text)
    _check_prover(prover, atp=True)
    if not isinstance(coarsen, bool):
        raise TypeError(f"coarsen: expected a bool, got {type(coarsen).__name__}")
    if propose is not None and not callable(propose):
        raise TypeError(
            f"propose: expected a callable propose(statement) -> text or None, got "
            f"{type(propose).__name__}"
        )
    ev: list = []
    init = parse_steps(text)
    steps0 = semi_proof(stmt, text, prover, ev)
    if steps0 is None:
        return Outcome(False, events=ev if trace else [])
    sorry_proof, init_sorry, seen, extra, used_erp = steps0, list(steps0), [], 0, False
    ev.append(("semi", join_steps(steps0)))
    while sorry_proof:
        if sorry_proof in seen:
            break
        seen.append(sorry_proof)
        steps = list(sorry_proof)
        before, final, err = replay(stmt, steps, prover)
        if err is not None:
            break
        before.append(final)
        levels = [s.level for s in before]
        for i, step in enumerate(steps):
            if step != "sorry":
                continue
            goal = before[i].pending[1]
            tac = prover.call_atp(before[i].hyps, goal, stmt)
            ev.append(
                ("atp", f"level {levels[i]}: {goal}  ->  {tac or 'all tactics failed'}")
            )
            if tac:
                steps[i] = tac
                continue
            if propose is not None:
                extra += 1
                sub = _erp(stmt, prover, propose, before, i, before[i + 1], ev)
                if sub is not None:
                    steps[i], used_erp = sub, True
                    ev.append(("erp_ok", sub.replace("\n", " | ")))
                    continue
            if not coarsen:
                sorry_proof = None
                break
            lvl = levels[i]
            restart = max((j for j in range(i) if levels[j] <= lvl - 2), default=None)
            end = min(
                (j for j in range(i + 1, len(levels)) if levels[j] <= lvl - 2),
                default=None,
            )
            if restart is None or end is None:
                sorry_proof = None
            else:
                sorry_proof = (
                    _flatten(steps[:restart]) + ["sorry"] + _flatten(steps[end:])
                )
                ev.append(("coarsen", join_steps(sorry_proof)))
            break
        if "sorry" not in steps:
            final_steps = _flatten(steps)
            if final_steps == init:
                stage = "init_proof"
            elif len(final_steps) == 1:
                stage = "root_atp"  # one tactic on the whole theorem
            elif used_erp:
                stage = "erp"
            elif sorry_proof == init_sorry:
                stage = "init_atp"
            else:
                stage = "coarse_atp"
            proof = join_steps(final_steps)
            ev.append(("success", stage))
            return Outcome(True, stage, proof, extra, ev if trace else [])
    ev.append(("fail", "no sorry-free proof"))
    return Outcome(False, None, None, extra, ev if trace else [])


def dsp(stmt: Statement, text: str, prover) -> Outcome:
    """The DSP baseline: the proposal as written, its explicit holes (``by hammer``,
    ``sorry``) filled by callATP; any other failure rejects it. No structure analysis,
    no coarsening."""
    _check_stmt(stmt)
    _check_text("text", text)
    _check_prover(prover, atp=True)
    state = initial_state(stmt)
    for step in parse_steps(text):
        if step in ("by hammer", "sorry") and state.pending is not None:
            tac = prover.call_atp(state.hyps, state.pending[1], stmt)
            if tac is None:
                return Outcome(False)
            step = tac
        res = run_step(state, step, stmt, prover)
        if res.error:
            return Outcome(False)
        state = res.state
    return Outcome(state.done, "dsp" if state.done else None)


def hammer_only(stmt: Statement, prover) -> Outcome:
    """The whole theorem by callATP (built-in tactics, then the hammer): no proposal at
    all."""
    _check_stmt(stmt)
    _check_prover(prover, atp=True)
    s0 = initial_state(stmt)
    tac = prover.call_atp(s0.hyps, s0.pending[1], stmt)
    return Outcome(tac is not None, "hammer" if tac else None, tac)
