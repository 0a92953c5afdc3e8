"""The frozen backbone of SMOKE (the encoder after masked-patch pretraining and the
small LM after text pretraining), trained once by this chapter's code and committed as
``results/itformer_backbone.pt`` (about 0.6 MB), because its pretraining takes a few
minutes on two CPU cores. Rebuild it with::

    python -m lib.itformer.backbone

which writes the file with its provenance (the config fields it depends on, the torch
version and the wall time). :func:`load_backbone` refuses a file whose fields differ
from the config's.
"""

from __future__ import annotations

import dataclasses
import pathlib
import sys
import time

import torch

ROOT = pathlib.Path(__file__).resolve().parents[2]
PATH = ROOT / "results" / "itformer_backbone.pt"
#: the config fields the backbone depends on
FIELDS = (
    "seed",
    "n_pretrain",
    "per_unit",
    "n_channels",
    "n_cycles",
    "cycle_len",
    "patch",
    "noise",
    "d_enc",
    "enc_layers",
    "enc_steps",
    "enc_batch",
    "enc_lr",
    "mask_ratio",
    "lm",
    "d_lm",
    "lm_layers",
    "lm_steps",
    "lm_lr",
    "p_facts",
    "n_head",
    "n_slots",
    "q_len",
    "a_len",
    "batch",
)


def key(cfg) -> dict:
    return {f: getattr(cfg, f) for f in FIELDS}


def save_backbone(bb: dict, cfg, path=PATH, wall_s: float | None = None) -> None:
    path = pathlib.Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    state = dict(
        key=key(cfg),
        enc=bb["enc"].state_dict(),
        lm=bb["lm"].lm.state_dict(),
        mu=bb["mu"],
        sd=bb["sd"],
        enc_losses=bb["enc_losses"],
        lm_losses=bb["lm_losses"],
        provenance=dict(
            command="python -m lib.itformer.backbone",
            torch=torch.__version__,
            wall_s=wall_s,
        ),
    )
    torch.save(state, path)


def load_backbone(cfg, path=PATH, device="cpu") -> dict | None:
    """The saved backbone for ``cfg`` (None if there is no file or it was built with
    other settings)."""
    from lib.common.gpt import GPT, GPTConfig

    from .data import make_vocab
    from .lm import GPTAdapter, freeze
    from .models import TSEncoder

    path = pathlib.Path(path)
    if cfg.lm != "gpt" or not path.exists():
        return None
    st = torch.load(path, map_location="cpu", weights_only=False)
    if st["key"] != key(cfg):
        return None
    vocab = make_vocab()
    enc = TSEncoder(
        cfg.n_channels, cfg.n_patches, cfg.patch, cfg.d_enc, cfg.enc_layers, cfg.n_head
    )
    enc.load_state_dict(st["enc"])
    T = 1 + cfg.n_slots + 1 + cfg.q_len + 1 + cfg.a_len + 1
    lm = GPT(
        GPTConfig(
            vocab_size=len(vocab),
            block_size=T,
            n_layer=cfg.lm_layers,
            n_head=cfg.n_head,
            d_model=cfg.d_lm,
        )
    )
    lm.load_state_dict(st["lm"])
    from .experiment import pretraining_pool, token_stats

    enc = enc.to(device).eval().requires_grad_(False)
    pool, _ = pretraining_pool(cfg)
    h_mu, h_sd = token_stats(enc, (pool["x"] - st["mu"]) / st["sd"], device)
    return dict(
        vocab=vocab,
        enc=enc,
        lm=freeze(GPTAdapter(lm).to(device)),
        mu=st["mu"],
        sd=st["sd"],
        h_mu=h_mu,
        h_sd=h_sd,
        enc_losses=st["enc_losses"],
        lm_losses=st["lm_losses"],
        provenance=st["provenance"],
    )


def main(argv=None) -> int:
    from lib.common import set_threads

    from . import SMOKE
    from .experiment import build_backbone

    set_threads(1)
    t0 = time.perf_counter()
    bb = build_backbone(SMOKE)
    wall = time.perf_counter() - t0
    save_backbone(bb, SMOKE, wall_s=wall)
    sys.stderr.write(f"itformer backbone: {wall:.0f} s -> {PATH}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
