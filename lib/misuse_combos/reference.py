"""Naive references for the tests: decoding one prompt at a time with the book's
sampler, bag-of-words counts with a loop, and the capability grid as one full
:func:`lib.misuse_combos.attack` per pair of checkpoints."""

from __future__ import annotations

import torch

from lib.common.gpt import sample


def generate_naive(model, vocab, prompts, max_new: int) -> list:
    """Greedy answers, one prompt at a time (:func:`lib.common.gpt.sample`, T = 0)."""
    out = []
    for p in prompts:
        ids = torch.tensor([vocab.encode(["<bos>"] + list(p) + ["="])])
        seq = sample(model, ids, max_new, temperature=0, eos_id=vocab.eos_id)
        toks = vocab.decode(seq[0, ids.shape[1] :])
        out.append(toks[: toks.index("<eos>")] if "<eos>" in toks else toks)
    return out


def bag_of_words_naive(vocab, prompts) -> list:
    """Token counts of each prompt as lists, with a dictionary per prompt."""
    rows = []
    for p in prompts:
        counts = {}
        for t in p:
            counts[t] = counts.get(t, 0) + 1
        rows.append([float(counts.get(t, 0)) for t in vocab.itos])
    return rows


def grid_naive(strong_states, weak_states, strong, weak, vocab, tasks, max_digits):
    """The capability grid, one :func:`attack` per (strong, weak) checkpoint pair; each
    checkpoint's skill is read from its pair with the other model's first checkpoint."""
    from .experiment import CONDITIONS, attack
    from .models import at_checkpoint

    out = {c: [] for c in CONDITIONS}
    out["skills"] = {"strong_sum": [], "weak_edit": []}
    first_s, first_w = min(strong_states), min(weak_states)
    for ks in sorted(strong_states):
        rows = {c: [] for c in CONDITIONS}
        for kw in sorted(weak_states):
            r = attack(
                at_checkpoint(strong, strong_states[ks]),
                at_checkpoint(weak, weak_states[kw]),
                vocab,
                tasks,
                max_digits,
            )
            for c in CONDITIONS:
                rows[c].append(sum(r["ok"][c]) / len(tasks))
            rate = {k: sum(v) / len(tasks) for k, v in r["skill"].items()}
            if kw == first_w:  # each strong checkpoint's skill, once
                out["skills"]["strong_sum"].append(rate["strong_sum"])
            if ks == first_s:  # each weak checkpoint's skill, once
                out["skills"]["weak_edit"].append(rate["weak_edit"])
        for c in CONDITIONS:
            out[c].append(rows[c])
    return out
