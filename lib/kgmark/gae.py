"""A relational graph autoencoder: an R-GCN encoder and a DistMult decoder.

The encoder turns the knowledge graph into one embedding per entity (the object
KGMark watermarks); the decoder scores a triple as ⟨z_h, diag(r), z_t⟩. Link
prediction with the decoder is the downstream task that measures transparency.
"""

from __future__ import annotations

import torch
from torch import nn

from lib.common import (
    check_choice,
    check_generator,
    check_instance,
    check_int,
    check_positive,
    check_tensor,
)

from .data import KG, _check_ids, _check_triples


def relational_adjacency(triples: torch.Tensor, n_entities: int, n_relations: int):
    """Row-normalised adjacency per relation and per inverse relation:
    (2R, n, n), A[r, i, j] = 1/|N_r(i)| when (i, r, j) is a triple."""
    n_entities = check_int("n_entities", n_entities, 1)
    n_relations = check_int("n_relations", n_relations, 1)
    _check_triples("triples", triples, n_entities, n_relations)
    h, r, t = triples.unbind(1)
    A = torch.zeros(2 * n_relations, n_entities, n_entities)
    A[r, h, t] = 1.0  # head → tail messages along r
    A[r + n_relations, t, h] = 1.0  # and back along r⁻¹
    deg = A.sum(-1, keepdim=True).clamp_min(1.0)  # (2R, n, 1)
    return A / deg


class RGCN(nn.Module):
    """Two R-GCN layers with basis decomposition (Schlichtkrull et al., 2018):
    h_i' = W_0 h_i + Σ_r Σ_j A[r,i,j] W_r h_j,  W_r = Σ_b a_rb V_b."""

    def __init__(self, n_entities, n_rel2, dim=64, bases=8, layers=2, generator=None):
        super().__init__()
        for name, v in (("n_entities", n_entities), ("n_rel2", n_rel2), ("dim", dim),
                        ("bases", bases), ("layers", layers)):  # fmt: skip
            check_int(name, v, 1)
        g = check_generator("generator", generator)
        self.emb = nn.Parameter(torch.randn(n_entities, dim, generator=g) * 0.1)
        self.coef = nn.ParameterList()
        self.basis = nn.ParameterList()
        self.self_w = nn.ParameterList()
        for _ in range(layers):
            self.coef.append(
                nn.Parameter(torch.randn(n_rel2, bases, generator=g) / bases)
            )
            self.basis.append(
                nn.Parameter(torch.randn(bases, dim, dim, generator=g) / dim**0.5)
            )
            self.self_w.append(
                nn.Parameter(torch.randn(dim, dim, generator=g) / dim**0.5)
            )

    def forward(self, A: torch.Tensor) -> torch.Tensor:
        h = self.emb  # (n, d)
        for k in range(len(self.basis)):
            # Σ_r A_r h W_r = Σ_b (Σ_r a_rb A_r) h V_b: mix the adjacencies first
            A_b = torch.einsum("rb,rij->bij", self.coef[k], A)  # (B, n, n)
            msg = torch.einsum("bij,jd,bde->ie", A_b, h, self.basis[k])  # (n, d)
            h_new = h @ self.self_w[k] + msg
            h = torch.tanh(h_new) if k < len(self.basis) - 1 else h_new
        return h  # (n, d)


def distmult_scores(
    Z: torch.Tensor, R: torch.Tensor, heads, rels, *, check: bool = True
) -> torch.Tensor:
    """Scores of every tail for (head, relation) queries: (q, n). ``check=False``
    skips the input checks (the training loop, whose inputs are built here)."""
    if check:
        check_tensor("Z", Z, ndim=2, floating=True, nonempty=True, finite=True)
        check_tensor(
            "R", R, shape=(None, Z.shape[1]), floating=True, nonempty=True, finite=True
        )
        check_tensor("heads", heads, ndim=1, integer=True, nonempty=True)
        check_tensor("rels", rels, shape=(len(heads),), integer=True)
        _check_ids("heads", heads, len(Z))
        _check_ids("rels", rels, len(R))
    return (Z[heads] * R[rels]) @ Z.T  # ⟨z_h, diag(r), z_t⟩ for all t


def train_gae(kg, dim=64, bases=8, steps=200, lr=0.01, generator=None, device="cpu"):
    """Fit the encoder and the DistMult relation vectors by 1-N cross-entropy on the
    training triples and their inverses; returns (Z (n, d), R (2R, d)) detached."""
    check_instance("kg", kg, KG, "a lib.kgmark.KG")
    check_int("dim", dim, 1)
    check_int("bases", bases, 1)
    check_int("steps", steps, 1)
    check_positive("lr", lr)
    check_generator("generator", generator)
    n, nr = kg.n_entities, kg.n_relations
    A = relational_adjacency(kg.train, n, nr).to(device)
    enc = RGCN(n, 2 * nr, dim, bases, generator=generator).to(device)
    R = nn.Parameter((torch.randn(2 * nr, dim, generator=generator) * 0.1).to(device))
    h, r, t = kg.train.to(device).unbind(1)
    heads, rels, tails = torch.cat([h, t]), torch.cat([r, r + nr]), torch.cat([t, h])
    opt = torch.optim.Adam([*enc.parameters(), R], lr=lr)
    for _ in range(steps):
        Z = enc(A)
        scores = distmult_scores(Z, R, heads, rels, check=False)
        loss = nn.functional.cross_entropy(scores, tails)
        opt.zero_grad()
        loss.backward()
        opt.step()
    with torch.no_grad():
        return enc(A).detach(), R.detach()


def link_prediction(Z, R, kg, split="test"):
    """Filtered MRR and Hits@10 of DistMult on ``split`` (tails and, through the
    inverse relations, heads); known true triples other than the query are
    filtered out of the ranking."""
    check_instance("kg", kg, KG, "a lib.kgmark.KG")
    check_choice("split", split, ("train", "valid", "test"))
    check_tensor("Z", Z, shape=(kg.n_entities, None), floating=True, finite=True)
    check_tensor(
        "R", R, shape=(2 * kg.n_relations, Z.shape[1]), floating=True, finite=True
    )
    nr = kg.n_relations
    test = getattr(kg, split).to(Z.device)
    known = torch.cat([kg.train, kg.valid, kg.test]).to(Z.device)
    h, r, t = test.unbind(1)
    heads, rels, tails = torch.cat([h, t]), torch.cat([r, r + nr]), torch.cat([t, h])
    kh, kr, kt = known.unbind(1)
    kq = torch.cat([kh * 2 * nr + kr, kt * 2 * nr + kr + nr])  # query key
    ka = torch.cat([kt, kh])  # answers
    filt = torch.zeros(
        Z.shape[0] * 2 * nr, Z.shape[0], dtype=torch.bool, device=Z.device
    )
    filt[kq, ka] = True
    s = distmult_scores(Z, R, heads, rels, check=False)  # (q, n)
    true = s.gather(1, tails[:, None])  # (q, 1)
    mask = filt[heads * 2 * nr + rels]
    mask[torch.arange(len(tails)), tails] = False
    s = s.masked_fill(mask, float("-inf"))
    rank = 1 + (s > true).sum(1).float()
    return {
        "mrr": float((1 / rank).mean()),
        "hits10": float((rank <= 10).float().mean()),
    }
