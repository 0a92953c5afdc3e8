"""Self-checks for the gsm chapter's exercises: ``exercises.ex1(answer)`` says right,
close or wrong (with a hint) without giving the answer away. Every answer is computed
here from the chapter's own functions."""

from __future__ import annotations

import numpy as np
import torch

from lib.common.exercises import Feedback, check_choice, check_number

from .graphs import affinity_distances, hac_linkage, khop_sets, subgraph_encodings
from .models import scan_parallel

#: exercise 1's graph: three components (a triangle with a tail, a path, an edge)
EX1_EDGES = ((0, 1), (1, 2), (2, 0), (2, 3), (4, 5), (5, 6), (6, 7), (8, 9))
#: exercise 3's graph: a 4-cycle 0-1-2-3 with the chord 0-2, and node 4 hanging off 0
EX3_EDGES = ((0, 1), (1, 2), (2, 3), (3, 0), (0, 2), (0, 4))


def adjacency(edges, n: int) -> np.ndarray:
    """The 0/1 adjacency matrix of an edge list on nodes 0..n-1."""
    adj = np.zeros((n, n), dtype=np.int64)
    for u, v in edges:
        adj[u, v] = adj[v, u] = 1
    return adj


def ex1(answer) -> Feedback:
    """How many merges of the HAC tree of exercise 1's graph happen at height inf?"""
    Z = hac_linkage(affinity_distances(adjacency(EX1_EDGES, 10)))
    truth = float(np.isinf(Z[:, 2]).sum())
    return check_number(
        "gsm ex1",
        answer,
        truth,
        rtol=0,
        atol=0.01,
        hint="merges only follow edges; what is left when no edge remains?",
    )


def ex2(answer) -> Feedback:
    """h_10 of the recurrence h_t = 0.5 h_{t-1} + 1 (h_0 = 0)."""
    a = torch.full((1, 1, 10), 0.5, dtype=torch.float64)
    truth = float(scan_parallel(a, torch.ones_like(a))[0, 0, -1])
    return check_number(
        "gsm ex2", answer, truth, rtol=1e-6, hint="a geometric series with 10 terms"
    )


def ex3(answer) -> Feedback:
    """Triangles through node 0 of exercise 3's graph, from its radius-1 token."""
    adj = adjacency(EX3_EDGES, 5)
    ball = khop_sets(adj, 1)[0][1]
    S = np.zeros((1, 5))
    S[0, ball] = 1
    inside = subgraph_encodings(adj, S)[0, 1] * 10
    truth = float(inside - adj[0].sum())
    return check_number(
        "gsm ex3",
        answer,
        truth,
        rtol=0,
        atol=0.01,
        hint="edges inside the ball are the node's own edges plus edges among its "
        "neighbours",
    )


def ex4(answer) -> Feedback:
    """Can a Transformer on node tokens without PE (flags only) beat chance on
    connectivity? (yes/no)"""
    return check_choice(
        "gsm ex4",
        answer,
        "no",
        ("yes", "no"),
        hint="which tokens does it see for two graphs with the same number of nodes?",
    )
