"""The chapter's "foundation model": a small ViT pretrained on real patches by a
pretext task, and the autoencoder that serves as the learned generator.

No CLIP weights ship offline, so the ViT is pretrained here on the top band of the
real images (:mod:`.data`) to tell, from a 16×16 patch rotated by a multiple of 90°,
which of the 20 images it came from and by how much it was rotated (80 classes). The
pair is trained once by ``python -m lib.effort pretrain`` and stored in
``results/effort_foundation.pt`` (weights, the settings, the command and its
provenance); the chapter loads that file.
"""

from __future__ import annotations

import dataclasses
import os
import pathlib
import time

import torch
import torch.nn.functional as F

from lib.common import check_instance, check_int, check_positive, make_generator

from .data import real_images, sample_patches, train_ae
from .model import ViT

FOUNDATION_FILE = (
    pathlib.Path(__file__).resolve().parents[2] / "results" / "effort_foundation.pt"
)
COMMAND = "python -m lib.effort pretrain"


@dataclasses.dataclass(frozen=True)
class PretrainConfig:
    seed: int = 0
    n_patches: int = 20000
    steps: int = 2000
    batch: int = 128
    lr: float = 2e-3
    dim: int = 32
    depth: int = 2
    heads: int = 2
    ae_steps: int = 800

    def __post_init__(self):
        for name in ("seed",):
            check_int(name, getattr(self, name), 0)
        for name in (
            "n_patches",
            "steps",
            "batch",
            "dim",
            "depth",
            "heads",
            "ae_steps",
        ):
            check_int(name, getattr(self, name), 1)
        check_positive("lr", self.lr)


PRETRAIN = PretrainConfig()


def rotate(x: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
    """Rotate each patch of x (B, 1, H, W) by k·90° (k: (B,) ints in 0..3)."""
    out = x.clone()
    for r in range(1, 4):
        m = k == r
        out[m] = torch.rot90(x[m], r, dims=(2, 3))
    return out


def pretext_batch(x, src, g):
    """A batch of the pretext task: rotated patches and labels 4·image + rotation."""
    k = torch.randint(4, (len(x),), generator=g)
    return rotate(x, k), 4 * src + k


def pretrain(cfg: PretrainConfig = PRETRAIN, device="cpu") -> dict:
    """Pretrain the ViT and the autoencoder; return their state dicts and statistics
    (pretext accuracy on held-out patches of the same band, the AE's error)."""
    check_instance("cfg", cfg, PretrainConfig, "a lib.effort.PretrainConfig")
    g = make_generator(cfg.seed)
    n_img = len(real_images())
    x, src = sample_patches(cfg.n_patches + 2000, "pretrain", g)
    xv, sv = x[-2000:], src[-2000:]
    x, src = x[:-2000].to(device), src[:-2000].to(device)
    torch.manual_seed(cfg.seed)
    vit = ViT(dim=cfg.dim, depth=cfg.depth, heads=cfg.heads).to(device)
    head = torch.nn.Linear(cfg.dim, 4 * n_img).to(device)
    params = list(vit.parameters()) + list(head.parameters())
    opt = torch.optim.AdamW(params, lr=cfg.lr, weight_decay=0.05)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, cfg.lr, total_steps=cfg.steps)
    t0 = time.perf_counter()
    for _ in range(cfg.steps):
        idx = torch.randint(len(x), (cfg.batch,), generator=g).to(device)
        xb, yb = pretext_batch(x[idx].cpu(), src[idx].cpu(), g)
        loss = F.cross_entropy(head(vit.features(xb.to(device))), yb.to(device))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sched.step()
    vit.eval()
    with torch.no_grad():
        xb, yb = pretext_batch(xv, sv, g)
        acc = (head(vit.features(xb.to(device))).argmax(1).cpu() == yb).float().mean()
    ae = train_ae(x, cfg.ae_steps, g)
    with torch.no_grad():
        ae_mse = F.mse_loss(ae(xv.to(device)), xv.to(device))
    return {
        "vit": {k: v.cpu() for k, v in vit.state_dict().items()},
        "ae": {k: v.cpu() for k, v in ae.state_dict().items()},
        "arch": vit.arch,
        "config": dataclasses.asdict(cfg),
        "pretext_accuracy": float(acc),
        "pretext_chance": 1 / (4 * n_img),
        "ae_mse": float(ae_mse),
        "train_seconds": time.perf_counter() - t0,
    }


def save_foundation(state: dict, path=FOUNDATION_FILE, provenance: dict | None = None):
    """Write the pretrained pair with its command and provenance."""
    import json

    if not isinstance(state, dict) or any(
        k not in state for k in ("vit", "ae", "arch")
    ):
        raise TypeError(
            f"state: expected the dict of pretrain, got {type(state).__name__}"
        )
    check_instance("path", path, (str, os.PathLike), "a path")
    if provenance is not None:
        check_instance("provenance", provenance, dict, "a dict or None")

    prov = json.loads(json.dumps(provenance or {}, default=str))  # plain types only
    state = dict(state, command=COMMAND, provenance=prov)
    path = pathlib.Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save(state, path)
    return path


def load_foundation(path=FOUNDATION_FILE) -> dict:
    """The stored pretrained pair: ``{"vit": ViT, "ae": PatchAE, ...statistics}``."""
    from .data import PatchAE

    check_instance("path", path, (str, os.PathLike), "a path")
    path = pathlib.Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"path: no foundation model at {path}; run `{COMMAND}`")
    state = torch.load(path, map_location="cpu", weights_only=True)
    vit = ViT(**state["arch"])
    vit.load_state_dict(state["vit"])
    ae = PatchAE()
    ae.load_state_dict(state["ae"])
    return dict(state, vit=vit.eval(), ae=ae.eval())
