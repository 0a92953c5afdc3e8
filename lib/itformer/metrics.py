"""ROUGE-L between word sequences (the longest common subsequence, F-measure)."""

from __future__ import annotations

from collections.abc import Sequence


def lcs_length(a, b) -> int:
    """Length of the longest common subsequence (dynamic programme, O(|a|·|b|))."""
    for name, s in (("a", a), ("b", b)):
        if not isinstance(s, Sequence):
            raise TypeError(
                f"{name}: expected a sequence (list, tuple or str), got "
                f"{type(s).__name__}"
            )
    prev = [0] * (len(b) + 1)
    for x in a:
        cur = [0]
        for j, y in enumerate(b):
            cur.append(prev[j] + 1 if x == y else max(prev[j + 1], cur[j]))
        prev = cur
    return prev[-1]


def rouge_l(hyp, ref) -> float:
    """ROUGE-L F1 = 2·P·R/(P+R), with P = LCS/|hyp| and R = LCS/|ref| (0 if empty)."""
    for name, s in (("hyp", hyp), ("ref", ref)):
        if (
            isinstance(s, str)
            or not isinstance(s, (list, tuple))
            or not all(isinstance(w, str) for w in s)
        ):
            raise TypeError(f"{name}: expected a list of words, got {s!r}")
    if not hyp or not ref:
        return 0.0
    n = lcs_length(hyp, ref)
    if n == 0:
        return 0.0
    p, r = n / len(hyp), n / len(ref)
    return 2 * p * r / (p + r)
