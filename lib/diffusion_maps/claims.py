"""The paper's claims as rules that can fail, measured on several seeds with a negative
control each.

**Which setting the theorem covers.** The paper's threshold is a statement about the
Laplacian of the tube (its Neumann spectrum splits as mu_i(M) + nu_j / r^2). Diffusion
maps with alpha = 1 and the *untruncated* Gaussian kernel converge to that operator as n
-> infinity and eps -> 0. A kNN graph is a second approximation on top: it drops kernel
weights, and when eps is wide compared with the k-th neighbour's distance (high D) it
changes the operator. So the claims are asserted on the untruncated kernel
(``diffusion_map(..., k=None)``); the chapter reports the kNN counts and an n-sweep
beside them, to keep kernel effects apart from finite-n effects.

Each seed draws fresh circles (stream ``100 seed + j`` for the j-th data set, so every
seed and experiment has its own generator); one dense solve per data set.

How the settings were chosen: nothing here is tuned on results. The bandwidth rule (eps
= half the median squared distance to the 64th neighbour), the 30 eigenpairs, R^2 >= 0.5
and the noise levels are the chapter's, fixed on seed 0 before the claims were written;
the rule windows (+-2 pairs, +-20 % on the slope, no loss of more than 2 pairs with D)
are the chapter's earlier asserts. n = 1000 is what the notebook's time budget allows
for one dense solve per data set. The control's wobble (0.5) and the digit's target
count (10, inside the 30 computed pairs) were fixed before any run. Scratch runs that
compared the kernels and sample sizes used generators outside every claim stream. One
expectation changed after a look at the notebook seeds: ``order`` was first recorded as
partly reproduced, because the wobbling tube's slope fell inside the window on seed 10;
on seeds 10-12 the control's mean is outside it (2.7 against [2.95, 4.42]), so it is
recorded as reproduced, and the held-out seeds decide the ledger's verdict.

**What an outside referee found, and what changed.** (1) ``threshold`` holds with no
margin: the largest miss is exactly 2 on every notebook and held-out seed, and on ten
fresh seeds (2000-2009) it holds on 9/10 (seed 2008 gives 3; mean 2.0, 95 % interval
[1.66, 2.34], which would be *partly*). The misses are always undercounts, growing as r
shrinks (finite n: eps/r^2 is about 0.7 at n = 1000), and the same rule with the wrong
fibre constant nu_1(1) still holds on 5/10 fresh seeds, so the claim separates the
right constant from nu_1(3) but only weakly from nu_1(1). The rule is kept as it was
written; the chapter states this. (2) ``order``: the slope is about 10 % below the
prediction (3.30 [3.20, 3.39] on the fresh seeds), inside the +-20 % window; the
statement no longer says "the predicted slope". (3) ``ambient-count`` could not pass
before: only 30 pairs were computed, fewer than the 46 predicted at D = 50. It now
computes enough pairs (``_pairs_for``); the count at D = 50 stays at 20. (4) ``digit``
could not pass by design: the only radii at which its predicted count falls inside the
computed spectrum are about fourteen times the digit's norm, where the tube premise
fails. It is recorded as not tested here; the chapter keeps the digit experiment as an
illustration. (5) A claim was added after the review, ``constant``: at n = 2000 the
counts must resolve the fibre's constant, nu_1 of the 2-ball against nu_1 of the 1-ball
(the control). Its statistic, rule (mean |miss| <= 1 pair) and n were fixed on the
tuning seeds 0-5 alone, where the right constant gives 0.6-0.8 and the wrong ones 2.0
(nu_1(1)) and 2.2-2.4 (nu_1(3)); streams ``100 seed + 20 + j``.
"""

from __future__ import annotations

import math


from lib.common import check_int, make_generator
from lib.common.claims import Claim, Rule, judge_all, mean_values, seed_list

from .data import noisy_circle
from .dmap import diffusion_map
from .theory import (
    count_recovered,
    fourier_basis,
    neumann_ball_nu1,
    predicted_count_circle,
    r_squared,
)

#: seeds the chapter's settings were looked at on (earlier versions used seed 0)
TUNING_SEEDS = (0, 1, 2, 3, 4, 5)
#: seeds the notebook evaluates (held-out seeds: lib.common.claims.HELDOUT_SEEDS, via
# `make claims`)
NOTEBOOK_SEEDS = (10, 11, 12)

CLAIMS = (
    Claim(
        "threshold",
        "below ν₁/r² the eigenpairs are the manifold's: the number of horizontal pairs "
        "before the first vertical one is the predicted count (circle in R³, "
        "untruncated kernel)",
        paper="count 2⌊√ν₁(D−1) / r⌋ on the unit circle",
        where="theorem on the tube spectrum μᵢ + νⱼ/r²",
        statistic="largest |observed − predicted| over r ∈ {0.4, 0.3, 0.25, 0.2, 0.15}",
        rule=Rule.at_most(2.0),
        control="noise radius varying along the circle, r(1 + 0.5 cos θ): not a tube",
        fmt=".1f",
    ),
    Claim(
        "constant",
        "the count pins down the fibre's constant: with ν₁ of the true normal ball "
        "(m = D − 1 = 2) the count is off by at most one pair on average over the "
        "noise levels (circle in R³, n = 2000, untruncated kernel)",
        paper="count 2⌊√ν₁(D−1) / r⌋ with ν₁ of the (D−1)-ball",
        where="theorem on the tube spectrum μᵢ + νⱼ/r²",
        statistic="mean |observed − predicted| over r ∈ {0.4, 0.3, 0.25, 0.2, 0.15}",
        rule=Rule.at_most(1.0),
        control="the same counts against the prediction with the wrong fibre, "
        "ν₁(1) of a 1-ball (the nearest wrong constant)",
        fmt=".2f",
    ),
    Claim(
        "order",
        "the threshold is of order r⁻²: the count grows linearly in 1/r, with a "
        "slope within 20 % of the predicted one",
        paper="slope 2√ν₁(2) = 3.68 (D = 3)",
        where="threshold ν₁/r²",
        statistic="least-squares slope of the count on 1/r (same runs)",
        rule=Rule.near(2 * math.sqrt(neumann_ball_nu1(2)), 0.2),
        control="noise radius varying along the circle, r(1 + 0.5 cos θ)",
    ),
    Claim(
        "ambient",
        "recovery does not degrade with the ambient dimension at a fixed noise radius",
        paper="threshold O(r⁻²) independent of D",
        where="abstract",
        statistic="min over D ∈ {10, 50} of count(D) − count(3), r = 0.3",
        rule=Rule.at_least(-2.0),
        control="the same per-coordinate noise as at D = 3 (radius r√((D−1)/2))",
        fmt=".1f",
    ),
    Claim(
        "ambient-count",
        "at larger D the count reaches the (larger) predicted count",
        paper="count 2⌊√ν₁(D−1) / r⌋: 20 at D = 10, 46 at D = 50 (r = 0.3)",
        where="tube spectrum μᵢ + νⱼ/r² with m = D − 1",
        statistic="min over D ∈ {10, 50} of observed / predicted count, r = 0.3",
        rule=Rule.at_least(0.8),
        control="the prediction with the fibre of D = 3 (ignoring D)",
        expect="not reproduced",
    ),
    Claim(
        "digit",
        "a rotated MNIST digit plus noise in the 784-ball: the count matches the "
        "prediction (not testable here: the predicted count falls inside a computable "
        "spectrum only at r ≈ 150, fourteen times the digit's norm, where the tube "
        "premise fails)",
        paper="the same threshold on image data "
        "(our prediction 2⌊√ν₁(783) L / (2π r)⌋)",
        where="the paper's image experiments",
        expect="not tested here",
    ),
    Claim(
        "ltsa-vae",
        "LTSA and VAEs show the same robustness",
        paper="qualitative, figures",
        where="experiments",
        expect="not tested here",
    ),
)


def circle_count(
    n: int,
    D: int,
    r: float,
    cfg,
    seed: int,
    *,
    wobble: float = 0.0,
    k=None,
    n_eigs: int | None = None,
    device="cpu",
) -> int:
    """Horizontal pairs before the first vertical one on one noisy circle (untruncated
    kernel by default; ``k`` an int for the kNN graph; ``n_eigs`` pairs, default
    ``cfg.n_eigs``). Data from generator ``seed``."""
    from .experiment import bandwidth

    x, theta = noisy_circle(n, D, r, make_generator(seed), wobble=wobble, device=device)
    eps = bandwidth(x, cfg.k_bandwidth, cfg.eps_scale)
    pairs = cfg.n_eigs if n_eigs is None else n_eigs
    dm = diffusion_map(x, eps=eps, k=k, n_eigs=pairs, seed=cfg.seed)
    r2 = r_squared(dm.eigenvectors[:, 1:].cpu(), fourier_basis(theta.cpu(), pairs))
    return count_recovered(r2, cfg.r2_cut)


def _pairs_for(cfg, r: float, D: int) -> int:
    """Enough eigenpairs to see the predicted count at (r, D) and a margin above it."""
    return max(cfg.n_eigs, predicted_count_circle(r, D) + 10)


def digit_radius(length: float, count: int) -> float:
    """The noise radius in the 784-ball at which the predicted count is ``count``
    (mid-step)."""
    count = check_int("count", count, minimum=2)
    return math.sqrt(neumann_ball_nu1(783)) * length / (2 * math.pi) / (count / 2 + 0.5)


def measure_claims(cfg, seeds, device="cpu") -> dict:
    """Per-seed values of each tested claim's statistic and of its negative control.

    Returns ``{claim id: {"values": {seed: v}, "control": {seed: v}}}`` (plain floats).
    """
    from .experiment import _check_cfg

    _check_cfg(cfg)
    seeds = seed_list(seeds)
    from .experiment import slope

    n, D0, r0 = cfg.claim_n, cfg.D_base, cfg.r_fixed
    out = {c.id: {"values": {}, "control": {}} for c in CLAIMS if c.rule is not None}
    for s in seeds:
        pred = [predicted_count_circle(r, D0) for r in cfg.claim_radii]
        obs = [
            circle_count(n, D0, r, cfg, 100 * s + j, device=device)
            for j, r in enumerate(cfg.claim_radii)
        ]
        ctl = [
            circle_count(
                n, D0, r, cfg, 100 * s + j, wobble=cfg.claim_wobble, device=device
            )
            for j, r in enumerate(cfg.claim_radii)
        ]
        sharp = [
            circle_count(cfg.claim_n_sharp, D0, r, cfg, 100 * s + 20 + j, device=device)
            for j, r in enumerate(cfg.claim_radii)
        ]
        # the nearest wrong fibre: the (m-1)-ball, or the (m+1)-ball when m = 1
        D_wrong = D0 - 1 if D0 >= 3 else D0 + 1
        wrong = [predicted_count_circle(r, D_wrong) for r in cfg.claim_radii]
        out["constant"]["values"][s] = sum(
            abs(o - p) for o, p in zip(sharp, pred)
        ) / len(pred)
        out["constant"]["control"][s] = sum(
            abs(o - p) for o, p in zip(sharp, wrong)
        ) / len(wrong)
        inv = [1.0 / r for r in cfg.claim_radii]
        out["threshold"]["values"][s] = float(
            max(abs(o - p) for o, p in zip(obs, pred))
        )
        out["threshold"]["control"][s] = float(
            max(abs(o - p) for o, p in zip(ctl, pred))
        )
        out["order"]["values"][s] = slope(inv, obs)[0]
        out["order"]["control"][s] = slope(inv, ctl)[0]
        j0 = cfg.claim_radii.index(r0) if r0 in cfg.claim_radii else None
        base = (
            obs[j0]
            if j0 is not None
            else circle_count(n, D0, r0, cfg, 100 * s + 50, device=device)
        )
        dims = [D for D in cfg.claim_dims if D != D0]
        at = {
            D: circle_count(
                n,
                D,
                r0,
                cfg,
                100 * s + 60 + i,
                n_eigs=_pairs_for(cfg, r0, D),
                device=device,
            )
            for i, D in enumerate(dims)
        }
        wide = {
            D: circle_count(
                n,
                D,
                r0 * math.sqrt((D - 1) / (D0 - 1)),
                cfg,
                100 * s + 60 + i,
                device=device,
            )
            for i, D in enumerate(dims)
        }
        out["ambient"]["values"][s] = float(min(at[D] - base for D in dims))
        out["ambient"]["control"][s] = float(min(wide[D] - base for D in dims))
        out["ambient-count"]["values"][s] = min(
            at[D] / predicted_count_circle(r0, D) for D in dims
        )
        out["ambient-count"]["control"][s] = min(
            at[D] / predicted_count_circle(r0, D0) for D in dims
        )  # prediction ignoring D
    for v in out.values():
        if all(isinstance(c, float) and math.isnan(c) for c in v["control"].values()):
            v["control"] = {}
    return out


def judge(measured: dict) -> list:
    """:func:`lib.common.claims.evaluate` for every claim of the chapter (untested ones
    included)."""
    return judge_all(CLAIMS, measured)


def full_values(measured: dict | None) -> dict | None:
    """Mean over seeds of each claim's statistic (the "ours FULL" column), or None
    without a run."""
    return mean_values(measured)
