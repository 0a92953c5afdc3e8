"""The chapter's runs: one (homophily, shift, seed) setting at a time, the homophily
sweep, the per-layer information estimates, and the FULL entry point."""

from __future__ import annotations

import dataclasses

import torch

from lib.common import check_choice, check_int, check_probability

from .graph import SHIFTS, connectome, csbm, shift_graph, split_nodes
from .model import KINDS, embed, train_mpnn
from .scores import all_confidences, auroc, probe_information


def _check_cfg(cfg) -> None:
    from . import Config

    if not isinstance(cfg, Config):
        raise TypeError(f"cfg: expected a jlde.Config, got {type(cfg).__name__}")


def make_graph(cfg, homophily: float, seed: int, shift: str | None = None):
    """The seed's CSBM at ``homophily`` with ``shift`` applied (None: no shift).

    Returns (graph, ood mask, train, val, test masks, number of training classes). The
    training and validation masks never contain OOD nodes."""
    _check_cfg(cfg)
    check_probability("homophily", homophily)
    check_int("seed", seed, 0)
    g = torch.Generator().manual_seed(seed)
    G = csbm(
        cfg.num_nodes,
        cfg.num_classes,
        cfg.dim,
        cfg.degree,
        homophily,
        cfg.informative,
        cfg.signal,
        generator=g,
    )
    if shift is None:
        ood = torch.zeros(G.num_nodes, dtype=torch.bool)
    else:
        check_choice("shift", shift, SHIFTS)
        G, ood = shift_graph(G, shift, cfg.ood_fraction, generator=g)
    tr, va, te = split_nodes(G.num_nodes, cfg.train_fraction, 0.1, generator=g)
    C = cfg.num_classes - (shift == "leave_out_class")
    return G, ood, tr & ~ood, va & ~ood, te, C


def run_setting(
    cfg,
    homophily: float,
    shift: str | None,
    seed: int,
    *,
    kind: str = "gcn",
    device="cpu",
    information: bool = False,
) -> dict:
    """Train one model on the seed's (shifted) graph and score it.

    Returns ``{"acc": test accuracy on ID nodes, "val_acc": …, "ood": {score: AUROC}
    (with a shift), "mis": {score: misclassification AUROC on ID test nodes},
    "info": [I(Y; H^(l)) for l = 0..L] (with ``information``)}``.
    """
    check_choice("kind", kind, KINDS)
    G, ood, tr, va, te, C = make_graph(cfg, homophily, seed, shift)
    return _train_and_score(
        cfg, G, ood, (tr, va, te), C, seed, kind, device, information, shift is not None
    )


def _train_and_score(cfg, G, ood, masks, C, seed, kind, device, information, shifted):
    """Train an MPNN on ``masks[0]`` of ``G`` and score every node (see run_setting)."""
    tr, va, te = masks
    G = G.to(device)
    model = train_mpnn(
        G,
        tr.to(device),
        C,
        kind=kind,
        hidden=cfg.hidden,
        depth=cfg.depth,
        epochs=cfg.epochs,
        lr=cfg.lr,
        dropout=cfg.dropout,
        seed=seed,
    )
    logits, states = embed(model, G)
    logits, states = logits.cpu(), [s.cpu() for s in states]
    y = G.y.cpu()
    pred = logits.argmax(1)
    idt = te & ~ood  # in-distribution test nodes
    out = {
        "acc": float((pred[idt] == y[idt]).double().mean()),
        "val_acc": float((pred[va] == y[va]).double().mean()),
    }
    conf = all_confidences(states, logits, tr, cfg.k)
    right = pred[idt] == y[idt]
    if bool(right.any()) and not bool(right.all()):
        out["mis"] = {s: auroc(c[idt][right], c[idt][~right]) for s, c in conf.items()}
    if shifted:
        oo = ood & ~tr & ~va  # OOD nodes outside the labelled sets
        out["ood"] = {s: auroc(c[idt], c[oo]) for s, c in conf.items()}
    if information:
        probe_tr, probe_te = tr | va, te & ~ood
        out["info"] = [
            probe_information(s, y, probe_tr, probe_te, cfg.probe_steps) for s in states
        ]
    return out


def real_graph(
    cfg, seed: int, left_out: str = "O", *, kind: str = "gcn", device="cpu"
) -> dict:
    """The left-out-class check on a real graph: the Drosophila mushroom-body
    connectome (:func:`lib.jlde.graph.connectome`), cell type ``left_out`` never
    trained on. The split, the network and the scores are the CSBM runs' own (``cfg``);
    returns run_setting's dict (``"acc"``, ``"ood"``, ``"mis"``)."""
    _check_cfg(cfg)
    check_int("seed", seed, 0)
    check_choice("kind", kind, KINDS)
    G = connectome("left", left_out)
    G, ood = shift_graph(G, "leave_out_class")
    g = torch.Generator().manual_seed(seed)
    tr, va, te = split_nodes(G.num_nodes, cfg.train_fraction, 0.1, generator=g)
    C = int(G.y.max())  # the training classes: all but the last
    masks = (tr & ~ood, va & ~ood, te)
    return _train_and_score(cfg, G, ood, masks, C, seed, kind, device, False, True)


def homophily_sweep(cfg, seed: int | None = None, device="cpu") -> dict:
    """AUROC of every score for each shift, and the per-layer information, over
    ``cfg.homophilies`` (one seed): ``{h: {"ood": {shift: {score: auroc}}, "info":
    [...], "acc": …}}``."""
    _check_cfg(cfg)
    seed = cfg.seed if seed is None else check_int("seed", seed, 0)
    out = {}
    for h in cfg.homophilies:
        clean = run_setting(cfg, h, None, seed, device=device, information=True)
        row = {"info": clean["info"], "acc": clean["acc"], "mis": clean.get("mis")}
        row["ood"] = {
            s: run_setting(cfg, h, s, seed, device=device)["ood"] for s in SHIFTS
        }
        out[h] = row
    return out


def tune(cfg, seeds, device="cpu", grid=None) -> dict:
    """Validation accuracy (ID nodes, no shift) of each (epochs, hidden) in ``grid`` on
    ``seeds`` at the homophilies of the claims: the model is chosen on validation
    accuracy alone, before any uncertainty score is looked at."""
    from lib.common.claims import seed_list

    _check_cfg(cfg)
    seeds = seed_list(seeds)
    if grid is None:
        grid = [(e, w) for e in (50, 100, 200) for w in (32, 64)]
    if (
        isinstance(grid, (str, bytes))
        or not isinstance(grid, (list, tuple))
        or not grid
    ):
        raise TypeError(
            f"grid: expected a non-empty list of (epochs, hidden), got {grid!r}"
        )
    for i, pair in enumerate(grid):
        if not isinstance(pair, (list, tuple)) or len(pair) != 2:
            raise TypeError(
                f"grid[{i}]: expected a pair (epochs, hidden), got {pair!r}"
            )
        check_int(f"grid[{i}]", pair[0], 1), check_int(f"grid[{i}]", pair[1], 1)
    res = {}
    for e, w in grid:
        c = dataclasses.replace(cfg, epochs=e, hidden=w)
        accs = [
            run_setting(c, h, None, s, device=device)["val_acc"]
            for s in seeds
            for h in (cfg.low_h, cfg.high_h)
        ]
        res[(e, w)] = sum(accs) / len(accs)
    return res


def run_experiment(cfg, device=None) -> dict:
    """The FULL (or SMOKE) run: the homophily sweep on ``cfg.seed`` and the claims on
    ``cfg.claim_seeds``, as plain JSON-able numbers (``device``: None means the CPU)."""
    from .claims import measure_claims

    _check_cfg(cfg)
    device = "cpu" if device is None else device
    sweep = homophily_sweep(cfg, device=device)
    measured = measure_claims(cfg, cfg.claim_seeds, device)
    return {
        "sweep": {str(h): v for h, v in sweep.items()},
        "claims": {
            cid: {part: {str(s): v for s, v in d.items()} for part, d in m.items()}
            for cid, m in measured.items()
        },
    }
