"""ood_shaping: batched torch scoring of every detector on 10^5 feature vectors against
plain NumPy references written the way the OptFSOOD reference code computes them (a loop
over OptFS's 100 bins, DICE's (N, C, D) vote tensor in chunks, a per-row sort for
ASH)."""

import sys

import numpy as np
import torch

sys.path.insert(0, __file__.rsplit("/", 2)[0])
from harness import compare  # noqa: E402

import lib.ood_shaping as O  # noqa: E402
from lib.ood_shaping import scores as S  # noqa: E402

N, D, C = 100_000, 256, 10


def _energy(z):
    m = z.max(1, keepdims=True)
    return (m + np.log(np.exp(z - m).sum(1, keepdims=True)))[:, 0]


def reference_all(h, W, b, p):
    """Every score with NumPy, following each method's reference code."""
    out = {}
    z = h @ W.T + b
    e = np.exp(z - z.max(1, keepdims=True))
    out["msp"] = (e / e.sum(1, keepdims=True)).max(1)
    out["max_logit"] = z.max(1)
    out["energy"] = _energy(z)
    out["react"] = _energy(np.minimum(h, p["react_c"]) @ W.T + b)
    k = D - int(round(D * p["ash_p"] / 100))
    thr = -np.sort(-h, axis=1)[:, k - 1 : k]  # k-th largest per row
    pruned = np.where(h >= thr, h, 0.0)
    out["ash_p"] = _energy(pruned @ W.T + b)
    scale = np.exp(h.sum(1) / pruned.sum(1))
    out["ash_s"] = _energy((pruned * scale[:, None]) @ W.T + b)
    Wm = W * p["dice_mask"]
    out["dice"] = np.concatenate(
        [
            _energy((h[i : i + 5000, None, :] * Wm).sum(2) + b)
            for i in range(0, len(h), 5000)
        ]
    )
    hc = np.minimum(h, p["vra_x2"])
    out["vra_p"] = _energy((hc * (hc > p["vra_x1"])) @ W.T + b)
    left, width, theta = p["optfs"]
    feat_p = np.zeros_like(h)
    for i, x in enumerate(left):
        feat_p += ((h >= x) & (h < x + width)) * h * theta[i]
    out["optfs"] = (W[z.argmax(1)] * feat_p).sum(1)
    knots, values = p["kl_ib"]
    out["kl_ib"] = _energy(np.interp(h, knots, values) @ W.T + b)
    return out


def setup(device="cpu"):
    g = torch.Generator().manual_seed(0)
    h = torch.relu(torch.randn(N, D, generator=g) + 0.2).to(
        device
    )  # (N, D) post-ReLU features
    W = (0.1 * torch.randn(C, D, generator=g)).to(device)
    b = (0.1 * torch.randn(C, generator=g)).to(device)
    knots = torch.linspace(0, 3, 65, device=device)
    p = {
        "react_c": 1.0,
        "vra_x1": 0.2,
        "vra_x2": 1.2,
        "ash_p": 65.0,
        "dice_mask": S.dice_mask(h[:10000], W, 70),
        "optfs": S.optfs_fit(h[:10000], W, b, 100),
        "kl_ib": (knots, knots.sqrt()),
    }
    hn, Wn, bn = (t.cpu().numpy() for t in (h, W, b))
    pn = {
        k: (
            tuple(t.cpu().numpy() if torch.is_tensor(t) else t for t in v)
            if isinstance(v, tuple)
            else (v.cpu().numpy() if torch.is_tensor(v) else v)
        )
        for k, v in p.items()
    }
    return (h, W, b, p), (hn, Wn, bn, pn)


def _check_same_scores(h, W, b, p, n=5000):
    """Same scores first, in float64 on n rows (in float32, near-tied logits can flip
    OptFS's ŷ)."""
    dbl = lambda v: v.double() if torch.is_tensor(v) and v.is_floating_point() else v
    p64 = {
        k: tuple(dbl(t) for t in v) if isinstance(v, tuple) else dbl(v)
        for k, v in p.items()
    }
    ours = O.score_all(h[:n].double(), W.double(), b.double(), p64)
    tonp = lambda v: v.cpu().numpy() if torch.is_tensor(v) else v
    ref = reference_all(
        tonp(h[:n].double()),
        tonp(W.double()),
        tonp(b.double()),
        {
            k: tuple(tonp(t) for t in v) if isinstance(v, tuple) else tonp(v)
            for k, v in p64.items()
        },
    )
    for m in (
        ours
    ):  # OptFS: a value on a bin edge can fall in two or no bins of the reference's
        close = np.isclose(
            ours[m].cpu().numpy(), ref[m], rtol=1e-9, atol=1e-9
        )  # overlapping tests
        assert close.mean() >= (0.999 if m == "optfs" else 1.0), (
            f"{m}: {(~close).sum()} rows differ"
        )


def main():
    torch.set_num_threads(1)
    ours_args, ref_args = setup("cuda" if torch.cuda.is_available() else "cpu")
    _check_same_scores(*ours_args)
    rows = [
        compare(
            f"all 10 scores, {N:,} × {D} features",
            O.score_all,
            reference_all,
            args=ours_args,
            ref_args=ref_args,
            repeats=3,
        )
    ]
    rows.append(
        compare(
            f"OptFS (100 bins), {N:,} × {D}",
            lambda h, W, b, p: S.optfs(h, W, b, *p["optfs"]),
            lambda h, W, b, p: reference_all(h, W, b, p)["optfs"],
            args=ours_args,
            ref_args=ref_args,
            repeats=3,
        )
    )
    return rows


if __name__ == "__main__":
    from harness import table

    print(table(main()))
