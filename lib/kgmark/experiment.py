"""The chapter's experiment: watermark a real KG's node embeddings with KGMark, its
ablations and two baselines, attack the result, detect, and measure link prediction.

One seed = one R-GCN/DistMult autoencoder, one latent diffusion model and
``n_keys`` owner keys. For each key the positive is the KG watermarked with that key
and the negative is the unwatermarked KG, both scored with that key (and its mask);
each attack draws its own randomness per key and per side.
"""

from __future__ import annotations

import dataclasses
import numbers

import numpy as np
import torch

from lib.common import (
    check_choice,
    check_generator,
    check_instance,
    check_int,
    check_probability,
    check_tensor,
    make_generator,
)
from lib.common.claims import seed_list

from .data import _check_triples, load_kg
from .diffusion import ddim_invert, ddim_sample, sigma_grid, train_diffusion
from .gae import link_prediction, train_gae
from .watermark import (
    Key,
    _check_mask,
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

    def __post_init__(self):
        check_choice("mask", self.mask, MASKS)
        check_choice("kind", self.kind, ("fourier", "shading"))
        if (self.kind == "shading") != (self.mask == "none"):
            raise ValueError(
                f"mask: expected 'none' exactly when kind is 'shading', got "
                f"mask={self.mask!r} with kind={self.kind!r}"
            )


#: the masks of the Fourier schemes ("none": Gaussian Shading has no mask)
MASKS = ("learned", "ring", "random", "none")


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


def _check_cfg(cfg):
    from . import Config

    check_instance("cfg", cfg, Config, "a lib.kgmark.Config")


def _check_prepared(P, cfg=None):
    """``P`` from :func:`prepare_seed` (made with ``cfg``'s latent shape)."""
    check_instance("P", P, Prepared, "the Prepared of prepare_seed")
    if cfg is not None and tuple(P.shape) != (cfg.channels, *cfg.grid):
        raise ValueError(
            f"cfg: expected the latent shape P was prepared with, {tuple(P.shape)}, "
            f"got channels={cfg.channels}, grid={cfg.grid}"
        )


def _check_key(key, P):
    check_instance("key", key, Key, "a Key of make_key")
    if tuple(key.signature.shape) != tuple(P.shape):
        raise ValueError(
            f"key: expected a key for latents {tuple(P.shape)}, got "
            f"{tuple(key.signature.shape)}"
        )


def _check_graph(name, kg, d=None, check=True):
    """A KG as ``(Z (n, d), triples (m, 3))``; ``check`` reads the values (finite
    embeddings, node ids in [0, n))."""
    if isinstance(kg, (str, bytes)) or not isinstance(kg, (tuple, list)):
        raise TypeError(
            f"{name}: expected a pair (Z, triples), got {type(kg).__name__}"
        )
    if len(kg) != 2:
        raise ValueError(f"{name}: expected a pair (Z, triples), got {len(kg)} items")
    Z, T = kg
    check_tensor(f"{name}[0]", Z, ndim=2, floating=True, nonempty=True)
    if d is not None and Z.shape[1] != d:
        raise ValueError(
            f"{name}[0]: expected embeddings of size {d}, got {Z.shape[1]}"
        )
    _check_triples(f"{name}[1]", T)
    if check:
        check_tensor(f"{name}[0]", Z, finite=True)
        _check_triples(f"{name}[1]", T, len(Z))


def _check_names(name, values, choices, allow_empty=False):
    if isinstance(values, (str, bytes)) or not isinstance(values, (list, tuple)):
        raise TypeError(
            f"{name}: expected a list or tuple of names, got {type(values).__name__}"
        )
    if not values and not allow_empty:
        raise ValueError(f"{name}: expected at least one name, got {values!r}")
    for i, v in enumerate(values):
        check_choice(f"{name}[{i}]", v, choices)


def prepare_seed(cfg, seed, device="cpu") -> Prepared:
    """Train the graph autoencoder and the latent diffusion model for one seed."""
    _check_cfg(cfg)
    check_int("seed", seed, 0)
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
        X = structural_features(triples, Zs.shape[0], P.kg.n_relations, check=False)
        return aligned_groups(X, cfg.channels, cfg.clusters, key.direction, check=False)
    return index_groups(Zs.shape[0], cfg.channels)


def _signature(key, scheme, G):
    return key.signature if scheme.redundant else key.segments[:G]


def watermark(P, key, scheme, cfg, generator=None):
    """Embed ``key`` into the KG: layout → latents → DDIM inversion → signature
    under the mask (or signs) → DDIM sampling → embeddings. Returns the watermarked
    embeddings (n, d) and the mask the detector will use."""
    _check_cfg(cfg)
    _check_prepared(P, cfg)
    _check_key(key, P)
    check_instance("scheme", scheme, Scheme, "a lib.kgmark.Scheme")
    check_generator("generator", generator)
    Zs = (P.Z - P.mu) / P.scale
    groups = _groups(P, Zs, P.kg.train, key, scheme, cfg)  # (G, C)
    G = len(groups)
    if G > cfg.max_groups:
        raise ValueError(
            f"max_groups: expected at least {G} latents, got {cfg.max_groups}"
        )
    x0 = Zs[groups].view(G, *P.shape)
    noise, inv_path = ddim_invert(
        P.model, x0, P.sigmas, cfg.fixed_point, True, check=False
    )
    mask = None
    if scheme.kind == "shading":
        wm = shade(noise, key.signs, check=False)
    else:
        sig = _signature(key, scheme, G)
        size = int(ring_mask(P.shape, cfg.ring[0], cfg.ring[1]).sum())
        if scheme.mask == "ring":
            mask = ring_mask(P.shape, cfg.ring[0], cfg.ring[1])
        elif scheme.mask == "random":
            mask = random_mask(P.shape, size, generator)
        else:
            _, smp_path = ddim_sample(P.model, noise, P.sigmas, True, check=False)
            t = list(cfg.mask_steps)
            s = P.sigmas[t].view(-1, 1, 1, 1, 1)
            mask = learn_mask(
                vp(smp_path[t], s, check=False), vp(inv_path[t], s, check=False), sig,
                size, cfg.mask_epochs, cfg.mask_lr, generator, check=False,
            )  # fmt: skip
        wm = inject(noise, mask, sig, check=False)
    xw = ddim_sample(P.model, wm, P.sigmas, check=False)  # (G, C, h, w)
    Zw = Zs.clone()
    Zw[groups.flatten()] = xw.reshape(G * cfg.channels, -1)
    return Zw * P.scale + P.mu, mask


def detect(P, suspect, key, mask, scheme, cfg, *, check=True) -> float:
    """Score a suspect KG ``(Z, triples)`` for ``key``: higher means more watermarked
    (minus the mean masked distance, or minus the mean sign error). ``mask``: the
    one :func:`watermark` returned (ignored by Gaussian Shading). ``check=False``
    skips reading the suspect's values (the experiment's per-key loop)."""
    _check_cfg(cfg)
    _check_prepared(P, cfg)
    _check_key(key, P)
    check_instance("scheme", scheme, Scheme, "a lib.kgmark.Scheme")
    _check_graph("suspect", suspect, P.Z.shape[1], check)
    if scheme.kind != "shading":
        _check_mask("mask", mask, P.shape, nonempty=check)
    Z_suspect, triples = suspect
    Zs = (Z_suspect - P.mu) / P.scale
    groups = _groups(P, Zs, triples, key, scheme, cfg)
    if len(groups) == 0:
        return float("-inf")
    noise = ddim_invert(P.model, Zs[groups].view(len(groups), *P.shape), P.sigmas,
                        cfg.fixed_point, check=False)  # fmt: skip
    if scheme.kind == "shading":
        return -float(bit_error(noise, key.signs, check=False).mean())
    if scheme.redundant:
        return -float(distance(noise, mask, key.signature, check=False).mean())
    G = min(len(groups), cfg.max_groups)
    return -float(distance(noise[:G], mask, key.segments[:G], check=False).mean())


def attack(kg, kind, cfg, generator, *, check=True):
    """The suspect's edits on a KG ``(Z (n, d), triples (m, 3))``: Gaussian noise on
    every embedding; deletion of nodes (and their triples); a permutation of the
    node ids; a permutation after inserting nodes (copies of random nodes plus
    noise, each with as many random triples as an average node); or a permutation
    after deleting a share of the triples ("reorder": the relational profiles the
    alignment reads change, so the layout has to be recovered, not just re-read).
    ``check=False`` skips reading the graph's values (the experiment's loop)."""
    check_choice("kind", kind, ATTACKS)
    _check_cfg(cfg)
    check_generator("generator", generator)
    _check_graph("kg", kg, check=check)
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


def _check_scores(name, values, finite=False, min_len=1):
    """A non-empty 1-D list, tuple, array or tensor of real scores without NaN (±inf
    ranks like any score unless ``finite``); reads the values."""
    if isinstance(values, (list, tuple)):
        for i, v in enumerate(values):
            if isinstance(v, bool) or not isinstance(v, numbers.Real):
                raise TypeError(
                    f"{name}[{i}]: expected a number, got {type(v).__name__} ({v!r})"
                )
        arr = np.asarray(values, dtype=float)
    elif isinstance(values, (np.ndarray, torch.Tensor)):
        arr = np.asarray(
            values.tolist() if isinstance(values, torch.Tensor) else values
        )
        if arr.dtype.kind not in "iuf":
            raise TypeError(f"{name}: expected real scores, got dtype {arr.dtype}")
        if arr.ndim != 1:
            raise ValueError(f"{name}: expected a 1-D array, got shape {arr.shape}")
    else:
        raise TypeError(
            f"{name}: expected a list, tuple, array or tensor of scores, got "
            f"{type(values).__name__}"
        )
    if len(arr) < min_len:
        raise ValueError(f"{name}: expected at least {min_len} scores, got {len(arr)}")
    bad = np.isnan(arr) if not finite else ~np.isfinite(arr)
    if bad.any():
        raise ValueError(
            f"{name}: expected {'finite scores' if finite else 'scores without NaN'}, "
            f"got {arr[bad][0]}"
        )


def auc(pos, neg) -> float:
    """P(score_pos > score_neg) + ½ P(tie) (the Mann–Whitney AUC); ±inf scores rank
    like any other (a suspect without a latent scores −inf)."""
    _check_scores("pos", pos)
    _check_scores("neg", neg)
    p = torch.as_tensor(pos, dtype=torch.float64)[:, None]
    q = torch.as_tensor(neg, dtype=torch.float64)[None, :]
    return float(((p > q).double() + 0.5 * (p == q).double()).mean())


def tpr_at_fpr(pos, neg, fpr=0.01) -> float:
    """TPR at the threshold where a normal fitted to the null scores has tail
    ``fpr`` (few null scores per seed: the empirical 1 % quantile would be their
    maximum)."""
    _check_scores("pos", pos)
    _check_scores("neg", neg, finite=True, min_len=2)
    check_probability("fpr", fpr)
    if not 0 < fpr < 1:
        raise ValueError(f"fpr: expected a number in (0, 1), got {fpr}")
    neg = np.asarray(neg, dtype=float)
    from scipy.stats import norm

    thr = neg.mean() + norm.ppf(1 - fpr) * neg.std(ddof=1)
    return float((np.asarray(pos) > thr).mean())


def run_scheme(P, name, cfg, seed, attacks=None):
    """Watermark with ``cfg.n_keys`` keys, attack, detect; AUC, TPR@1%FPR per attack
    (default: :data:`RUNS`), the AUC with a wrong key, and link prediction with the
    first ``cfg.n_lp`` watermarked KGs (only those when no attack is asked)."""
    _check_cfg(cfg)
    _check_prepared(P, cfg)
    check_choice("name", name, tuple(SCHEMES))
    check_int("seed", seed, 0)
    if attacks is not None:
        _check_names("attacks", attacks, ATTACKS, allow_empty=True)
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
            wrong.append(detect(P, (Zw, T), *prev, scheme, cfg, check=False))
        prev = (key, mask)
        for a in attacks:
            edited = attack((Zw, T), a, cfg, ga, check=False)
            pos[a].append(detect(P, edited, key, mask, scheme, cfg, check=False))
            edited = attack((P.Z, T), a, cfg, ga, check=False)
            neg[a].append(detect(P, edited, key, mask, scheme, cfg, check=False))
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
    """Every scheme on one seed (or those named in ``schemes``); the original KG's
    link prediction as reference."""
    _check_cfg(cfg)
    check_int("seed", seed, 0)
    if schemes is not None:
        _check_names("schemes", schemes, tuple(SCHEMES))
    P = prepare_seed(cfg, seed, device)
    base = link_prediction(P.Z, P.R, P.kg)
    res = {"original": base}
    for name in schemes or SCHEMES:
        res[name] = run_scheme(P, name, cfg, seed)
    return res


def run_seeds(cfg, seeds, device="cpu"):
    """:func:`run_seed` on each seed: ``{seed: result}``."""
    _check_cfg(cfg)
    seed_list(seeds)
    return {int(s): run_seed(cfg, int(s), device) for s in seeds}


def run_experiment(cfg, device=None):
    """The FULL entry point's body: every scheme on ``cfg.claim_seeds``."""
    from lib.common import device as pick_device

    from .claims import measure_from_runs

    _check_cfg(cfg)
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
