"""The ergodic generative flow (EGF) and Moser Flow on the torus or the sphere, the
KL-weakFM loss, the flow-matching loss, densities on a grid (KL by quadrature) and
sampling by running the chain. The models read the space from their maps (an EGF) or
``space`` (Moser Flow): its points, the network's features and f_init."""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from lib.common import (
    check_choice,
    check_generator,
    check_int,
    check_positive,
    check_tensor,
)

from .sphere import UNIFORM_DENSITY, SphereMaps, check_sphere_points
from .sphere import surface_divergence
from .torus import TorusMaps, _check_points, grid_points, periodic_features

#: the state spaces (see :class:`MoserFlow`)
SPACES = ("torus", "sphere")


def mlp(n_in: int, n_out: int, width: int, depth: int) -> nn.Sequential:
    """``depth`` hidden layers of ``width`` units with SiLU (smooth: Moser Flow
    differentiates it twice)."""
    width, depth = check_int("width", width, 1), check_int("depth", depth, 1)
    layers, d = [], n_in
    for _ in range(depth):
        layers += [nn.Linear(d, width), nn.SiLU()]
        d = width
    return nn.Sequential(*layers, nn.Linear(d, n_out))


class EGF(nn.Module):
    """An ergodic generative flow with the uniform initial flow f_init of its space
    (1 on T², 1/(4π) on S²).

    One MLP on the space's features (periodic features on T², the coordinates on S²)
    gives the outflow f→(s) = softplus(·) and the policy α(s) = softmax(·) over the p
    maps."""

    def __init__(self, maps, width: int = 32, depth: int = 3):
        super().__init__()
        if not isinstance(maps, (TorusMaps, SphereMaps)):
            raise TypeError(
                f"maps: expected a TorusMaps or a SphereMaps, got {type(maps).__name__}"
            )
        self.maps = maps
        self.net = mlp(maps.n_features, maps.p + 1, width, depth).double()

    @property
    def dim(self) -> int:
        return self.maps.dim

    def outflow_policy(self, x: torch.Tensor):
        """f→(x) (N,) and α(x) (N, p)."""
        out = self.net(self.maps.features(x))  # (N, p + 1)
        return F.softplus(out[:, 0]), torch.softmax(out[:, 1:], -1)

    def star_inflow(self, x: torch.Tensor) -> torch.Tensor:
        """f*←(s) = Σ_i (α_i f→)(Φ_i⁻¹ s) |det J Φ_i⁻¹(s)|, (N,)."""
        p, n = self.maps.p, x.shape[0]
        y = self.maps.to(x.device).inverse(x)  # (p, N, d)
        f, a = self.outflow_policy(y.reshape(p * n, self.maps.dim))
        a = a.reshape(p, n, p)
        own = a[torch.arange(p), :, torch.arange(p)]  # (p, N): α_i at Φ_i⁻¹ s
        jac = self.maps.inv_jacobian.to(x)[:, None]  # (p, 1)
        return (own * f.reshape(p, n) * jac).sum(0)  # eq. (3): closed-form inflow

    def terminal(self, x: torch.Tensor) -> torch.Tensor:
        """The virtual terminal flow f̂ = f_init + f*← − f→ (N,); its integral is 1."""
        f, _ = self.outflow_policy(x)
        # eq. (4): flow matching solved for f_term
        return self.maps.f_init + self.star_inflow(x) - f


class MoserFlow(nn.Module):
    """Moser Flow: the density μ − div u of a vector field u, with μ the uniform density
    of the space and the divergence by automatic differentiation.

    ``space="torus"``: u is an MLP on periodic features (periodic on T²);
    ``space="sphere"``: u is an MLP on the coordinates projected on the tangent plane,
    and div is the surface divergence (:func:`surface_divergence`)."""

    def __init__(self, width: int = 32, depth: int = 3, space: str = "torus"):
        super().__init__()
        self.space = check_choice("space", space, SPACES)
        # T²: 4 periodic features -> u in R²; S²: the coordinates -> v in R³
        n_in, n_out = (4, 2) if self.space == "torus" else (3, 3)
        self.net = mlp(n_in, n_out, width, depth).double()

    @property
    def dim(self) -> int:
        return 2 if self.space == "torus" else 3

    def tangent_field(self, y: torch.Tensor) -> torch.Tensor:
        """On S²: u(y) = P v(ŷ), the MLP's output at ŷ = y/|y| minus its radial part,
        (N, 3) (tangent to the sphere through y)."""
        yn = y / y.norm(dim=1, keepdim=True)  # (N, 3)
        v = self.net(yn)
        return v - (v * yn).sum(1, keepdim=True) * yn

    def terminal(self, x: torch.Tensor) -> torch.Tensor:
        """μ − div u with μ the uniform density, (N,); its integral is 1."""
        if self.space == "sphere":
            # eq. (6) on S²: μ = 1/(4π), surface divergence of a tangent field
            return UNIFORM_DENSITY - surface_divergence(self.tangent_field, x)
        with torch.enable_grad():
            x = x.detach().requires_grad_(True)
            u = self.net(periodic_features(x))  # (N, 2)
            div = sum(
                torch.autograd.grad(u[:, i].sum(), x, create_graph=True)[0][:, i]
                for i in range(2)
            )
        return 1.0 - div  # eq. (6): Moser's density


def _check_model(model):
    if not isinstance(model, (EGF, MoserFlow)):
        raise TypeError(
            f"model: expected an EGF or a MoserFlow, got {type(model).__name__}"
        )


def _check_model_points(model, name: str, x) -> torch.Tensor:
    """``x`` as points of the model's space: (N, 2) on T², unit vectors (N, 3) on S²."""
    return _check_points(name, x) if model.dim == 2 else check_sphere_points(name, x)


def kl_weak_fm_loss(
    model, data: torch.Tensor, probe: torch.Tensor, b: float = 10.0, eps: float = 1e-3
) -> torch.Tensor:
    """KL-weakFM: −E_data log max(f̂, ε) + b · E_probe (ε − f̂)⁺.

    The first term is the cross-entropy of the data under the virtual terminal flow, the
    second the weak flow-matching control on its negative part; for a MoserFlow the same
    expression is Moser Flow's loss."""
    _check_model(model)
    data = _check_model_points(model, "data", data)
    probe = _check_model_points(model, "probe", probe)
    b, eps = check_positive("b", b), check_positive("eps", eps)
    f = model.terminal(torch.cat([data, probe]))
    fd, fp = f[: data.shape[0]], f[data.shape[0] :]
    nll = -torch.log(fd.clamp_min(eps)).mean()
    return nll + b * F.relu(eps - fp).mean()  # eq. (5)


def fm_loss(egf: EGF, x: torch.Tensor, reward: torch.Tensor, q: float = 2.0):
    """The RL flow-matching loss E |f_init + f*← − f→ − f_term|^q with f_term = reward
    at the probe points ``x`` (N, 2)."""
    if not isinstance(egf, EGF):
        raise TypeError(f"egf: expected an EGF, got {type(egf).__name__}")
    x = _check_model_points(egf, "x", x)
    r = check_tensor("reward", reward, shape=(x.shape[0],), floating=True, finite=True)
    q = check_positive("q", q)
    return (egf.terminal(x) - r).abs().pow(q).mean()  # eq. (2)


@torch.no_grad()
def density_on_grid(model, n: int = 128, device="cpu"):
    """The model's normalised density q = f̂⁺ / ∫f̂⁺ on the n×n grid, (n², ) with
    the grid (n², 2), and the negative mass ∫(f̂)⁻ (grid quadrature)."""
    _check_model(model)
    if model.dim != 2:
        raise ValueError("model: expected a model of the torus (the grid is on T²)")
    x = grid_points(n, device=device)
    f = _terminal_chunks(model, x)
    pos, neg = f.clamp_min(0), (-f).clamp_min(0)
    return pos / pos.mean(), x, float(neg.mean())


def _terminal_chunks(model, x, chunk: int = 8192) -> torch.Tensor:
    out = []
    for lo in range(0, x.shape[0], chunk):
        out.append(model.terminal(x[lo : lo + chunk]).detach())
    return torch.cat(out)


def kl_to_target(q: torch.Tensor, p: torch.Tensor, floor: float = 1e-4) -> float:
    """KL(p ‖ q) by grid quadrature for densities on the same grid; q is floored at
    ``floor`` (cells where the target is 0 contribute 0)."""
    q = check_tensor("q", q, ndim=1, floating=True, finite=True, nonempty=True)
    p = check_tensor("p", p, shape=(q.shape[0],), floating=True, finite=True)
    floor = check_positive("floor", floor)
    if (p < 0).any() or (q < 0).any():
        raise ValueError("p, q: expected non-negative densities")
    m = p > 0
    return float((p[m] * (p[m].log() - q[m].clamp_min(floor).log())).sum() / len(p))


@torch.no_grad()
def sample_chain(
    egf: EGF,
    n: int,
    max_steps: int = 100,
    generator=None,
    device="cpu",
    policy: str = "learned",
) -> tuple:
    """Run the EGF's Markov chain for ``n`` walkers: start uniform (f_init); at s,
    stop with probability f̂⁺/(f̂⁺ + f→), else jump to Φ_i(s) with probability α_i(s).

    ``policy="uniform"`` draws the map uniformly instead of from α (a broken sampler,
    the negative control of the sampling check). Returns the end points (n, 2), the
    number of jumps (n,) and whether each walker stopped before ``max_steps``; the end
    points are (n, 2) on T², (n, 3) on S²."""
    if not isinstance(egf, EGF):
        raise TypeError(f"egf: expected an EGF, got {type(egf).__name__}")
    n, max_steps = check_int("n", n, 1), check_int("max_steps", max_steps, 1)
    generator = check_generator("generator", generator)
    policy = check_choice("policy", policy, ("learned", "uniform"))
    x = egf.maps.uniform(n, generator).to(device)  # s₀ ~ f_init
    u = torch.rand(max_steps, n, dtype=torch.float64, generator=generator).to(device)
    v = torch.rand(max_steps, n, dtype=torch.float64, generator=generator).to(device)
    steps = torch.zeros(n, dtype=torch.long, device=device)
    alive = torch.ones(n, dtype=torch.bool, device=device)
    maps = egf.maps.to(device)
    for t in range(max_steps):
        f, a = egf.outflow_policy(x)
        term = (maps.f_init + egf.star_inflow(x) - f).clamp_min(0)
        stop = u[t] * (term + f) < term  # P(stop) = f̂⁺ / (f̂⁺ + f→)
        alive = alive & ~stop
        if policy == "uniform":
            a = torch.full_like(a, 1.0 / maps.p)
        i = (a.cumsum(-1) < v[t, :, None]).sum(-1).clamp_max(maps.p - 1)  # i ~ α
        nxt = maps.forward(x)[i, torch.arange(n, device=device)]  # (n, d)
        x = torch.where(alive[:, None], nxt, x)
        steps = steps + alive.long()
        if not bool(alive.any()):  # every walker has stopped: nothing changes after
            break
    return x, steps, ~alive
