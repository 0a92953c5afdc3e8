"""A small CLIP: an MLP image tower, a text tower (a bag of slot tokens trained from
scratch, or frozen MiniLM sentence embeddings with a trained linear map), the
symmetric contrastive loss, and its training loop."""

from __future__ import annotations

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

from lib.common import (
    check_choice,
    check_instance,
    check_int,
    check_positive,
    check_probability,
    check_tensor,
    seeded_init,
)

from .data import (
    DIM,
    H,
    N_CAPTIONS,
    VOCAB,
    W,
    _caption_index,
    _check_captions,
    _check_ids,
    captions,
)

#: the text towers: "bow", a bag of slot tokens trained from scratch; "minilm", the
#: frozen all-MiniLM-L6-v2 sentence embedding of the caption, then a trained linear map
TEXT_TOWERS = ("bow", "minilm")


def _check_table(text_tower: str, text_table):
    """``text_table``: None for "bow"; for "minilm" a finite float tensor with a row
    per distinct caption (:func:`.minilm.caption_table`)."""
    if text_tower == "bow":
        if text_table is not None:
            raise ValueError(
                "text_table: expected None with text_tower='bow', got a "
                f"{type(text_table).__name__}"
            )
        return None
    if text_table is None:
        raise ValueError(
            "text_table: expected caption_table()'s (1210, 384) tensor with "
            "text_tower='minilm', got None"
        )
    return check_tensor(
        "text_table", text_table, shape=(N_CAPTIONS, None), floating=True,
        nonempty=True, finite=True,
    )  # fmt: skip


class SmallCLIP(nn.Module):
    """Image tower: MLP on the flattened 3×18×14 image. Text tower ``"bow"``: the sum
    of token and slot embeddings of a 3-token caption, then an MLP; ``"minilm"``: the
    caption's row of the frozen ``text_table`` (MiniLM, 384-d), then a linear map.
    Both towers map to ``dim``; the embeddings f_I(x) and f_T(t) are the towers'
    (unnormalised) outputs."""

    def __init__(
        self,
        dim: int = 64,
        width: int = 512,
        text_tower: str = "bow",
        text_table: torch.Tensor | None = None,
    ):
        super().__init__()
        dim, width = check_int("dim", dim, 1), check_int("width", width, 1)
        self.text_tower = check_choice("text_tower", text_tower, TEXT_TOWERS)
        text_table = _check_table(text_tower, text_table)
        self.image = nn.Sequential(
            nn.Flatten(),
            nn.Linear(DIM, width),
            nn.GELU(),
            nn.Linear(width, width // 2),
            nn.GELU(),
            nn.Linear(width // 2, dim),
        )
        if text_tower == "bow":
            self.tok = nn.Embedding(VOCAB, width // 2)
            self.slot = nn.Parameter(torch.zeros(3, width // 2))
            self.text = nn.Sequential(
                nn.GELU(), nn.Linear(width // 2, width // 2), nn.GELU(),
                nn.Linear(width // 2, dim),
            )  # fmt: skip
        else:  # frozen features: a buffer (moves with .to(), no gradient)
            self.register_buffer("table", text_table.detach().float().clone())
            self.text = nn.Linear(text_table.shape[1], dim)  # the trained projection
        self.logit_scale = nn.Parameter(torch.tensor(math.log(1 / 0.07)))

    def encode_image(self, x: torch.Tensor) -> torch.Tensor:
        return self.image(x)  # (N, dim)

    def encode_text(self, tokens: torch.Tensor) -> torch.Tensor:
        if self.text_tower == "minilm":
            e = self.table[_caption_index(tokens)]  # (N, 384): frozen MiniLM e(t)
            return self.text(e)  # (N, dim)
        h = (self.tok(tokens) + self.slot).sum(1)  # (N, width/2): bag of slot tokens
        return self.text(h)  # (N, dim)


def clip_loss(
    img: torch.Tensor, txt: torch.Tensor, logit_scale: torch.Tensor
) -> torch.Tensor:
    """CLIP's symmetric InfoNCE on a batch of matched pairs (row i with row i). As in
    CLIP, other rows with the same caption count as negatives (our captions repeat
    often: ten classes, two optional style words)."""
    check_tensor("img", img, ndim=2, floating=True, nonempty=True, finite=True)
    check_tensor("txt", txt, shape=tuple(img.shape), floating=True, finite=True)
    check_tensor("logit_scale", logit_scale, shape=(), floating=True, finite=True)
    img, txt = F.normalize(img, dim=1), F.normalize(txt, dim=1)
    logits = logit_scale.exp().clamp(max=100) * img @ txt.T  # (B, B)
    target = torch.arange(img.shape[0], device=img.device)
    return (F.cross_entropy(logits, target) + F.cross_entropy(logits.T, target)) / 2


def train_clip(
    x: torch.Tensor,
    y: torch.Tensor,
    colour: torch.Tensor,
    marker: torch.Tensor,
    *,
    seed: int,
    steps: int,
    batch: int,
    lr: float = 2e-3,
    dim: int = 64,
    width: int = 512,
    p_style: float = 0.5,
    device=None,
    text_tower: str = "bow",
    text_table: torch.Tensor | None = None,
) -> SmallCLIP:
    """Train a :class:`SmallCLIP` on images with captions (the caption words are
    redrawn at every step); batches and initialisation follow ``seed``. With
    ``text_tower="minilm"`` the text features are ``text_table``'s frozen rows
    (None: :func:`.minilm.caption_table`, which loads MiniLM) and only the linear map
    above them trains with the image tower; otherwise the whole text tower trains
    from scratch."""
    check_tensor(
        "x", x, shape=(None, 3, None, None), floating=True, nonempty=True, finite=True
    )
    for name, t in (("y", y), ("colour", colour), ("marker", marker)):
        _check_ids(name, t, x.shape[0])
    check_int("seed", seed, 0)
    steps, batch = check_int("steps", steps, 1), check_int("batch", batch, 2)
    check_positive("lr", lr)
    check_int("dim", dim, 1)
    check_int("width", width, 1)
    check_probability("p_style", p_style)
    check_choice("text_tower", text_tower, TEXT_TOWERS)
    if text_tower == "minilm" and text_table is None:
        from .minilm import caption_table

        text_table = caption_table()
    _check_table(text_tower, text_table)
    dev = x.device if device is None else torch.device(device)
    make = lambda: SmallCLIP(dim, width, text_tower, text_table)  # noqa: E731
    model = seeded_init(make, seed).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.01)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, lr, total_steps=steps)
    g = torch.Generator().manual_seed(seed)
    n = x.shape[0]
    for _ in range(steps):
        i = torch.randint(n, (batch,), generator=g)
        tok = captions(y[i], colour[i], marker[i], p_style, g).to(dev)  # (B, 3)
        xi = x[i.to(x.device)].to(dev)
        loss = clip_loss(
            model.encode_image(xi), model.encode_text(tok), model.logit_scale
        )
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sched.step()
    return model.eval()


@torch.no_grad()
def embed_images(model: SmallCLIP, x: torch.Tensor, chunk: int = 4096) -> torch.Tensor:
    """f_I(x) for a stack of images, in chunks: (N, dim)."""
    check_instance("model", model, SmallCLIP, "a SmallCLIP")
    check_tensor(
        "x", x, shape=(None, 3, H, W), floating=True, nonempty=True, finite=True
    )
    check_int("chunk", chunk, 1)
    dev = next(model.parameters()).device
    return torch.cat(
        [model.encode_image(x[i : i + chunk].to(dev)) for i in range(0, len(x), chunk)]
    )


@torch.no_grad()
def embed_text(model: SmallCLIP, tokens: torch.Tensor) -> torch.Tensor:
    """f_T(t) for token ids (N, 3): (N, dim)."""
    check_instance("model", model, SmallCLIP, "a SmallCLIP")
    check_tensor("tokens", tokens, shape=(None, 3), integer=True, nonempty=True)
    if model.text_tower == "minilm":  # a row of the table: a well-formed caption
        _check_captions("tokens", tokens)
    if int(tokens.min()) < 0 or int(tokens.max()) >= VOCAB:
        raise ValueError(
            f"tokens: expected ids in 0 … {VOCAB - 1}, got values in "
            f"[{int(tokens.min())}, {int(tokens.max())}]"
        )
    return model.encode_text(tokens.to(next(model.parameters()).device))
