"""How the clip_icm chapter's settings were chosen (TUNING_SEEDS only).

For each tuning seed and left-out domain: the raw probe's and the augmentation probe's
C over the same grid of 20 values, and ICM's (λ, k) over a grid of 20 pairs at the
raw probe's chosen C; then the augmentation probe in the λ = 0 (top-k PCA) subspace,
at ICM's chosen k, its C over the same 20 values. Each is picked by its mean OOD probe
accuracy over the four left-out domains and the tuning seeds (DomainBed's test-domain
selection, on tuning seeds only). Prints the tables quoted in lib/clip_icm/claims.py.

    python benchmarks/clip_icm_tuning.py
"""

import itertools
import sys
import pathlib

import numpy as np
import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
from lib.clip_icm import DOMAINS, SMOKE, TUNING_SEEDS  # noqa: E402
from lib.clip_icm import fold_data, invariant_basis, prepare_seed  # noqa: E402
from lib.clip_icm import probe_scores  # noqa: E402

CS = tuple(float(c) for c in np.logspace(-2, 2, 20).round(4))
LAMS = (1.0, 3.0, 10.0, 30.0, 100.0)
KS = (4, 8, 16, 32)


def main():
    torch.set_num_threads(1)
    raw, aug, icm, aug_pca = {}, {}, {}, {}
    folds = []
    for s in TUNING_SEEDS:
        prep = prepare_seed(SMOKE, s)
        for t in range(len(DOMAINS)):
            folds.append(fold_data(prep, t, SMOKE.n_pairs))
    for c in CS:
        raw[c] = [probe_scores(f, None, c) for f in folds]
        fa = [
            dict(f, z=torch.cat([f["z"], f["z_aug"]]), y=torch.cat([f["y"], f["y"]]))
            for f in folds
        ]
        aug[c] = [probe_scores(f, None, c) for f in fa]
    mean = lambda rs, key="ood": float(np.mean([r[key] for r in rs]))  # noqa: E731
    c_raw = max(CS, key=lambda c: mean(raw[c]))
    c_aug = max(CS, key=lambda c: mean(aug[c]))
    for lam, k in itertools.product(LAMS, KS):
        icm[lam, k] = [
            probe_scores(f, invariant_basis(f["z"], f["delta"], lam, k), c_raw)
            for f in folds
        ]
    best = max(icm, key=lambda q: mean(icm[q]))
    k_best = best[1]
    for c in CS:
        aug_pca[c] = []
        for f in folds:
            pcs = invariant_basis(f["z"], f["delta"], 0.0, k_best)
            fa = dict(
                f, z=torch.cat([f["z"], f["z_aug"]]), y=torch.cat([f["y"], f["y"]])
            )
            aug_pca[c].append(probe_scores(fa, pcs, c))
    c_aug_pca = max(CS, key=lambda c: mean(aug_pca[c]))
    pca = [
        probe_scores(f, invariant_basis(f["z"], f["delta"], 0.0, k_best), c_raw)
        for f in folds
    ]
    print("C grid:", CS)
    print("raw probe   C  mean OOD  mean ID  per fold OOD")
    for c in CS:
        print(
            f"  {c:8.4f}  {mean(raw[c]):.3f}  {mean(raw[c], 'id'):.3f}",
            [round(r["ood"], 3) for r in raw[c]],
        )
    print("aug probe")
    for c in CS:
        print(
            f"  {c:8.4f}  {mean(aug[c]):.3f}  {mean(aug[c], 'id'):.3f}",
            [round(r["ood"], 3) for r in aug[c]],
        )
    print(f"ICM at C = {c_raw}")
    for q in icm:
        print(
            f"  lam {q[0]:6.1f} k {q[1]:2d}  {mean(icm[q]):.3f}  "
            f"{mean(icm[q], 'id'):.3f}",
            [round(r["ood"], 3) for r in icm[q]],
        )
    print(f"aug probe in the top-{k_best} PCA subspace")
    for c in CS:
        print(
            f"  {c:8.4f}  {mean(aug_pca[c]):.3f}  {mean(aug_pca[c], 'id'):.3f}",
            [round(r["ood"], 3) for r in aug_pca[c]],
        )
    print(
        f"chosen: C = {c_raw} (raw, mean OOD {mean(raw[c_raw]):.3f}); "
        f"C_aug = {c_aug} ({mean(aug[c_aug]):.3f}); "
        f"lam, k = {best} ({mean(icm[best]):.3f}); "
        f"C_aug_pca = {c_aug_pca} ({mean(aug_pca[c_aug_pca]):.3f})"
    )
    print("per fold OOD at the chosen settings (seed, left out A B C D), mean ID")
    for name, rs in (
        ("raw", raw[c_raw]), ("icm", icm[best]), ("lambda 0", pca),
        ("aug", aug[c_aug]), ("aug_pca", aug_pca[c_aug_pca]),
    ):  # fmt: skip
        print(
            f"  {name:9s}", [round(r["ood"], 3) for r in rs],
            f"ID {mean(rs, 'id'):.3f}, OOD {mean(rs):.3f}",
        )  # fmt: skip


if __name__ == "__main__":
    main()
