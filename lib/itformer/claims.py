"""The paper's claims as rules that can fail, measured on several seeds with a negative
control each.

Each seed draws its own training and test units, questions, bridge initialisations and
batches (:func:`.experiment.prepare_seed`); the frozen encoder and the frozen LM are
pretrained once, on their own pool (like the paper's pretrained parts). Every bridge
gets the same budget: the same steps, batch size, learning rate and schedule, and K
time tokens. Accuracies are exact matches on held-out units' closed questions;
"specific" questions name a channel or a cycle (``fault_in``, ``first_fault``,
``onset``), "global" ones do not (``any_fault``, ``accelerating``, ``action``).

How the settings were chosen. The sizes were fixed to fit the CPU budget before any
bridge was compared; the learning rate is the same for every bridge.

First budget (100 steps at 1e-2; tuning seed 0 only). Runs at the prior (every bridge
answering as the LM does without a series): (a) an LM pretrained 300 steps on text with
placeholders only, bridges of width 64, 300 steps at 3e-3: closed accuracy 0.49
(linear), 0.49 (ITFormer), text-only 0.49; (b) the LM pretrained 2500 steps with half
its examples' descriptions written in the slots (kept: with the true description in
the slots it answers 0.77–1.0 of each type), width 32, 150 steps at 1e-2: closed
0.44–0.46 for every bridge, ITFormer identical with the right and a shuffled series;
(c) linear and ITFormer for 800 steps at 3e-3: closed 0.49 and 0.45, ITFormer again
identical with the right and a shuffled series. The notebook and held-out seeds were
then run at 100 steps: ``reads-series`` (below) was 0 on all 11 seeds, so every
comparison was "not tested here". (In a first run, before the gate, ``expect`` had
been set from the notebook seeds alone, where ``gap-specific`` came out partly
reproduced only because its control held as well.)

The diagnosis (tuning seed 0; the chapter shows it with
:func:`.experiment.feature_share` and :func:`.experiment.series_sensitivity`): the
unit-specific part of the encoder's time tokens is about 7 % of their energy (its
learned channel and patch codes are the rest), and at 100 steps training lowered
every bridge's dependence on the series. Single runs on tuning seed 0 at 300–1500
steps, with the official code's initialisation, standardised time tokens or an
encoder without position codes, are listed in the chapter.

Second budget, the current one: 1000 steps at 3e-3, with the official code's
initialisation (TPE's channel codes from a sinusoid, instruct tokens at std 1, ITA's
update layer-normalised) and standardised time tokens. Chosen on tuning seeds 0 and 1
by the positive control alone (``reads-series`` 0.25 and 0.28 there); those runs also
printed the comparisons, which did not enter the choice. The rules and thresholds
below were written before the first budget and not changed since; at the second
budget the notebook and held-out seeds were run once, after the choice. ``expect``
records the ledger's verdicts.

Caveats (a second referee's): one frozen encoder and LM serve every seed, so the
intervals leave out the frozen parts' pretraining; the held-out seeds 1000–1007 were
also run at the first budget, where the failed gate led to the new settings (nothing
was chosen on their values); the Q-Former-style bridge does not get the official
initialisation, and the shared learning rate came from ITFormer's control. The
ITFormer-specific verdicts are for the standardised stand-in: on three seeds an
encoder without learned codes (as the official one), with raw tokens, moved
ITFormer − Q-Former towards the paper, but a scratch run of that encoder on all
eleven ledger seeds gave the same verdicts (the chapter gives the numbers); it is not
yet a preset of this library.

The gate (an outside referee's finding): where no bridge reads the series, the
comparisons between bridges compare constant answers and cannot tell one bridge from
another. ``reads-series`` is their positive control: ITFormer with the right series
minus ITFormer with a shuffled one, at least 0.05 of the closed questions (written
after the shuffled arm had come out identical on all 11 seeds at the first budget;
any positive threshold gives the same verdict there). When it is not reproduced on a
seed set, :func:`judge` records every comparison in :data:`GATED` as "not tested
here", keeping its measured values for the table.
"""

from __future__ import annotations

import dataclasses

from lib.common import check_int
from lib.common.claims import Claim, Rule, judge_all, seed_list

#: seeds on which the settings were checked
TUNING_SEEDS = (0, 1)
#: seeds the notebook evaluates (held-out seeds: lib.common.claims.HELDOUT_SEEDS)
NOTEBOOK_SEEDS = (10, 11, 12)

CLAIMS = (
    Claim(
        "reads-series",
        "the bridge reads the series: ITFormer answers better with each unit's own "
        "series than with another unit's (the comparisons' positive control)",
        paper="every comparison of bridges presumes it (not a claim of the paper)",
        where="our addition, after an outside referee's review",
        statistic="ITFormer with the right series − with a shuffled one, accuracy on "
        "closed questions",
        rule=Rule.at_least(0.05),
        expect="partly reproduced",
    ),
    Claim(
        "beats-text",
        "reading the series through ITFormer answers far better than text alone",
        paper="time-series-aware models beat text-only LLMs by wide margins on all "
        "four stages (numbers not checked)",
        where="main EngineMT-QA table",
        statistic="ITFormer − text-only (soft prompt), accuracy on closed questions",
        rule=Rule.at_least(0.10),
        control="the same ITFormer tested with every question paired with another "
        "unit's series",
        expect="partly reproduced",
    ),
    Claim(
        "beats-qformer",
        "ITFormer beats a Q-Former-style bridge at the same token count",
        paper="ITFormer > Q-Former-style and linear bridges (numbers not checked)",
        where="main table and the bridge comparison",
        statistic="ITFormer − Q-Former, accuracy on channel/cycle-specific questions",
        rule=Rule.at_least(0.03),
        control="ITFormer without the question (instruct tokens alone) in ITFormer's "
        "place",
        expect="not reproduced",
    ),
    Claim(
        "qformer-ge-linear",
        "a Q-Former-style bridge is at least as good as a linear projection",
        paper="Q-Former ≥ linear projection (our reading of the ordering)",
        where="bridge comparison",
        statistic="Q-Former − linear, accuracy on closed questions",
        rule=Rule.at_least(0.0),
        control="text-only in Q-Former's place",
        expect="reproduced",
    ),
    Claim(
        "gap-specific",
        "the gain is largest on questions that name a channel or a cycle",
        paper="query-conditioned selection matters most there (our reading of §4)",
        where="§4 (ITA's motivation); research notes' expected shape",
        statistic="(ITFormer − linear) on specific − (ITFormer − linear) on global "
        "questions",
        rule=Rule.at_least(0.03),
        control="Q-Former (no question) in ITFormer's place",
        expect="partly reproduced",
    ),
    Claim(
        "ablate-ita",
        "removing ITA (flat cross-attention instead) hurts the specific questions",
        paper="the ablation without ITA loses accuracy (numbers not checked)",
        where="ablation table",
        statistic="ITFormer − (−ITA), accuracy on specific questions",
        rule=Rule.at_least(0.02),
        control="the same difference on the global questions",
        expect="not reproduced",
    ),
    Claim(
        "ablate-instruct",
        "instruct tokens that read the question matter for the specific questions",
        paper="the ablation without learnable instruct tokens loses accuracy",
        where="ablation table",
        statistic="ITFormer − (−instruction: the question not read), accuracy on "
        "specific questions",
        rule=Rule.at_least(0.03),
        control="the same difference on the global questions",
        expect="not reproduced",
    ),
    Claim(
        "ablate-tpe",
        "removing the time-token position codes hurts 'at what cycle' questions",
        paper="the ablation without TPE loses accuracy",
        where="ablation table",
        statistic="ITFormer − (−TPE), accuracy on the onset questions",
        rule=Rule.at_least(0.03),
        control="the same difference on the global questions",
        expect="not reproduced",
    ),
    Claim(
        "param-ratio",
        "the bridge trains under 1 % of the LM's parameters",
        paper="< 1 % additional trainable parameters",
        where="abstract; §4",
        expect="not tested here",
    ),
    Claim(
        "enginemt-qa",
        "EngineMT-QA accuracies (e.g. 7B: perception 0.80–0.85, reasoning 0.70–0.80)",
        paper="repo FAQ ranges; community reruns came out lower (0.5B: 0.58 and 0.34)",
        where="repo: README FAQ; issues #3, #19, #26",
        expect="not tested here",
    ),
)


#: the comparisons that need the series to be read (judged only when reads-series
#: holds on the seed set, else "not tested here")
GATED = (
    "beats-text",
    "beats-qformer",
    "qformer-ge-linear",
    "gap-specific",
    "ablate-ita",
    "ablate-instruct",
    "ablate-tpe",
)


def _gap(a: dict, li: dict) -> float:
    """(a − linear) on the specific questions − (a − linear) on the global ones."""
    return (a["specific"] - li["specific"]) - (a["global"] - li["global"])


def measure_from_runs(runs: dict) -> dict:
    """Per-seed statistics and controls from :func:`.experiment.run_seeds`' output."""
    out = {c.id: {"values": {}, "control": {}} for c in CLAIMS if c.rule is not None}

    def put(cid, s, v, c):
        out[cid]["values"][s] = float(v)
        out[cid]["control"][s] = float(c)

    for s, r in runs.items():
        s = int(s)
        it, sh, tx = r["itformer"], r["itformer_shuffled"], r["text"]
        qf, li, ni = r["qformer"], r["linear"], r["no_instruct"]
        na, nt = r["no_ita"], r["no_tpe"]
        out["reads-series"]["values"][s] = float(it["closed"] - sh["closed"])
        put("beats-text", s, it["closed"] - tx["closed"], sh["closed"] - tx["closed"])
        put(
            "beats-qformer",
            s,
            it["specific"] - qf["specific"],
            ni["specific"] - qf["specific"],
        )
        put(
            "qformer-ge-linear",
            s,
            qf["closed"] - li["closed"],
            tx["closed"] - li["closed"],
        )
        put("gap-specific", s, _gap(it, li), _gap(qf, li))
        put(
            "ablate-ita",
            s,
            it["specific"] - na["specific"],
            it["global"] - na["global"],
        )
        put(
            "ablate-instruct",
            s,
            it["specific"] - ni["specific"],
            it["global"] - ni["global"],
        )
        put("ablate-tpe", s, it["onset"] - nt["onset"], it["global"] - nt["global"])
    return out


def _one_seed(cfg, seed: int, device) -> tuple:
    """A worker's job: one seed's run on one torch thread."""
    import torch

    from .experiment import run_seeds

    torch.set_num_threads(1)
    return seed, run_seeds(cfg, [seed], device)[seed]


def measure_claims(
    cfg, seeds, device="cpu", runs: dict | None = None, processes: int | None = None
) -> dict:
    """``{claim id: {"values": {seed: v}, "control": {seed: v}}}``; ``runs`` (from
    :func:`.experiment.run_seeds` on the same seeds) skips the training.

    On the CPU the seeds run in ``processes`` spawned workers (default: one per core,
    at most one per seed), each seed alone on one torch thread; each bridge trains on
    its own batches either way (:func:`.experiment.train_bridges`). From a script,
    call it under ``if __name__ == "__main__":``."""
    import os

    from .experiment import run_seeds

    seeds = seed_list(seeds)
    if processes is not None:
        check_int("processes", processes, 1)
    if runs is None:
        n = min(len(seeds), processes or os.cpu_count() or 1)
        if n > 1 and str(device) == "cpu":
            import multiprocessing as mp

            ctx = mp.get_context("spawn")  # no fork after torch's pools started
            with ctx.Pool(n) as pool:
                jobs = [(cfg, s, device) for s in seeds]
                runs = dict(pool.starmap(_one_seed, jobs, chunksize=1))
        else:
            runs = run_seeds(cfg, seeds, device)
    return measure_from_runs(runs)


def judge(measured: dict) -> list:
    """:func:`lib.common.claims.evaluate` for every claim (untested ones included); the
    comparisons in :data:`GATED` are "not tested here" when ``reads-series`` is not
    reproduced on these seeds."""
    results = judge_all(CLAIMS, measured)
    gate = next(r for r in results if r.claim.id == "reads-series")
    if gate.verdict in ("reproduced", "partly reproduced"):
        return results
    return [
        dataclasses.replace(r, verdict="not tested here") if r.claim.id in GATED else r
        for r in results
    ]
