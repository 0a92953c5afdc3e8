"""Diss-l-ECT: Dissecting Graph Data with Local Euler Characteristic Transforms.

Julius von Rohrscheidt, Bastian Rieck. ICML 2025. https://arxiv.org/abs/2410.02622
Code: https://github.com/aidos-lab/Diss-l-ECT

Claim: describing every node by the Euler Characteristic Transform of its k-hop
neighbourhood, embedded at the node features (the local ECT, ℓ-ECT), keeps the
neighbourhood's shape that mean-aggregating message passing throws away;
gradient-boosted trees on [ℓ-ECT₁, ℓ-ECT₂, x] match or beat GNNs on node classification,
especially under heterophily, and the ECT gives a rotation-invariant distance for
aligning embedded data.

Key equations:

    ECT(K)(ω, t) = χ({y ∈ K : ⟨y, ω⟩ ≤ t})
                 = #{u : ⟨x_u, ω⟩ ≤ t} − #{(u, w) ∈ E : max(⟨x_u, ω⟩, ⟨x_w, ω⟩) ≤ t}
                     (1)
    d(G, H) = min_R ‖ECT(G) − ECT(RH)‖,  ECT(RH)(ω, ·) = ECT(H)(Rᵀω, ·)  (2)
    ℓ-ECT_k(c) = ECT(N_k(c)) = Σ_u 1[dist(c, u) ≤ k] · 1[⟨x_u, ω⟩ ≤ t]  (points version)
        (3)

Public API: :func:`ect` (batched exact / sigmoid ECT), :func:`local_ect` and
:func:`local_ect_features` (all nodes in one pass), :func:`rotation_distance_2d`,
:func:`rotation_distance`, the generators :func:`shape_graph` and :func:`csbm`, the
baselines :class:`GCN`, :class:`GAT`, :class:`GIN`, :class:`H2GCN`, :func:`train_gnn`,
:func:`gbdt_accuracy`, :func:`ego_moments`, and :func:`run_experiment` with the presets
:data:`SMOKE` and :data:`FULL`. The claims ledger: :data:`CLAIMS`,
:func:`measure_claims`, :func:`judge` (``lib/local_ect/claims.py``).
"""

from __future__ import annotations

from dataclasses import dataclass

from lib.common import check_int, check_numbers, check_positive, check_probability

from .data import (
    MOMENT_RINGS,
    Graph,
    csbm,
    edge_homophily,
    moment_graph,
    shape_graph,
    split,
)
from .ect import (
    binned_ect,
    circle_directions,
    ect,
    entry_index,
    heights,
    random_directions,
    rotation_distance,
    rotation_distance_2d,
    step,
    thresholds,
    undirected_edges,
)
from .experiment import (
    BASELINES,
    HAND_MADE,
    METHODS,
    PAPER_GNNS,
    csbm_seed,
    shape_graph_of,
    shape_seed,
    evaluate_graph,
    rotation_trials,
    run_csbm,
    run_experiment,
    run_rotation,
    run_shape,
    summarize,
)
from .local import (
    adjacency,
    ego_batch,
    ego_edge_masks,
    ego_masks,
    ego_mean,
    ego_moments,
    ego_pairs,
    local_ect,
    local_ect_features,
    normalize_max,
)
from .models import (
    GAT,
    GCN,
    GIN,
    GNN_KINDS,
    H2GCN,
    gbdt_accuracy,
    gcn_norm,
    train_gnn,
    two_hop,
)


@dataclass(frozen=True)
class Config:
    """Everything the experiments depend on. ``SMOKE`` runs on a 2-core CPU in the book;
    ``FULL`` (more seeds, larger graphs, the paper's 64 × 64 ECT images) is for a GPU
    machine."""

    seed: int = 0
    num_seeds: int = 3
    train_fraction: float = 0.5
    # shape-defined classes (moment_graph: two rings against three, every projected
    # moment of order ≤ 5 equal); satellites are leaves (noise_degree 0) so that
    # message passing sees each one unmixed
    num_centres: int = 200
    noise_degree: int = 0
    shift: float = 0.1
    moment_order: int = 4
    # contextual SBM swept over homophily
    csbm_nodes: int = 600
    csbm_degree: float = 6.0
    csbm_dim: int = 2
    csbm_signal: float = 0.5
    homophily: tuple = (0.1, 0.5, 0.9)  # the claims use 0.1 only (claims.HETEROPHILY)
    # ECT: K directions, T thresholds in [-radius, radius], sigmoid scale (the paper's
    # 500)
    num_directions: int = 16
    num_thresholds: int = 16
    radius: float = 1.1
    scale: float = 500.0
    # classifiers
    gbdt_iter: int = 100
    gbdt_bins: int = 64  # histogram bins (255 by default; 64 for the CPU budget)
    gnn_hidden: int = 64  # the official baselines' width
    gnn_epochs: int = 100
    gnn_lr: float = 0.01
    # rotation recovery
    rot_directions: int = 64
    rot_thresholds: int = 32
    rot_points: int = 150
    rot_trials: int = 500
    rot_scale: float = (
        20.0  # a smooth ECT: the shift distance varies smoothly with the angle
    )

    def __post_init__(self):
        check_int("seed", self.seed, 0)
        for name, least in (
            ("num_seeds", 1),
            ("num_centres", 2),
            ("moment_order", 2),
            ("noise_degree", 0),
            ("csbm_nodes", 4),
            ("csbm_dim", 1),
            ("num_directions", 1),
            ("num_thresholds", 2),
            ("gbdt_iter", 1),
            ("gbdt_bins", 2),
            ("gnn_hidden", 1),
            ("gnn_epochs", 1),
            ("rot_directions", 1),
            ("rot_thresholds", 2),
            ("rot_points", 1),
            ("rot_trials", 1),
        ):
            check_int(name, getattr(self, name), least)
        if not 0 < check_probability("train_fraction", self.train_fraction) < 1:
            raise ValueError(
                f"train_fraction: expected a share in (0, 1), got {self.train_fraction}"
            )
        for name in (
            "csbm_degree",
            "csbm_signal",
            "radius",
            "shift",
            "scale",
            "gnn_lr",
            "rot_scale",
        ):
            check_positive(name, getattr(self, name))
        check_numbers("homophily", self.homophily, check_probability)
        if self.gbdt_bins > 255:
            raise ValueError(f"gbdt_bins: expected at most 255, got {self.gbdt_bins}")


SMOKE = Config()
FULL = Config(
    num_seeds=5,
    num_centres=2000,
    csbm_nodes=4000,
    num_directions=64,
    num_thresholds=64,
    gnn_epochs=300,
    gbdt_bins=255,
    rot_trials=2000,
)

from . import claims  # noqa: E402  (needs Config)
from .claims import (  # noqa: E402
    CLAIMS,
    NOTEBOOK_SEEDS,
    TUNING_SEEDS,
    accuracy_tables,
    claims_from_runs,
    judge,
    measure_claims,
    run_seeds,
)

__all__ = [
    "Config",
    "CLAIMS",
    "NOTEBOOK_SEEDS",
    "TUNING_SEEDS",
    "claims",
    "run_seeds",
    "claims_from_runs",
    "measure_claims",
    "judge",
    "accuracy_tables",
    "moment_graph",
    "MOMENT_RINGS",
    "shape_graph_of",
    "shape_seed",
    "csbm_seed",
    "BASELINES",
    "HAND_MADE",
    "PAPER_GNNS",
    "GNN_KINDS",
    "GIN",
    "H2GCN",
    "two_hop",
    "ego_moments",
    "SMOKE",
    "FULL",
    "run_experiment",
    "ect",
    "heights",
    "step",
    "thresholds",
    "random_directions",
    "circle_directions",
    "undirected_edges",
    "entry_index",
    "binned_ect",
    "rotation_distance_2d",
    "rotation_distance",
    "adjacency",
    "ego_pairs",
    "ego_masks",
    "ego_batch",
    "ego_edge_masks",
    "local_ect",
    "local_ect_features",
    "ego_mean",
    "normalize_max",
    "Graph",
    "shape_graph",
    "csbm",
    "split",
    "edge_homophily",
    "GCN",
    "GAT",
    "gcn_norm",
    "train_gnn",
    "gbdt_accuracy",
    "METHODS",
    "evaluate_graph",
    "run_shape",
    "run_csbm",
    "rotation_trials",
    "run_rotation",
    "summarize",
]
