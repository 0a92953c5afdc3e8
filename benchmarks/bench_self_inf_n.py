"""lib.self_inf_n: Self-Inf of a benign pool by per-sample gradients, both exact methods
(layer hooks: one batched backward and closed-form per-sample gradients; torch.func
vmap(grad)), chunked, against the loop reference (one forward/backward per sample, as
the official code), on the same GPT."""

import pathlib
import sys

import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

from harness import compare  # noqa: E402

from lib import self_inf_n as S  # noqa: E402
from lib.common.gpt import GPT, GPTConfig  # noqa: E402
from lib.self_inf_n.reference import self_influence_loop  # noqa: E402


def main(n: int = 256):
    w = S.make_world(0)
    pool = S.benign_pool(w, n, torch.Generator().manual_seed(0), new_share=0.5)
    x, y, m = S.encode(w, pool, S.SMOKE.block)
    rows = []
    for d in (32, S.SMOKE.d_model):
        torch.manual_seed(0)
        model = GPT(
            GPTConfig(
                len(w.vocab),
                S.SMOKE.block,
                n_layer=S.SMOKE.n_layer,
                n_head=S.SMOKE.n_head,
                d_model=d,
            )
        ).eval()
        slow = self_influence_loop(model, x, y, m)
        for method in ("hooks", "vmap"):
            fast = S.self_influence(model, x, y, m, method=method)
            err = float(((fast - slow).abs() / slow.abs().clamp_min(1e-12)).max())
            if err > 1e-3:
                raise AssertionError(
                    f"{method} and loop disagree: max relative error {err:.1e}"
                )
            rows.append(
                compare(
                    f"Self-Inf of {n} samples, GPT d={d}, {method} (max rel. diff "
                    f"{err:.0e})",
                    lambda: S.self_influence(model, x, y, m, method=method),
                    lambda: self_influence_loop(model, x, y, m),
                    repeats=3,
                )
            )
    return rows


if __name__ == "__main__":
    from harness import table

    torch.set_num_threads(1)
    print(table(main()))
