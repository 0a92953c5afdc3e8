"""An ensemble of M small MLP consistency models trained side by side in one batched
pass.

Every layer holds weights of shape (M, in, out) and runs as one ``baddbmm``, so the
chapter trains CD, IC and GC at several μ and seeds as a single fully batched network
(members share nothing: Adam is element-wise and the loss is a sum over members, so each
member's gradient is its own). The raw network F is the authors' toy MLP: x →
Linear+GELU, concatenated with a sinusoidal embedding of c_noise, then MLP layers;
wrapped by EDM/iCT preconditioning (:func:`precondition`).
"""

from __future__ import annotations

import copy
import math

import torch
from torch import nn

from lib.common import check_int, check_positive, check_tensor

from .diffusion import precondition


class EnsembleLinear(nn.Module):
    """y[m] = x[m] W[m] + b[m] for m = 1..M; x (M, B, in) -> (M, B, out)."""

    def __init__(
        self, members: int, d_in: int, d_out: int, generators: list[torch.Generator]
    ):
        super().__init__()
        members, d_in = check_int("members", members, 1), check_int("d_in", d_in, 1)
        d_out = check_int("d_out", d_out, 1)
        if not isinstance(generators, (list, tuple)) or not all(
            isinstance(g, torch.Generator) for g in generators
        ):
            raise TypeError(
                f"generators: expected a list of torch.Generator, got "
                f"{type(generators).__name__}"
            )
        if len(generators) != members:
            raise ValueError(
                f"generators: expected {members} generators (one per member), got "
                f"{len(generators)}"
            )
        bound = 1.0 / math.sqrt(d_in)  # nn.Linear's default init range
        w = torch.stack(
            [(torch.rand(d_in, d_out, generator=g) * 2 - 1) * bound for g in generators]
        )
        b = torch.stack(
            [(torch.rand(1, d_out, generator=g) * 2 - 1) * bound for g in generators]
        )
        self.weight = nn.Parameter(w)  # (M, in, out)
        self.bias = nn.Parameter(b)  # (M, 1, out)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.baddbmm(self.bias, x, self.weight)  # (M, B, out)


def noise_embedding(
    c_noise: torch.Tensor,
    dim: int,
    max_positions: float = 10000.0,
    *,
    check: bool = True,
) -> torch.Tensor:
    """EDM's positional embedding [cos(c ω_j), sin(c ω_j)], ω_j =
    max_positions^(−j/(dim/2)); (..., dim).

    ``check=False`` skips reading the values of ``c_noise`` (NaN, inf): the network's
    forward."""
    check_tensor("c_noise", c_noise, floating=True, finite=check)
    dim = check_int("dim", dim, 2)
    if dim % 2:
        raise ValueError(f"dim: expected an even int (cos and sin halves), got {dim}")
    check_positive("max_positions", max_positions)
    half = dim // 2
    freqs = max_positions ** (
        -torch.arange(half, device=c_noise.device, dtype=c_noise.dtype) / half
    )
    angle = c_noise.unsqueeze(-1) * freqs  # (..., dim/2)
    return torch.cat([angle.cos(), angle.sin()], dim=-1)  # (..., dim)


class EnsembleMLP(nn.Module):
    """The raw network F(x_in, c_noise) of M members; x (M, B, d), c_noise (M, B) -> (M,
    B, d)."""

    def __init__(
        self,
        members: int,
        data_dim: int,
        hidden: int,
        depth: int = 2,
        seeds: list[int] | None = None,
    ):
        super().__init__()
        members, data_dim = (
            check_int("members", members, 1),
            check_int("data_dim", data_dim, 1),
        )
        hidden, depth = check_int("hidden", hidden, 2), check_int("depth", depth, 1)
        if hidden % 2:
            raise ValueError(
                f"hidden: expected an even int (the noise embedding has cos and sin "
                f"halves), got {hidden}"
            )
        if seeds is not None and (
            isinstance(seeds, (str, bytes)) or not hasattr(seeds, "__len__")
        ):
            raise TypeError(
                f"seeds: expected a list of ints (one per member), got "
                f"{type(seeds).__name__}"
            )
        seeds = list(range(members)) if seeds is None else list(seeds)
        for i, sd in enumerate(seeds):
            check_int(f"seeds[{i}]", sd, 0)
        if len(seeds) != members:
            raise ValueError(
                f"seeds: expected {members} seeds (one per member), got {len(seeds)}"
            )
        gens = [
            torch.Generator().manual_seed(int(s)) for s in seeds
        ]  # same seed -> same init
        self.hidden = hidden
        self.inp = EnsembleLinear(members, data_dim, hidden, gens)
        dims = [2 * hidden] + [hidden] * depth
        self.layers = nn.ModuleList(
            EnsembleLinear(members, a, b, gens) for a, b in zip(dims[:-1], dims[1:])
        )
        self.out = EnsembleLinear(members, hidden, data_dim, gens)

    def forward(self, x: torch.Tensor, c_noise: torch.Tensor) -> torch.Tensor:
        h = nn.functional.gelu(self.inp(x))  # (M, B, H)
        h = torch.cat(
            [h, noise_embedding(c_noise, self.hidden, check=False)], dim=-1
        )  # (M, B, 2H)
        for layer in self.layers:
            h = nn.functional.gelu(layer(h))  # (M, B, H)
        return self.out(h)  # (M, B, d)


class ConsistencyEnsemble(nn.Module):
    """f_θ(x, σ) = c_skip(σ) x + c_out(σ) F_θ(c_in(σ) x, log σ / 4) for M members at
    once.

    x (M, B, d), σ (M, B) -> (M, B, d); f_θ(x, σ_min) = x exactly (c_skip = 1, c_out = 0
    there).
    """

    def __init__(self, net: nn.Module, sigma_min: float, sigma_data: float = 0.5):
        super().__init__()
        if not isinstance(net, nn.Module):
            raise TypeError(
                f"net: expected the raw network F (a torch.nn.Module), got "
                f"{type(net).__name__}"
            )
        self.net = net
        self.sigma_min = check_positive("sigma_min", sigma_min)
        self.sigma_data = check_positive("sigma_data", sigma_data)

    def forward(self, x: torch.Tensor, sigma: torch.Tensor) -> torch.Tensor:
        return precondition(
            self.net, x, sigma, self.sigma_data, self.sigma_min, check=False
        )


def make_ema(model: nn.Module) -> nn.Module:
    """A frozen copy θ⁻ of ``model`` for the EMA (updated with
    :func:`.diffusion.ema_update`)."""
    if not isinstance(model, nn.Module):
        raise TypeError(
            f"model: expected a torch.nn.Module, got {type(model).__name__}"
        )
    ema = copy.deepcopy(model)
    ema.requires_grad_(False)
    return ema
