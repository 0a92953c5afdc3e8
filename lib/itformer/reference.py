"""Naive versions of the chapter's kernels, written as loops, for the tests."""

from __future__ import annotations

import itertools
import math

import torch


def ita_naive(ita, p: torch.Tensor, mem: torch.Tensor) -> torch.Tensor:
    """Instruct time attention with explicit loops over batch, heads, tokens, channels
    and time steps (same weights as ``ita``, an :class:`InstructTimeAttention`)."""
    B, K, d = p.shape
    _, V, N, _ = mem.shape
    H, dh = ita.h, ita.dh
    cq, ck, cv = ita.cq(p), ita.ck(mem), ita.cv(mem)  # (B,K,d), (B,V,N,d), (B,V,N,d)
    out = torch.zeros(B, K, d)
    for b in range(B):
        agg = torch.zeros(N, d)
        for h in range(H):
            sl = slice(h * dh, (h + 1) * dh)
            for k in range(K):
                scores = torch.tensor(
                    [float(cq[b, k, sl] @ ck[b, v, :, sl].mean(0)) for v in range(V)]
                ) / math.sqrt(dh)
                alpha = scores.softmax(0)
                for n in range(N):
                    agg[n, sl] += sum(alpha[v] * cv[b, v, n, sl] for v in range(V)) / K
        q, kk, vv = ita.q(p[b]), ita.k(agg), ita.v(agg)  # (K,d), (N,d), (N,d)
        heads = []
        for h in range(H):
            sl = slice(h * dh, (h + 1) * dh)
            w = (q[:, sl] @ kk[:, sl].T / math.sqrt(dh)).softmax(-1)  # (K, N)
            heads.append(w @ vv[:, sl])
        out[b] = ita.proj(torch.cat(heads, -1))
    return out


def lcs_naive(a, b) -> int:
    """Longest common subsequence by trying every subsequence of ``a`` (short
    inputs)."""
    best = 0
    for r in range(len(a) + 1):
        for idx in itertools.combinations(range(len(a)), r):
            sub, j = [a[i] for i in idx], 0
            for w in b:
                if j < len(sub) and sub[j] == w:
                    j += 1
            if j == len(sub):
                best = max(best, r)
    return best


def lm_logits_naive(gpt, ids: torch.Tensor) -> torch.Tensor:
    """The shared GPT's own forward pass on token ids (the spliced path must match it
    when the slots hold the tokens' own embeddings)."""
    return gpt(ids)


def masked_patch_loss_naive(enc, x, mask) -> torch.Tensor:
    """Masked-patch MSE summed patch by patch over the hidden ones."""
    rec = enc.head(enc(x, mask))
    B, V, N, P = rec.shape
    tot, cnt = 0.0, 0
    for b in range(B):
        for v in range(V):
            for n in range(N):
                if mask[b, v, n]:
                    seg = x[b, v, n * P : (n + 1) * P]
                    tot = tot + ((rec[b, v, n] - seg) ** 2).mean()
                    cnt += 1
    return tot / max(cnt, 1)
