"""Styled MNIST domains with captions, and the interventions (image augmentations).

An image is a 14×14 MNIST digit (2×2 average-pooled) drawn in one of ten **colours**,
on an 18×14 canvas whose top and bottom two-pixel strips carry a white **marker** at
one of ten positions. Three latent factors: the digit's shape (invariant: it decides
the label), its colour and the marker's position (variant: environments change how
they go with the label). A caption names the class and, with probability ``p_style``
each, the colour and the marker (``"a red three, mark 4"``).

Four domains (DomainBed-style, each left out in turn):

- ``A``: colour = class (90 %), marker = class (90 %);
- ``B``: colour = class (80 %), marker = class (80 %);
- ``C``: colour = class + 5 mod 10 (90 %: the colour link flips), marker = class
  (85 %);
- ``D``: colour = class (85 %), marker = class + 5 mod 10 (90 %: the marker link
  flips).

Each of C and D shifts exactly one factor against the sources it is judged on: with
C left out, the sources' colour follows the class and C's colour link flips, while
C's marker follows the class as most sources' markers do; with D left out, the
marker link flips and D's colour follows the class as most sources' colours do. (An
earlier design drew C's marker and D's colour at random, which is itself a shift of
the other factor against the sources; see :mod:`.claims`.) The interventions change
the colour (and other pixel statistics), never the digit's shape or where the marker
is, so leaving out ``C`` is a shift they cover and leaving out ``D`` one they do not.

:func:`make_readout` draws a separate set whose colour and marker are independent of
the class (digits from MNIST's test split), from which a linear probe's accuracy
says how much of each style factor a subspace still carries.
"""

from __future__ import annotations

import dataclasses
import math

import torch
import torch.nn.functional as F

from lib.common import (
    check_generator,
    check_instance,
    check_int,
    check_nonnegative,
    check_probability,
    check_tensor,
)
from lib.common.data import load_mnist

N_CLASSES = 10
H, W = 18, 14  # canvas: 2 marker rows, 14 digit rows, 2 marker rows
DIM = 3 * H * W
DIGITS = (
    "zero",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
)
COLOURS = (
    "red", "orange", "yellow", "lime", "green", "teal", "cyan", "blue", "purple", "pink"
)  # fmt: skip
#: marker positions as words (spelling alphabet): a pretrained text encoder reads digits
#: as numbers, so "mark 4" would sit next to the class word "four"
MARKERS = (
    "alfa", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india",
    "juliett",
)  # fmt: skip
#: token ids: 0 = no word; 1–10 digits; 11–20 colours; 21–30 marker positions
VOCAB = 1 + 3 * N_CLASSES
#: distinct captions: a class word, no colour word or one of ten, no marker or one of
#: ten (10 · 11 · 11 = 1210); :func:`all_captions` lists them in :func:`caption_index`'s
#: order
N_CAPTIONS = N_CLASSES * (N_CLASSES + 1) ** 2
AUGMENTATIONS = (
    "hue", "grayscale", "blur", "invert", "posterize", "solarize", "channels"
)  # fmt: skip


def _check_kinds(name: str, kinds) -> tuple:
    """A non-empty list / tuple of names from :data:`AUGMENTATIONS`."""
    if isinstance(kinds, (str, bytes)) or not isinstance(kinds, (list, tuple)):
        raise TypeError(
            f"{name}: expected a tuple of names from {AUGMENTATIONS}, got "
            f"{type(kinds).__name__} ({kinds!r})"
        )
    if not kinds or any(k not in AUGMENTATIONS for k in kinds):
        raise ValueError(
            f"{name}: expected a non-empty subset of {AUGMENTATIONS}, got {kinds!r}"
        )
    return kinds


def _check_ids(name: str, t, n: int | None = None):
    """Class, colour or marker ids: an integer tensor (n,) of values in 0 … 9."""
    check_tensor(name, t, shape=(n,), integer=True, nonempty=True)
    if int(t.min()) < 0 or int(t.max()) >= N_CLASSES:
        raise ValueError(
            f"{name}: expected ids in 0 … {N_CLASSES - 1}, got values in "
            f"[{int(t.min())}, {int(t.max())}]"
        )
    return t


@dataclasses.dataclass(frozen=True)
class Domain:
    """How a domain draws colour and marker from the class: with probability
    ``p_colour`` the colour is ``(y + colour_shift) % 10``, else uniform over the other
    nine (``p_colour = 0.1``: independent of the class); the same for the marker."""

    name: str
    p_colour: float
    colour_shift: int
    p_marker: float
    marker_shift: int

    def __post_init__(self):
        check_instance("name", self.name, str, "a str")
        for name in ("p_colour", "p_marker"):
            check_probability(name, getattr(self, name))
        for name in ("colour_shift", "marker_shift"):
            check_int(name, getattr(self, name))


DOMAINS = (
    Domain("A", 0.9, 0, 0.9, 0),
    Domain("B", 0.8, 0, 0.8, 0),
    Domain("C", 0.9, 5, 0.85, 0),
    Domain("D", 0.85, 0, 0.9, 5),
)
#: colour and marker independent of the class (the pretraining pool, the readout set)
INDEPENDENT = Domain("independent", 0.1, 0, 0.1, 0)


def hue_rgb(h: torch.Tensor) -> torch.Tensor:
    """RGB (N, 3) of hues h (N,) in [0, 1) at full saturation and value."""
    k = (torch.tensor([5.0, 3.0, 1.0], device=h.device) + 6 * h[:, None]) % 6
    return 1 - torch.clamp(torch.minimum(k, 4 - k), 0, 1)  # HSV -> RGB, s = v = 1


def palette() -> torch.Tensor:
    """The ten colours as RGB rows (hues i/10): (10, 3)."""
    return hue_rgb(torch.arange(N_CLASSES, dtype=torch.float32) / N_CLASSES)


def _draw_style(y, p, shift, generator):
    """Per image: ``(y + shift) % 10`` with probability p, else another value."""
    n = y.shape[0]
    keep = torch.rand(n, generator=generator) < p
    other = torch.randint(1, N_CLASSES, (n,), generator=generator)
    base = (y + shift) % N_CLASSES
    return torch.where(keep, base, (base + other) % N_CLASSES)


def render(
    digits: torch.Tensor,
    colour: torch.Tensor,
    marker: torch.Tensor,
    hue_jitter: torch.Tensor | None = None,
) -> torch.Tensor:
    """Images (N, 3, 18, 14) in [0, 1] from 14×14 digit intensities (N, 14, 14),
    colour ids and marker ids (N,); ``hue_jitter`` (N,) shifts each hue off the
    palette's."""
    check_tensor(
        "digits", digits, shape=(None, 14, 14), floating=True, nonempty=True,
        finite=True,
    )  # fmt: skip
    n = digits.shape[0]
    for name, t in (("colour", colour), ("marker", marker)):
        _check_ids(name, t, n)
    if hue_jitter is not None:
        check_tensor("hue_jitter", hue_jitter, shape=(n,), floating=True, finite=True)
    h = colour.float() / N_CLASSES
    if hue_jitter is not None:
        h = (h + hue_jitter.to(h.device)) % 1
    rgb = hue_rgb(h.to(digits.device))  # (N, 3)
    img = torch.zeros(n, 3, H, W, device=digits.device)
    img[:, :, 2:16] = digits[:, None] * rgb[:, :, None, None]  # the coloured digit
    row = torch.where(marker < 5, 0, 16)  # top strip for 0–4, bottom for 5–9
    col = 3 * (marker % 5)  # columns 0, 3, 6, 9, 12
    i = torch.arange(n, device=digits.device)
    for dr in (0, 1):
        for dc in (0, 1):
            img[i, :, row + dr, col + dc] = 1.0  # white 2×2 marker
    return img


def pooled_digits(split: str = "train") -> tuple[torch.Tensor, torch.Tensor]:
    """MNIST digits 2×2 average-pooled to 14×14: (N, 14, 14) in [0, 1], labels (N,)."""
    x, y = load_mnist(split)
    return F.avg_pool2d(x.view(-1, 1, 28, 28), 2)[:, 0], y


def make_domain(
    digits: torch.Tensor,
    y: torch.Tensor,
    domain: Domain,
    generator: torch.Generator,
    hue_jitter: float = 0.0,
) -> dict:
    """One domain's images, labels, colour and marker ids; each hue is moved by up to
    ±``hue_jitter`` off the palette (the colour word stays the nearest one)."""
    check_tensor(
        "digits", digits, shape=(None, 14, 14), floating=True, nonempty=True,
        finite=True,
    )  # fmt: skip
    _check_ids("y", y, digits.shape[0])
    check_instance("domain", domain, Domain, "a lib.clip_icm.Domain")
    check_generator("generator", generator, allow_none=False)
    check_nonnegative("hue_jitter", hue_jitter)
    colour = _draw_style(y, domain.p_colour, domain.colour_shift, generator)
    marker = _draw_style(y, domain.p_marker, domain.marker_shift, generator)
    jit = (2 * torch.rand(len(y), generator=generator) - 1) * hue_jitter
    return {
        "x": render(digits, colour, marker, jit if hue_jitter else None),
        "y": y,
        "colour": colour,
        "marker": marker,
    }


def make_domains(
    n_per_domain: int, generator: torch.Generator, domains=DOMAINS
) -> list:
    """Disjoint MNIST digits (training split) for each domain, drawn with
    ``generator``."""
    n_per_domain = check_int("n_per_domain", n_per_domain, 10)
    digits, y = pooled_digits("train")
    need = n_per_domain * len(domains)
    if need > len(y):
        raise ValueError(
            f"n_per_domain: expected at most {len(y) // len(domains)}, got "
            f"{n_per_domain}"
        )
    idx = torch.randperm(len(y), generator=generator)[:need].view(len(domains), -1)
    return [make_domain(digits[i], y[i], d, generator) for i, d in zip(idx, domains)]


def make_readout(n: int, generator: torch.Generator) -> dict:
    """``n`` images of MNIST's test split (never seen by the CLIP or the probes) with
    colour and marker independent of the class (:data:`INDEPENDENT`), no hue jitter:
    the set on which :func:`lib.clip_icm.experiment.style_readout` reads the style
    factors from a subspace."""
    n = check_int("n", n, 10)
    check_generator("generator", generator, allow_none=False)
    digits, y = pooled_digits("test")
    if n > len(y):
        raise ValueError(f"n: expected at most {len(y)} (MNIST's test split), got {n}")
    i = torch.randperm(len(y), generator=generator)[:n]
    return make_domain(digits[i], y[i], INDEPENDENT, generator)


def captions(
    y: torch.Tensor,
    colour: torch.Tensor,
    marker: torch.Tensor,
    p_style: float,
    generator: torch.Generator,
) -> torch.Tensor:
    """Token ids (N, 3): the class word, then the colour and marker words, each kept
    with probability ``p_style`` (else 0, no word)."""
    _check_ids("y", y)
    n = y.shape[0]
    _check_ids("colour", colour, n)
    _check_ids("marker", marker, n)
    p_style = check_probability("p_style", p_style)
    check_generator("generator", generator)
    keep = torch.rand(n, 2, generator=generator) < p_style  # (N, 2)
    tok = torch.stack([1 + y, 11 + colour, 21 + marker], 1)  # (N, 3)
    tok[:, 1:] = torch.where(keep, tok[:, 1:], torch.zeros_like(tok[:, 1:]))
    return tok


def class_prompts(device=None) -> torch.Tensor:
    """The zero-shot prompts, "a {class}": the class word alone, (10, 3)."""
    tok = torch.zeros(N_CLASSES, 3, dtype=torch.long, device=device)
    tok[:, 0] = 1 + torch.arange(N_CLASSES, device=device)
    return tok


def caption_text(tokens: torch.Tensor) -> str:
    """A caption's words, e.g. ``"a red three, mark echo"`` (markers as the words of
    :data:`MARKERS`, not digits, which a pretrained encoder would read as numbers)."""
    check_tensor("tokens", tokens, shape=(3,), integer=True)
    d, c, m = (int(t) for t in tokens)
    if not (
        1 <= d <= N_CLASSES
        and (c == 0 or 11 <= c <= 10 + N_CLASSES)
        and (m == 0 or 21 <= m <= 20 + N_CLASSES)
    ):
        raise ValueError(
            f"tokens: expected (class 1-10, colour 0 or 11-20, marker 0 or 21-30), "
            f"got {(d, c, m)}"
        )
    words = ("a " + (COLOURS[c - 11] + " " if c else "")) + DIGITS[d - 1]
    return words + (f", mark {MARKERS[m - 21]}" if m else "")


def _check_captions(name: str, tokens) -> torch.Tensor:
    """Captions as token ids (N, 3): class 1–10, colour 0 or 11–20, marker 0 or
    21–30 in every row."""
    check_tensor(name, tokens, shape=(None, 3), integer=True, nonempty=True)
    d, c, m = tokens.unbind(1)  # (N,) each
    ok = (
        (d >= 1) & (d <= N_CLASSES)
        & ((c == 0) | ((c >= 11) & (c <= 10 + N_CLASSES)))
        & ((m == 0) | ((m >= 21) & (m <= 20 + N_CLASSES)))
    )  # fmt: skip
    if not bool(ok.all()):
        row = int((~ok).nonzero()[0, 0])
        raise ValueError(
            f"{name}: expected rows (class 1-10, colour 0 or 11-20, marker 0 or "
            f"21-30), got {tuple(int(t) for t in tokens[row])} in row {row}"
        )
    return tokens


def _caption_index(tokens: torch.Tensor) -> torch.Tensor:
    """:func:`caption_index` without the checks (the training loop's hot path)."""
    d, c, m = tokens.unbind(1)  # (N,) each
    c = torch.where(c > 0, c - 10, 0)  # 0 = no colour word, else 1–10
    m = torch.where(m > 0, m - 20, 0)  # 0 = no marker word, else 1–10
    return ((d - 1) * (N_CLASSES + 1) + c) * (N_CLASSES + 1) + m  # (N,)


def caption_index(tokens: torch.Tensor) -> torch.Tensor:
    """Each caption's row in :func:`all_captions` (N,), from token ids (N, 3): the
    index (class, colour slot, marker slot) in mixed radix 10 · 11 · 11."""
    return _caption_index(_check_captions("tokens", tokens))


def all_captions(device=None) -> torch.Tensor:
    """Every distinct caption as token ids (:data:`N_CAPTIONS`, 3), row i the caption
    whose :func:`caption_index` is i."""
    i = torch.arange(N_CAPTIONS, device=device)
    d, c, m = (
        i // (N_CLASSES + 1) ** 2,
        i // (N_CLASSES + 1) % (N_CLASSES + 1),
        i % (N_CLASSES + 1),
    )
    return torch.stack(
        [1 + d, torch.where(c > 0, 10 + c, 0), torch.where(m > 0, 20 + m, 0)], 1
    )  # (N_CAPTIONS, 3)


# --- interventions: one random augmentation per image (the official code's seven,
# with a random channel permutation in place of histogram equalisation) ---


def _hue_matrix(theta: torch.Tensor) -> torch.Tensor:
    """Rotations of RGB about the grey axis by angles theta (N,): (N, 3, 3)."""
    c, s = torch.cos(theta), torch.sin(theta)
    u = torch.full((3,), 1 / math.sqrt(3))
    outer = u[:, None] * u[None, :]  # (3, 3)
    cross = torch.tensor([[0.0, -u[2], u[1]], [u[2], 0.0, -u[0]], [-u[1], u[0], 0.0]])
    eye = torch.eye(3)
    return (
        c[:, None, None] * eye
        + s[:, None, None] * cross
        + (1 - c)[:, None, None] * outer
    )


def _blur(x: torch.Tensor, sigma: torch.Tensor) -> torch.Tensor:
    """3×3 Gaussian blur with a per-image sigma (N,)."""
    d = torch.tensor([-1.0, 0.0, 1.0], device=x.device)
    w = torch.exp(-(d[None] ** 2) / (2 * sigma[:, None] ** 2))  # (N, 3)
    w = w / w.sum(1, keepdim=True)
    k = (w[:, :, None] * w[:, None, :])[:, None]  # (N, 1, 3, 3)
    n = x.shape[0]
    out = F.conv2d(
        F.pad(x.reshape(1, n * 3, H, W), (1, 1, 1, 1), mode="replicate"),
        k.repeat_interleave(3, 0),
        groups=n * 3,
    )
    return out.view(n, 3, H, W)


def augment(
    x: torch.Tensor, generator: torch.Generator, kinds: tuple = AUGMENTATIONS
) -> tuple[torch.Tensor, torch.Tensor]:
    """x̃: each image (N, 3, H, W) with one augmentation drawn uniformly from
    ``kinds``; returns ``(x̃, kind index into AUGMENTATIONS)``. Random numbers come
    from ``generator`` (CPU) and are drawn for every image whatever its kind, so a
    batch's result does not depend on how it is split."""
    check_tensor(
        "x", x, shape=(None, 3, H, W), floating=True, nonempty=True, finite=True
    )
    check_generator("generator", generator, allow_none=False)
    _check_kinds("kinds", kinds)
    n = x.shape[0]
    pick = torch.randint(len(kinds), (n,), generator=generator)
    kind = torch.tensor([AUGMENTATIONS.index(k) for k in kinds])[pick]  # (N,)
    theta = torch.rand(n, generator=generator) * 2 * math.pi
    sigma = 0.3 + 0.9 * torch.rand(n, generator=generator)
    perm = torch.argsort(torch.rand(n, 3, generator=generator), 1)  # (N, 3)
    dev = x.device
    out = {
        "hue": torch.einsum("nij,njhw->nihw", _hue_matrix(theta).to(dev), x).clamp(
            0, 1
        ),
        "grayscale": x.mean(1, keepdim=True).expand_as(x),
        "blur": _blur(x, sigma.to(dev)),
        "invert": 1 - x,
        "posterize": torch.floor(x * 4) / 4,
        "solarize": torch.where(x >= 0.5, 1 - x, x),
        "channels": torch.gather(x, 1, perm.to(dev)[:, :, None, None].expand_as(x)),
    }
    xt = torch.empty_like(x)
    kind_d = kind.to(dev)
    for j, name in enumerate(AUGMENTATIONS):
        m = kind_d == j
        xt[m] = out[name][m]
    return xt, kind
