"""Noisy manifolds: points on M plus noise uniform in the normal ball of radius r (a
tube)."""

from __future__ import annotations

import math

import torch

from lib.common import check_generator, check_int, check_positive, check_tensor


def uniform_ball(
    n: int, m: int, generator: torch.Generator | None = None
) -> torch.Tensor:
    """n points uniform in the unit m-ball: a Gaussian direction times U^{1/m}. Shape
    (n, m)."""
    check_int("n", n, minimum=1)
    check_int("m", m, minimum=1)
    check_generator("generator", generator)
    g = torch.randn(n, m, generator=generator, dtype=torch.float64)  # (n, m)
    u = torch.rand(n, 1, generator=generator, dtype=torch.float64)  # (n, 1)
    return g / g.norm(dim=1, keepdim=True) * u ** (1.0 / m)


def noisy_circle(
    n: int,
    D: int,
    r: float,
    generator: torch.Generator | None = None,
    device="cpu",
    dtype=torch.float64,
    wobble: float = 0.0,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The unit circle in R^D plus noise uniform in its (D-1)-dim normal ball of radius
    r.

    ``wobble`` in [0, 1) makes the radius vary along the circle, r(theta) = r (1 +
    wobble cos theta) (same mean radius): the data are then no longer a tube of constant
    radius, the premise of the paper's threshold (a negative control).

    Returns ``(x, theta)``: points (n, D) and the angle of each point's foot on the
    circle (n,). Drawn on the CPU with ``generator``, then moved to ``device``.
    """
    n, D = check_int("n", n, minimum=1), check_int("D", D, minimum=2)
    r = float(r) if r == 0 else check_positive("r", r)
    check_generator("generator", generator)
    if (
        isinstance(wobble, bool)
        or not isinstance(wobble, (int, float))
        or not 0 <= wobble < 1
    ):
        raise ValueError(f"wobble: expected a number in [0, 1), got {wobble!r}")
    theta = (
        2 * math.pi * torch.rand(n, generator=generator, dtype=torch.float64)
    )  # (n,)
    radial = torch.stack([torch.cos(theta), torch.sin(theta)], 1)  # (n, 2), unit normal
    radius = r * (1.0 + wobble * torch.cos(theta))[:, None]  # (n, 1)
    u = radius * uniform_ball(n, D - 1, generator)  # (n, D-1)
    x = torch.zeros(n, D, dtype=torch.float64)
    x[:, :2] = radial * (1.0 + u[:, :1])  # foot + radial noise
    x[:, 2:] = u[:, 1:]  # the other normals
    return x.to(device, dtype), theta.to(device, dtype)


def noisy_sphere(
    n: int,
    D: int,
    r: float,
    generator: torch.Generator | None = None,
    device="cpu",
    dtype=torch.float64,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The unit sphere S^2 in R^D plus noise uniform in its (D-2)-dim normal ball of
    radius r.

    Returns ``(x, p)``: points (n, D) and their feet on S^2 (n, 3).
    """
    n, D = check_int("n", n, minimum=1), check_int("D", D, minimum=3)
    r = float(r) if r == 0 else check_positive("r", r)
    check_generator("generator", generator)
    p = torch.randn(n, 3, generator=generator, dtype=torch.float64)
    p = p / p.norm(dim=1, keepdim=True)  # (n, 3) on S^2
    u = r * uniform_ball(n, D - 2, generator)  # (n, D-2)
    x = torch.zeros(n, D, dtype=torch.float64)
    x[:, :3] = p * (1.0 + u[:, :1])
    x[:, 3:] = u[:, 1:]
    return x.to(device, dtype), p.to(device, dtype)


def rotate_image(image: torch.Tensor, theta: torch.Tensor) -> torch.Tensor:
    """A 28x28 image rotated by each angle in ``theta`` (n,) (bilinear), flattened: (n,
    784)."""
    import torch.nn.functional as F

    if not isinstance(image, torch.Tensor) or image.numel() != 784:
        raise ValueError(
            f"image: expected a tensor of 784 pixels (28x28), got "
            f"{getattr(image, 'shape', type(image).__name__)}"
        )
    check_tensor("image", image, floating=True, finite=True)
    check_tensor("theta", theta, ndim=1, floating=True, nonempty=True, finite=True)
    n = theta.shape[0]
    c, s = torch.cos(theta).float().cpu(), torch.sin(theta).float().cpu()
    z = torch.zeros_like(c)
    aff = torch.stack(
        [torch.stack([c, -s, z], 1), torch.stack([s, c, z], 1)], 1
    )  # (n, 2, 3)
    img = image.detach().cpu().float().reshape(1, 1, 28, 28).expand(n, 1, 28, 28)
    grid = F.affine_grid(aff, [n, 1, 28, 28], align_corners=False)  # (n, 28, 28, 2)
    return F.grid_sample(
        img, grid, mode="bilinear", padding_mode="zeros", align_corners=False
    ).reshape(n, 784)  # (n, 784)


def curve_length(image: torch.Tensor, n: int = 4000) -> float:
    """Length of the closed curve theta -> rotate(image, theta) in R^784 (polygonal, n
    steps)."""
    check_int("n", n, minimum=1)
    theta = torch.linspace(0, 2 * math.pi, n + 1, dtype=torch.float64)
    c = rotate_image(image, theta).double()  # (n + 1, 784)
    return float((c[1:] - c[:-1]).norm(dim=1).sum())


def rotated_digit(
    image: torch.Tensor,
    n: int,
    r: float,
    generator: torch.Generator | None = None,
    device="cpu",
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """One 28x28 image rotated through n random angles in [0, 2 pi), plus noise uniform
    in the 784-ball of radius r. Returns ``(x, theta, clean)``: (n, 784), (n,), (n,
    784)."""
    n = check_int("n", n, minimum=1)
    r = float(r) if r == 0 else check_positive("r", r)
    check_generator("generator", generator)
    check_tensor("image", image, floating=True, finite=True)
    theta = (
        2 * math.pi * torch.rand(n, generator=generator, dtype=torch.float64)
    )  # (n,)
    noise = r * uniform_ball(n, 784, generator).float()  # (n, 784)
    clean = rotate_image(image, theta)  # (n, 784)
    return (clean + noise).to(device), theta.to(device), clean.to(device)
