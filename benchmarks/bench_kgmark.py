"""lib.kgmark: filtered link prediction (one batched score matrix) against the
per-query loop of lib/kgmark/reference.py, the relational adjacency against its dict
loop, the key's injection and distance against the per-frequency loops, and the AUC
against scikit-learn's roc_auc_score (the library peer), on the same inputs."""

import pathlib
import sys

import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

from harness import compare  # noqa: E402

from lib import kgmark as K  # noqa: E402
from lib.kgmark.reference import (  # noqa: E402
    naive_adjacency,
    naive_distance,
    naive_inject,
    naive_link_prediction,
)


def main():
    from sklearn.metrics import roc_auc_score

    g = torch.Generator().manual_seed(0)
    kg = K.load_kg("nations")
    Z = torch.randn(kg.n_entities, 32, generator=g)
    R = torch.randn(2 * kg.n_relations, 32, generator=g)
    umls = K.load_kg("umls")
    key = K.make_key((4, 8, 8), 92, 64, g)
    mask = K.ring_mask((4, 8, 8), 1.0, 1.5)
    noise = torch.randn(64, 4, 8, 8, generator=g)
    pos, neg = torch.randn(500, generator=g) + 1, torch.randn(500, generator=g)
    y = [1] * 500 + [0] * 500
    s = torch.cat([pos, neg]).tolist()
    return [
        compare(
            "filtered link prediction, Nations test (batched vs per-query loop)",
            lambda: K.link_prediction(Z, R, kg),
            lambda: naive_link_prediction(Z, R, kg),
            repeats=3,
        ),
        compare(
            "relational adjacency, UMLS (scatter vs dict loop)",
            lambda: K.relational_adjacency(umls.train, 135, 46),
            lambda: naive_adjacency(umls.train, 135, 46),
            repeats=3,
        ),
        compare(
            "key injection + distance, 64 latents (vectorised vs per-frequency)",
            lambda: K.distance(
                K.inject(noise, mask, key.signature), mask, key.signature
            ),
            lambda: naive_distance(
                naive_inject(noise, mask, key.signature), mask, key.signature
            ),
            repeats=3,
        ),
        compare(
            "AUC, 500 + 500 scores (pairwise torch vs scikit-learn roc_auc_score)",
            lambda: K.auc(pos, neg),
            lambda: roc_auc_score(y, s),
            repeats=3,
        ),
    ]


if __name__ == "__main__":
    from harness import table

    torch.set_num_threads(1)
    print(table(main()))
