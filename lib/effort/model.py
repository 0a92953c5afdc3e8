"""The small vision transformer ("foundation model"), its pretext pretraining, and
the ways of adapting its attention projections: Effort's SVD residual, the
principal-subspace control, LoRA, full fine-tuning and the linear probe."""

from __future__ import annotations

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

from lib.common import (
    check_choice,
    check_generator,
    check_instance,
    check_int,
    check_positive,
    check_tensor,
)

PROJ = ("q", "k", "v", "o")  # the attention projections Effort decomposes


class Attention(nn.Module):
    """Multi-head self-attention with separate q, k, v, o projections (as in CLIP's
    ``self_attn``, whose four ``nn.Linear`` the paper decomposes)."""

    def __init__(self, dim: int, heads: int):
        super().__init__()
        self.heads = heads
        self.q, self.k, self.v, self.o = (nn.Linear(dim, dim) for _ in PROJ)

    def forward(self, x):  # x (B, T, D)
        b, t, d = x.shape

        def split(z):
            return z.view(b, t, self.heads, d // self.heads).transpose(1, 2)

        q, k, v = split(self.q(x)), split(self.k(x)), split(self.v(x))  # (B, H, T, d)
        y = F.scaled_dot_product_attention(q, k, v)
        return self.o(y.transpose(1, 2).reshape(b, t, d))


class Block(nn.Module):
    def __init__(self, dim: int, heads: int, mlp: int = 2):
        super().__init__()
        self.n1, self.n2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.attn = Attention(dim, heads)
        self.mlp = nn.Sequential(
            nn.Linear(dim, mlp * dim), nn.GELU(), nn.Linear(mlp * dim, dim)
        )

    def forward(self, x):
        x = x + self.attn(self.n1(x))
        return x + self.mlp(self.n2(x))


class ViT(nn.Module):
    """A ViT on 1×``img``×``img`` images with ``patch``×``patch`` tokens and a class
    token; :meth:`features` returns the normalised class token (B, dim)."""

    def __init__(
        self, img: int = 16, patch: int = 4, dim: int = 48, depth: int = 3,
        heads: int = 3,
    ):  # fmt: skip
        super().__init__()
        for name, v in (("img", img), ("patch", patch), ("dim", dim), ("depth", depth),
                        ("heads", heads)):  # fmt: skip
            check_int(name, v, 1)
        if img % patch or dim % heads:
            raise ValueError(
                f"img, patch, dim, heads: expected patch | img and heads | dim, got "
                f"img={img}, patch={patch}, dim={dim}, heads={heads}"
            )
        self.arch = dict(img=img, patch=patch, dim=dim, depth=depth, heads=heads)
        self.embed = nn.Conv2d(1, dim, patch, patch)
        self.cls = nn.Parameter(torch.zeros(1, 1, dim))
        self.pos = nn.Parameter(0.02 * torch.randn(1, (img // patch) ** 2 + 1, dim))
        self.blocks = nn.ModuleList(Block(dim, heads) for _ in range(depth))
        self.norm = nn.LayerNorm(dim)

    def features(self, x):  # x (B, 1, H, W) in [0, 1]
        z = self.embed(x - 0.5).flatten(2).transpose(1, 2)  # (B, T, D)
        z = torch.cat([self.cls.expand(len(z), -1, -1), z], 1) + self.pos
        for blk in self.blocks:
            z = blk(z)
        return self.norm(z[:, 0])  # (B, D)


class Detector(nn.Module):
    """Backbone + a linear head on the class token (the paper's ``Linear(1024, 2)``)."""

    def __init__(self, backbone: ViT, classes: int = 2):
        super().__init__()
        check_instance("backbone", backbone, ViT, "a lib.effort.ViT")
        check_int("classes", classes, 2)
        self.backbone = backbone
        self.head = nn.Linear(backbone.arch["dim"], classes)

    def forward(self, x):
        return self.head(self.backbone.features(x))


# ------------------------------------------------------------------- adapters


def _check_linear(linear):
    check_instance("linear", linear, nn.Linear, "a torch.nn.Linear")
    if linear.bias is None:
        raise ValueError("linear: expected an nn.Linear with a bias, got bias=None")


class SVDResidualLinear(nn.Module):
    """A linear layer split by SVD, W = U Σ Vᵀ, into a frozen part and a trainable
    part of ``n_train`` singular triplets.

    ``which="last"`` (Effort): the top ``r = min(m, n) − n_train`` triplets are frozen
    in ``weight_main`` and the last ``n_train`` are the parameters ``U_res``,
    ``S_res``, ``V_res``; ``"first"``: the principal-subspace control (the top
    ``n_train`` trainable, the rest frozen); ``"middle"``: ``n_train`` triplets from the
    middle of the spectrum. The bias stays frozen.
    """

    def __init__(self, linear: nn.Linear, n_train: int = 1, which: str = "last"):
        super().__init__()
        _check_linear(linear)
        check_choice("which", which, ("last", "first", "middle"))
        w = linear.weight.detach()
        rank = min(w.shape)
        n_train = check_int("n_train", n_train, 1)
        if n_train > rank:
            raise ValueError(f"n_train: expected at most {rank}, got {n_train}")
        u, s, vh = torch.linalg.svd(w.double(), full_matrices=False)  # eq. (1)
        start = {"last": rank - n_train, "first": 0, "middle": (rank - n_train) // 2}
        idx = torch.arange(start[which], start[which] + n_train)
        keep = torch.ones(rank, dtype=torch.bool)
        keep[idx] = False
        main = (u[:, keep] * s[keep]) @ vh[keep]  # eq. (2): frozen W_main
        self.register_buffer("weight_main", main.to(w.dtype))
        self.register_buffer("weight_orig", w.clone())
        self.register_buffer("U_main", u[:, keep].to(w.dtype))
        self.register_buffer("V_main", vh[keep].to(w.dtype))
        self.U_res = nn.Parameter(u[:, idx].to(w.dtype))  # (m, n_train)
        self.S_res = nn.Parameter(s[idx].to(w.dtype))  # (n_train,)
        self.V_res = nn.Parameter(vh[idx].to(w.dtype))  # (n_train, n)
        self.register_buffer("bias", linear.bias.detach().clone())
        self.which = which

    @property
    def weight(self):
        residual = (self.U_res * self.S_res) @ self.V_res  # eq. (3): U_res Σ_res V_resᵀ
        return self.weight_main + residual

    def forward(self, x):
        return F.linear(x, self.weight, self.bias)

    def orth_loss(self):
        """½‖ÛÛᵀ − I‖_F + ½‖V̂V̂ᵀ − I‖_F over [U_main, U_res] and [V_main; V_res]."""
        u = torch.cat([self.U_main, self.U_res], 1)  # (m, r)
        v = torch.cat([self.V_main, self.V_res], 0)  # (r, n)
        eye_u = torch.eye(u.shape[1], dtype=u.dtype, device=u.device)
        eye_v = torch.eye(v.shape[0], dtype=v.dtype, device=v.device)
        return 0.5 * (
            torch.linalg.norm(u.T @ u - eye_u) + torch.linalg.norm(v @ v.T - eye_v)
        )  # eq. (4)

    def ksv_loss(self):
        """|‖W‖²_F − ‖W_orig‖²_F|: keep the singular values' total energy."""
        return (self.weight.square().sum() - self.weight_orig.square().sum()).abs()


class LoRALinear(nn.Module):
    """W + (α/r) B A with A (r, n) random, B (m, r) zero, W frozen (Hu et al.)."""

    def __init__(
        self, linear: nn.Linear, rank: int, generator: torch.Generator,
        alpha: float | None = None,
    ):  # fmt: skip
        super().__init__()
        _check_linear(linear)
        rank = check_int("rank", rank, 1)
        check_generator("generator", generator)
        if alpha is not None:
            check_positive("alpha", alpha)
        m, n = linear.weight.shape
        self.register_buffer("weight_frozen", linear.weight.detach().clone())
        self.register_buffer("bias", linear.bias.detach().clone())
        a = torch.empty(rank, n).uniform_(-1, 1, generator=generator) / math.sqrt(n)
        self.A = nn.Parameter(a.to(linear.weight))
        self.B = nn.Parameter(torch.zeros(m, rank).to(linear.weight))
        self.scale = (rank if alpha is None else alpha) / rank

    @property
    def weight(self):
        return self.weight_frozen + self.scale * self.B @ self.A

    def forward(self, x):
        return F.linear(x, self.weight, self.bias)


ARMS = (
    "probe", "full", "lora1", "lora4", "effort", "effort_reg", "principal", "middle",
)  # fmt: skip


def adapt(
    backbone: ViT, arm: str, n_train: int = 1, generator: torch.Generator | None = None
) -> ViT:
    """Prepare a copy of ``backbone`` for training arm ``arm`` (see :data:`ARMS`): swap
    the attention projections and set ``requires_grad`` (the head is always
    trained)."""
    import copy

    check_instance("backbone", backbone, ViT, "a lib.effort.ViT")
    check_choice("arm", arm, ARMS)
    check_int("n_train", n_train, 1)
    check_generator("generator", generator)
    net = copy.deepcopy(backbone)
    net.requires_grad_(arm == "full")
    if arm in ("probe", "full"):
        return net
    for blk in net.blocks:
        for name in PROJ:
            lin = getattr(blk.attn, name)
            if arm.startswith("lora"):
                new = LoRALinear(lin, int(arm[4:]), generator)
            else:
                which = {"principal": "first", "middle": "middle"}.get(arm, "last")
                new = SVDResidualLinear(lin, n_train, which)
            setattr(blk.attn, name, new)
    return net


def adapted_layers(net: nn.Module) -> list:
    """The :class:`SVDResidualLinear` layers of a network (empty for other arms)."""
    check_instance("net", net, nn.Module, "a torch.nn.Module")
    return [m for m in net.modules() if isinstance(m, SVDResidualLinear)]


def trainable_parameters(net: nn.Module) -> int:
    """The number of parameters with ``requires_grad``."""
    check_instance("net", net, nn.Module, "a torch.nn.Module")
    return sum(p.numel() for p in net.parameters() if p.requires_grad)


def effort_parameter_count(dim: int, depth: int, n_train: int = 1) -> int:
    """Effort's trainable backbone parameters: depth × 4 projections × n_train(2·dim+1)
    (ViT-L/14: 24 × 4 × 2049 = 196 704, the paper's "0.19M")."""
    for name, v in (("dim", dim), ("depth", depth), ("n_train", n_train)):
        check_int(name, v, 1)
    return depth * len(PROJ) * n_train * (2 * dim + 1)


def attention_weights(net: nn.Module) -> dict:
    """``{"b.q": W, ...}``: the effective weight of every attention projection of a
    :class:`ViT` (adapted or not)."""
    check_instance("net", net, ViT, "a lib.effort.ViT")
    out = {}
    for i, blk in enumerate(net.blocks):
        for name in PROJ:
            out[f"{i}.{name}"] = getattr(blk.attn, name).weight.detach()
    return out


def principal_angles(a: torch.Tensor, b: torch.Tensor, k: int) -> torch.Tensor:
    """Principal angles (radians, ascending) between the top-``k`` left singular
    subspaces of ``a`` and ``b``."""
    check_tensor("a", a, ndim=2, floating=True, nonempty=True, finite=True)
    check_tensor("b", b, shape=tuple(a.shape), floating=True, finite=True)
    k = check_int("k", k, 1)
    if k > min(a.shape):
        raise ValueError(f"k: expected at most {min(a.shape)}, got {k}")
    ua = torch.linalg.svd(a.double(), full_matrices=False)[0][:, :k]
    ub = torch.linalg.svd(b.double(), full_matrices=False)[0][:, :k]
    cos = torch.linalg.svdvals(ua.T @ ub).clamp(-1, 1)
    return torch.arccos(cos).float()  # cosines descend, so angles ascend


def effective_rank(features: torch.Tensor) -> float:
    """exp(entropy) of the normalised eigenvalues of the features' covariance
    (Roy & Vetterli's effective rank; equals d for isotropic features)."""
    check_tensor(
        "features", features, ndim=2, floating=True, nonempty=True, finite=True
    )
    if len(features) < 2:
        raise ValueError(f"features: expected at least 2 rows, got {len(features)}")
    z = features.double() - features.double().mean(0)
    lam = torch.linalg.svdvals(z).square()
    p = lam / lam.sum()
    p = p[p > 0]
    return float(torch.exp(-(p * p.log()).sum()))


def explained_variance(features: torch.Tensor) -> torch.Tensor:
    """The share of variance of each principal component, descending (d,)."""
    check_tensor(
        "features", features, ndim=2, floating=True, nonempty=True, finite=True
    )
    z = features.double() - features.double().mean(0)
    lam = torch.linalg.svdvals(z).square()
    return (lam / lam.sum()).float()
