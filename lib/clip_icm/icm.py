"""The CLIP-ICM estimator and the two ways of predicting with it (zero-shot and a
linear probe)."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from lib.common import check_choice, check_int, check_nonnegative, check_positive
from lib.common import check_tensor


def _check_basis(name: str, basis, d: int) -> torch.Tensor:
    """A basis (d, k), k >= 1, of finite floats."""
    return check_tensor(
        name, basis, shape=(d, None), floating=True, nonempty=True, finite=True
    )


def icm_matrix(z: torch.Tensor, delta: torch.Tensor, lam: float) -> torch.Tensor:
    """M = ZᵀZ/n − λ ΔᵀΔ/m for embeddings Z (n, D) and intervention differences
    Δ = f(x) − f(x̃) (m, D); returns (D, D)."""
    check_tensor("z", z, ndim=2, floating=True, nonempty=True, finite=True)
    check_tensor(
        "delta", delta, shape=(None, z.shape[1]), floating=True, nonempty=True,
        finite=True,
    )  # fmt: skip
    lam = check_nonnegative("lam", lam)
    return z.T @ z / z.shape[0] - lam * delta.T @ delta / delta.shape[0]  # eq. (1)


def invariant_basis(
    z: torch.Tensor, delta: torch.Tensor, lam: float, k: int, order: str = "top"
) -> torch.Tensor:
    """A_inv (D, k): orthonormal eigenvectors of M with the k largest eigenvalues
    (``order="top"``, largest first) or the k smallest (``order="bottom"``: what
    ``torch.linalg.eigh(M)[1][:, :k]`` keeps, as the official code does)."""
    k = check_int("k", k, 1)
    order = check_choice("order", order, ("top", "bottom"))
    m = icm_matrix(z, delta, lam)  # validates z and delta
    if k > m.shape[0]:
        raise ValueError(
            f"k: expected at most the embedding dimension {m.shape[0]}, got {k}"
        )
    _, vec = torch.linalg.eigh(m)  # eigenvalues ascending
    return vec[:, -k:].flip(1) if order == "top" else vec[:, :k]  # eq. (1): A_inv


def zero_shot_logits(
    img: torch.Tensor, txt: torch.Tensor, basis: torch.Tensor | None = None
) -> torch.Tensor:
    """Class scores (N, C): f_I(x) A · (f_T(t_c)/‖f_T(t_c)‖) A, as the official code
    scores them (text normalised before the projection, images never; the argmax is
    unchanged by an image's norm). ``basis=None`` is raw CLIP (cosine ranking)."""
    check_tensor("img", img, ndim=2, floating=True, nonempty=True, finite=True)
    check_tensor(
        "txt", txt, shape=(None, img.shape[1]), floating=True, nonempty=True,
        finite=True,
    )  # fmt: skip
    if basis is not None:
        _check_basis("basis", basis, img.shape[1])
    txt = F.normalize(txt, dim=1)
    if basis is None:
        return F.normalize(img, dim=1) @ txt.T
    return (img @ basis) @ (txt @ basis).T  # eq. (2)


def fit_probe(
    z: torch.Tensor, y: torch.Tensor, C: float, max_iter: int = 1000
) -> tuple[torch.Tensor, torch.Tensor]:
    """The official code's linear probe: scikit-learn's multinomial
    ``LogisticRegression(C=C)`` (L-BFGS; objective C·Σᵢ CE(Wzᵢ + b, yᵢ) + ‖W‖²/2, the
    bias unpenalised), fitted in float64 on the CPU. Returns (W (classes, D), b
    (classes,)) on z's device and dtype; ``lib.clip_icm.reference.fit_probe_naive``
    is the same objective in torch."""
    from sklearn.linear_model import LogisticRegression

    check_tensor("z", z, ndim=2, floating=True, nonempty=True, finite=True)
    check_tensor("y", y, shape=(z.shape[0],), integer=True)
    C = check_positive("C", C)
    if int(y.min()) < 0:
        raise ValueError(f"y: expected class indices >= 0, got {int(y.min())}")
    n_classes = int(y.max()) + 1
    from threadpoolctl import threadpool_limits

    m = LogisticRegression(C=C, max_iter=check_int("max_iter", max_iter, 1))
    # one BLAS thread: the same arithmetic whatever OMP_NUM_THREADS says, and no
    # oversubscription (L-BFGS on a 64-d problem gains nothing from threads)
    with threadpool_limits(limits=1):
        m.fit(z.detach().cpu().double().numpy(), y.cpu().numpy())
    w = torch.zeros(n_classes, z.shape[1], dtype=torch.float64)
    b = torch.full((n_classes,), -torch.inf, dtype=torch.float64)
    coef, icpt = torch.as_tensor(m.coef_), torch.as_tensor(m.intercept_)
    if len(m.classes_) == 2:  # scikit-learn keeps one row: logits (0, coef·z + b)
        coef, icpt = (
            torch.cat([torch.zeros_like(coef), coef]),
            torch.cat([0 * icpt, icpt]),
        )
    w[m.classes_] = coef  # classes absent from y never win
    b[m.classes_] = icpt
    return w.to(z), b.to(z)


def probe_predict(z: torch.Tensor, probe: tuple) -> torch.Tensor:
    """Predicted classes (N,) of a probe from :func:`fit_probe`."""
    check_tensor("z", z, ndim=2, floating=True, nonempty=True, finite=True)
    if not isinstance(probe, (tuple, list)) or len(probe) != 2:
        raise TypeError(
            f"probe: expected fit_probe's (W, b), got {type(probe).__name__}"
        )
    w, b = probe
    check_tensor("probe", w, shape=(None, z.shape[1]), floating=True, nonempty=True)
    check_tensor("probe", b, shape=(w.shape[0],), floating=True)
    return (z @ w.T + b).argmax(1)


def accuracy(pred: torch.Tensor, y: torch.Tensor) -> float:
    """Share of correct predictions."""
    check_tensor("pred", pred, ndim=1, nonempty=True, integer=True)
    check_tensor("y", y, shape=tuple(pred.shape), integer=True)
    return float((pred == y).double().mean())
