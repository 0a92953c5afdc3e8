"""Self-Inf-N against random benign samples above the floor of the chosen rate.

At the chapter's attack rate (2e-4) no benign selection breaks the refusal in any
fresh world, so the harm comparisons are decided by a floor: both sides are 0.
``python benchmarks/self_inf_n_high_lr.py [seeds]`` builds fresh worlds (never used to
choose a setting; default 3001-3003), scores each pool on the aligned model, and
fine-tunes on the Self-Inf-N, vanilla Self-Inf and random selections at 2e-4, 1e-3
(where fine-tuning on harmful data still gives the content away, 0.58 on the tuning
worlds, and benign fine-tuning starts to cost accuracy) and 1.5e-3 (the chapter's
earlier rate), with the claims' one fine-tuning seed per world; and once more with
the official repository's fine-tuning recipe in place of ours (:func:`official_ft`).
Each rate also fine-tunes on the 100 harmful samples (our recipe), so that the
content share of the ledger's content-vs-random row,
(NLL_random - NLL_SelfInfN) / (NLL_random - NLL_harmful), can be read at every rate.
It writes
``results/self_inf_n.high_lr.json``; no claim is judged on it, it is reported beside
the ledger.
"""

import json
import pathlib
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import copy  # noqa: E402
import dataclasses  # noqa: E402

import torch  # noqa: E402

from lib.common import set_threads  # noqa: E402
from lib.common.gpt import lm_loss  # noqa: E402
from lib import self_inf_n as S  # noqa: E402

LRS = (2e-4, 1e-3, 1.5e-3)
NAMES = ("self_inf_n", "self_inf", "random")
KEYS = ("harmful", "form", "refusal", "length", "content_nll", "refusal_nll")


def _row(ev: dict) -> dict:
    out = {k: ev["held"][k] for k in KEYS}
    out["benign_acc"] = ev["benign_acc"]
    out["benign_length"] = ev["benign_length"]
    return out


def official_ft(model, w, samples, lr: float, seed: int, epochs: int = 5):
    """The official fine-tuning recipe, as we read it (2 GPUs x batch 20): batches of
    40 with the last partial batch dropped (2 steps an epoch, 10 in all), AdamW with
    default betas (0.9, 0.999) and no weight decay, the rate times 0.85 after each
    epoch (StepLR), no warm-up, no gradient clipping. Ours (lib.common.gpt.fit_lm):
    batch 20 (25 steps), betas (0.9, 0.95), cosine schedule with 2 warm-up steps,
    gradient norm clipped at 1."""
    model = copy.deepcopy(model)
    x, y, m = S.encode(w, samples, model.cfg.block_size)
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0)
    sched = torch.optim.lr_scheduler.StepLR(opt, 1, gamma=0.85)
    g = torch.Generator().manual_seed(seed)
    model.train()
    for _ in range(epochs):
        perm = torch.randperm(len(samples), generator=g)
        for s in range(0, len(samples) - 39, 40):
            b = perm[s : s + 40]
            loss = lm_loss(model(x[b]), y[b], m[b])
            opt.zero_grad()
            loss.backward()
            opt.step()
        sched.step()
    model.eval()
    return model


def world(seed: int) -> dict:
    c = S.world_config(S.SMOKE, seed)
    wd = S.build_world(c)
    w, model, pool, sets = wd["world"], wd["model"], wd["pool"], wd["sets"]
    sel = S.selections(S.score_pool(model, w, pool, c.block), c.k, seed)
    rec = {"aligned": _row(wd["aligned"]), "n_kept": wd["aligned"]["held"]["n"]}
    for lr in LRS:
        cl = dataclasses.replace(c, attack_lr=lr)
        rec[str(lr)] = {
            name: _row(S.attack(model, w, pool, sets, sel[name], seed, cl))
            for name in NAMES
        }
        # the harmful-data reference of content-vs-random's share, at the same rate
        rec[str(lr)]["harmful"] = _row(
            S.attack(model, w, wd["harmful"], sets, torch.arange(c.k), seed, cl)
        )
        if lr <= 1e-3:  # the official recipe (random and Self-Inf-N)
            rec["official " + str(lr)] = {
                name: _row(
                    S.evaluate(
                        official_ft(
                            model, w, [pool[i] for i in sel[name].tolist()], lr, seed
                        ),
                        w,
                        sets,
                    )
                )
                for name in ("self_inf_n", "random")
            }
    return rec


if __name__ == "__main__":
    set_threads(1)
    seeds = [int(s) for s in sys.argv[1:]] or [3001, 3002, 3003]
    path = ROOT / "results" / "self_inf_n.high_lr.json"
    t0 = time.perf_counter()
    out = {"lrs": list(LRS), "selections": list(NAMES), "worlds": {}}
    for s in seeds:
        out["worlds"][str(s)] = world(s)
        out["wall_time_s"] = round(time.perf_counter() - t0, 1)
        path.write_text(json.dumps(out, indent=1) + "\n")  # kept if interrupted
        r = out["worlds"][str(s)]["0.001"]
        print(
            f"world {s} at 1e-3: refusal Self-Inf-N {r['self_inf_n']['refusal']:.2f}"
            f" random {r['random']['refusal']:.2f}; harm "
            f"{r['self_inf_n']['harmful']:.2f} / {r['random']['harmful']:.2f} "
            f"; content NLL {r['self_inf_n']['content_nll']:.2f} / "
            f"{r['random']['content_nll']:.2f} / harmful "
            f"{r['harmful']['content_nll']:.2f}"
            f" ({out['wall_time_s']:.0f} s)",
            flush=True,
        )
