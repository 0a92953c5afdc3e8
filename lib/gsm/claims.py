"""The paper's claims as rules that can fail, measured on several seeds with a negative
control each.

Every seed draws its own graphs (data seed 10 000 + seed, test graphs from seed
+ 500 000) and initialises its own models; models that are compared share the seed's
graphs, initial weights and minibatches, so the differences below are paired. The
statistics are test accuracies (400 test graphs per task and seed).

How the settings were chosen: width d = 32, two layers per encoder, graphs of 10–16
nodes, 1000 training graphs, 150 Adam steps of 16 graphs (cosine decay) were fixed by
the CPU budget before any result. The learning rate, the same for every model, is
picked from :data:`lib.gsm.tune.RATES` by the mean test accuracy over the whole grid on
:data:`TUNING_SEEDS` (``python -m lib.gsm.tune --write`` → ``tuning.json``), and each
claim's expected verdict is its verdict on the tuning seeds at that rate, unless the
held-out seeds gave a weaker one (:data:`OVERRULED`; the weaker one is recorded).

The claims are stated so that the compared models differ in one ingredient, not in
whether the tokens carry the answer: subgraph tokens are compared on degree with node
tokens that have a *local GNN encoder* and a constant input channel (without them, node
tokens cannot see a degree at all); the DFS order is compared with a
*component-contiguous order without HAC* (an order the SSM can see that carries no
HAC information); the hybrid is compared with its two halves on *node tokens*, where no
model is at the ceiling. HAC-DFS against k-hop tokens is not judged: on connectivity the
hierarchical PE names each node's component, so HAC-DFS tokens, and k-hop tokens given
that PE, answer every test graph by a lookup (the comparison cannot fail one way without
the PE, nor pass with it). The margins (0.02, 0.20, 0.10, and 0.10 for cycle check)
were set before these statistics were computed (cycle check's data and baseline were
redesigned after an outside referee found that the first design's classes differed in
their number of components; the margin stayed); triangles through s is shown but not
judged: the radius-1 k-hop token stores the count, HAC-BFS tokens cannot express it and
one sum-aggregation layer cannot count triangles, so its outcome is fixed by the token
encodings; the node-token accuracies that hybrid-best compares were
already known from the chapter's grid.
"""

from __future__ import annotations

import dataclasses
import json
import pathlib

from lib.common.claims import Claim, Rule, judge_all, seed_list

#: seeds on which the learning rate and the margins were chosen
TUNING_SEEDS = (0, 1)
#: seeds the notebook evaluates (held-out seeds: lib.common.claims.HELDOUT_SEEDS)
NOTEBOOK_SEEDS = (10, 11, 12)
#: the tuning run (lib.gsm.tune): mean accuracy over the grid per learning rate, the
#: chosen rate and each claim's verdict on TUNING_SEEDS
TUNING = json.loads((pathlib.Path(__file__).with_name("tuning.json")).read_text())
#: the same for the MNIST models (lib.gsm.tune --images): each model's rate, chosen on
#: the tuning seeds' validation digits, and the benchmarks claim's verdict there
TUNING_IMAGES = json.loads(
    (pathlib.Path(__file__).with_name("tuning_images.json")).read_text()
)

#: claims whose recorded verdict is weaker than the tuning seeds' verdict because the
#: held-out seeds gave the weaker one (the tuning seeds' prediction did not hold)
OVERRULED = {
    "hybrid-best": "partly reproduced on the tuning seeds, the weakest partly there "
    "is (1 of 2 seeds at the margin, mean +0.009 < 0.02); not reproduced held out",
}

_ACC = "test accuracy difference (paired, same graphs), "

CLAIMS = (
    Claim(
        "global-hac-vs-khop",
        "on a global task (connectivity) HAC-DFS tokens beat k-hop tokens",
        paper="hybrid: HAC-DFS 90.7/91.4 vs k-hop about 70 (connectivity accuracy)",
        where="Table 1 (GraphQA tasks; the k-hop figure second-hand, approximate)",
        expect="not tested here",
    ),
    Claim(
        "global-node-vs-khop",
        "on a global task node tokens (with Laplacian PE) beat k-hop tokens",
        paper="Transformer-node 85.7/86.2, Mamba-node 82.8/84.7 vs k-hop about 70",
        where="Table 1 (GraphQA tasks; the k-hop figure second-hand, approximate)",
        statistic=_ACC + "hybrid + node − hybrid + k-hop, connectivity",
        rule=Rule.at_least(0.1),
        control="node tokens without the Laplacian PE",
        expect="not reproduced",
    ),
    Claim(
        "hybrid-best",
        "the hybrid encoder (SSM then Transformer) beats the SSM and the Transformer "
        "on the same tokens",
        paper="connectivity 90.7/91.4 for hybrid + HAC-DFS, the best of the table",
        where="Table 1 (GraphQA tasks)",
        statistic=_ACC + "hybrid − max(SSM, Transformer), node tokens (Laplacian PE, "
        "random order; below ceiling), connectivity",
        rule=Rule.at_least(0.02),
        control="the hybrid given node tokens without their PE",
        fmt=".3f",
        expect="not reproduced",
    ),
    Claim(
        "local-subgraph-vs-node",
        "on a local task (node degree) k-hop and HAC-BFS tokens beat node tokens, "
        "the node tokens with a local GNN encoder",
        paper="node tokens about 30 %; k-hop and HAC-BFS about 98 % (degree)",
        where="Table 1 (GraphQA tasks; second-hand, approximate)",
        statistic=_ACC
        + "min(hybrid + k-hop, hybrid + HAC-BFS) − hybrid + node tokens with one "
        "sum-aggregation GNN layer, degree",
        rule=Rule.at_least(0.2),
        control="k-hop tokens computed on a rewired graph (same n and edge count)",
        expect="not reproduced",
    ),
    Claim(
        "order-helps-ssm",
        "the HAC-DFS order helps the recurrent model",
        paper="HAC ordering improves Mamba; Transformers are order-invariant",
        where="Sec. 4 (HAC tokenisation) and Table 1",
        statistic=_ACC + "SSM, node tokens in HAC-DFS order − in a component-"
        "contiguous order without HAC, connectivity",
        rule=Rule.at_least(0.1),
        control="the same SSM and tokens, random order − component-contiguous order",
        expect="not reproduced",
    ),
    Claim(
        "benchmarks",
        "on MNIST digits as graphs GSM++ beats a GCN, a graph Transformer and a "
        "GPS-style Transformer",
        paper="MNIST 98.84 vs GPS 98.11; CIFAR10 77.81 vs 72.26; PascalVOC-SP 0.4193",
        where="Tables 3–4 (ours: a small MNIST subset, pixel graphs)",
        statistic=_ACC.replace("graphs", "digits")
        + "GSM++ − max(GCN, Transformer, GPS-style), MNIST pixel graphs",
        rule=Rule.at_least(0.005),
        control="GSM++ without HAC (node tokens in random order, Laplacian PE)",
        fmt=".3f",
        expect=TUNING_IMAGES["verdicts"]["benchmarks"],
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
        "subgraph tokens also win a second local task, cycle check (is s on a "
        "cycle?), against node tokens with or without a local GNN encoder",
        paper="cycle check 91–94 % (k-hop, HAC-BFS); node tokens fail on local tasks",
        where="Table 1 (second-hand, approximate; the paper asks whether the graph "
        "has a cycle)",
        statistic=_ACC
        + "min(hybrid + k-hop, hybrid + HAC-BFS) − max(hybrid + node tokens, the "
        "same with one GNN layer), cycle check",
        rule=Rule.at_least(0.1),
        control="k-hop and HAC-BFS tokens computed on a rewired graph (same n and edge "
        "count)",
        expect="not reproduced",
    ),
    Claim(
        "colour-counting",
        "on colour counting (global) node and HAC-DFS tokens beat subgraph tokens",
        paper="colour counting 85.8/86.2 for hybrid + HAC-DFS",
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

    def a(key, s):
        return _g(acc, key, s)

    def best_other(kind, s):  # the better single-type encoder on ``kind``
        return max(a(c + "ssm/" + kind, s), a(c + "transformer/" + kind, s))

    def subgraph(s, khop="khop", task=d):
        return min(a(task + "hybrid/" + khop, s), a(task + "hybrid/hac_bfs", s))

    def cycle(s, rewired=""):  # subgraph tokens − the better node tokens, cycle
        best_node = max(a("cycle/hybrid/node", s), a("cycle/hybrid/node_gcn", s))
        khop, hac = (a(f"cycle/hybrid/{k}{rewired}", s) for k in ("khop", "hac_bfs"))
        return min(khop, hac) - best_node

    rules = {
        "global-node-vs-khop": (
            lambda s: a(c + "hybrid/node", s) - a(c + "hybrid/khop", s),
            lambda s: a(c + "hybrid/node_nope", s) - a(c + "hybrid/khop", s),
        ),
        "hybrid-best": (
            lambda s: a(c + "hybrid/node", s) - best_other("node", s),
            lambda s: a(c + "hybrid/node_nope", s) - best_other("node", s),
        ),
        "local-subgraph-vs-node": (
            lambda s: subgraph(s) - a(d + "hybrid/node_gcn", s),
            lambda s: subgraph(s, "khop_rewired") - a(d + "hybrid/node_gcn", s),
        ),
        "more-local-tasks": (
            lambda s: cycle(s),
            lambda s: cycle(s, "_rewired"),
        ),
        "order-helps-ssm": (
            lambda s: a(c + "ssm/node_dfs", s) - a(c + "ssm/node_cc", s),
            lambda s: a(c + "ssm/node", s) - a(c + "ssm/node_cc", s),
        ),
    }
    return {
        cid: {
            "values": {s: float(val(s)) for s in seeds},
            "control": {s: float(ctrl(s)) for s in seeds},
        }
        for cid, (val, ctrl) in rules.items()
    }


def measure_images(acc: dict) -> dict:
    """The benchmarks claim's per-seed statistic and control from the MNIST models'
    accuracies ``{model: {seed: acc}}`` (:func:`lib.gsm.images.run_images`)."""
    from .images import IMG_BASELINES, IMG_MODELS

    if not isinstance(acc, dict) or set(acc) != set(IMG_MODELS):
        raise ValueError(
            f"acc: expected accuracies of the models {sorted(IMG_MODELS)}, got "
            f"{sorted(acc) if isinstance(acc, dict) else type(acc).__name__}"
        )
    seeds = list(acc["gsm++"])

    def best_base(s):
        return max(acc[b][s] for b in IMG_BASELINES)

    return {
        "benchmarks": {
            "values": {s: float(acc["gsm++"][s] - best_base(s)) for s in seeds},
            "control": {s: float(acc["gsm++ no HAC"][s] - best_base(s)) for s in seeds},
        }
    }


def judge_images(acc: dict):
    """The benchmarks claim judged from the MNIST accuracies (paired)."""
    from lib.common.claims import evaluate

    m = measure_images(acc)["benchmarks"]
    claim = next(c for c in CLAIMS if c.id == "benchmarks")
    return evaluate(claim, m["values"], control=m["control"], paired=True)


def measure_claims(
    cfg, seeds, device="cpu", grid: dict | None = None, images: dict | None = None
) -> dict:
    """Per-seed values of each tested claim's statistic and of its negative control:
    ``{claim id: {"values": {seed: v}, "control": {seed: v}}}``; ``grid`` (from
    :func:`lib.gsm.run_grid`) and ``images`` (from :func:`lib.gsm.images.run_images`)
    skip the training."""
    from .experiment import _check_cfg, run_grid
    from .images import run_images

    _check_cfg(cfg)
    seeds = seed_list(seeds)
    grid = run_grid(cfg, seeds, device=device) if grid is None else grid
    images = run_images(cfg, seeds, device=device) if images is None else images
    return measure_from_grid(grid["acc"]) | measure_images(images["acc"])


def judge(measured: dict) -> list:
    """:func:`lib.common.claims.evaluate` for every claim of the chapter (untested ones
    included); every statistic is a paired difference (same seed, graphs, initial
    weights and minibatches)."""
    return [dataclasses.replace(r, paired=True) for r in judge_all(CLAIMS, measured)]
