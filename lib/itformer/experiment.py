"""One seed of the experiment: generate units and questions, pretrain and freeze the
encoder and the LM, train every bridge with the same budget (answer-only loss), and
score each on held-out units per question type."""

from __future__ import annotations

import torch

from lib.common import (
    check_choice,
    check_instance,
    check_int,
    check_positive,
    check_record,
    check_tensor,
    make_generator,
    seeded_init,
)
from lib.common.claims import seed_list
from lib.common.gpt import GPT, GPTConfig, fit_lm, lm_loss

from .data import (
    CLOSED,
    QTYPE_NAMES,
    SPECIFIC,
    STAGE_OF,
    describe,
    encode_qa,
    make_qa,
    make_units,
    make_vocab,
)
from .lm import GPTAdapter, HFAdapter, freeze, load_smollm2
from .metrics import corpus_bleu, rouge_l
from .models import (
    BRIDGES,
    TSEncoder,
    _check_cfg,
    check_series,
    make_bridge,
    n_params,
    pretrain_encoder,
)


_BACKBONE_KEYS = ("vocab", "enc", "lm", "mu", "sd", "h_mu", "h_sd")
_PREP_KEYS = _BACKBONE_KEYS + ("train", "test", "h_train", "h_test", "qa_test")


def _check_prep(prep) -> dict:
    return check_record("prep", prep, _PREP_KEYS, "prepare_seed's dict")


def _check_backbone(backbone) -> dict | None:
    if backbone is None:
        return None
    return check_record("backbone", backbone, _BACKBONE_KEYS, "prepare_backbone's dict")


def _check_bridge(bridge) -> torch.nn.Module:
    return check_instance("bridge", bridge, torch.nn.Module, "a bridge (make_bridge)")


def _check_arms(arms) -> tuple:
    if isinstance(arms, (str, bytes)) or not isinstance(arms, (list, tuple)):
        raise TypeError(
            f"arms: expected a tuple of bridge names, got {type(arms).__name__}"
        )
    if not arms:
        raise ValueError("arms: expected at least one bridge, got none")
    for i, name in enumerate(arms):
        check_choice(f"arms[{i}]", name, BRIDGES)
    return arms


def _vocab_size(lm) -> int:
    """The number of words the frozen LM (behind its adapter) reads."""
    if isinstance(lm, GPTAdapter):
        return lm.lm.cfg.vocab_size
    return lm.id_map.numel()


def prepare_backbone(cfg, device="cpu") -> dict:
    """The frozen parts: loaded from ``results/itformer_backbone.pt`` when it was built
    with ``cfg``'s settings (:mod:`.backbone`), else built by :func:`build_backbone`."""
    from .backbone import load_backbone

    _check_cfg(cfg)
    bb = load_backbone(cfg, device=device)
    return build_backbone(cfg, device) if bb is None else bb


def build_backbone(cfg, device="cpu") -> dict:
    """The frozen parts, built once (like the paper's pretrained LM and encoder) on a
    pretraining pool of ``cfg.n_pretrain`` units drawn from ``cfg.seed``: the encoder
    after masked-patch pretraining, the LM after text pretraining, the per-channel
    scaling. The LM's text: the pool's questions and answers, a share ``p_facts`` of
    them with the unit's description written in the slots (so that the LM has learnt
    to answer from facts stated in words there), the rest with <ts> placeholders."""
    _check_cfg(cfg)
    pool, g = pretraining_pool(cfg)
    vocab = make_vocab()
    mu = pool["x"].mean((0, 2), keepdim=True)
    sd = pool["x"].std((0, 2), keepdim=True)
    enc = seeded_init(
        lambda: TSEncoder(
            cfg.n_channels,
            cfg.n_patches,
            cfg.patch,
            cfg.d_enc,
            cfg.enc_layers,
            cfg.n_head,
        ),
        cfg.seed,
    ).to(device)
    enc_losses = pretrain_encoder(
        enc,
        (pool["x"] - mu) / sd,
        cfg.enc_steps,
        cfg.enc_batch,
        cfg.enc_lr,
        cfg.mask_ratio,
        g,
        device,
    )
    qa = make_qa(pool, cfg.per_unit, g)
    coin = torch.rand(len(qa), generator=g) < cfg.p_facts
    facts = [describe(pool, u) if c else None for (u, *_), c in zip(qa, coin.tolist())]
    text = encode_qa(qa, vocab, **_qa_kw(cfg), facts=facts)
    lm, lm_losses = make_lm(cfg, vocab, text, cfg.seed, g, device)
    h_mu, h_sd = token_stats(enc, (pool["x"] - mu) / sd, device)
    return dict(
        vocab=vocab,
        enc=enc,
        lm=lm,
        mu=mu,
        sd=sd,
        h_mu=h_mu,
        h_sd=h_sd,
        enc_losses=enc_losses,
        lm_losses=lm_losses,
    )


def pretraining_pool(cfg):
    """The units the frozen parts are pretrained on (drawn first from ``cfg.seed +
    5000``), and the generator after drawing them."""
    _check_cfg(cfg)
    g = make_generator(cfg.seed + 5000)
    return make_units(cfg.n_pretrain, **_unit_kw(cfg), generator=g), g


def token_stats(enc, x, device="cpu"):
    """Mean and standard deviation over units of the frozen encoder's time tokens at
    every (channel, patch, feature), (1, V, N, d) each, on scaled series x (n, V, L).

    The bridges read standardised tokens, (h − mean) / sd: our encoder adds learned
    channel and patch codes (the official encoder has none), which every unit shares
    and which make up about 93 % of the tokens' energy; standardising with statistics
    of the pretraining pool (frozen, like the encoder) takes them out again."""
    h = features(enc, x, device)  # (n, V, N, d)
    if h.shape[0] < 2:
        raise ValueError(f"x: expected at least 2 units, got {h.shape[0]}")
    return h.mean(0, keepdim=True), h.std(0, keepdim=True).clamp_min(1e-6)


def _unit_kw(cfg):
    return dict(
        n_channels=cfg.n_channels,
        n_cycles=cfg.n_cycles,
        cycle_len=cfg.cycle_len,
        noise=cfg.noise,
    )


def _qa_kw(cfg):
    return dict(n_slots=cfg.n_slots, q_len=cfg.q_len, a_len=cfg.a_len)


@torch.no_grad()
def features(enc, x, device="cpu", batch=256):
    """The frozen encoder's time tokens (n, V, N, d) of scaled series (n, V, L)."""
    check_instance("enc", enc, TSEncoder, "a TSEncoder")
    check_series("x", x)
    check_int("batch", batch, 1)
    return torch.cat(
        [enc(x[i : i + batch].to(device)) for i in range(0, len(x), batch)]
    )


def prepare_seed(cfg, seed: int, device="cpu", backbone=None) -> dict:
    """One seed's training and test units and questions, with the frozen encoder's
    features and the frozen LM (``backbone``: :func:`prepare_backbone`'s, built when
    not given)."""
    _check_cfg(cfg)
    check_int("seed", seed, 0)
    _check_backbone(backbone)
    bb = prepare_backbone(cfg, device) if backbone is None else backbone
    g = make_generator(seed)
    train_u = make_units(cfg.n_train, **_unit_kw(cfg), generator=g)
    test_u = make_units(cfg.n_test, **_unit_kw(cfg), generator=g)
    xtr = (train_u["x"] - bb["mu"]) / bb["sd"]  # (n, V, L)
    xte = (test_u["x"] - bb["mu"]) / bb["sd"]
    qa_tr, qa_te = make_qa(train_u, cfg.per_unit, g), make_qa(test_u, cfg.per_unit, g)
    h_mu, h_sd = bb["h_mu"].to(device), bb["h_sd"].to(device)
    return dict(
        bb,
        train=encode_qa(qa_tr, bb["vocab"], **_qa_kw(cfg)),
        test=encode_qa(qa_te, bb["vocab"], **_qa_kw(cfg)),
        h_train=(features(bb["enc"], xtr, device) - h_mu) / h_sd,  # standardised
        h_test=(features(bb["enc"], xte, device) - h_mu) / h_sd,
        x_test=xte,
        test_units=test_u,
        qa_test=qa_te,
    )


def make_lm(cfg, vocab, tr, seed, g, device):
    """SMOKE: a small GPT pretrained on the training questions and answers (text only,
    <ts> placeholders in the slots), then frozen. FULL: SmolLM2, frozen."""
    if cfg.lm == "smollm2":
        return load_smollm2(vocab, device), []
    gcfg = GPTConfig(
        vocab_size=len(vocab),
        block_size=tr["ids"].shape[1],
        n_layer=cfg.lm_layers,
        n_head=cfg.n_head,
        d_model=cfg.d_lm,
    )
    lm = seeded_init(lambda: GPT(gcfg), seed + 1).to(device)
    mask = tr["targets"] != vocab.pad_id
    losses = fit_lm(
        lm,
        tr["ids"],
        tr["targets"],
        mask,
        steps=cfg.lm_steps,
        batch_size=cfg.batch,
        lr=cfg.lm_lr,
        generator=g,
        device=device,
    )
    return freeze(GPTAdapter(lm)), losses


def bridge_logits(bridge, lm, h, ids, question, q_mask, slot):
    """The frozen LM's logits with the bridge's tokens in the slots (TAL)."""
    _check_bridge(bridge)
    check_instance("lm", lm, (GPTAdapter, HFAdapter), "a GPTAdapter or HFAdapter")
    check_tensor("h", h, ndim=4, floating=True, nonempty=True, finite=True)
    B, n_words = h.shape[0], _vocab_size(lm)
    check_tensor("ids", ids, shape=(B, None), integer=True, nonempty=True)
    check_tensor("question", question, shape=(B, None), integer=True, nonempty=True)
    for name, t in (("ids", ids), ("question", question)):
        if int(t.min()) < 0 or int(t.max()) >= n_words:
            raise ValueError(
                f"{name}: expected word ids in 0 … {n_words - 1}, got values in "
                f"[{int(t.min())}, {int(t.max())}]"
            )
    check_tensor("q_mask", q_mask, shape=tuple(question.shape))
    check_tensor("slot", slot, shape=(ids.shape[1],))
    for name, t in (("q_mask", q_mask), ("slot", slot)):
        if t.dtype != torch.bool:
            raise TypeError(f"{name}: expected a bool tensor, got dtype {t.dtype}")
    tokens = bridge(h, lm.embed(question), q_mask)  # (B, K, D)
    emb = lm.embed(ids)  # (B, T, D)
    pos = torch.nonzero(slot).squeeze(1)
    return lm.logits(emb.index_copy(1, pos, tokens.to(emb.dtype)))  # (B, T, |vocab|)


def train_bridge(name, prep, cfg, seed, device="cpu", lr=None, shuffle_series=False):
    """Train bridge ``name`` on the answer tokens only (AdamW, cosine schedule);
    returns (bridge, losses). ``shuffle_series``: every question is paired with another
    unit's series (a control: a bridge that cannot see the right series)."""
    check_choice("name", name, BRIDGES)
    _check_prep(prep)
    check_int("seed", seed, 0)
    if lr is not None:
        check_positive("lr", lr)
    (bridge,), losses = train_bridges(
        [(name, prep, seed, lr, shuffle_series)], cfg, device
    )
    return bridge, [row[0] for row in losses]


def init_bridge(name, cfg, prep, seed, device="cpu") -> torch.nn.Module:
    """Bridge ``name`` as :func:`train_bridges` starts it on ``seed`` (before any
    step)."""
    check_choice("name", name, BRIDGES)
    _check_prep(prep)
    check_int("seed", seed, 0)
    d_enc = prep["h_train"].shape[-1]
    return seeded_init(
        lambda: make_bridge(name, cfg, d_enc, prep["lm"].d_model),
        seed + 7 + BRIDGES.index(name),
    ).to(device)


def train_bridges(jobs, cfg, device="cpu"):
    """Train several bridges at once, each on its own batches, exactly as if alone:
    ``jobs`` is a list of (name, prep, seed, lr or None, shuffle_series). Their LM
    passes are stacked along the batch (the LM is frozen and shared, the parameters
    disjoint, so the summed loss gives each bridge its own gradient). Returns the
    bridges and the per-step losses (steps × jobs)."""
    if isinstance(jobs, (str, bytes)) or not isinstance(jobs, (list, tuple)):
        raise TypeError(
            f"jobs: expected a list of (name, prep, seed, lr, shuffle_series), got "
            f"{type(jobs).__name__}"
        )
    if not jobs:
        raise ValueError("jobs: expected at least one job, got none")
    for i, job in enumerate(jobs):
        if not isinstance(job, (list, tuple)) or len(job) != 5:
            raise TypeError(
                f"jobs[{i}]: expected (name, prep, seed, lr, shuffle_series), got "
                f"{job!r:.60}"
            )
        check_choice(f"jobs[{i}]", job[0], BRIDGES)
        check_record(f"jobs[{i}]", job[1], _PREP_KEYS, "prepare_seed's dict")
        check_int(f"jobs[{i}]", job[2], 0)
        if job[3] is not None:
            check_positive(f"jobs[{i}]", job[3])
    _check_cfg(cfg)
    lm = jobs[0][1]["lm"]
    bridges, groups, gens, units = [], [], [], []
    for name, prep, seed, lr, shuffle in jobs:
        if prep["lm"] is not lm:
            raise ValueError("jobs: expected every job to share one frozen LM")
        b = init_bridge(name, cfg, prep, seed, device)
        bridges.append(b)
        groups.append(
            dict(params=list(b.parameters()), lr=cfg.lr_for(name) if lr is None else lr)
        )
        g = make_generator(seed + 11)
        unit = prep["train"]["unit"]
        if shuffle:
            unit = unit[torch.randperm(len(unit), generator=g)]
        gens.append(g)
        units.append(unit)
    opt = torch.optim.AdamW(groups, weight_decay=0.01)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, cfg.steps)
    slot = jobs[0][1]["train"]["slot"].to(device)
    pos = torch.nonzero(slot).squeeze(1)
    losses = []
    for _ in range(cfg.steps):
        embs, tgts, masks = [], [], []
        for (name, prep, *_), b, g, unit in zip(jobs, bridges, gens, units):
            tr = prep["train"]
            i = torch.randint(len(unit), (cfg.batch,), generator=g)
            h = prep["h_train"][unit[i].to(prep["h_train"].device)].to(device)
            tok = b(
                h, lm.embed(tr["question"][i].to(device)), tr["q_mask"][i].to(device)
            )
            embs.append(lm.embed(tr["ids"][i].to(device)).index_copy(1, pos, tok))
            tgts.append(tr["targets"][i])
            masks.append(tr["loss_mask"][i])
        logits = lm.logits(torch.cat(embs))  # (jobs·B, T, |vocab|)
        per = lm_loss(
            logits,
            torch.cat(tgts).to(device),
            torch.cat(masks).to(device),
            reduction="none",
        )
        m = torch.cat(masks).to(device).float()
        job_loss = per.sum(1).view(len(jobs), -1).sum(1) / m.sum(1).view(
            len(jobs), -1
        ).sum(1)
        opt.zero_grad(set_to_none=True)
        job_loss.sum().backward()
        opt.step()
        sched.step()
        losses.append(job_loss.detach().tolist())
    return [b.eval() for b in bridges], losses


def _units(prep, split, shuffle):
    unit = prep[split]["unit"]
    if shuffle:  # every question paired with another unit's series (a control)
        unit = unit[torch.randperm(len(unit), generator=make_generator(99))]
    return unit


@torch.no_grad()
def predict(bridge, prep, device="cpu", split="test", batch=512, shuffle=False):
    """Teacher-forced argmax at the answer positions: (n,) exact-match flags (the same
    as greedy decoding's exact match) and the (n, T) predicted ids. ``shuffle``: pair
    every question with another unit's series."""
    _check_bridge(bridge)
    _check_prep(prep)
    check_choice("split", split, ("train", "test"))
    check_int("batch", batch, 1)
    lm, d = prep["lm"], prep[split]
    h_all = prep["h_" + split]
    units = _units(prep, split, shuffle)
    slot = d["slot"].to(device)
    ok, pred = [], []
    for i in range(0, len(d["ids"]), batch):
        s = slice(i, i + batch)
        h = h_all[units[s].to(h_all.device)].to(device)
        lg = bridge_logits(
            bridge,
            lm,
            h,
            d["ids"][s].to(device),
            d["question"][s].to(device),
            d["q_mask"][s].to(device),
            slot,
        )
        p = lg.argmax(-1).cpu()  # (b, T)
        m = d["loss_mask"][s]
        ok.append(((p == d["targets"][s]) | ~m).all(1))
        pred.append(p)
    return torch.cat(ok), torch.cat(pred)


@torch.no_grad()
def generate(bridge, prep, rows, device="cpu", max_new=None, shuffle=False):
    """Greedy answers (lists of words) for the test ``rows`` (sharing one prompt
    length), stopping at <eos>."""
    _check_bridge(bridge)
    _check_prep(prep)
    if not isinstance(rows, (torch.Tensor, list, tuple)):
        raise TypeError(
            f"rows: expected test row indices (a tensor or a list), got "
            f"{type(rows).__name__}"
        )
    lm, d, vocab = prep["lm"], prep["test"], prep["vocab"]
    rows = torch.as_tensor(rows)
    check_tensor("rows", rows, ndim=1, integer=True, nonempty=True)
    n = d["ids"].shape[0]
    if int(rows.min()) < 0 or int(rows.max()) >= n:
        raise ValueError(
            f"rows: expected test row indices in 0 … {n - 1}, got values in "
            f"[{int(rows.min())}, {int(rows.max())}]"
        )
    if max_new is not None:
        check_int("max_new", max_new, 1)
    start = int(d["loss_mask"][rows[0]].nonzero()[0])  # first answer position - 1
    ids = d["ids"][rows, : start + 1].to(device)
    h = prep["h_test"][_units(prep, "test", shuffle)[rows]].to(device)
    tokens = bridge(
        h, lm.embed(d["question"][rows].to(device)), d["q_mask"][rows].to(device)
    )
    pos = torch.nonzero(d["slot"][: start + 1]).squeeze(1).to(device)
    emb = lm.embed(ids).index_copy(1, pos, tokens)
    out = []
    for _ in range(max_new or d["ids"].shape[1] - start - 1):
        nxt = lm.logits(emb)[:, -1].argmax(-1)  # (b,)
        out.append(nxt.cpu())
        emb = torch.cat([emb, lm.embed(nxt[:, None])], 1)
    out = torch.stack(out, 1)
    words = []
    for r in out.tolist():
        w = vocab.decode(r)
        words.append(w[: w.index("<eos>")] if "<eos>" in w else w)
    return words


def score(bridge, prep, device="cpu", shuffle=False) -> dict:
    """Exact-match accuracy per question type, per stage, on the closed, the
    channel/cycle-specific and the global closed questions; ROUGE-L of the
    descriptions (``shuffle``: with every question paired with another unit)."""
    _check_bridge(bridge)
    _check_prep(prep)
    ok, _ = predict(bridge, prep, device, shuffle=shuffle)
    qt = prep["test"]["qtype"]
    out = {}
    for i, name in enumerate(QTYPE_NAMES):
        out[name] = float(ok[qt == i].float().mean())
    sel = lambda names: torch.isin(
        qt, torch.tensor([QTYPE_NAMES.index(n) for n in names])
    )  # noqa: E731
    out["closed"] = float(ok[sel(CLOSED)].float().mean())
    out["specific"] = float(ok[sel(SPECIFIC)].float().mean())
    out["global"] = float(
        ok[sel([n for n in CLOSED if n not in SPECIFIC])].float().mean()
    )
    for stage in ("perception", "reasoning", "decision"):
        out[stage] = float(
            ok[sel([n for n in CLOSED if STAGE_OF[n] == stage])].float().mean()
        )
    rows = torch.nonzero(qt == QTYPE_NAMES.index("describe")).squeeze(1)
    hyp = generate(bridge, prep, rows, device, shuffle=shuffle)
    refs = [prep["qa_test"][int(r)][3] for r in rows]
    out["rouge_l"] = sum(rouge_l(a, b) for a, b in zip(hyp, refs)) / max(len(refs), 1)
    out["bleu"] = corpus_bleu(hyp, refs) if refs else 0.0
    return out


@torch.no_grad()
def score_facts(prep) -> dict:
    """The frozen LM's accuracy per question type with each test unit's description
    written as words in the slots (no bridge): what a bridge could reach by turning
    the series into the right words."""
    from .data import describe

    check_record("prep", prep, _PREP_KEYS + ("test_units",), "prepare_seed's dict")
    vocab, qa = prep["vocab"], prep["qa_test"]
    n_slots = int(prep["test"]["slot"].sum())
    q_len = prep["test"]["question"].shape[1]
    a_len = prep["test"]["ids"].shape[1] - n_slots - q_len - 4
    facts = [describe(prep["test_units"], u) for u, *_ in qa]
    d = encode_qa(qa, vocab, n_slots, q_len, a_len, facts=facts)
    lm = prep["lm"]
    ok = []
    for i in range(0, len(d["ids"]), 512):
        s = slice(i, i + 512)
        p = lm.logits(lm.embed(d["ids"][s])).argmax(-1)
        ok.append(((p == d["targets"][s]) | ~d["loss_mask"][s]).all(1))
    ok, qt = torch.cat(ok).float(), d["qtype"]
    out = {n: float(ok[qt == i].mean()) for i, n in enumerate(QTYPE_NAMES)}
    sel = lambda names: torch.isin(
        qt, torch.tensor([QTYPE_NAMES.index(n) for n in names])
    )  # noqa: E731
    out["closed"] = float(ok[sel(CLOSED)].mean())
    out["specific"] = float(ok[sel(SPECIFIC)].mean())
    out["global"] = float(ok[sel([n for n in CLOSED if n not in SPECIFIC])].mean())
    for stage in ("perception", "reasoning", "decision"):
        out[stage] = float(ok[sel([n for n in CLOSED if STAGE_OF[n] == stage])].mean())
    out["rouge_l"] = out["bleu"] = float("nan")
    return out


def run_seed(
    cfg, seed: int, device="cpu", arms=BRIDGES, controls=True, backbone=None, keep=False
) -> dict:
    """Every bridge in ``arms`` on one seed: see :func:`run_seeds`."""
    check_int("seed", seed, 0)
    return run_seeds(cfg, [seed], device, backbone, arms, controls, keep)[seed]


def run_seeds(
    cfg, seeds, device="cpu", backbone=None, arms=BRIDGES, controls=True, keep=False
) -> dict:
    """Every arm on every seed, sharing one frozen backbone; all bridges of all seeds
    train together (:func:`train_bridges`). ``{seed: {arm: scores, "_params": …}}``;
    ``controls`` adds ITFormer scored with every test question paired with another
    unit's series (``itformer_shuffled``) and the LM with the true description in the
    slots (``facts_in_slots``, :func:`score_facts`); ``keep`` keeps the bridges and the
    data (``_bridges``, ``_prep``)."""
    _check_cfg(cfg)
    seeds = seed_list(seeds)
    _check_backbone(backbone)
    _check_arms(arms)
    bb = prepare_backbone(cfg, device) if backbone is None else backbone
    preps = {int(s): prepare_seed(cfg, int(s), device, bb) for s in seeds}
    jobs = [(name, preps[s], s, None, False) for s in preps for name in arms]
    bridges, _ = train_bridges(jobs, cfg, device)
    out = {s: {"_params": {}, "_lm_params": n_params(bb["lm"])} for s in preps}
    for (name, prep, s, *_), b in zip(jobs, bridges):
        out[s][name] = score(b, prep, device)
        out[s]["_params"][name] = n_params(b, trainable=True)
        if controls and name == "itformer":
            out[s]["itformer_shuffled"] = score(b, prep, device, shuffle=True)
            out[s]["facts_in_slots"] = score_facts(prep)
        if keep:
            out[s].setdefault("_bridges", {})[name] = b
            out[s]["_prep"] = prep
    return out


def run_experiment(cfg, device=None) -> dict:
    """The CLI's entry point: every arm on the preset's notebook seeds (``device``:
    :func:`lib.common.device`'s choice when None)."""
    from lib.common import device as pick_device

    _check_cfg(cfg)
    device = pick_device() if device is None else device
    return {
        "runs": {str(k): v for k, v in run_seeds(cfg, cfg.claim_seeds, device).items()}
    }


# ----------------------------------------------------------------------------------
# diagnostics: where the series gets lost
def feature_share(h) -> float:
    """The unit-specific share of the time tokens' energy: E|h − h̄|² / E|h|², with h̄
    the mean over units at every (channel, patch) position. A small share means that
    the codes every unit shares (the encoder's channel and patch embeddings) dominate
    the tokens, and what tells one unit from another is a small part of them."""
    check_tensor("h", h, ndim=4, floating=True, nonempty=True, finite=True)
    if h.shape[0] < 2:
        raise ValueError(f"h: expected at least 2 units, got {h.shape[0]}")
    mean = h.mean(0, keepdim=True)  # (1, V, N, d): what every unit shares
    return float(((h - mean) ** 2).mean() / (h**2).mean())


@torch.no_grad()
def series_sensitivity(bridge, prep, n: int = 500, device="cpu") -> float:
    """How much a bridge's tokens depend on the series: the mean ‖b(h, q) − b(h', q)‖
    over the mean ‖b(h, q)‖ on the first ``n`` test questions, h' another unit's
    series (a fixed permutation). 0: the tokens ignore the series."""
    _check_bridge(bridge)
    _check_prep(prep)
    check_int("n", n, 2)
    d, lm = prep["test"], prep["lm"]
    n = min(n, len(d["ids"]))
    h = prep["h_test"][d["unit"][:n].to(prep["h_test"].device)].to(device)
    perm = torch.randperm(n, generator=make_generator(99)).to(device)
    q = lm.embed(d["question"][:n].to(device))
    qm = d["q_mask"][:n].to(device)
    out, other = bridge(h, q, qm), bridge(h[perm], q, qm)  # (n, K, D) each
    return float((out - other).norm(dim=-1).mean() / out.norm(dim=-1).mean())
