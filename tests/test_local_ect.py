"""Unit tests of lib.local_ect: known answers, naive references, the PyPI ``ect``
package as an exact reference, invariants, bad inputs and CPU/CUDA parity."""

from __future__ import annotations

import dataclasses
import math
import subprocess
import sys

import numpy as np
import pytest
import torch

import lib.local_ect as le

CUDA = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")


def _gen(seed=0):
    return torch.Generator().manual_seed(seed)


def _random_graph(n=12, p=0.3, d=2, seed=0, dtype=torch.float64):
    g = _gen(seed)
    x = (torch.rand(n, d, generator=g, dtype=dtype) - 0.5) * 1.8
    iu = torch.triu_indices(n, n, 1)
    keep = torch.rand(iu.shape[1], generator=g) < p
    return x, iu[:, keep]  # each undirected edge once, row 0 < row 1


# ---------------------------------------------------------------- known answers
def test_triangle_and_path_by_hand():
    x = torch.tensor([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
    tri = torch.tensor([[0, 0, 1], [1, 2, 2]])
    v = torch.tensor([[1.0], [0.0]])  # ω = e1: heights 0, 1, 0
    t = torch.tensor([-0.5, 0.5, 1.5])
    # t=-0.5: empty; t=0.5: vertices 0, 2 and the edge (0, 2) -> 1; t=1.5: 3 - 3 = 0 (a
    # cycle)
    assert le.ect(x, v, t, edge_index=tri)[0, :, 0].tolist() == [0.0, 1.0, 0.0]
    assert le.ect(x, v, t)[0, :, 0].tolist() == [
        0.0,
        2.0,
        3.0,
    ]  # points: vertices below t
    path = torch.tensor([[0, 1], [1, 2]])  # 2 - 0 - 1 ... edges (0, 1), (1, 2)
    assert le.ect(x, v, t, edge_index=path)[0, :, 0].tolist() == [
        0.0,
        2.0,
        1.0,
    ]  # 2 vertices, no edge; a tree


def test_top_threshold_gives_euler_characteristic_of_the_graph():
    x, e = _random_graph(15, 0.3)
    v = le.random_directions(2, 7, generator=_gen(1), dtype=torch.float64)
    t = le.thresholds(
        9, 2.0, dtype=torch.float64
    )  # the last threshold is above every height
    out = le.ect(x, v, t, edge_index=e)
    assert torch.all(out[0, -1] == 15 - e.shape[1])  # χ = V − E in every direction
    assert torch.all(out[0, 0] == 0)  # first threshold below every height


def test_directions_are_unit_and_circle_is_even():
    v = le.random_directions(5, 11, generator=_gen(0))
    assert v.shape == (5, 11)
    assert torch.allclose(v.norm(dim=0), torch.ones(11))
    c = le.circle_directions(8, dtype=torch.float64)
    assert torch.allclose(
        c[:, 2], torch.tensor([0.0, 1.0], dtype=torch.float64), atol=1e-12
    )


# ---------------------------------------------------------------- naive references
def _naive_ect(x, v, t, edges=None, scale=None):
    """Directly eq. (1), one graph, loops over cells."""
    h = x @ v
    out = torch.zeros(t.numel(), v.shape[1], dtype=x.dtype)
    f = (
        (lambda z: (z >= 0).to(x.dtype))
        if scale is None
        else (lambda z: torch.sigmoid(scale * z))
    )
    for u in range(x.shape[0]):
        out += f(t[:, None] - h[u][None, :])
    if edges is not None:
        for a, b in edges.T.tolist():
            out -= f(t[:, None] - torch.maximum(h[a], h[b])[None, :])
    return out


@pytest.mark.parametrize("scale", [None, 30.0])
def test_batched_ect_matches_per_graph_loop(scale):
    xs, es, offs = [], [], 0
    for s in range(4):
        x, e = _random_graph(6 + s, 0.4, seed=s)
        xs.append(x)
        es.append(e + offs)
        offs += x.shape[0]
    x, e = torch.cat(xs), torch.cat(es, dim=1)
    batch = torch.cat([torch.full((xi.shape[0],), i) for i, xi in enumerate(xs)])
    v = le.random_directions(2, 5, generator=_gen(3), dtype=torch.float64)
    t = le.thresholds(7, dtype=torch.float64)
    out = le.ect(x, v, t, edge_index=e, batch=batch, scale=scale)
    assert out.shape == (4, 7, 5)
    start = 0
    for i, xi in enumerate(xs):
        local = es[i] - start
        ref = _naive_ect(xi, v, t, local, scale)
        assert torch.allclose(out[i], ref, atol=1e-10), i
        start += xi.shape[0]


def _naive_local_ect(x, edges, k, v, t, nodes, ect_type, normalize):
    n = x.shape[0]
    nbr = [set() for _ in range(n)]
    for a, b in edges.T.tolist():
        nbr[a].add(b)
        nbr[b].add(a)
    outs = []
    for c in nodes.tolist():
        ball, frontier = {c}, {c}
        for _ in range(k):
            frontier = {w for u in frontier for w in nbr[u]} - ball
            ball |= frontier
        members = sorted(ball)
        pos = {u: i for i, u in enumerate(members)}
        sub = [(pos[a], pos[b]) for a, b in edges.T.tolist() if a in ball and b in ball]
        sub_e = (
            torch.tensor(sub, dtype=torch.long).reshape(-1, 2).T
            if ect_type == "edges"
            else None
        )
        img = _naive_ect(x[members], v, t, sub_e)
        if normalize and img.max() > 0:
            img = img / img.max()
        outs.append(img)
    return torch.stack(outs)


@pytest.mark.parametrize("k", [1, 2])
@pytest.mark.parametrize("ect_type", ["points", "edges"])
@pytest.mark.parametrize("normalize", [True, False])
def test_local_ect_matches_naive_per_node_loop(k, ect_type, normalize):
    x, e = _random_graph(25, 0.12, seed=k)
    both = torch.cat([e, e.flip(0)], dim=1)  # the graph given with both directions
    v = le.random_directions(2, 6, generator=_gen(5), dtype=torch.float64)
    t = le.thresholds(8, dtype=torch.float64)
    nodes = torch.tensor([0, 3, 7, 24, 11])
    out = le.local_ect(
        x, both, k, v, t, nodes=nodes, ect_type=ect_type, normalize=normalize
    )
    ref = _naive_local_ect(x, e, k, v, t, nodes, ect_type, normalize)
    assert torch.allclose(out, ref, atol=1e-12)


def test_ego_masks_and_mean_match_bfs():
    x, e = _random_graph(30, 0.08, d=3, seed=7)
    a = np.zeros((30, 30), dtype=int)
    a[e[0], e[1]] = a[e[1], e[0]] = 1
    reach = np.linalg.matrix_power(a + np.eye(30, dtype=int), 2) > 0  # within 2 hops
    m = le.ego_masks(e, 30, 2).to_dense().numpy() > 0
    assert (m == reach).all()
    mean = le.ego_mean(x, e, 2)
    ref = (
        torch.from_numpy(reach.astype(float))
        @ x
        / torch.from_numpy(reach.sum(1, keepdims=True).astype(float))
    )
    assert torch.allclose(mean, ref, atol=1e-12)


def test_features_layout_and_normalisation():
    x, e = _random_graph(20, 0.2, seed=2, dtype=torch.float32)
    v = le.random_directions(2, 4, generator=_gen(0))
    t = le.thresholds(5)
    f = le.local_ect_features(x, e, v, t, hops=(1, 2), scale=500.0)
    assert f.shape == (20, 2 * 5 * 4 + 2)
    assert torch.equal(f[:, -2:], x)
    img = f[:, :20]
    assert torch.allclose(
        img.max(dim=1).values, torch.ones(20), atol=1e-6
    )  # max-normalised


# ---------------------------------------------------------------- sigmoid -> exact
def test_sigmoid_form_converges_to_exact():
    x, e = _random_graph(30, 0.15, seed=4)
    v = le.random_directions(2, 16, generator=_gen(2), dtype=torch.float64)
    t = le.thresholds(32, dtype=torch.float64)
    exact = le.ect(x, v, t, edge_index=e)
    errs = [
        float((le.ect(x, v, t, edge_index=e, scale=s) - exact).abs().mean())
        for s in (10, 100, 1e3, 1e5)
    ]
    assert all(a > b for a, b in zip(errs, errs[1:])), errs
    assert errs[-1] < 1e-4
    # pointwise: every cell at distance >= δ from every threshold is off by at most
    # σ(-s·δ)
    h = x @ v
    delta = float((t[:, None, None] - h[None]).abs().min())
    bound = (x.shape[0] + e.shape[1]) * torch.sigmoid(
        torch.tensor(-1e7 * delta, dtype=torch.float64)
    )
    assert (
        float((le.ect(x, v, t, edge_index=e, scale=1e7) - exact).abs().max())
        <= float(bound) + 1e-12
    )


# ---------------------------------------------------------------- the PyPI `ect`
# package
def _reference_ect(x, edges, v, t):
    ect_pkg = pytest.importorskip(
        "ect",
        reason="the PyPI package `ect` (pip install -e '.[local_ect]') "
        "is the exact reference",
    )
    g = ect_pkg.EmbeddedComplex()
    for i, p in enumerate(x.tolist()):
        g.add_node(i, p)
    for a, b in edges.T.tolist():
        g.add_edge(a, b)
    dirs = ect_pkg.Directions.from_vectors(v.T.numpy())
    calc = ect_pkg.ECT(directions=dirs, thresholds=t.numpy())
    res = np.asarray(calc.calculate(g))  # (K, T)
    return torch.from_numpy(res.T.astype(np.float64)), torch.from_numpy(
        dirs.vectors.T.copy()
    )


@pytest.mark.parametrize("seed,d", [(0, 2), (1, 2), (2, 3)])
def test_exact_form_agrees_exactly_with_ect_package(seed, d):
    x, e = _random_graph(40, 0.1, d=d, seed=seed)
    v = le.random_directions(d, 24, generator=_gen(seed), dtype=torch.float64)
    t = le.thresholds(20, dtype=torch.float64)
    ref, v_used = _reference_ect(
        x, e, v, t
    )  # the package renormalises the directions: use its copy
    ours = le.ect(x, v_used, t, edge_index=e)[0]
    assert torch.equal(ours, ref)


def test_sigmoid_form_converges_to_ect_package():
    x, e = _random_graph(40, 0.1, seed=9)
    v = le.random_directions(2, 16, generator=_gen(9), dtype=torch.float64)
    t = le.thresholds(16, dtype=torch.float64)
    ref, v_used = _reference_ect(x, e, v, t)
    errs = [
        float((le.ect(x, v_used, t, edge_index=e, scale=s)[0] - ref).abs().mean())
        for s in (10, 100, 1e4)
    ]
    assert errs[0] > errs[1] > errs[2] and errs[2] < 1e-3, errs


# ---------------------------------------------------------------- rotations
def test_rotation_distance_recovers_grid_angles_exactly():
    g = _gen(0)
    pts = torch.randn(50, 2, generator=g, dtype=torch.float64) * torch.tensor(
        [0.4, 0.15], dtype=torch.float64
    )
    K = 32
    v, t = (
        le.circle_directions(K, dtype=torch.float64),
        le.thresholds(24, dtype=torch.float64),
    )
    for s in (0, 3, 17):
        a = 2 * math.pi * s / K
        r = torch.tensor(
            [[math.cos(a), -math.sin(a)], [math.sin(a), math.cos(a)]],
            dtype=torch.float64,
        )
        d, est = le.rotation_distance_2d(
            le.ect(pts @ r.T, v, t)[0], le.ect(pts, v, t)[0]
        )
        assert (
            abs(float(est) - a) < 1e-9 and float(d) < 1e-6 * 50
        )  # ties at grid thresholds aside


def test_rotation_recovery_within_pi_over_k():
    cfg = dataclasses.replace(le.SMOKE, rot_trials=40, rot_points=200)
    r = le.rotation_trials(cfg, torch.device("cpu"), seed=3)
    assert float(r["error"].max()) <= r["bound"] + 1e-9
    # chunking does not change the estimates
    r2 = le.rotation_trials(cfg, torch.device("cpu"), seed=3, chunk=7)
    assert torch.equal(r["estimate"], r2["estimate"])


def test_rotation_control_with_random_directions_fails():
    cfg = dataclasses.replace(le.SMOKE, rot_trials=40, rot_points=100)
    r = le.rotation_trials(cfg, "cpu", seed=3, scale=None, directions="random")
    assert float(r["error"].max()) > 5 * r["bound"]


def test_nearest_share_counts_the_nearest_grid_shift():
    K = 8
    step = 2 * math.pi / K
    alpha = torch.tensor([0.1, 0.45, 0.55, 2 * math.pi - 0.1], dtype=torch.float64)
    alpha = alpha * torch.tensor([1.0, step, step, 1.0], dtype=torch.float64)
    alpha[3] = 2 * math.pi - 0.1  # nearest grid angle 0 (wraps around)
    est = torch.tensor([0.0, 0.0, 0.0, 0.0], dtype=torch.float64)
    # 0.1 rad -> 0 (nearest); 0.45 step -> 0 (nearest); 0.55 step -> 0 (farther);
    # 2π − 0.1 -> 0 (nearest, across the wrap)
    share = le.claims._nearest_share({"alpha": alpha, "estimate": est}, K)
    assert share == 0.75
    # the nearest share agrees with the π/K bound on a real run
    cfg = dataclasses.replace(le.SMOKE, rot_trials=40, rot_points=100)
    r = le.rotation_trials(cfg, "cpu", seed=3, scale=None)
    within = float((r["error"] <= r["bound"]).double().mean())
    assert le.claims._nearest_share(r, cfg.rot_directions) == within


def test_distance_histogram_of_rings():
    from lib.local_ect.experiment import _distance_histogram

    # node 0 joined to four leaves on a circle of radius 0.5 about (0.2, 0): with
    # itself at the mean, its 1-hop ego graph is one point at distance 0 and four at
    # 0.5
    leaves = torch.tensor([[0.5, 0.0], [0.0, 0.5], [-0.5, 0.0], [0.0, -0.5]])
    x = torch.cat([torch.zeros(1, 2), leaves]) + torch.tensor([0.2, 0.0])
    ei = torch.tensor([[0, 0, 0, 0, 1, 2, 3, 4], [1, 2, 3, 4, 0, 0, 0, 0]])
    g = le.Graph(x, ei, torch.tensor([0, -1, -1, -1, -1]), torch.tensor([0]))
    h = _distance_histogram(g, torch.tensor([0]), bins=4)
    assert torch.allclose(h, torch.tensor([[0.2, 0.0, 0.8, 0.0]]))
    assert torch.allclose(h.sum(1), torch.ones(1))
    acc = le.shape_seed(
        dataclasses.replace(le.SMOKE, num_centres=40, gbdt_iter=5),
        0,
        "cpu",
        methods=(le.HAND_MADE,),
    )
    assert set(acc) == {le.HAND_MADE} and 0.0 <= acc[le.HAND_MADE] <= 1.0


def test_rotation_distance_any_dimension_finds_identity():
    x = torch.randn(30, 3, generator=_gen(1), dtype=torch.float64) * 0.3
    q, _ = torch.linalg.qr(torch.randn(3, 3, generator=_gen(2), dtype=torch.float64))
    rots = torch.stack([q, torch.eye(3, dtype=torch.float64), q.T])
    v = le.random_directions(3, 20, generator=_gen(3), dtype=torch.float64)
    t = le.thresholds(16, dtype=torch.float64)
    d, i = le.rotation_distance(
        x @ q.T, x, rots, v, t
    )  # G = QH: the rotation Q matches
    assert int(i) == 0 and float(d) == 0.0


# ---------------------------------------------------------------- data, models,
# experiment
def test_shape_graph_classes_have_equal_satellite_means():
    gr = le.shape_graph(40, num_satellites=6, generator=_gen(0))
    C = 40
    sat = gr.x[C:].view(C, 6, 2)
    spread = (sat - sat.mean(1, keepdim=True)).norm(dim=-1).mean(1)
    y = gr.y[:C]
    assert int((y == 0).sum()) == 20 and torch.all(gr.y[C:] == -1)
    assert spread[y == 0].min() > spread[y == 1].max()  # rings are wider than clusters
    assert torch.equal(gr.labelled, torch.arange(C))


def test_moment_graph_matches_moments_up_to_order_five():
    C = 12
    gr = le.moment_graph(C, generator=_gen(0))
    sat = gr.x[C:].view(C, 18, 2).double()
    w = le.random_directions(2, 8, generator=_gen(1), dtype=torch.float64)  # (2, 8)
    p = sat @ w  # (C, 18, 8)
    p = p - p.mean(1, keepdim=True)
    mom = torch.stack([(p**q).mean(1) for q in (2, 3, 4, 5)])  # (4, C, 8)
    assert torch.allclose(mom, mom[:, :1, :1].expand_as(mom), atol=1e-5)
    y = gr.y[:C]
    assert int((y == 0).sum()) == C // 2 and torch.all(gr.y[C:] == -1)
    r = (sat - sat.mean(1, keepdim=True)).norm(dim=-1)  # radii, 2 vs 3 distinct
    distinct = [len(torch.unique(r[c].round(decimals=4))) for c in range(C)]
    assert [d for d, c in zip(distinct, y.tolist())] == [2 + c for c in y.tolist()]


def test_ego_moments_match_a_direct_computation():
    x, e = _random_graph(25, 0.15, seed=2)
    v = le.random_directions(2, 3, generator=_gen(1), dtype=torch.float64)
    got = le.ego_moments(x, e, 1, v, order=4)  # (25, 12)
    masks = le.ego_masks(e, 25, 1).to_dense() > 0
    for c in (0, 7, 19):
        h = x[masks[c]] @ v
        mu, sd = h.mean(0), h.std(0, unbiased=False)
        want = [mu, sd] + [((h - mu) ** q).mean(0) / (sd**q + 1e-8) for q in (3, 4)]
        assert torch.allclose(got[c], torch.cat(want), atol=1e-9)
    assert le.ego_moments(x, e, 2, v, order=2).shape == (25, 6)


def test_two_hop_is_the_strict_second_ring():
    x, e = _random_graph(20, 0.15, seed=4)
    a1, a2 = le.two_hop(e, 20)
    m1 = le.ego_masks(e, 20, 1).to_dense() > 0
    m2 = le.ego_masks(e, 20, 2).to_dense() > 0
    eye = torch.eye(20, dtype=torch.bool)
    assert torch.equal(a1.to_dense() > 0, m1 & ~eye)
    assert torch.equal(a2.to_dense() > 0, m2 & ~m1)
    assert torch.allclose(a2.to_dense(), a2.to_dense().T)


def test_csbm_hits_the_homophily():
    for h in (0.1, 0.9):
        gr = le.csbm(400, h, degree=8, generator=_gen(1))
        assert abs(le.edge_homophily(gr.edge_index, gr.y) - h) < 0.05


def test_gnn_layers_shapes_and_attention_normalised():
    x, e = _random_graph(10, 0.3, d=3, seed=0, dtype=torch.float32)
    torch.manual_seed(0)
    gcn = le.GCN(3, 8, 2)
    assert gcn(x, le.gcn_norm(e, 10)).shape == (10, 2)
    gat = le.GAT(3, 4, 2, heads=2)
    edges = le.adjacency(e, 10).indices()
    assert gat(x, edges).shape == (10, 2)
    gin = le.GIN(3, 8, 2)
    assert gin(x, le.adjacency(e, 10, self_loops=False)).shape == (10, 2)
    h2 = le.H2GCN(3, 8, 2)
    assert h2(x, le.two_hop(e, 10)).shape == (10, 2)
    y = torch.tensor([0, 1] * 5)
    for kind in le.GNN_KINDS:  # every kind trains and returns an accuracy
        torch.manual_seed(0)
        acc = le.train_gnn(
            kind, x, e, y, torch.arange(6), torch.arange(6, 10), epochs=3
        )
        assert 0.0 <= acc <= 1.0


def test_experiment_returns_the_same_keys_at_any_size():
    tiny = dataclasses.replace(
        le.SMOKE,
        num_seeds=2,
        num_centres=30,
        csbm_nodes=40,
        homophily=(0.2,),
        gbdt_iter=3,
        gnn_epochs=2,
        num_directions=4,
        num_thresholds=4,
        rot_trials=3,
        rot_points=20,
        rot_directions=8,
        rot_thresholds=8,
    )
    r = le.run_experiment(tiny, "cpu")
    assert set(r) == {"shape", "csbm", "rotation"}
    assert set(r["shape"]) == set(le.METHODS)
    assert set(r["csbm"]["0.2"]) == set(le.METHODS) | {"edge_homophily"}
    assert set(r["rotation"]) == {
        "directions",
        "trials",
        "bound",
        "max_error",
        "mean_error",
        "within_bound",
        "max_error_exact",
        "within_bound_exact",
    }


def test_claims_measure_and_judge_at_a_tiny_size():
    tiny = dataclasses.replace(
        le.SMOKE,
        num_centres=20,
        csbm_nodes=40,
        gbdt_iter=3,
        gnn_epochs=2,
        num_directions=4,
        num_thresholds=4,
        rot_trials=4,
        rot_points=20,
        rot_directions=8,
        rot_thresholds=8,
    )
    runs = le.run_seeds(tiny, (0, 1), "cpu", homophily=(0.1, 0.9))
    assert set(runs[0]["csbm"]) == {"0.1", "0.9"}
    assert {"smooth", "paper", "exact", "paper_control"} <= set(runs[0]["rotation"])
    assert all(0 <= runs[0]["rotation"][f] <= 1 for f in ("smooth", "paper", "exact"))
    measured = le.claims_from_runs(runs)
    tested = {c.id for c in le.CLAIMS if c.rule is not None}
    assert set(measured) == tested
    assert all(set(m["values"]) == {0, 1} for m in measured.values())
    results = le.judge(measured)
    assert [r.claim.id for r in results] == [c.id for c in le.CLAIMS]
    tables = le.accuracy_tables(runs)
    assert set(tables["shape"]) == set(le.METHODS)
    with pytest.raises(ValueError, match="homophily: expected the levels to include"):
        le.run_seeds(tiny, (0,), "cpu", homophily=(0.5,))
    with pytest.raises(TypeError, match="runs: expected"):
        le.claims_from_runs({})
    ctrl = le.claims.shuffled_satellites(le.shape_graph_of(tiny, 0), 0)
    assert torch.equal(ctrl.x[:20], le.shape_graph_of(tiny, 0).x[:20])


def test_full_path_imports_without_the_ect_package():
    code = (
        "import sys, lib.local_ect, lib.local_ect.__main__; "
        "assert 'ect' not in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


# ---------------------------------------------------------------- bad inputs
def test_bad_inputs_name_the_argument():
    x = torch.rand(5, 2)
    v, t = le.random_directions(2, 3), le.thresholds(4)
    with pytest.raises(ValueError, match=r"v: expected shape \(2, K\).*got \(3, 3\)"):
        le.ect(x, torch.rand(3, 3), t)
    with pytest.raises(TypeError, match="x: expected a torch.Tensor, got ndarray"):
        le.ect(x.numpy(), v, t)
    with pytest.raises(
        TypeError, match="x: expected a floating-point tensor, got dtype torch.int64"
    ):
        le.ect(torch.ones(5, 2, dtype=torch.long), v, t)
    with pytest.raises(ValueError, match="t: expected strictly increasing"):
        le.ect(x, v, t.flip(0))
    with pytest.raises(ValueError, match="scale: expected a finite number > 0, got -1"):
        le.ect(x, v, t, scale=-1.0)
    with pytest.raises(ValueError, match=r"batch: expected shape \(5,\)"):
        le.ect(x, v, t, batch=torch.zeros(4, dtype=torch.long))
    with pytest.raises(ValueError, match="num_graphs: expected an int >= 3"):
        le.ect(x, v, t, batch=torch.tensor([0, 0, 1, 2, 2]), num_graphs=2)
    with pytest.raises(
        ValueError, match=r"edge_index: expected node indices < 5, got 7"
    ):
        le.ect(x, v, t, edge_index=torch.tensor([[0], [7]]))
    with pytest.raises(TypeError, match="edge_index: expected dtype torch.int64"):
        le.local_ect(x, torch.tensor([[0.0], [1.0]]), 1, v, t)
    with pytest.raises(
        ValueError, match="ect_type: expected 'points' or 'edges', got 'faces'"
    ):
        le.local_ect(x, torch.tensor([[0], [1]]), 1, v, t, ect_type="faces")
    with pytest.raises(
        ValueError, match=r"nodes: expected indices in \[0, 5\), got values in \[0, 9\]"
    ):
        le.local_ect(x, torch.tensor([[0], [1]]), 1, v, t, nodes=torch.tensor([0, 9]))
    with pytest.raises(ValueError, match="k: expected an int >= 0, got -1"):
        le.local_ect(x, torch.tensor([[0], [1]]), -1, v, t)
    with pytest.raises(ValueError, match="num_thresholds: expected an int >= 2, got 1"):
        le.thresholds(1)
    with pytest.raises(
        ValueError, match="homophily: expected a number in \\[0, 1\\], got 1.5"
    ):
        le.csbm(10, 1.5)
    with pytest.raises(
        ValueError, match=r"ect_g, ect_h: expected one shape, got \(4, 3\) and \(4, 2\)"
    ):
        le.rotation_distance_2d(torch.rand(4, 3), torch.rand(4, 2))
    with pytest.raises(ValueError, match="kind: expected one of .*, got 'gcn2'"):
        le.train_gnn(
            "gcn2",
            x,
            torch.tensor([[0], [1]]),
            torch.zeros(5, dtype=torch.long),
            torch.tensor([0]),
            torch.tensor([1]),
        )


def test_nan_features_and_bad_config_are_rejected():
    """The binned (exact) ECT and the classifiers read no NaN silently; Config fields
    are checked (issue 37)."""
    x = torch.rand(5, 2)
    x[1, 0] = float("nan")
    v, t = le.circle_directions(4), le.thresholds(5)
    with pytest.raises(ValueError, match="x: expected finite values, got NaN"):
        le.ect(x, v, t)
    with pytest.raises(ValueError, match="x: expected finite values"):
        le.local_ect(x, torch.tensor([[0], [1]]), 1, v, t)
    j = torch.zeros(5, 4, dtype=torch.long)
    with pytest.raises(
        ValueError, match=r"j: expected entry indices in \[0, num_thresholds=5\]"
    ):
        le.binned_ect(j - 1, torch.zeros(5, dtype=torch.long), 1, 5)
    with pytest.raises(
        ValueError, match=r"owner: expected graph ids in \[0, num_graphs=1\)"
    ):
        le.binned_ect(j, torch.ones(5, dtype=torch.long), 1, 5)
    with pytest.raises(TypeError, match="num_graphs: expected an int"):
        le.binned_ect(j, torch.zeros(5, dtype=torch.long), 1.5, 5)
    with pytest.raises(ValueError, match="features: expected finite values"):
        le.gbdt_accuracy(
            x,
            torch.zeros(5, dtype=torch.long),
            torch.tensor([0, 2]),
            torch.tensor([3, 4]),
        )
    with pytest.raises(ValueError, match="max_bins: expected an int in"):
        le.gbdt_accuracy(
            torch.rand(5, 2),
            torch.zeros(5, dtype=torch.long),
            torch.tensor([0, 2]),
            torch.tensor([3, 4]),
            max_bins=300,
        )
    with pytest.raises(ValueError, match="directions: expected 'circle' or 'random'"):
        le.rotation_trials(le.SMOKE, "cpu", directions="grid")
    with pytest.raises(ValueError, match="order: expected an int >= 1"):
        le.ego_moments(torch.rand(5, 2), torch.tensor([[0], [1]]), 1, v[:, :2], 0)
    with pytest.raises(TypeError, match="dtype: expected a numeric torch.dtype"):
        le.binned_ect(j, torch.zeros(5, dtype=torch.long), 1, 5, dtype=torch.bool)
    with pytest.raises(ValueError, match="kind: expected one of"):
        le.train_gnn(
            "sage",
            torch.rand(5, 2),
            torch.tensor([[0], [1]]),
            torch.zeros(5, dtype=torch.long),
            torch.tensor([0]),
            torch.tensor([1]),
        )
    for bad, words in (
        (dict(gbdt_bins=256), "gbdt_bins"),
        (dict(shift=0.0), "shift"),
        (dict(num_seeds=0), "num_seeds"),
        (dict(train_fraction=1.0), "train_fraction"),
        (dict(homophily=(0.5, 1.5)), "homophily"),
        (dict(scale=float("nan")), "scale"),
    ):
        with pytest.raises((TypeError, ValueError), match=words):
            le.Config(**bad)


# ---------------------------------------------------------------- CPU / CUDA parity
@CUDA
def test_cuda_matches_cpu():
    x, e = _random_graph(60, 0.08, seed=11, dtype=torch.float32)
    v = le.random_directions(2, 16, generator=_gen(0))
    t = le.thresholds(16)
    cpu = le.ect(x, v, t, edge_index=e)
    gpu = le.ect(x.cuda(), v.cuda(), t.cuda(), edge_index=e.cuda())
    assert torch.equal(cpu, gpu.cpu())
    for scale in (None, 500.0):
        a = le.local_ect_features(x, e, v, t, scale=scale)
        b = le.local_ect_features(x.cuda(), e.cuda(), v.cuda(), t.cuda(), scale=scale)
        assert torch.allclose(a, b.cpu(), atol=1e-5)
    cfg = dataclasses.replace(le.SMOKE, rot_trials=20)
    a, b = le.rotation_trials(cfg, "cpu"), le.rotation_trials(cfg, "cuda")
    assert (
        float((a["estimate"] == b["estimate"]).double().mean()) >= 0.9
    )  # rounding may flip a near-tie
    assert float(b["error"].max()) <= b["bound"] * 1.05
    gr = le.shape_graph(40, generator=_gen(0))
    torch.manual_seed(0)
    acc = le.train_gnn(
        "gat",
        gr.x.cuda(),
        gr.edge_index.cuda(),
        gr.y.clamp(min=0).cuda(),
        torch.arange(20).cuda(),
        torch.arange(20, 40).cuda(),
        epochs=3,
    )
    assert 0.0 <= acc <= 1.0


def test_ego_batch_ect_equals_local_ect():
    x, e = _random_graph(30, 0.1, seed=5)
    v = le.random_directions(2, 6, generator=_gen(1), dtype=torch.float64)
    t = le.thresholds(9, dtype=torch.float64)
    for k in (1, 2):
        xb, eb, batch = le.ego_batch(x, e, k)
        a = le.ect(xb, v, t, edge_index=eb, batch=batch, num_graphs=30)
        b = le.local_ect(x, e, k, v, t, ect_type="edges", normalize=False)
        assert torch.equal(a, b)


@pytest.mark.parametrize("uniform", [True, False])
def test_entry_index_equals_searchsorted_including_ties(uniform):
    t = le.thresholds(33, dtype=torch.float64)
    if not uniform:
        t = t.sign() * t.abs().pow(1.5)
    h = torch.cat(
        [
            torch.rand(5000, generator=_gen(0), dtype=torch.float64) * 3 - 1.5,
            t,
            t.nextafter(t + 1),
            t.nextafter(t - 1),
        ]
    ).view(-1, 1)  # includes every threshold and its neighbours
    assert torch.equal(le.entry_index(h, t), torch.searchsorted(t, h))


def _bad_call(name):
    """One call per check added for the bad-input sweep, with ``name`` bad."""
    x, e = _random_graph(8, 0.4, seed=3)
    v = le.random_directions(2, 3, generator=_gen(1), dtype=torch.float64)
    nan_v = v.clone()
    nan_v[0, 0] = float("nan")
    calls = {
        "k": lambda: le.ego_moments(x, e, 0, v),
        "v": lambda: le.ego_moments(x, e, 1, nan_v),
        "eps": lambda: le.ego_moments(x, e, 1, v, eps=0.0),
        "cfg": lambda: le.shape_graph_of("cfg", 0),
        "seed": lambda: le.shape_graph_of(le.SMOKE, -1),
        "h": lambda: le.csbm_seed(le.SMOKE, 1.5, 0, "cpu", methods=("lect",)),
    }
    return calls[name]


@pytest.mark.parametrize("name", ["k", "v", "eps", "cfg", "seed", "h"])
def test_sweep_checks_name_the_argument(name):
    with pytest.raises((ValueError, TypeError), match=rf"^{name}: expected"):
        _bad_call(name)()
