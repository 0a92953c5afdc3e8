"""Naive versions of the chapter's kernels, for the tests: loops over entries,
frequencies, queries and pairs, written for clarity rather than speed."""

from __future__ import annotations

import math

import torch


def naive_adjacency(triples, n, n_relations):
    """The row-normalised relational adjacency with dicts and loops."""
    nbrs = {}
    for h, r, t in triples.tolist():
        nbrs.setdefault((r, h), set()).add(t)
        nbrs.setdefault((r + n_relations, t), set()).add(h)
    A = torch.zeros(2 * n_relations, n, n)
    for (r, i), js in nbrs.items():
        for j in js:
            A[r, i, j] = 1.0 / len(js)
    return A


def naive_link_prediction(Z, R, kg, split="test"):
    """Filtered MRR and Hits@10, one query at a time with a Python set filter."""
    nr = kg.n_relations
    known = set()
    for h, r, t in torch.cat([kg.train, kg.valid, kg.test]).tolist():
        known.add((h, r, t))
        known.add((t, r + nr, h))
    ranks = []
    queries = [(h, r, t) for h, r, t in getattr(kg, split).tolist()]
    queries += [(t, r + nr, h) for h, r, t in getattr(kg, split).tolist()]
    for h, r, t in queries:
        scores = [(Z[h] * R[r] * Z[e]).sum().item() for e in range(Z.shape[0])]
        rank = 1
        for e, s in enumerate(scores):
            if e != t and (h, r, e) not in known and s > scores[t]:
                rank += 1
        ranks.append(rank)
    return {
        "mrr": sum(1 / k for k in ranks) / len(ranks),
        "hits10": sum(k <= 10 for k in ranks) / len(ranks),
    }


def naive_ddim_vp(model, noise, sigmas):
    """DDIM written the usual variance-preserving way: ᾱ = 1/(1+σ²),
    x̂_0 = D(x, σ), ε̂ = (x_VE − x̂_0)/σ, x' = √ᾱ' x̂_0 + √(1−ᾱ') ε̂. Returns
    the VE state x'/√ᾱ' at σ_min, to compare with :func:`ddim_sample`."""
    x_vp = noise * sigmas[0] / math.sqrt(1 + float(sigmas[0]) ** 2)
    for s, s_next in zip(sigmas[:-1].tolist(), sigmas[1:].tolist()):
        a, a_next = 1 / (1 + s**2), 1 / (1 + s_next**2)
        x_ve = x_vp / math.sqrt(a)
        x0 = model(x_ve, torch.full((x_ve.shape[0],), s))
        eps = (x_ve - x0) / s
        x_vp = math.sqrt(a_next) * x0 + math.sqrt(1 - a_next) * eps
    return x_vp * math.sqrt(1 + sigmas[-1].item() ** 2)


def naive_inject(noise, mask, signature):
    """Write the key frequency by frequency, one latent at a time."""
    out = torch.empty_like(noise)
    for b in range(noise.shape[0]):
        F = torch.fft.fft2(noise[b])
        for idx in mask.nonzero().tolist():
            F[tuple(idx)] = signature[tuple(idx)]
        out[b] = torch.fft.ifft2(F).real
    return out


def naive_distance(noise, mask, signature):
    """Mean |FFT − key| over the mask, one latent and one frequency at a time."""
    out = []
    for b in range(noise.shape[0]):
        F = torch.fft.fft2(noise[b])
        vals = [abs(complex(F[tuple(i)]) - complex(signature[tuple(i)]))
                for i in mask.nonzero().tolist()]  # fmt: skip
        out.append(sum(vals) / len(vals))
    return torch.tensor(out)


def naive_auc(pos, neg):
    """The share of (positive, negative) pairs ranked right, ties counting ½."""
    total = 0.0
    for p in pos:
        for q in neg:
            total += 1.0 if p > q else 0.5 if p == q else 0.0
    return total / (len(pos) * len(neg))
