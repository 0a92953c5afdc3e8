"""lib.jlde: JLDE in torch (exact SVD per layer, one cdist + top-k) against scikit-learn
(``PCA`` + ``NearestNeighbors``) on the same embeddings, and the sparse GCN propagation
against a dense matrix product."""

import pathlib
import sys

import numpy as np
import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

from harness import compare  # noqa: E402

from lib import jlde as J  # noqa: E402


def sklearn_jlde(states, train, k=5):
    from sklearn.decomposition import PCA
    from sklearn.neighbors import NearestNeighbors

    z = np.concatenate(
        [PCA(0.95, svd_solver="full").fit_transform(s) for s in states], 1
    )
    dist, _ = NearestNeighbors(n_neighbors=k).fit(z[train]).kneighbors(z)
    return -(dist.mean(1) ** 2)


def main():
    n = 3000
    g = torch.Generator().manual_seed(0)
    G = J.csbm(n, 5, 16, 10.0, 0.1, generator=g)
    train = torch.rand(n, generator=g) < 0.2
    model = J.train_mpnn(G, train, 5, hidden=64, depth=2, epochs=5)
    _, states = J.embed(model, G)
    P = J.propagation(G.edge_index, G.num_nodes, "gcn")
    np_states = [s.double().numpy() for s in states]
    t_states = [s.double() for s in states]
    ours = J.jlde_confidence(t_states, train).numpy()
    assert np.allclose(ours, sklearn_jlde(np_states, train.numpy()), rtol=1e-6)
    Pd = P.to_dense()
    h = torch.randn(n, 64, generator=g)
    return [
        compare(
            f"JLDE, {n} nodes, 3 states (16+64+64 dims), k = 5: torch vs sklearn",
            lambda: J.jlde_confidence(t_states, train),
            lambda: sklearn_jlde(np_states, train.numpy()),
            repeats=5,
        ),
        compare(
            f"GCN propagation Â H, {n} nodes, 64 channels: sparse vs dense",
            lambda: torch.sparse.mm(P, h),
            lambda: Pd @ h,
            repeats=20,
        ),
    ]


if __name__ == "__main__":
    from harness import table

    torch.set_num_threads(1)
    print(table(main()))
