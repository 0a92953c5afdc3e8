"""ROUGE-L between word sequences (the longest common subsequence, F-measure), and
corpus BLEU."""

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


def corpus_bleu(hyps, refs, max_n: int = 4) -> float:
    """Corpus BLEU (Papineni et al. 2002) with one reference per hypothesis: the
    geometric mean of the clipped n-gram precisions for n = 1 … ``max_n``, each summed
    over the corpus before dividing, times the brevity penalty exp(1 − R/C) when the
    hypotheses' total length C is below the references' R (0 if any precision is 0)."""
    import math
    from collections import Counter

    for name, xs in (("hyps", hyps), ("refs", refs)):
        if isinstance(xs, str) or not isinstance(xs, (list, tuple)):
            raise TypeError(f"{name}: expected a list of word lists, got {xs!r:.60}")
        for s in xs:
            if isinstance(s, str) or not isinstance(s, (list, tuple)):
                raise TypeError(f"{name}: expected lists of words, got {s!r:.60}")
    if not hyps:
        raise ValueError("hyps: expected at least one hypothesis, got an empty list")
    if len(hyps) != len(refs):
        raise ValueError(
            f"refs: expected one reference per hypothesis ({len(hyps)}), got "
            f"{len(refs)}"
        )
    if isinstance(max_n, bool) or not isinstance(max_n, int) or max_n < 1:
        raise ValueError(f"max_n: expected a positive int, got {max_n!r}")
    match, total = [0] * max_n, [0] * max_n
    for h, r in zip(hyps, refs):
        for n in range(1, max_n + 1):
            hc = Counter(tuple(h[i : i + n]) for i in range(len(h) - n + 1))
            rc = Counter(tuple(r[i : i + n]) for i in range(len(r) - n + 1))
            match[n - 1] += sum(min(c, rc[g]) for g, c in hc.items())  # clipped
            total[n - 1] += max(len(h) - n + 1, 0)
    if min(match) == 0:
        return 0.0
    log_p = sum(math.log(m / t) for m, t in zip(match, total)) / max_n
    c, r = sum(len(h) for h in hyps), sum(len(r) for r in refs)
    bp = 1.0 if c > r else math.exp(1 - r / c)  # brevity penalty
    return bp * math.exp(log_p)
