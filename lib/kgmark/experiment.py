"""The chapter's experiment: watermark a real KG's node embeddings with KGMark, its
ablations and two baselines, attack the result, detect, and measure link prediction.

One seed = one R-GCN/DistMult autoencoder, one latent diffusion model and
``n_keys`` owner keys. For each key the positive is the KG watermarked with that key
and the negative is the unwatermarked KG, both scored with that key (and its mask);
each attack draws its own randomness per key and per side.
"""

from __future__ import annotations

import dataclasses
import numpy as np
import torch

from lib.common import make_generator

from .data import load_kg
from .diffusion import ddim_invert, ddim_sample, sigma_grid, train_diffusion
from .gae import link_prediction, train_gae
from .watermark import (
    aligned_groups,
    bit_error,
    distance,
    index_groups,
    inject,
    learn_mask,
    make_key,
    random_mask,
    ring_mask,
    shade,
    structural_features,
    vp,
)


@dataclasses.dataclass(frozen=True)
class Scheme:
    """A watermarking scheme: ``mask`` "learned" or "ring" (Fourier kinds);
    ``align`` clustering-based layout (else arrival order); ``redundant`` the same
    signature in every latent (else one signature per latent position);
    ``kind`` "fourier" or "shading" (Gaussian Shading's sign key)."""

    mask: str = "learned"
    align: bool = True
    redundant: bool = True
    kind: str = "fourier"


SCHEMES = {
    "kgmark": Scheme(),
    "no-align": Scheme(align=False),
    "no-redundancy": Scheme(redundant=False),
    "tree-ring": Scheme(mask="ring", align=False),
    "ring-align": Scheme(mask="ring"),
    "gaussian-shading": Scheme(mask="none", align=False, kind="shading"),
    "random-mask": Scheme(mask="random"),
}
#: the attacks each scheme is run under (what its claims and the tables need)
RUNS = {
    "kgmark": ("none", "noise", "delete", "shuffle", "insert", "reorder"),
    "no-align": ("none", "shuffle", "insert", "reorder"),
    "no-redundancy": ("none", "delete"),
    "tree-ring": ("none", "noise", "delete", "shuffle", "insert"),
    "ring-align": ("none", "noise", "delete", "insert"),
    "gaussian-shading": ("none", "noise", "delete", "shuffle", "insert"),
    "random-mask": ("none", "noise", "delete", "insert"),
}
ATTACKS = ("none", "noise", "delete", "shuffle", "insert", "reorder")


@dataclasses.dataclass
class Prepared:
    """One seed's trained pieces."""

    kg: object
    Z: torch.Tensor  # (n, d) node embeddings
    R: torch.Tensor  # (2R, d) DistMult relation vectors
    mu: torch.Tensor  # (d,) standardisation
    scale: float
    model: object
    sigmas: torch.Tensor
    shape: tuple


def prepare_seed(cfg, seed, device="cpu") -> Prepared:
    """Train the graph autoencoder and the latent diffusion model for one seed."""
    g = make_generator(seed)
    kg = load_kg(cfg.dataset)
    Z, R = train_gae(kg, cfg.dim, cfg.bases, cfg.gae_steps, cfg.gae_lr, g, device)
    Z, R = Z.cpu(), R.cpu()
    mu, scale = Z.mean(0), float(Z.std())
    Zs = (Z - mu) / scale  # (n, d), unit scale
    C, n = cfg.channels, Z.shape[0]
    shape = (C, *cfg.grid)

    def batch(b, gen):  # random C-tuples of distinct nodes, one node per channel
        idx = torch.rand(b, n, generator=gen).argsort(1)[:, :C]  # (b, C)
        return Zs[idx].view(b, *shape)

    model = train_diffusion(
        batch, shape, cfg.diff_steps, cfg.diff_batch, cfg.diff_lr, cfg.hidden, g,
        device,
    ).cpu()  # fmt: skip
    return Prepared(kg, Z, R, mu, scale, model, sigma_grid(cfg.ddim_steps), shape)


def _groups(P, Zs, triples, key, scheme, cfg):
    if scheme.align:
        X = structural_features(triples, Zs.shape[0], P.kg.n_relations)
        return aligned_groups(X, cfg.channels, cfg.clusters, key.direction)
    return index_groups(Zs.shape[0], cfg.channels)


def _signature(key, scheme, G):
    return key.signature if scheme.redundant else key.segments[:G]


def watermark(P, key, scheme, cfg, generator=None):
    """Embed ``key`` into the KG: layout → latents → DDIM inversion → signature
    under the mask (or signs) → DDIM sampling → embeddings. Returns the watermarked
    embeddings (n, d) and the mask the detector will use."""
    Zs = (P.Z - P.mu) / P.scale
    groups = _groups(P, Zs, P.kg.train, key, scheme, cfg)  # (G, C)
    G = len(groups)
    if G > cfg.max_groups:
        raise ValueError(
            f"max_groups: expected at least {G} latents, got {cfg.max_groups}"
        )
    x0 = Zs[groups].view(G, *P.shape)
    noise, inv_path = ddim_invert(P.model, x0, P.sigmas, cfg.fixed_point, True)
    mask = None
    if scheme.kind == "shading":
        wm = shade(noise, key.signs)
    else:
        sig = _signature(key, scheme, G)
        size = int(ring_mask(P.shape, cfg.ring[0], cfg.ring[1]).sum())
        if scheme.mask == "ring":
            mask = ring_mask(P.shape, cfg.ring[0], cfg.ring[1])
        elif scheme.mask == "random":
            mask = random_mask(P.shape, size, generator)
        else:
            _, smp_path = ddim_sample(P.model, noise, P.sigmas, True)
            t = list(cfg.mask_steps)
            s = P.sigmas[t].view(-1, 1, 1, 1, 1)
            mask = learn_mask(
                vp(smp_path[t], s), vp(inv_path[t], s), sig, size, cfg.mask_epochs,
                cfg.mask_lr, generator,
            )  # fmt: skip
        wm = inject(noise, mask, sig)
    xw = ddim_sample(P.model, wm, P.sigmas)  # (G, C, h, w)
    Zw = Zs.clone()
    Zw[groups.flatten()] = xw.reshape(G * cfg.channels, -1)
    return Zw * P.scale + P.mu, mask


def detect(P, suspect, key, mask, scheme, cfg) -> float:
    """Score a suspect KG ``(Z, triples)`` for ``key``: higher means more watermarked
    (minus the mean masked distance, or minus the mean sign error)."""
    Z_suspect, triples = suspect
    Zs = (Z_suspect - P.mu) / P.scale
    groups = _groups(P, Zs, triples, key, scheme, cfg)
    if len(groups) == 0:
        return float("-inf")
    noise = ddim_invert(P.model, Zs[groups].view(len(groups), *P.shape), P.sigmas,
                        cfg.fixed_point)  # fmt: skip
    if scheme.kind == "shading":
        return -float(bit_error(noise, key.signs).mean())
    if scheme.redundant:
        return -float(distance(noise, mask, key.signature).mean())
    G = min(len(groups), cfg.max_groups)
    return -float(distance(noise[:G], mask, key.segments[:G]).mean())


def attack(kg, kind, cfg, generator):
    """The suspect's edits on a KG ``(Z (n, d), triples (m, 3))``: Gaussian noise on
    every embedding; deletion of nodes (and their triples); a permutation of the
    node ids; a permutation after inserting nodes (copies of random nodes plus
    noise, each with as many random triples as an average node); or a permutation
    after deleting a share of the triples ("reorder": the relational profiles the
    alignment reads change, so the layout has to be recovered, not just re-read)."""
    Z, T = kg
    n = Z.shape[0]
    if kind == "none":
        return Z, T
    if kind == "noise":
        return Z + cfg.noise * Z.std() * torch.randn(Z.shape, generator=generator), T
    if kind == "delete":
        keep = torch.rand(n, generator=generator).argsort()[: n - round(cfg.delete * n)]
        return _relabel(Z, T, keep.sort().values)  # survivors keep their order
    if kind == "shuffle":
        return _relabel(Z, T, torch.randperm(n, generator=generator))
    if kind == "insert":
        m = round(cfg.insert * n)
        src = torch.randint(0, n, (m,), generator=generator)
        fake = Z[src] + 0.5 * Z.std() * torch.randn(m, Z.shape[1], generator=generator)
        per = max(len(T) // n, 1)
        nr = int(T[:, 1].max()) + 1
        new = torch.stack([
            torch.arange(n, n + m).repeat_interleave(per),
            torch.randint(0, nr, (m * per,), generator=generator),
            torch.randint(0, n, (m * per,), generator=generator),
        ], 1)  # fmt: skip
        flip = torch.rand(m * per, generator=generator) < 0.5  # half as tails
        new[flip] = new[flip][:, [2, 1, 0]]
        Z2, T2 = torch.cat([Z, fake]), torch.cat([T, new])
        return _relabel(Z2, T2, torch.randperm(n + m, generator=generator))
    if kind == "reorder":
        m = len(T)
        kept = m - round(cfg.edge_delete * m)
        keep = torch.rand(m, generator=generator).argsort()[:kept]
        T = T[keep.sort().values]  # (kept, 3): the surviving triples
        return _relabel(Z, T, torch.randperm(n, generator=generator))
    raise ValueError(f"kind: expected one of {ATTACKS}, got {kind!r}")


def _relabel(Z, T, rows):
    """Keep the nodes ``rows`` (in that order) and the triples among them, renamed."""
    new_id = torch.full((Z.shape[0],), -1, dtype=torch.long)
    new_id[rows] = torch.arange(len(rows))
    h, r, t = T.unbind(1)
    ok = (new_id[h] >= 0) & (new_id[t] >= 0)
    return Z[rows], torch.stack([new_id[h[ok]], r[ok], new_id[t[ok]]], 1)


def auc(pos, neg) -> float:
    """P(score_pos > score_neg) + ½ P(tie) (the Mann–Whitney AUC)."""
    p = torch.as_tensor(pos, dtype=torch.float64)[:, None]
    q = torch.as_tensor(neg, dtype=torch.float64)[None, :]
    return float(((p > q).double() + 0.5 * (p == q).double()).mean())


def tpr_at_fpr(pos, neg, fpr=0.01) -> float:
    """TPR at the threshold where a normal fitted to the null scores has tail
    ``fpr`` (few null scores per seed: the empirical 1 % quantile would be their
    maximum)."""
    neg = np.asarray(neg, dtype=float)
    from scipy.stats import norm

    thr = neg.mean() + norm.ppf(1 - fpr) * neg.std(ddof=1)
    return float((np.asarray(pos) > thr).mean())


def run_scheme(P, name, cfg, seed, attacks=None):
    """Watermark with ``cfg.n_keys`` keys, attack, detect; AUC, TPR@1%FPR per attack
    (default: :data:`RUNS`), the AUC with a wrong key, and link prediction with the
    first ``cfg.n_lp`` watermarked KGs (only those when no attack is asked)."""
    scheme = SCHEMES[name]
    attacks = RUNS[name] if attacks is None else tuple(attacks)
    g = make_generator(10_000 * seed + 17)  # keys: the same for every scheme
    # masks: the learned mask's initial logits (the same for KGMark and its ablations)
    # or, for the random-mask control, a draw of its own
    gm = make_generator(10_000 * seed + (47 if scheme.mask == "random" else 43))
    ga = make_generator(10_000 * seed + 29 + len(name))  # attack draws
    pos = {a: [] for a in attacks}
    neg = {a: [] for a in attacks}
    lp, wrong, prev = [], [], None
    T = P.kg.train
    for k in range(cfg.n_keys if attacks else cfg.n_lp):
        key = make_key(P.shape, 2 * P.kg.n_relations, cfg.max_groups, g)
        # the masks do not draw from the key generator: with it, the random-mask
        # control was the learned mask's starting point (the same draw)
        Zw, mask = watermark(P, key, scheme, cfg, gm)
        if k < cfg.n_lp:
            lp.append(link_prediction(Zw, P.R, P.kg))
        if attacks and prev is not None:  # this KG scored with key k − 1
            wrong.append(detect(P, (Zw, T), *prev, scheme, cfg))
        prev = (key, mask)
        for a in attacks:
            pos[a].append(
                detect(P, attack((Zw, T), a, cfg, ga), key, mask, scheme, cfg)
            )
            neg[a].append(
                detect(P, attack((P.Z, T), a, cfg, ga), key, mask, scheme, cfg)
            )
    out = {
        a: {"auc": auc(pos[a], neg[a]), "tpr": tpr_at_fpr(pos[a], neg[a]),
            "pos": pos[a], "neg": neg[a]}
        for a in attacks
    }  # fmt: skip
    if attacks:
        # wrong[j] and neg[a][j] are both scored with key j (j = 0 … n_keys − 2)
        out["wrong_key_auc"] = auc(wrong, neg[attacks[0]][:-1])
    out["mrr"] = float(np.mean([r["mrr"] for r in lp]))
    out["hits10"] = float(np.mean([r["hits10"] for r in lp]))
    return out


def run_seed(cfg, seed, device="cpu", schemes=None):
    """Every scheme on one seed; the original KG's link prediction as reference."""
    P = prepare_seed(cfg, seed, device)
    base = link_prediction(P.Z, P.R, P.kg)
    res = {"original": base}
    for name in schemes or SCHEMES:
        res[name] = run_scheme(P, name, cfg, seed)
    return res


def run_seeds(cfg, seeds, device="cpu"):
    return {int(s): run_seed(cfg, int(s), device) for s in seeds}


def run_experiment(cfg, device=None):
    """The FULL entry point's body: every scheme on ``cfg.claim_seeds``."""
    from lib.common import device as pick_device

    from .claims import measure_from_runs

    device = pick_device() if device is None else device
    runs = run_seeds(cfg, cfg.claim_seeds, device)
    for r in runs.values():
        for v in r.values():
            if isinstance(v, dict):
                for a in ATTACKS:
                    if a in v:
                        v[a].pop("pos", None), v[a].pop("neg", None)
    return {
        "config": dataclasses.asdict(cfg),
        "runs": {str(s): r for s, r in runs.items()},
        "measured": {
            k: {kk: {str(s): x for s, x in vv.items()} for kk, vv in v.items()}
            for k, v in measure_from_runs(runs).items()
        },
    }
