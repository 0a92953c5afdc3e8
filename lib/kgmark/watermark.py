"""The watermark: a Fourier-domain signature written into the DDIM-inverted noise
of a KG's latents, under a learnable (or a fixed ring) mask; detection by inversion
and a masked distance; the clustering-based alignment that fixes the latent layout;
Gaussian Shading's sign key as a second baseline.

A graph's n node embeddings (n, d), d = C·h·w / C, are cut into groups of C nodes;
each group is one latent (C, h, w) with one node per channel.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import torch
from scipy import stats

from lib.common import (
    check_generator,
    check_int,
    check_nonnegative,
    check_positive,
    check_tensor,
)

from .data import _check_shape, _check_triples


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
    _check_shape("shape", shape)
    check_int("dim", dim, 1)
    check_int("max_groups", max_groups, 1)
    check_generator("generator", generator)
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
    _check_shape("shape", shape)
    check_nonnegative("r_in", r_in)
    check_positive("r_out", r_out)
    if not r_in < r_out:
        raise ValueError(f"r_out: expected a radius > r_in = {r_in}, got {r_out}")
    C, h, w = shape
    r = _freq_radius(h, w)
    return ((r >= r_in) & (r < r_out)).expand(C, h, w).clone()


def _mirror(x):
    """x(−k) for a (…, h, w) array indexed by FFT frequency."""
    return torch.roll(x.flip(-2, -1), shifts=(1, 1), dims=(-2, -1))


def _check_latents(name, x, finite=True):
    """Latents (B, C, h, w): a non-empty floating tensor (finite: reads the values)."""
    return check_tensor(name, x, ndim=4, floating=True, nonempty=True, finite=finite)


def _check_mask(name, mask, shape, nonempty=False):
    """A bool mask over the frequencies of one latent, ``shape`` = (C, h, w);
    ``nonempty``: at least one frequency (reads the values)."""
    check_tensor(name, mask, shape=tuple(shape))
    if mask.dtype != torch.bool:
        raise TypeError(f"{name}: expected a bool tensor, got dtype {mask.dtype}")
    if nonempty and not bool(mask.any()):
        raise ValueError(f"{name}: expected at least one frequency, got an empty mask")


def _check_spectrum(name, sig, shapes, finite=True):
    """A key: a complex (or real) tensor whose shape is one of ``shapes``."""
    if not isinstance(sig, torch.Tensor):
        raise TypeError(f"{name}: expected a torch.Tensor, got {type(sig).__name__}")
    if not (sig.is_complex() or sig.is_floating_point()):
        raise TypeError(
            f"{name}: expected a complex (or real) tensor, got dtype {sig.dtype}"
        )
    shapes = [tuple(s) for s in shapes]
    if tuple(sig.shape) not in shapes:
        want = " or ".join(str(s) for s in shapes)
        raise ValueError(f"{name}: expected shape {want}, got {tuple(sig.shape)}")
    if finite:
        check_tensor(name, sig, finite=True)


def _check_signs(name, signs, shape):
    """Gaussian Shading's key: a floating ±1 tensor of ``shape`` (reads the values)."""
    check_tensor(name, signs, shape=tuple(shape), floating=True)
    if not bool((signs.abs() == 1).all()):
        raise ValueError(f"{name}: expected entries ±1, got another value")


def vp(x, sigma, *, check=True):
    """The variance-preserving view x/√(1+σ²) of a VE state (unit scale);
    elementwise, x and σ broadcast. ``check=False`` skips the checks."""
    if check:
        check_tensor("x", x, floating=True, finite=True)
        if isinstance(sigma, torch.Tensor):
            check_tensor("sigma", sigma, floating=True, finite=True)
            if sigma.numel() and bool((sigma < 0).any()):
                raise ValueError(
                    f"sigma: expected noise levels >= 0, got {float(sigma.min()):.3g}"
                )
            try:
                torch.broadcast_shapes(x.shape, sigma.shape)
            except RuntimeError:
                raise ValueError(
                    f"x, sigma: expected shapes that broadcast, got "
                    f"{tuple(x.shape)} and {tuple(sigma.shape)}"
                ) from None
        else:
            check_nonnegative("sigma", sigma)
    return x / (1 + sigma**2) ** 0.5


def learn_mask(
    x_path, y_path, signature, size, epochs=50, lr=0.02, generator=None, *, check=True
):
    """The learnable mask (LAWMM): logits p (C, h, w), m = σ(p) made symmetric under
    k → −k, fitted by Adam so that the signature mixed into the sampling states
    x_t stays close to the inversion states y_t (transparency); the final mask keeps
    the ``size`` largest entries.

    ``x_path``, ``y_path``: (T, B, C, h, w) VP-scaled states at the chosen steps;
    ``signature`` (C, h, w) or (B, C, h, w). ``check=False`` skips reading the values
    (NaN, inf) of the paths and the signature."""
    check_tensor("x_path", x_path, ndim=5, floating=True, nonempty=check, finite=check)
    check_tensor("y_path", y_path, shape=tuple(x_path.shape), floating=True)
    if check:
        check_tensor("y_path", y_path, finite=True)
    _check_spectrum(
        "signature", signature, (x_path.shape[-3:], x_path.shape[-4:]), finite=check
    )
    check_int("size", size, 1)
    if size > x_path.shape[-3:].numel():
        raise ValueError(
            f"size: expected at most {x_path.shape[-3:].numel()} frequencies, got "
            f"{size}"
        )
    check_int("epochs", epochs, 1)
    check_positive("lr", lr)
    check_generator("generator", generator)
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
    n = math.prod(_check_shape("shape", shape))
    check_int("size", size, 1)
    if size > n:
        raise ValueError(f"size: expected at most {n} frequencies, got {size}")
    check_generator("generator", generator)
    score = torch.rand(shape, generator=generator)
    score = (score + _mirror(score)) / 2
    keep = torch.zeros(score.numel(), dtype=torch.bool)
    keep[score.flatten().argsort(descending=True, stable=True)[:size]] = True
    keep = keep.view(shape)
    return keep & _mirror(keep)


def inject(noise, mask, signature, *, check=True):
    """FFT(noise)[mask] ← s[mask], back to real space (eq. 6). noise (B, C, h, w);
    mask (C, h, w); signature (C, h, w) or (B, C, h, w). ``check=False`` skips the
    checks (the experiment's per-key loop)."""
    if check:
        _check_latents("noise", noise)
        _check_mask("mask", mask, noise.shape[1:])
        _check_spectrum("signature", signature, (noise.shape[1:], noise.shape))
    F = torch.fft.fft2(noise)
    sig = signature.expand_as(F)
    F = torch.where(mask, sig, F)
    return torch.fft.ifft2(F).real


def distance(noise, mask, signature, *, check=True):
    """Per latent mean |FFT(noise)[mask] − s[mask]| (eq. 7); (B,). Shapes as in
    :func:`inject`; ``check=False`` skips the checks."""
    if check:
        _check_latents("noise", noise)
        _check_mask("mask", mask, noise.shape[1:], nonempty=True)
        _check_spectrum("signature", signature, (noise.shape[1:], noise.shape))
    F = torch.fft.fft2(noise)
    diff = (F - signature.expand_as(F)).abs()  # (B, C, h, w)
    return (diff * mask).flatten(1).sum(1) / mask.sum()


def p_value(noise, mask, signature):
    """Tree-Ring's test: under H0 the masked spectrum is Gaussian noise; the squared
    distance to the key scaled by its σ̂ is non-central χ² (real and imaginary parts,
    pooled over the latents). Small p means watermarked. noise (B, C, h, w); mask
    and signature (C, h, w)."""
    _check_latents("noise", noise)
    _check_mask("mask", mask, noise.shape[1:], nonempty=True)
    _check_spectrum("signature", signature, (noise.shape[1:],))
    F = torch.fft.fft2(noise)[:, mask].flatten()  # pooled masked entries
    s = signature.expand(noise.shape[0], *signature.shape)[:, mask].flatten()
    f = torch.cat([F.real, F.imag]).double()
    k = torch.cat([s.real, s.imag]).double()
    sd = f.std()
    lam = float((k**2 / sd**2).sum())
    x = float((((f - k) / sd) ** 2).sum())
    return float(stats.ncx2.cdf(x, df=len(k), nc=lam))


def shade(noise, signs, *, check=True):
    """Gaussian Shading in the inverted noise: keep |z|, set the signs to the key's.
    noise (B, C, h, w); signs ±1 (C, h, w). ``check=False`` skips the checks."""
    if check:
        _check_latents("noise", noise)
        _check_signs("signs", signs, noise.shape[1:])
    return noise.abs() * signs


def bit_error(noise, signs, *, check=True):
    """Per latent share of signs that disagree with the key; (B,). Shapes as in
    :func:`shade`; ``check=False`` skips the checks."""
    if check:
        _check_latents("noise", noise)
        _check_signs("signs", signs, noise.shape[1:])
    return (torch.sign(noise) != signs).float().flatten(1).mean(1)


# ---------------------------------------------------------------- alignment
def structural_features(triples, n, n_relations, *, check=True):
    """Each node's relational profile: log(1 + count) of its (relation, direction)
    incidences; (n, 2R). Unchanged by anything done to the embeddings.
    ``check=False`` skips the checks (the ids' ranges are read from the values)."""
    if check:
        check_int("n", n, 1)
        check_int("n_relations", n_relations, 1)
        _check_triples("triples", triples, n, n_relations)
    h, r, t = triples.unbind(1)
    F = torch.zeros(n, 2 * n_relations)
    F.index_put_((h, r), torch.ones(len(h)), accumulate=True)
    F.index_put_((t, r + n_relations), torch.ones(len(t)), accumulate=True)
    return F.log1p()


def _check_features(X, k, direction):
    check_tensor("X", X, ndim=2, floating=True, nonempty=True, finite=True)
    check_int("k", k, 1)
    check_tensor(
        "direction", direction, shape=(X.shape[1],), floating=True, finite=True
    )


def kmeans(X, k, direction, iters=15, *, check=True):
    """Lloyd's k-means with an order-free start: centroids at the means of the k
    quantile bins of the projection X·u. Returns labels (n,) and centroids (k, p).
    ``check=False`` skips the checks (the alignment, which made them)."""
    if check:
        _check_features(X, k, direction)
        check_int("iters", iters, 1)
    proj = X @ direction
    order = proj.argsort(stable=True)
    labels = torch.empty(len(X), dtype=torch.long)
    labels[order] = torch.arange(len(X)) * k // len(X)
    for _ in range(iters):
        cent = torch.zeros(k, X.shape[1]).index_add_(0, labels, X)
        cent = cent / torch.bincount(labels, minlength=k).clamp_min(1)[:, None]
        labels = torch.cdist(X, cent).argmin(1)
    return labels, cent


def aligned_groups(X, C, k, direction, *, check=True):
    """Algorithm 1 (our reading): cluster the nodes' features X (n, p), order the
    clusters by centroid·u and the nodes in a cluster by x·u, and cut each cluster
    into groups of C nodes (its last size mod C nodes stay unmarked). The order
    depends on the set of nodes, not on their ids. Returns (G, C) row indices.
    ``check=False`` skips reading X's values (the experiment's per-key loop)."""
    check_tensor("X", X, ndim=2, floating=True)
    check_int("C", C, 1)
    if check:
        _check_features(X, k, direction)
    labels, cent = kmeans(X, k, direction, check=False)
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
    check_int("n", n, 1)
    check_int("C", C, 1)
    return torch.arange(n // C * C).view(-1, C)
