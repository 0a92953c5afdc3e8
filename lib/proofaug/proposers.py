"""Proof proposers: a small transformer trained on (statement → proof) pairs, and a
noisy oracle.

The neural proposer reads ``Statement.prompt()`` tokens, a ``<sep>`` and writes proof
tokens (``<nl>`` between lines) until ``<eos>``. Its training pairs are the training
theorems' gold proofs and, for ERP, every claim inside them (the facts in scope and the
claim → the claim's own proof). The **noisy oracle** corrupts gold proofs step by step
at a given rate, for the controlled ablation.
"""

from __future__ import annotations

import random

import torch

import math

from lib.common import check_generator, check_int, check_positive, check_probability
from lib.common.gpt import GPT, GPTConfig, Vocab, fit_lm, sample

from .language import (
    Statement,
    _check_prover,
    _check_stmt,
    _check_text,
    initial_state,
    parse_steps,
    run_step,
    tokenize,
)
from .tactics import BUILTINS

SEP, NL = "<sep>", "<nl>"


def _check_vocab(vocab) -> None:
    if not isinstance(vocab, Vocab):
        raise TypeError(
            f"vocab: expected a Vocab (see build_vocab), got {type(vocab).__name__}"
        )


def _check_pairs(pairs) -> None:
    if isinstance(pairs, (str, bytes)) or not isinstance(pairs, (list, tuple)):
        raise TypeError(
            f"pairs: expected a list of (Statement, proof) pairs, got "
            f"{type(pairs).__name__}"
        )
    if not pairs:
        raise ValueError(
            "pairs: expected at least one (Statement, proof) pair, got none"
        )
    for i, pr in enumerate(pairs):
        if (
            not isinstance(pr, (tuple, list))
            or len(pr) != 2
            or not isinstance(pr[0], Statement)
            or not isinstance(pr[1], str)
        ):
            raise TypeError(
                f"pairs[{i}]: expected a (Statement, proof text) pair, got {pr!r:.60}"
            )


def claim_examples(stmt: Statement, gold: str, prover) -> list:
    """(sub-statement, proof text) for the theorem and for every ``have`` claim in its
    gold proof."""
    _check_stmt(stmt)
    _check_text("gold", gold)
    _check_prover(prover)
    steps = parse_steps(gold)
    out, state = [(stmt, gold)], initial_state(stmt)
    for i, step in enumerate(steps):
        nxt = run_step(state, step, stmt, prover).state
        if step.startswith("have") and nxt is not None and i + 1 < len(steps):
            if steps[i + 1].startswith("by"):
                body = [steps[i + 1]]
            else:
                depth, j = 0, i + 1
                while j < len(steps):
                    depth += steps[j] == "proof"
                    depth -= steps[j] == "qed"
                    if depth == 0:
                        break
                    j += 1
                body = steps[i + 1 : j + 1]
            sub = Statement(
                stmt.variables,
                stmt.domain,
                tuple((n, f.text) for n, f in nxt.hyps),
                nxt.pending[1].text,
            )
            out.append((sub, "\n".join(body)))
        state = nxt
    return out


def dsp_sketch(gold: str) -> str:
    """The DSP-style sketch of a proof: the same claims and blocks, every
    justification ``by TAC`` replaced by the hole ``by hammer`` (which DSP and ProofAug
    fill with callATP)."""
    _check_text("gold", gold)
    out = []
    for line in gold.split("\n"):
        toks = line.split()
        if len(toks) >= 2 and toks[-2] == "by":
            toks[-1] = "hammer"
        out.append(" ".join(toks))
    return "\n".join(out)


def sketch_examples(problems: list) -> list:
    """(statement, DSP sketch of the gold proof) for each problem: the proposer's extra
    training pairs, so that it writes sketches with holes as the paper's few-shot DSP
    prompts make its proposers do."""
    if isinstance(problems, (str, bytes)) or not isinstance(problems, (list, tuple)):
        raise TypeError(
            f"problems: expected a list of Problem, got {type(problems).__name__}"
        )
    out = []
    for i, p in enumerate(problems):
        if not isinstance(getattr(p, "stmt", None), Statement) or not isinstance(
            getattr(p, "gold", None), str
        ):
            raise TypeError(
                f"problems[{i}]: expected a Problem, got {type(p).__name__}"
            )
        out.append((p.stmt, dsp_sketch(p.gold)))
    return out


def encode_pair(stmt: Statement, proof: str | None) -> list[str]:
    """Token list: prompt, ``<sep>``, proof lines joined by ``<nl>`` (no proof: the
    prompt only)."""
    _check_stmt(stmt)
    if proof is not None:
        _check_text("proof", proof)
    toks = ["<bos>", *tokenize(stmt.prompt()), SEP]
    if proof is not None:
        for k, line in enumerate(proof.split("\n")):
            toks += ([NL] if k else []) + tokenize(line)
        toks.append("<eos>")
    return toks


def decode_proof(tokens: list[str]) -> str:
    """Proof text from generated tokens (stops at ``<eos>``)."""
    if (
        isinstance(tokens, (str, bytes))
        or not isinstance(tokens, (list, tuple))
        or not all(isinstance(t, str) for t in tokens)
    ):
        raise TypeError(f"tokens: expected a list of str, got {tokens!r:.60}")
    words = []
    for t in tokens:
        if t == "<eos>":
            break
        words.append("\n" if t == NL else t)
    return (
        " ".join(words).replace(" \n ", "\n").replace("\n ", "\n").replace(" \n", "\n")
    )


def build_vocab(statements: list, proofs: list) -> Vocab:
    """All tokens of the prompts and proofs, plus the tactic names and keywords."""
    if (
        isinstance(statements, (str, bytes))
        or not isinstance(statements, (list, tuple))
        or not all(isinstance(x, Statement) for x in statements)
    ):
        raise TypeError(
            f"statements: expected a list of Statement, got {statements!r:.60}"
        )
    if not statements:
        raise ValueError("statements: expected at least one Statement, got none")
    if (
        isinstance(proofs, (str, bytes))
        or not isinstance(proofs, (list, tuple))
        or not all(isinstance(x, str) for x in proofs)
    ):
        raise TypeError(f"proofs: expected a list of proof texts, got {proofs!r:.60}")
    toks = set(BUILTINS) | {
        "hammer",
        "proof",
        "qed",
        "have",
        "show",
        "by",
        "sorry",
        "?thesis",
        SEP,
        NL,
    }
    for s in statements:
        toks.update(tokenize(s.prompt()))
    for p in proofs:
        toks.update(tokenize(p))
    return Vocab(sorted(toks))


def training_tensors(pairs: list, vocab: Vocab, block_size: int):
    """(inputs, targets, mask) with the loss on proof tokens only; rows longer than the
    block dropped."""
    _check_pairs(pairs)
    _check_vocab(vocab)
    check_int("block_size", block_size, 2)
    rows = [vocab.encode(encode_pair(s, p)) for s, p in pairs]
    rows = [r for r in rows if len(r) <= block_size + 1]
    if not rows:
        raise ValueError(
            f"block_size: expected room for at least one pair, got {block_size} "
            f"(every pair is longer)"
        )
    x = torch.full((len(rows), block_size), vocab.pad_id, dtype=torch.long)
    y = torch.full((len(rows), block_size), vocab.pad_id, dtype=torch.long)
    m = torch.zeros((len(rows), block_size), dtype=torch.bool)
    sep = vocab.stoi[SEP]
    for i, r in enumerate(rows):
        t = torch.tensor(r)
        x[i, : len(r) - 1], y[i, : len(r) - 1] = t[:-1], t[1:]
        start = r.index(sep)
        m[i, start : len(r) - 1] = True  # predict every token after <sep>
    return x, y, m


def train_proposer(
    pairs: list,
    vocab: Vocab,
    *,
    steps: int,
    block_size: int,
    d_model: int,
    n_layer: int,
    batch_size: int,
    lr: float,
    seed: int,
    device="cpu",
):
    """A GPT trained on the pairs; returns (model, losses)."""
    _check_pairs(pairs)
    _check_vocab(vocab)
    check_int("seed", seed, 0)
    check_int("steps", steps, 1)
    torch.manual_seed(seed)
    model = GPT(
        GPTConfig(len(vocab), block_size, n_layer=n_layer, n_head=4, d_model=d_model)
    ).to(device)
    x, y, m = training_tensors(pairs, vocab, block_size)
    losses = fit_lm(
        model,
        x,
        y,
        m,
        steps=steps,
        batch_size=batch_size,
        lr=lr,
        weight_decay=0.01,
        generator=torch.Generator().manual_seed(seed),
        device=device,
    )
    return model, losses


@torch.no_grad()
def sample_proofs(
    model,
    vocab: Vocab,
    stmt: Statement,
    n: int,
    temperature: float,
    generator: torch.Generator,
    max_new: int = 200,
) -> list[str]:
    """``n`` proofs sampled for one statement in one batch (stops when every row has
    ended)."""
    check_int("n", n, 1)
    if (
        not isinstance(temperature, (int, float))
        or isinstance(temperature, bool)
        or temperature <= 0
        or not math.isfinite(temperature)
    ):
        raise ValueError(
            f"temperature: expected a finite number > 0, got {temperature!r}"
        )
    if not isinstance(model, torch.nn.Module):
        raise TypeError(
            f"model: expected the proposer (a torch.nn.Module), got "
            f"{type(model).__name__}"
        )
    _check_vocab(vocab)
    _check_stmt(stmt)
    check_generator("generator", generator, allow_none=False)
    check_int("max_new", max_new, 1)
    dev = next(model.parameters()).device
    prompt = torch.tensor(vocab.encode(encode_pair(stmt, None)), dtype=torch.long)
    idx = sample(
        model,
        prompt.repeat(n, 1).to(dev),
        min(max_new, model.cfg.block_size - prompt.numel()),
        temperature=float(temperature),
        generator=generator,
        eos_id=vocab.eos_id,
        banned=(vocab.pad_id, vocab.bos_id),
    )  # (n, T0 + new)
    out = []
    for row in idx[:, prompt.numel() :].cpu():
        out.append(decode_proof(vocab.decode(row)))
    return out


class NeuralProposer:
    """Samples proposals; ``__call__(sub_statement)`` serves ERP re-queries from a
    per-subgoal pool."""

    def __init__(
        self, model, vocab: Vocab, temperature: float, seed: int, pool: int = 4
    ):
        if not isinstance(model, torch.nn.Module):
            raise TypeError(
                f"model: expected the proposer (a torch.nn.Module), got "
                f"{type(model).__name__}"
            )
        _check_vocab(vocab)
        check_positive("temperature", temperature)
        check_int("seed", seed, 0)
        check_int("pool", pool, 1)
        self.model, self.vocab, self.temperature, self.pool = (
            model,
            vocab,
            temperature,
            pool,
        )
        self.generator = torch.Generator().manual_seed(seed)
        self._pools: dict = {}

    def proposals(self, stmt: Statement, n: int) -> list[str]:
        return sample_proofs(
            self.model, self.vocab, stmt, n, self.temperature, self.generator
        )

    def __call__(self, stmt: Statement) -> str:
        if not self._pools.get(stmt):
            try:
                self._pools[stmt] = self.proposals(stmt, self.pool)
            except ValueError:  # a subgoal that is not in the vocabulary
                self._pools[stmt] = ["sorry"] * self.pool
        return self._pools[stmt].pop()


# --- the noisy oracle -----------------------------------------------------------------

CORRUPTIONS = ("tactic", "constant", "drop", "false_lemma", "block")


def corrupt(gold: str, rate: float, rng: random.Random) -> str:
    """Corrupt each line of a gold proof with probability ``rate``: a wrong tactic name,
    a wrong constant in a claim, a dropped line, a hallucinated false lemma, or a broken
    block (a ``qed`` dropped or a ``show`` of the wrong statement)."""
    check_probability("rate", rate)
    _check_text("gold", gold)
    if not isinstance(rng, random.Random):
        raise TypeError(f"rng: expected a random.Random, got {type(rng).__name__}")
    lines, out = gold.split("\n"), []
    for k, line in enumerate(lines):
        if k == 0 or k == len(lines) - 1 or rng.random() >= rate:
            out.append(line)
            continue
        kind = rng.choice(CORRUPTIONS)
        toks = line.split()
        if kind == "tactic" and "by" in toks:
            toks[toks.index("by") + 1] = rng.choice(
                [t for t in BUILTINS if t != toks[toks.index("by") + 1]]
            )
            out.append(" ".join(toks))
        elif kind == "constant" and any(t.isdigit() for t in toks):
            j = rng.choice([i for i, t in enumerate(toks) if t.isdigit()])
            toks[j] = str(int(toks[j]) + rng.choice([1, 2, 3]))
            out.append(" ".join(toks))
        elif kind == "drop":
            continue
        elif kind == "false_lemma":
            out.append(
                f"have hx{k} : {toks[-1] if toks[-1].isdigit() else '1'} = 0 by arith"
            )
            out.append(line)
        elif kind == "block" and line in (
            "qed",
            "show ?thesis by arith",
            "show ?thesis by hammer",
        ):
            out.append("show 0 = 1 by arith" if line.startswith("show") else "")
        else:
            out.append(line)
    return "\n".join(x for x in out if x)
