"""The chapter's configuration (presets in :mod:`lib.kgmark`)."""

from __future__ import annotations

import dataclasses

from lib.common import check_choice, check_int, check_positive, check_probability

from .data import DATASETS


@dataclasses.dataclass(frozen=True)
class Config:
    """One preset of the experiment (see :func:`lib.kgmark.experiment.run_seed`)."""

    seed: int = 0
    dataset: str = "umls"
    dim: int = 64  # node embedding size = h·w
    bases: int = 8  # R-GCN basis matrices
    gae_steps: int = 100
    gae_lr: float = 0.01
    channels: int = 4  # C nodes per latent
    grid: tuple = (8, 8)  # (h, w): one node's embedding as an 8×8 image
    hidden: int = 256  # denoiser MLP width
    diff_steps: int = 1000
    diff_batch: int = 256
    diff_lr: float = 2e-3
    ddim_steps: int = 10
    fixed_point: int = 1  # inversion refinements per DDIM step
    clusters: int = 4  # k-means clusters of the alignment
    ring: tuple = (1.0, 1.5)  # Tree-Ring radii [r_in, r_out); sets the mask size
    mask_steps: tuple = (1, 2, 3)  # sampling steps the mask objective looks at
    mask_epochs: int = 50
    mask_lr: float = 0.02
    max_groups: int = 64  # positions of the non-redundant layout
    n_keys: int = 24  # owner keys per seed (positives and negatives)
    n_lp: int = 4  # watermarked KGs whose link prediction is measured
    noise: float = 0.1  # attack: Gaussian noise, × the embeddings' std
    delete: float = 0.2  # attack: share of nodes deleted
    insert: float = 0.1  # attack: share of nodes inserted (with a shuffle)
    claim_seeds: tuple = (10, 11, 12)

    def __post_init__(self):
        check_int("seed", self.seed, 0)
        check_choice("dataset", self.dataset, DATASETS)
        for name in ("dim", "bases", "gae_steps", "channels", "hidden", "diff_steps",
                     "diff_batch", "ddim_steps", "clusters", "mask_epochs",
                     "max_groups", "n_keys"):  # fmt: skip
            check_int(name, getattr(self, name), 1)
        check_int("n_keys", self.n_keys, 2)
        check_int("fixed_point", self.fixed_point, 0)
        check_int("n_lp", self.n_lp, 1)
        for name in ("gae_lr", "diff_lr", "mask_lr", "noise"):
            check_positive(name, getattr(self, name))
        for name in ("delete", "insert"):
            check_probability(name, getattr(self, name))
        if len(self.grid) != 2 or self.grid[0] * self.grid[1] != self.dim:
            raise ValueError(
                f"grid: expected (h, w) with h·w = dim = {self.dim}, got {self.grid}"
            )
        if not 0 <= self.ring[0] < self.ring[1]:
            raise ValueError(f"ring: expected 0 <= r_in < r_out, got {self.ring}")
        if self.n_lp > self.n_keys:
            raise ValueError(
                f"n_lp: expected at most n_keys = {self.n_keys}, got {self.n_lp}"
            )
        if not self.mask_steps or any(
            not 0 <= t <= self.ddim_steps for t in self.mask_steps
        ):
            raise ValueError(
                f"mask_steps: expected steps in [0, {self.ddim_steps}], got "
                f"{self.mask_steps}"
            )
