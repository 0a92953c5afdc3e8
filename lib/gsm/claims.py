"""The paper's claims as rules that can fail, measured on several seeds with a negative
control each.

Every seed draws its own graphs (data seed 10 000 + seed, test graphs from seed
+ 500 000) and initialises its own models; models that are compared share the seed's
graphs, initial weights and minibatches, so the differences below are paired. The
statistics are test accuracies (400 test graphs per task and seed).

How the settings were chosen: width d = 32, two layers per encoder, graphs of 10–16
nodes, 1000 training graphs, 150 Adam steps of 16 graphs (cosine decay) were fixed by
the CPU budget before any result; the learning rate, the same for every model, was
picked from {3e-3, 1e-2, 3e-2} by the mean test accuracy over the whole grid on
:data:`TUNING_SEEDS` (see :data:`TUNING`): 3e-3, the smallest rate of the grid (a
smaller one was not tried). The margins were fixed after one untuned run on tuning
seed 0 (rate 1e-2). One rule was changed after the notebook seeds were seen:
``hybrid-best`` first asked for a difference of at least 0, which a tie at 100 %
passes; it now asks for at least 0.0025 (one test graph in 400). Under the first rule
the notebook seeds give "reproduced" (three exact ties).
"""

from __future__ import annotations

from lib.common.claims import Claim, Rule, judge_all, seed_list

#: seeds on which the learning rate and the margins were chosen
TUNING_SEEDS = (0, 1)
#: seeds the notebook evaluates (held-out seeds: lib.common.claims.HELDOUT_SEEDS)
NOTEBOOK_SEEDS = (10, 11, 12)
#: mean accuracy over the grid on TUNING_SEEDS for each learning rate tried
TUNING = {3e-3: 0.698, 1e-2: 0.669, 3e-2: 0.597}

_ACC = "test accuracy difference (paired, same graphs), "

CLAIMS = (
    Claim(
        "global-hac-vs-khop",
        "on a global task (connectivity) HAC-DFS tokens beat k-hop tokens",
        paper="hybrid: HAC-DFS 90.7/91.4 vs k-hop about 70 (connectivity accuracy)",
        where="Table 1 (GraphQA tasks)",
        statistic=_ACC + "hybrid + HAC-DFS − hybrid + k-hop, connectivity",
        rule=Rule.at_least(0.1),
        control="HAC-DFS tokens without their hierarchical PE (DFS order kept)",
        expect="partly reproduced",
    ),
    Claim(
        "global-node-vs-khop",
        "on a global task node tokens (with Laplacian PE) beat k-hop tokens",
        paper="Transformer-node 85.7/86.2, Mamba-node 82.8/84.7 vs k-hop about 70",
        where="Table 1 (GraphQA tasks)",
        statistic=_ACC + "hybrid + node − hybrid + k-hop, connectivity",
        rule=Rule.at_least(0.1),
        control="node tokens without the Laplacian PE",
        expect="not reproduced",
    ),
    Claim(
        "hybrid-best",
        "hybrid + HAC-DFS is the best model on the global task",
        paper="connectivity 90.7/91.4, the best of the table",
        where="Table 1 (GraphQA tasks)",
        statistic=_ACC + "hybrid + HAC-DFS − the best other encoder/tokenisation",
        rule=Rule.at_least(0.0025),
        control="hybrid + HAC-DFS without the hierarchical PE in its place",
        fmt=".4f",
        expect="not reproduced",
    ),
    Claim(
        "local-subgraph-vs-node",
        "on a local task (node degree) k-hop and HAC-BFS tokens beat node tokens",
        paper="node tokens about 30 %; k-hop and HAC-BFS about 98 % (degree)",
        where="Table 1 (GraphQA tasks)",
        statistic=_ACC
        + "min(hybrid + k-hop, hybrid + HAC-BFS) − hybrid + node, degree",
        rule=Rule.at_least(0.2),
        control="k-hop tokens computed on a rewired graph (same n and edge count)",
    ),
    Claim(
        "order-helps-ssm",
        "the HAC-DFS order helps the recurrent model against a random order",
        paper="HAC ordering improves Mamba; Transformers are order-invariant",
        where="Sec. 4 (HAC tokenisation) and Table 1",
        statistic=_ACC + "SSM, node tokens in HAC-DFS order − in random order, "
        "connectivity",
        rule=Rule.at_least(0.1),
        control="the same difference for the Transformer (permutation-invariant)",
        expect="not reproduced",
    ),
    Claim(
        "benchmarks",
        "GSM++ beats GPS and other graph transformers on real benchmarks",
        paper="MNIST 98.84 vs GPS 98.11; CIFAR10 77.81 vs 72.26; PascalVOC-SP 0.4193",
        where="Tables 3–4",
        expect="not tested here",
    ),
    Claim(
        "mot",
        "a per-node Mixture of Tokenisation improves further",
        paper="GSM++ (MoT) the best on MNIST and CIFAR10",
        where="Table 3",
        expect="not tested here",
    ),
    Claim(
        "more-local-tasks",
        "subgraph tokens also win on cycle check and triangle counting; node and "
        "HAC-DFS tokens on colour counting",
        paper="cycle check 91–94 % (k-hop, HAC-BFS); colour counting 85.8/86.2",
        where="Table 1",
        expect="not tested here",
    ),
)


def _g(acc, key, s):
    return acc[key][s]


def measure_from_grid(acc: dict) -> dict:
    """Per-seed statistics and controls from :func:`lib.gsm.run_grid`'s accuracies
    ``{"task/encoder/kind": {seed: acc}}``."""
    c, d = "connectivity/", "degree/"
    seeds = list(acc[c + "hybrid/hac_dfs"])
    others = [
        k
        for k in acc
        if k.startswith(c) and k != c + "hybrid/hac_dfs" and "nope" not in k
    ]
    out = {}
    for cid, val, ctrl in (
        (
            "global-hac-vs-khop",
            lambda s: _g(acc, c + "hybrid/hac_dfs", s) - _g(acc, c + "hybrid/khop", s),
            lambda s: (
                _g(acc, c + "hybrid/hac_dfs_nope", s) - _g(acc, c + "hybrid/khop", s)
            ),
        ),
        (
            "global-node-vs-khop",
            lambda s: _g(acc, c + "hybrid/node", s) - _g(acc, c + "hybrid/khop", s),
            lambda s: (
                _g(acc, c + "hybrid/node_nope", s) - _g(acc, c + "hybrid/khop", s)
            ),
        ),
        (
            "hybrid-best",
            lambda s: (
                _g(acc, c + "hybrid/hac_dfs", s) - max(_g(acc, k, s) for k in others)
            ),
            lambda s: (
                _g(acc, c + "hybrid/hac_dfs_nope", s)
                - max(_g(acc, k, s) for k in others)
            ),
        ),
        (
            "local-subgraph-vs-node",
            lambda s: (
                min(_g(acc, d + "hybrid/khop", s), _g(acc, d + "hybrid/hac_bfs", s))
                - _g(acc, d + "hybrid/node", s)
            ),
            lambda s: (
                min(
                    _g(acc, d + "hybrid/khop_rewired", s),
                    _g(acc, d + "hybrid/hac_bfs", s),
                )
                - _g(acc, d + "hybrid/node", s)
            ),
        ),
        (
            "order-helps-ssm",
            lambda s: _g(acc, c + "ssm/node_dfs", s) - _g(acc, c + "ssm/node", s),
            lambda s: (
                _g(acc, c + "transformer/node_dfs", s)
                - _g(acc, c + "transformer/node", s)
            ),
        ),
    ):
        out[cid] = {
            "values": {s: float(val(s)) for s in seeds},
            "control": {s: float(ctrl(s)) for s in seeds},
        }
    return out


def measure_claims(cfg, seeds, device="cpu", grid: dict | None = None) -> dict:
    """Per-seed values of each tested claim's statistic and of its negative control:
    ``{claim id: {"values": {seed: v}, "control": {seed: v}}}``; ``grid`` (from
    :func:`lib.gsm.run_grid`) skips the training."""
    from .experiment import run_grid

    from .experiment import _check_cfg

    _check_cfg(cfg)
    seeds = seed_list(seeds)
    grid = run_grid(cfg, seeds, device=device) if grid is None else grid
    return measure_from_grid(grid["acc"])


def judge(measured: dict) -> list:
    """:func:`lib.common.claims.evaluate` for every claim of the chapter (untested ones
    included)."""
    return judge_all(CLAIMS, measured)
