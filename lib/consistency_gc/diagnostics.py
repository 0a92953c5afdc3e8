"""The paper's two diagnostics of a coupling, per noise level σ, and the toy's error
metrics.

For a flow whose samples are x_σ = x_end + σ z (IC: x_end = x*; GC: x_end = x̂ = f_θ⁻(x*
+ σ z, σ)):

- transport cost  C(σ) = E‖x_end − z‖²  (noise–data cost)
- endpoint error  V(σ) = E‖x_end − D(x_end + σ z, σ)‖² = σ² E‖v̂ − v‖²
    (CT–CD discrepancy)

where v̂ = (x_σ − x_end)/σ is the single-sample velocity consistency training uses and v
= (x_σ − D(x_σ, σ))/σ the exact PF-ODE velocity that distillation uses. The theorem says
CT equals CD plus a regulariser driven by E‖v̂ − v‖²; GC is built to shrink it.
"""

from __future__ import annotations

import torch

from lib.common import check_positive, check_tensor


@torch.no_grad()
def flow_diagnostics(
    x0: torch.Tensor,
    z: torch.Tensor,
    sigma: float,
    denoiser,
    generator_fn=None,
    generator_z: torch.Tensor | None = None,
) -> dict:
    """C(σ) and V(σ) per member for IC (``generator_fn=None``) or GC; x0, z (M, N, d) ->
    dict of (M,).

    ``generator_z`` (M, N, d), with ``generator_fn``, builds x̂ from x* + σ z' with an
    independent noise z' while the flow still uses z: the coupling of x̂ and z removed
    (the negative control of the transport and discrepancy claims)."""
    check_tensor("x0", x0, ndim=3, floating=True, nonempty=True, finite=True)
    check_tensor("z", z, shape=tuple(x0.shape), floating=True, finite=True)
    check_positive("sigma", sigma)
    if not callable(denoiser):
        raise TypeError(
            f"denoiser: expected a callable D(x, σ), got {type(denoiser).__name__}"
        )
    if generator_fn is not None and not callable(generator_fn):
        raise TypeError(
            f"generator_fn: expected a callable f(x, σ) or None, got "
            f"{type(generator_fn).__name__}"
        )
    if generator_z is not None:
        if generator_fn is None:
            raise ValueError("generator_z: expected None without generator_fn")
        check_tensor(
            "generator_z",
            generator_z,
            shape=tuple(x0.shape),
            floating=True,
            finite=True,
        )
    sig = torch.full(x0.shape[:2], float(sigma), device=x0.device)  # (M, N)
    z_gen = z if generator_z is None else generator_z
    x_end = (
        x0 if generator_fn is None else generator_fn(x0 + sigma * z_gen, sig)
    )  # x* or x̂   (M, N, d)
    cost = (x_end - z).pow(2).sum(-1).mean(-1)  # E‖x_end − z‖²   (M,)
    err = (
        (x_end - denoiser(x_end + sigma * z, sig)).pow(2).sum(-1).mean(-1)
    )  # E‖x_end − D‖²   (M,)
    return {"transport": cost, "endpoint_error": err}


def map_error(samples: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """Mean ‖f_θ(σ_max z) − Φ(σ_max z)‖ over the N test points; samples (M, N, d),
    target (N, d) -> (M,)."""
    check_tensor("samples", samples, ndim=3, floating=True, nonempty=True)
    check_tensor(
        "target",
        target,
        shape=(samples.shape[1], samples.shape[2]),
        floating=True,
        finite=True,
    )
    return (samples - target.to(samples)).norm(dim=-1).mean(-1)
