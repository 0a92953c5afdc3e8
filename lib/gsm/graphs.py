"""Graphs, tasks and tokenisations: GraphQA-style generated graphs, Laplacian PE,
hierarchical affinity clustering (HAC) with its DFS leaf order, BFS ancestor tokens and
hierarchical PE, and k-hop subgraph tokens.

A graph is a dense symmetric 0/1 adjacency matrix (numpy, ``(n, n)``) with two query
nodes ``s`` and ``t`` (the task's question is about them). Everything here is
per-graph numpy; :mod:`.experiment` stacks graphs into padded tensors.
"""

from __future__ import annotations

import numpy as np

from lib.common import check_choice, check_int

#: the generated tasks: pairwise connectivity (global); node degree, cycle check and
#: triangles through a node (local)
TASKS = ("connectivity", "degree", "cycle", "triangles")
#: the graph-level task's short cycles: lengths 3..CYCLE_MAX (inside a 2-hop ball)
CYCLE_MAX = 5
#: tokenisations; node-level (one sequence over the graph's nodes) ...
NODE_TOKENS = (
    "node",
    "node_dfs",
    "hac_dfs",
    "node_nope",
    "hac_dfs_nope",
    "node_cc",
    "node_gcn",
)
#: ... and subgraph-level (one short sequence per node)
SUBGRAPH_TOKENS = ("khop", "hac_bfs", "khop_rewired", "hac_bfs_rewired", "khop_hpe")
#: node-level kinds whose model runs the local encoder (one sum-aggregation GNN layer)
LOCAL_TOKENS = ("node_gcn",)
TOKENS = NODE_TOKENS + SUBGRAPH_TOKENS
DEGREE_CLASSES = 8  # degree labels 0..7 (7 means 7 or more)
LAP_K = 6  # Laplacian eigenvectors in the node tokens' PE
HIER_DEPTH = 2  # ancestor levels in the hierarchical PE and the BFS tokens
KHOP = 2  # k of the k-hop tokens
FEAT = 10  # token feature width (every tokenisation is zero-padded to it)


def _check_adj(adj) -> np.ndarray:
    if not isinstance(adj, np.ndarray):
        raise TypeError(f"adj: expected a numpy array, got {type(adj).__name__}")
    if adj.ndim != 2 or adj.shape[0] != adj.shape[1] or adj.shape[0] < 2:
        raise ValueError(
            f"adj: expected a square (n, n) matrix, n >= 2, got {adj.shape}"
        )
    if not np.array_equal(adj, adj.T) or np.any(np.diag(adj) != 0):
        raise ValueError("adj: expected a symmetric matrix with a zero diagonal")
    return adj


def _check_rng(rng, allow_none: bool = False):
    if rng is None and allow_none:
        return rng
    if not isinstance(rng, np.random.Generator):
        raise TypeError(
            f"rng: expected a numpy.random.Generator, got {type(rng).__name__}"
        )
    return rng


def _check_children(children, n) -> int:
    """A tree from :func:`hac_tree` over leaves 0..n-1; returns n."""
    if not isinstance(children, dict) or -1 not in children:
        raise TypeError(
            f"children: expected the dict of hac_tree (with the root -1), got "
            f"{type(children).__name__}"
        )
    n = check_int("n", n, 1)
    ids = {int(c) for cs in children.values() for c in cs}
    leaves = {c for c in ids if c not in children}
    if leaves != set(range(n)):
        raise ValueError(
            f"n: expected the tree's number of leaves, {len(leaves)}, got {n}"
        )
    return n


def random_tree_edges(nodes, rng, chain: float = 0.8) -> list:
    """A long random tree on ``nodes``: each new node attaches to the previous one with
    probability ``chain``, else to a random earlier node (a path with branches)."""
    return [
        (nodes[i], nodes[i - 1 if rng.random() < chain else rng.integers(i)])
        for i in range(1, len(nodes))
    ]


def make_graph(task: str, n: int, rng) -> dict:
    """One graph of ``task`` with ``n`` nodes: ``{"adj", "s", "t", "y"}``.

    connectivity: two components of about n/2 nodes (long random trees plus a few
    chords); with probability 1/2 ``t`` is in ``s``'s component, at least 3 hops away
    when the component allows it (so the answer is not in ``s``'s 1-hop
    neighbourhood), else in the other one; ``y`` = same component.
    degree: an Erdős–Rényi graph with p = 0.25; ``y`` = min(deg(s), 7).
    cycle: a long random tree plus one chord that closes a cycle of length
    3..CYCLE_MAX (a connected graph with exactly one cycle); ``y`` = s is on the cycle
    (probability 1/2); s's degree is always that of a random node on the cycle, and
    the graph is redrawn when no node off the cycle has it (in both classes), so
    deg(s) does not answer. Every graph has n edges and one component whatever the
    label, so no count over the whole graph answers it; ``t = s``.
    triangles: an Erdős–Rényi graph with p = 0.3; ``y`` = min(triangles through s, 7).
    """
    task = check_choice("task", task, TASKS)
    n = check_int("n", n, 6)
    _check_rng(rng)
    adj = np.zeros((n, n), dtype=np.int64)
    perm = rng.permutation(n)
    if task == "connectivity":
        cut = int(rng.integers(max(3, n // 2 - 2), min(n - 3, n // 2 + 2) + 1))
        comps = [perm[:cut], perm[cut:]]
        for comp in comps:
            for u, v in random_tree_edges(list(comp), rng):
                adj[u, v] = adj[v, u] = 1
            for i in range(len(comp)):
                for j in range(i + 1, len(comp)):
                    if rng.random() < 0.03:
                        adj[comp[i], comp[j]] = adj[comp[j], comp[i]] = 1
        label = np.zeros(n, dtype=np.int64)
        label[comps[1]] = 1
        s = int(rng.integers(n))
        if rng.random() < 0.5:  # t in the same component, >= 3 hops away if possible
            hops = _hops(adj, s)
            pool = np.flatnonzero((label == label[s]) & (hops >= 3) & (hops < n))
            if len(pool) == 0:
                pool = np.flatnonzero((label == label[s]) & (np.arange(n) != s))
        else:
            pool = np.flatnonzero(label != label[s])
        t = int(rng.choice(pool))
        y = int(label[s] == label[t])
    elif task == "cycle":
        y = int(rng.random() < 0.5)
        while True:  # until a node off the cycle has the degree of one on it
            adj[:] = 0
            for u, v in random_tree_edges(list(perm), rng):
                adj[u, v] = adj[v, u] = 1
            a, length = int(rng.integers(n)), int(rng.integers(3, CYCLE_MAX + 1))
            pool = np.flatnonzero(_hops(adj, a) == length - 1)
            if not len(pool):
                continue
            b = int(rng.choice(pool))  # the chord closes a cycle of length `length`
            adj[a, b] = adj[b, a] = 1
            on, deg = on_cycle(adj), adj.sum(1)
            ref = int(rng.choice(np.flatnonzero(on)))  # s's degree: a cycle node's
            same = np.flatnonzero(~on & (deg == deg[ref]))
            if len(same):  # both classes: the same condition on the graph
                s = ref if y else int(rng.choice(same))
                break
        t = s
    else:
        p = 0.25 if task == "degree" else 0.3
        up = np.triu(rng.random((n, n)) < p, 1)
        adj = (up | up.T).astype(np.int64)
        s = int(rng.integers(n))
        t = s
        # degree: deg(s); triangles: edges among s's neighbours = (A³)_ss / 2
        k = adj[s].sum() if task == "degree" else (adj @ adj @ adj)[s, s] // 2
        y = int(min(k, DEGREE_CLASSES - 1))
    return {"adj": adj, "s": s, "t": t, "y": y}


def on_cycle(adj) -> np.ndarray:
    """Which nodes lie on a cycle, (n,) bool: the 2-core (repeatedly remove nodes of
    degree ≤ 1) of a graph whose cycles share no node with a tree hanging between
    two of them (true of the cycle task's graphs, which have one cycle)."""
    a = _check_adj(adj).copy()
    alive = np.ones(len(a), bool)
    while True:
        low = alive & (a.sum(1) <= 1)
        if not low.any():
            return alive
        alive &= ~low
        a[low], a[:, low] = 0, 0


def _hops(adj, s) -> np.ndarray:
    """Hop distances from node ``s`` (n where unreachable), by breadth-first search."""
    n = len(adj)
    dist = np.full(n, n)
    dist[s], frontier, d = 0, np.zeros(n, bool), 0
    frontier[s] = True
    while frontier.any():
        d += 1
        nxt = (adj[frontier].sum(0) > 0) & (dist == n)
        dist[nxt] = d
        frontier = nxt
    return dist


def components(adj) -> np.ndarray:
    """The connected-component label of every node, (n,), labels 0.. in order of
    each component's smallest node."""
    adj = _check_adj(adj)
    n = len(adj)
    label = np.full(n, -1)
    c = 0
    for v in range(n):
        if label[v] < 0:
            label[_hops(adj, v) < n] = c
            c += 1
    return label


def laplacian_pe(adj, k: int = LAP_K) -> np.ndarray:
    """The ``k`` eigenvectors of the graph Laplacian L = D − A with the smallest
    eigenvalues (zero-padded when n < k), ``(n, k)``; signs are arbitrary."""
    adj = _check_adj(adj)
    k = check_int("k", k, 1)
    lap = np.diag(adj.sum(1)).astype(float) - adj  # L = D - A
    _, vec = np.linalg.eigh(lap)
    out = np.zeros((len(adj), k))
    out[:, : min(k, len(adj))] = vec[:, :k]
    return out


def affinity_distances(adj, rng=None) -> np.ndarray:
    """Edge lengths for HAC: the distance between the endpoints' random-walk encodings
    (return probabilities after 1..4 steps) plus a tiny jitter that breaks ties;
    ``inf`` off the edges, ``(n, n)``."""
    adj = _check_adj(adj)
    _check_rng(rng, allow_none=True)
    deg = np.maximum(adj.sum(1, keepdims=True), 1)
    walk = adj / deg
    pk, enc = np.eye(len(adj)), []
    for _ in range(4):
        pk = pk @ walk
        enc.append(np.diag(pk))
    enc = np.stack(enc, 1)  # (n, 4)
    dist = np.linalg.norm(enc[:, None] - enc[None], axis=-1)
    if rng is not None:
        jit = rng.random(dist.shape) * 1e-6
        dist = dist + np.triu(jit, 1) + np.triu(jit, 1).T
    return np.where(adj > 0, dist, np.inf)


def hac_linkage(dist) -> np.ndarray:
    """Single-linkage HAC restricted to the graph's edges (Kruskal with union-find; the
    same minimum spanning tree as affinity clustering's Borůvka rounds, but a binary
    hierarchy whose clusters can differ from the rounds'), in SciPy's linkage format
    ``(n - 1, 4)``: [child a, child b, height, size]. The components of the graph are
    joined last, at height ``inf``, in index order."""
    if not isinstance(dist, np.ndarray):
        raise TypeError(f"dist: expected a numpy array, got {type(dist).__name__}")
    if dist.ndim != 2 or dist.shape[0] != dist.shape[1] or dist.shape[0] < 2:
        raise ValueError(
            f"dist: expected a square (n, n) matrix, n >= 2, got {dist.shape}"
        )
    if np.isnan(dist).any() or (dist < 0).any():
        raise ValueError(
            "dist: expected distances >= 0 (inf off the edges), got NaN or < 0"
        )
    n = dist.shape[0]
    iu, ju = np.triu_indices(n, 1)
    w = dist[iu, ju]
    keep = np.isfinite(w)
    order = np.argsort(w[keep], kind="stable")
    iu, ju, w = iu[keep][order], ju[keep][order], w[keep][order]
    parent = list(range(n))
    cluster = list(range(n))  # union-find root -> current cluster id
    size = [1] * (2 * n - 1)

    def find(a):
        while parent[a] != a:
            parent[a] = parent[parent[a]]
            a = parent[a]
        return a

    rows, nxt = [], n
    for u, v, h in zip(iu, ju, w):
        ru, rv = find(u), find(v)
        if ru == rv:
            continue
        a, b = sorted((cluster[ru], cluster[rv]))
        size[nxt] = size[a] + size[b]
        rows.append([a, b, h, size[nxt]])
        parent[rv] = ru
        cluster[ru] = nxt
        nxt += 1
    roots = sorted({cluster[find(i)] for i in range(n)})
    while len(roots) > 1:  # join the components at height inf
        a, b = roots[0], roots[1]
        size[nxt] = size[a] + size[b]
        rows.append([a, b, np.inf, size[nxt]])
        roots = sorted([nxt] + roots[2:])
        nxt += 1
    return np.array(rows, dtype=float).reshape(n - 1, 4)


def hac_tree(Z) -> dict:
    """The HAC tree with the components as children of one root: ``children`` (node →
    list of children; leaves 0..n-1, clusters n.., the root ``-1``)."""
    if not isinstance(Z, np.ndarray):
        raise TypeError(f"Z: expected a numpy array, got {type(Z).__name__}")
    if Z.ndim != 2 or Z.shape[1] != 4 or len(Z) < 1:
        raise ValueError(f"Z: expected a linkage matrix (n - 1, 4), got {Z.shape}")
    n = len(Z) + 1
    children = {-1: []}
    finite = [r for r in Z if np.isfinite(r[2])]
    for k, (a, b, _, _) in enumerate(finite):
        children[n + k] = [int(a), int(b)]
    inner = set(int(x) for r in finite for x in r[:2])
    tops = [
        i for i in list(range(n)) + list(range(n, n + len(finite))) if i not in inner
    ]
    children[-1] = sorted(tops, key=lambda c: _first_leaf(c, children, n))
    return children


def _first_leaf(c, children, n):
    while c >= n:
        c = children[c][0]
    return c


def dfs_order(children, n: int) -> np.ndarray:
    """The tree's leaves in depth-first order (left child first): similar nodes, and
    each component, end up contiguous."""
    n = _check_children(children, n)
    out, stack = [], [-1]
    while stack:
        c = stack.pop()
        if 0 <= c < n:
            out.append(c)
        else:
            stack.extend(reversed(children[c]))
    return np.array(out, dtype=np.int64)


def ancestors(children, n: int) -> dict:
    """Each tree node's chain of ancestors, from its parent up to (not including) the
    root: ``{node: [parent, grandparent, ...]}``."""
    par = {c: p for p, cs in children.items() for c in cs}
    out = {}
    for v in list(range(n)) + [c for c in children if c >= n]:
        chain, c = [], par[v]
        while c != -1:
            chain.append(c)
            c = par[c]
        out[v] = chain
    return out


def leaves_of(children, n: int) -> dict:
    """The leaves under each cluster, ``{cluster: array of nodes}``."""
    out = {}

    def walk(c):
        if c < n:
            return [c]
        if c not in out:
            out[c] = np.array(sum((list(walk(k)) for k in children[c]), []))
        return out[c]

    for c in children:
        if c >= n:
            walk(c)
    return out


def hierarchical_pe(children, order, n: int, depth: int = HIER_DEPTH) -> np.ndarray:
    """Hierarchical PE from the tree: a node's DFS rank / n, then for its ancestors at
    depths 1..``depth`` below the root (depth 1 = its component) the ancestor's first
    DFS rank / n and size / n (the node itself where the chain is shorter),
    ``(n, 1 + 2·depth)``."""
    n = _check_children(children, n)
    depth = check_int("depth", depth, 1)
    if not isinstance(order, np.ndarray) or order.dtype.kind not in "iu":
        raise TypeError(f"order: expected an integer numpy array, got {order!r}"[:200])
    if sorted(order.tolist()) != list(range(n)):
        raise ValueError(f"order: expected a permutation of 0..{n - 1}, got {order}")
    rank = np.empty(n, dtype=float)
    rank[order] = np.arange(n)
    anc, leaves = ancestors(children, n), leaves_of(children, n)
    pe = np.zeros((n, 1 + 2 * depth))
    for v in range(n):
        top_down = anc[v][::-1] + [v]
        pe[v, 0] = rank[v] / n
        for d in range(depth):
            c = top_down[min(d, len(top_down) - 1)]
            lv = leaves[c] if c >= n else np.array([c])
            pe[v, 1 + 2 * d] = rank[lv].min() / n
            pe[v, 2 + 2 * d] = len(lv) / n
    return pe


def subgraph_encodings(adj, S) -> np.ndarray:
    """Subgraph tokens' structural part, [size, internal edges, boundary edges] / 10,
    for the node sets given as rows of the 0/1 matrix ``S`` (k, n); (k, 3)."""
    SA = S @ adj  # (k, n): edges from each set to each node
    inside = (SA * S).sum(1) / 2
    boundary = (SA * (1 - S)).sum(1)
    return np.stack([S.sum(1), inside, boundary], 1) / 10.0


def khop_sets(adj, k: int = KHOP) -> list:
    """For each node, its balls of radius 0..k: ``[[ball_0, ..., ball_k] per node]``."""
    adj = _check_adj(adj)
    k = check_int("k", k, 0)
    n = len(adj)
    reach = np.eye(n, dtype=bool)
    balls = [reach.copy()]
    for _ in range(k):
        reach = reach | ((reach.astype(np.int64) @ adj) > 0)
        balls.append(reach.copy())
    return [[np.flatnonzero(b[v]) for b in balls] for v in range(n)]


def bfs_sets(children, n: int, depth: int = HIER_DEPTH) -> list:
    """For each node, itself and its first ``depth`` ancestor clusters, bottom-up (the
    HAC-BFS hierarchical subgraph tokens)."""
    n = _check_children(children, n)
    depth = check_int("depth", depth, 1)
    anc, leaves = ancestors(children, n), leaves_of(children, n)
    return [[np.array([v])] + [leaves[c] for c in anc[v][:depth]] for v in range(n)]


def rewire(adj, rng) -> np.ndarray:
    """A random graph with the same number of nodes and edges (the negative control's
    wrong structure)."""
    n, m = len(adj), int(adj.sum() // 2)
    iu, ju = np.triu_indices(n, 1)
    pick = rng.choice(len(iu), size=m, replace=False)
    out = np.zeros_like(adj)
    out[iu[pick], ju[pick]] = out[ju[pick], iu[pick]] = 1
    return out


def tokenize(graph: dict, kind: str, rng) -> dict:
    """Tokens of one graph. Node-level kinds give ``x`` ``(n, FEAT)`` in token order
    and ``order`` (token i is node order[i]); subgraph kinds give ``x`` ``(n, L, FEAT)``
    with ``mask`` ``(n, L)`` (one short sequence per node, in node order).

    Every token starts with the query flags [is s, is t]. node: random order +
    Laplacian PE (random signs); node_dfs: the same tokens in HAC-DFS order; node_cc:
    the same tokens in a component-contiguous order without HAC (components in random
    order, nodes in random order within each); node_gcn: node's tokens plus a constant
    channel (so that the local sum over neighbours counts them), and ``adj`` (n, n) in
    token order for the model's local encoder; hac_dfs: HAC-DFS order +
    hierarchical PE; *_nope: the same orders without any PE. khop: balls of radius
    0..k; hac_bfs: the node and its ancestor clusters; each subgraph token is [mean
    flags, size, internal edges, boundary edges]; khop_hpe: khop's tokens with the
    node's hierarchical PE (hac_dfs's) appended to each; *_rewired: the same sets and
    encodings computed on a rewired graph (labels stay those of the true graph).
    Node-level kinds also give ``adj``: the adjacency in token order for node_gcn,
    ``None`` otherwise."""
    kind = check_choice("kind", kind, TOKENS)
    if not isinstance(graph, dict) or any(k not in graph for k in ("adj", "s", "t")):
        raise TypeError(
            f"graph: expected the dict of make_graph (adj, s, t, y), got "
            f"{type(graph).__name__}"
        )
    _check_rng(rng)
    adj, n = _check_adj(graph["adj"]), len(graph["adj"])
    flags = np.zeros((n, 2))
    flags[graph["s"], 0] = 1
    flags[graph["t"], 1] = 1
    if kind in NODE_TOKENS:
        x = np.zeros((n, FEAT))
        x[:, :2] = flags
        signs = rng.choice([-1, 1], LAP_K)  # drawn first: node and node_dfs share them
        if kind in ("node", "node_nope", "node_gcn", "node_cc"):
            order = rng.permutation(n)  # the same draw for the four kinds
            if kind == "node_cc":  # components in random order, stable within
                label = components(adj)
                rank = rng.permutation(label.max() + 1)
                order = order[np.argsort(rank[label[order]], kind="stable")]
        else:
            children = hac_tree(hac_linkage(affinity_distances(adj)))
            order = dfs_order(children, n)
        if kind in ("node", "node_dfs", "node_cc", "node_gcn"):
            x[:, 2 : 2 + LAP_K] = laplacian_pe(adj) * signs
        if kind in LOCAL_TOKENS:  # a constant channel: the neighbour sum counts degree
            x[:, 2 + LAP_K] = 1.0
        elif kind == "hac_dfs":
            x[:, 2 : 3 + 2 * HIER_DEPTH] = hierarchical_pe(children, order, n)
        local = adj[np.ix_(order, order)] if kind in LOCAL_TOKENS else None
        return {"x": x[order], "order": order, "adj": local}
    struct = rewire(adj, rng) if kind.endswith("rewired") else adj
    if kind.startswith("khop"):
        sets = khop_sets(struct)
    else:
        children = hac_tree(hac_linkage(affinity_distances(struct)))
        sets = bfs_sets(children, n)
    L = max(KHOP, HIER_DEPTH) + 1
    S = np.zeros((n, L, n))  # S[v, j]: the j-th node set of v's sequence
    mask = np.zeros((n, L), dtype=bool)
    for v, seq in enumerate(sets):
        for j, nodes in enumerate(seq):
            S[v, j, nodes] = 1.0
        mask[v, : len(seq)] = True
    x = np.zeros((n, L, FEAT))
    size = np.maximum(S.sum(-1, keepdims=True), 1)
    x[..., :2] = S @ flags / size  # mean flags
    x[..., 2:5] = subgraph_encodings(struct, S.reshape(n * L, n)).reshape(n, L, 3)
    if kind == "khop_hpe":  # the node's hierarchical PE on each of its tokens
        children = hac_tree(hac_linkage(affinity_distances(adj)))
        pe = hierarchical_pe(children, dfs_order(children, n), n)  # (n, 5)
        x[..., 5 : 6 + 2 * HIER_DEPTH] = pe[:, None, :]
    return {"x": x * mask[..., None], "mask": mask, "order": np.arange(n)}
