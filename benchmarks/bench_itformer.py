"""lib.itformer: Instruct Time Attention (batched einsum and fused attention) against
the loops of lib/itformer/reference.py, and ROUGE-L's dynamic programme against the
brute-force longest common subsequence, on the same inputs."""

import pathlib
import sys

import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

from harness import compare, table  # noqa: E402

from lib import itformer as It  # noqa: E402
from lib.itformer.reference import ita_naive, lcs_naive  # noqa: E402


def main():
    torch.manual_seed(0)
    ita = It.InstructTimeAttention(32, 4)
    p, mem = torch.randn(4, 8, 32), torch.randn(4, 6, 20, 32)
    a, b = list("c2upw3c5downw7accel"), list("c2upw4c5downw6steady")
    with torch.no_grad():
        return [
            compare(
                "ITA, 4 × 8 tokens, 6 channels × 20 patches (batched vs loops)",
                lambda: ita(p, mem),
                lambda: ita_naive(ita, p, mem),
                repeats=3,
            ),
            compare(
                "LCS of two 14-token sequences (dynamic programme vs brute force "
                "over subsequences)",
                lambda: It.lcs_length(a[:14], b[:14]),
                lambda: lcs_naive(a[:14], b[:14]),
                repeats=1,
            ),
        ]


if __name__ == "__main__":
    torch.set_num_threads(1)
    print(table(main()))
