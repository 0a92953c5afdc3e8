"""Self-checks for the jlde chapter's exercises: ``exercises.ex1(answer)`` says right,
close or wrong (with a hint) without giving the answer away. Every answer is computed
here from the chapter's own functions."""

from __future__ import annotations

import dataclasses

import torch

from lib.common.exercises import Feedback, check_choice, check_number

from .model import propagation


def ex1(answer) -> Feedback:
    """The GCN weight Â[0, 1] of the path 0 – 1 – 2."""
    e = torch.tensor([[0, 1, 1, 2], [1, 0, 2, 1]])
    truth = float(propagation(e, 3, "gcn").to_dense()[0, 1])
    return check_number(
        "jlde ex1",
        answer,
        truth,
        hint="count the self-loop in each degree: 1/sqrt(d̃_0 d̃_1)",
    )


def ex2(answer) -> Feedback:
    """Is JLDE's confidence of a training node with k = 1 always the largest possible
    (0)? (yes/no)"""
    return check_choice(
        "jlde ex2",
        answer,
        "yes",
        ("yes", "no"),
        hint="the k nearest training nodes of a training node include itself",
    )


def _joint_gap(cfg, seed: int) -> float:
    from .experiment import make_graph
    from .model import embed, train_mpnn
    from .scores import probe_information

    G, ood, tr, va, te, C = make_graph(cfg, cfg.low_h, seed, None)
    model = train_mpnn(
        G, tr, C, hidden=cfg.hidden, depth=cfg.depth, epochs=cfg.epochs, seed=seed
    )
    _, states = embed(model, G)
    joint = torch.cat(states, 1)
    i_joint = probe_information(joint, G.y, tr | va, te, cfg.probe_steps)
    i_last = probe_information(states[-1], G.y, tr | va, te, cfg.probe_steps)
    return i_joint - i_last


def ex3(answer, cfg, seed: int = 0) -> Feedback:
    """Î(Y; [X, H^(1), …, H^(L)]) − Î(Y; H^(L)) on the heterophilic graph (nats)."""
    from . import Config

    if not isinstance(cfg, Config):
        raise TypeError(f"cfg: expected a jlde.Config, got {type(cfg).__name__}")
    return check_number(
        "jlde ex3",
        answer,
        _joint_gap(cfg, seed),
        rtol=0.02,
        atol=0.005,
        hint="concatenate the states as JLDE does, then use probe_information twice",
    )


def ex4(answer, cfg, seed: int = 0) -> Feedback:
    """Î(Y; H^(1)) − Î(Y; X) when neighbours carry no label information: h = 1/C and
    uninformative heterophily (nats)."""
    from . import Config
    from .experiment import run_setting

    if not isinstance(cfg, Config):
        raise TypeError(f"cfg: expected a jlde.Config, got {type(cfg).__name__}")
    c = dataclasses.replace(cfg, informative=0.0)
    info = run_setting(c, 1 / cfg.num_classes, None, seed, information=True)["info"]
    return check_number(
        "jlde ex4",
        answer,
        info[1] - info[0],
        rtol=0.02,
        atol=0.005,
        hint="run_setting(..., information=True) with informative=0 and h = 1/C",
    )
