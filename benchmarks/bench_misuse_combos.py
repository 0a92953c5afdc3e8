"""lib.misuse_combos: greedy decoding of 200 prompts of different lengths in one padded
batch against one prompt at a time through lib.common.gpt.sample (the reference in
lib/misuse_combos/reference.py), and the moderation classifier's bag-of-words counts
against a dictionary loop, on the same inputs."""

import pathlib
import random
import sys

import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

from harness import compare  # noqa: E402

from lib import misuse_combos as Mc  # noqa: E402
from lib.misuse_combos.reference import (  # noqa: E402
    bag_of_words_naive,
    generate_naive,
)


def main():
    vocab = Mc.build_vocab()
    g = torch.Generator().manual_seed(0)
    model = Mc.make_model(vocab, 64, 2, 40, g).eval()
    rng = random.Random(0)
    prompts = [Mc.random_task(rng, rng.randint(1, 4), 4)["prompt"] for _ in range(200)]
    return [
        compare(
            "greedy decoding, 200 prompts × 7 tokens (padded batch vs one at a time)",
            lambda: Mc.generate(model, vocab, prompts, 7),
            lambda: generate_naive(model, vocab, prompts, 7),
            repeats=3,
        ),
        compare(
            "bag-of-words counts, 200 prompts (index_add vs dictionary loop)",
            lambda: Mc.bag_of_words(vocab, prompts),
            lambda: bag_of_words_naive(vocab, prompts),
            repeats=5,
        ),
    ]


if __name__ == "__main__":
    from harness import table

    torch.set_num_threads(1)
    print(table(main()))
