"""lib.scmoe: the batched MoE layer (route, dispatch, experts as bmm, combine) against
the naive per-token, per-expert loops of lib/scmoe/reference.py, on the same inputs."""

import pathlib
import sys

import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

from harness import compare  # noqa: E402

from lib import scmoe as S  # noqa: E402
from lib.scmoe.reference import moe_naive, route_naive  # noqa: E402


def main():
    torch.manual_seed(0)
    rows = []
    for k in (1, 2):
        moe = S.MoE(32, 4, k, 1.25, hidden=128)
        x = torch.randn(256, 32)
        ex = moe.experts
        with torch.no_grad():
            logits = moe.router(x)
            rows.append(
                compare(
                    f"top-{k} MoE layer, 256 tokens, 4 experts (D=32, H=128)",
                    lambda: moe(x),
                    lambda: moe_naive(x, logits, k, 1.25, ex.w1, ex.b1, ex.w2, ex.b2),
                    repeats=3,
                )
            )
            rows.append(
                compare(
                    f"top-{k} routing with capacity, 256 tokens, 4 experts",
                    lambda: S.route(logits, k, 1.25),
                    lambda: route_naive(logits, k, 1.25),
                    repeats=3,
                )
            )
    return rows


if __name__ == "__main__":
    from harness import table

    torch.set_num_threads(1)
    print(table(main()))
