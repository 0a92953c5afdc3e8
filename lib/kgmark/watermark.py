"""The watermark: a Fourier-domain signature written into the DDIM-inverted noise
of a KG's latents, under a learnable (or a fixed ring) mask; detection by inversion
and a masked distance; the clustering-based alignment that fixes the latent layout;
Gaussian Shading's sign key as a second baseline.

A graph's n node embeddings (n, d), d = C·h·w / C, are cut into groups of C nodes;
each group is one latent (C, h, w) with one node per channel.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import torch
from scipy import stats

from lib.common import check_int, check_positive, check_tensor


# ---------------------------------------------------------------- keys and masks
@dataclasses.dataclass(frozen=True)
class Key:
    """The owner's secret: the Fourier signature s = FFT2(ε) (C, h, w), the
    per-position signatures of the non-redundant layout (G, C, h, w), Gaussian
    Shading's sign pattern (C, h, w) and the alignment's direction u (p,) in the
    space of the nodes' relational profiles."""

    signature: torch.Tensor
    segments: torch.Tensor
    signs: torch.Tensor
    direction: torch.Tensor


def make_key(shape, dim, max_groups, generator=None) -> Key:
    """Draw a key for latents of ``shape`` = (C, h, w); ``dim`` is the size of the
    features the alignment projects (the relational profile, 2R)."""
    C, h, w = shape
    sig = torch.fft.fft2(torch.randn(C, h, w, generator=generator))  # eq. (4)
    seg = torch.fft.fft2(torch.randn(max_groups, C, h, w, generator=generator))
    signs = torch.randint(0, 2, (C, h, w), generator=generator).float() * 2 - 1
    u = torch.randn(dim, generator=generator)
    return Key(sig, seg, signs, u / u.norm())


def _freq_radius(h, w):
    fy = torch.fft.fftfreq(h) * h
    fx = torch.fft.fftfreq(w) * w
    return (fy[:, None] ** 2 + fx[None, :] ** 2).sqrt()  # (h, w), 0 at DC


def ring_mask(shape, r_in=1.0, r_out=3.0) -> torch.Tensor:
    """Tree-Ring's fixed mask: frequencies with r_in ≤ |k| < r_out in every channel
    (bool (C, h, w); symmetric under k → −k, so the real part keeps the key)."""
    C, h, w = shape
    r = _freq_radius(h, w)
    return ((r >= r_in) & (r < r_out)).expand(C, h, w).clone()


def _mirror(x):
    """x(−k) for a (…, h, w) array indexed by FFT frequency."""
    return torch.roll(x.flip(-2, -1), shifts=(1, 1), dims=(-2, -1))


def vp(x, sigma):
    """The variance-preserving view x/√(1+σ²) of a VE state (unit scale)."""
    return x / (1 + sigma**2) ** 0.5


def learn_mask(x_path, y_path, signature, size, epochs=50, lr=0.02, generator=None):
    """The learnable mask (LAWMM): logits p (C, h, w), m = σ(p) made symmetric under
    k → −k, fitted by Adam so that the signature mixed into the sampling states
    x_t stays close to the inversion states y_t (transparency); the final mask keeps
    the ``size`` largest entries.

    ``x_path``, ``y_path``: (T, B, C, h, w) VP-scaled states at the chosen steps."""
    check_int("size", size, 1)
    p = torch.rand(signature.shape[-3:], generator=generator).requires_grad_(True)
    X = torch.fft.fft2(x_path)  # (T, B, C, h, w)
    opt = torch.optim.Adam([p], lr=lr)
    for _ in range(epochs):
        m = torch.sigmoid((p + _mirror(p)) / 2)  # symmetric mask
        mixed = torch.fft.ifft2(m * signature + (1 - m) * X).real  # eq. (5)
        loss = ((mixed - y_path) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    with torch.no_grad():
        score = torch.sigmoid((p + _mirror(p)) / 2).flatten()
        keep = torch.zeros_like(score, dtype=torch.bool)
        keep[score.argsort(descending=True, stable=True)[:size]] = True
        keep = keep.view(signature.shape[-3:])
        return keep & _mirror(keep)  # drop a frequency whose mirror fell out


def random_mask(shape, size, generator=None):
    """A random mask of ``size`` frequencies, symmetric under k → −k (the learned
    mask's control)."""
    score = torch.rand(shape, generator=generator)
    score = (score + _mirror(score)) / 2
    keep = torch.zeros(score.numel(), dtype=torch.bool)
    keep[score.flatten().argsort(descending=True, stable=True)[:size]] = True
    keep = keep.view(shape)
    return keep & _mirror(keep)


def inject(noise, mask, signature):
    """FFT(noise)[mask] ← s[mask], back to real space (eq. 6). noise (B, C, h, w);
    signature (C, h, w) or (B, C, h, w)."""
    F = torch.fft.fft2(noise)
    sig = signature.expand_as(F)
    F = torch.where(mask, sig, F)
    return torch.fft.ifft2(F).real


def distance(noise, mask, signature):
    """Per latent mean |FFT(noise)[mask] − s[mask]| (eq. 7); (B,)."""
    F = torch.fft.fft2(noise)
    diff = (F - signature.expand_as(F)).abs()  # (B, C, h, w)
    return (diff * mask).flatten(1).sum(1) / mask.sum()


def p_value(noise, mask, signature):
    """Tree-Ring's test: under H0 the masked spectrum is Gaussian noise; the squared
    distance to the key scaled by its σ̂ is non-central χ² (real and imaginary parts,
    pooled over the latents). Small p means watermarked."""
    F = torch.fft.fft2(noise)[:, mask].flatten()  # pooled masked entries
    s = signature.expand(noise.shape[0], *signature.shape)[:, mask].flatten()
    f = torch.cat([F.real, F.imag]).double()
    k = torch.cat([s.real, s.imag]).double()
    sd = f.std()
    lam = float((k**2 / sd**2).sum())
    x = float((((f - k) / sd) ** 2).sum())
    return float(stats.ncx2.cdf(x, df=len(k), nc=lam))


def shade(noise, signs):
    """Gaussian Shading in the inverted noise: keep |z|, set the signs to the key's."""
    return noise.abs() * signs


def bit_error(noise, signs):
    """Per latent share of signs that disagree with the key; (B,)."""
    return (torch.sign(noise) != signs).float().flatten(1).mean(1)


# ---------------------------------------------------------------- alignment
def structural_features(triples, n, n_relations):
    """Each node's relational profile: log(1 + count) of its (relation, direction)
    incidences; (n, 2R). Unchanged by anything done to the embeddings."""
    h, r, t = triples.unbind(1)
    F = torch.zeros(n, 2 * n_relations)
    F.index_put_((h, r), torch.ones(len(h)), accumulate=True)
    F.index_put_((t, r + n_relations), torch.ones(len(t)), accumulate=True)
    return F.log1p()


def kmeans(X, k, direction, iters=15):
    """Lloyd's k-means with an order-free start: centroids at the means of the k
    quantile bins of the projection X·u. Returns labels (n,) and centroids (k, p)."""
    proj = X @ direction
    order = proj.argsort(stable=True)
    labels = torch.empty(len(X), dtype=torch.long)
    labels[order] = torch.arange(len(X)) * k // len(X)
    for _ in range(iters):
        cent = torch.zeros(k, X.shape[1]).index_add_(0, labels, X)
        cent = cent / torch.bincount(labels, minlength=k).clamp_min(1)[:, None]
        labels = torch.cdist(X, cent).argmin(1)
    return labels, cent


def aligned_groups(X, C, k, direction):
    """Algorithm 1 (our reading): cluster the nodes' features X (n, p), order the
    clusters by centroid·u and the nodes in a cluster by x·u, and cut each cluster
    into groups of C nodes (its last size mod C nodes stay unmarked). The order
    depends on the set of nodes, not on their ids. Returns (G, C) row indices."""
    check_tensor("X", X, ndim=2, floating=True)
    check_int("C", C, 1)
    labels, cent = kmeans(X, k, direction)
    proj = X @ direction
    groups = []
    for c in (cent @ direction).argsort(stable=True).tolist():
        members = (labels == c).nonzero().flatten()
        members = members[proj[members].argsort(stable=True)]
        usable = len(members) // C * C
        groups.extend(members[:usable].view(-1, C))
    if not groups:
        return torch.empty(0, C, dtype=torch.long)
    return torch.stack(groups)


def index_groups(n, C):
    """No alignment: consecutive rows in the order the graph arrives; (n // C, C)."""
    return torch.arange(n // C * C).view(-1, C)
