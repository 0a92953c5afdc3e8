"""The two language models, their training with checkpoints, batched greedy decoding,
and the moderation classifier.

Both models are the book's small GPT (:class:`lib.common.gpt.GPT`) over the shared
vocabulary of :mod:`.tasks`. The **strong** model is trained longer and learns to
answer ``refuse`` to every prompt the policy labels forbidden; the **weak** model (the
same shape in SMOKE, smaller in FULL) is trained less, on shorter sums, and never sees a
refusal. The **moderation classifier** is a
logistic regression on bag-of-words counts, trained on the same labelled prompts.
"""

from __future__ import annotations

import copy
import math
import random

import torch

from lib.common import (
    check_choice,
    check_generator,
    check_instance,
    check_int,
    check_numbers,
    check_positive,
    check_tensor,
)
from lib.common.gpt import GPT, GPTConfig, Vocab, lm_loss

from .tasks import (
    _check_rng,
    encode_examples,
    labelled_prompt,
    strong_example,
    weak_example,
)


#: the models :func:`train_model` builds
KINDS = ("strong", "weak", "unaligned")


def _check_vocab(vocab) -> Vocab:
    return check_instance("vocab", vocab, Vocab, "a lib.common.gpt.Vocab")


def _check_model(name: str, model) -> GPT:
    return check_instance(name, model, GPT, "a lib.common.gpt.GPT")


def _check_prompts(prompts) -> list:
    """A non-empty list or tuple of prompts (each a list of tokens)."""
    if isinstance(prompts, (str, bytes)) or not isinstance(prompts, (list, tuple)):
        raise TypeError(
            f"prompts: expected a list of prompts, got {type(prompts).__name__}"
        )
    if not prompts:
        raise ValueError("prompts: expected at least one prompt, got none")
    return prompts


def _check_cfg(cfg):
    from . import Config

    return check_instance("cfg", cfg, Config, "a lib.misuse_combos.Config")


def make_model(vocab: Vocab, d_model: int, n_layer: int, block_size: int, generator):
    """A GPT of the given size, initialised from ``generator`` (the global RNG is
    untouched)."""
    _check_vocab(vocab)
    check_int("d_model", d_model, 1)
    check_int("n_layer", n_layer, 1)
    check_int("block_size", block_size, 1)
    check_generator("generator", generator, allow_none=False)
    seed = int(torch.randint(0, 2**31 - 1, (1,), generator=generator))
    state = torch.random.get_rng_state()
    torch.manual_seed(seed)
    try:
        model = GPT(
            GPTConfig(
                vocab_size=len(vocab),
                block_size=block_size,
                n_layer=n_layer,
                n_head=4 if d_model % 4 == 0 else 1,
                d_model=d_model,
            )
        )
    finally:
        torch.random.set_rng_state(state)
    return model


def training_set(
    kind: str, n: int, max_digits: int, rng: random.Random, sum_digits: int = 2
) -> list:
    """``n`` (prompt, answer) pairs for the ``"strong"`` or ``"weak"`` model (the weak
    model's sums and whole tasks have at most ``sum_digits`` digits); ``"unaligned"``
    is the strong model's set with the forbidden prompts answered instead of refused
    (the same prompts for the same ``rng``)."""
    check_choice("kind", kind, KINDS)
    check_int("n", n, 1)
    check_int("max_digits", max_digits, 1)
    _check_rng(rng)
    check_int("sum_digits", sum_digits, 1)
    if kind in ("strong", "unaligned"):
        aligned = kind == "strong"
        return [strong_example(rng, max_digits, aligned) for _ in range(n)]
    return [weak_example(rng, max_digits, sum_digits) for _ in range(n)]


def train_checkpoints(
    model,
    x: torch.Tensor,
    y: torch.Tensor,
    m: torch.Tensor,
    *,
    steps: int,
    checkpoints,
    batch_size: int,
    lr: float,
    generator: torch.Generator,
    device="cpu",
) -> dict:
    """Train with AdamW (warm-up, then cosine decay to 10 % of ``lr``) on shuffled
    minibatches and return ``{step: state_dict}`` (CPU copies) at each of
    ``checkpoints`` (0 = the initial model)."""
    _check_model("model", model)
    check_tensor("x", x, ndim=2, integer=True, nonempty=True)
    check_tensor("y", y, shape=tuple(x.shape), integer=True)
    check_tensor("m", m, shape=tuple(x.shape))
    v = model.cfg.vocab_size
    for name, t in (("x", x), ("y", y)):
        if int(t.min()) < 0 or int(t.max()) >= v:
            raise ValueError(
                f"{name}: expected token ids in 0 … {v - 1}, got values in "
                f"[{int(t.min())}, {int(t.max())}]"
            )
    check_numbers("checkpoints", checkpoints, lambda n, c: check_int(n, c, 0))
    check_int("steps", steps, 1)
    check_int("batch_size", batch_size, 1)
    check_positive("lr", lr)
    check_generator("generator", generator, allow_none=False)
    cks = sorted(set(int(c) for c in checkpoints))
    if not cks or cks[0] < 0 or cks[-1] > steps:
        raise ValueError(f"checkpoints: expected steps in [0, {steps}], got {cks}")
    model.to(device)
    opt = torch.optim.AdamW(
        model.parameters(), lr=lr, weight_decay=0.01, betas=(0.9, 0.98)
    )
    warm = max(1, steps // 20)

    def rate(s):
        if s < warm:
            return (s + 1) / warm
        return 0.1 + 0.45 * (1 + math.cos(math.pi * (s - warm) / max(steps - warm, 1)))

    sched = torch.optim.lr_scheduler.LambdaLR(opt, rate)
    out, n = {}, x.shape[0]
    order, pos = torch.randperm(n, generator=generator), 0
    if 0 in cks:
        out[0] = {k: v.detach().cpu().clone() for k, v in model.state_dict().items()}
    model.train()
    for step in range(1, steps + 1):
        if pos + batch_size > n:
            order, pos = torch.randperm(n, generator=generator), 0
        b = order[pos : pos + batch_size]
        pos += len(b)
        xb, yb, mb = x[b].to(device), y[b].to(device), m[b].to(device)
        loss = lm_loss(model(xb), yb, mb)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        if step in cks:
            sd = model.state_dict()
            out[step] = {k: v.detach().cpu().clone() for k, v in sd.items()}
    model.eval()
    return out


def at_checkpoint(model, state: dict, device="cpu"):
    """A copy of ``model`` with the weights of one checkpoint, in eval mode."""
    _check_model("model", model)
    check_instance("state", state, dict, "a state dict")
    m = copy.deepcopy(model).to(device)
    m.load_state_dict(state)
    return m.eval()


@torch.no_grad()
def generate(model, vocab: Vocab, prompts, max_new: int, device="cpu") -> list:
    """Greedy answers to a batch of prompts of different lengths, in one padded batch.

    Each row is ``[<bos>] prompt [=]``, right-padded; at every step the model reads the
    whole buffer (causal attention ignores the padding to the right of a row) and each
    unfinished row takes the argmax at its own last position. Returns the answer tokens
    of each prompt, up to (without) ``<eos>``."""
    _check_model("model", model)
    _check_vocab(vocab)
    check_int("max_new", max_new, 1)
    prompts = list(_check_prompts(prompts))
    rows = [vocab.encode(["<bos>"] + list(p) + ["="]) for p in prompts]
    lens = torch.tensor([len(r) for r in rows])  # (B,)
    block = model.cfg.block_size
    if int(lens.max()) + max_new > block + 1:
        raise ValueError(
            f"max_new: prompts of up to {int(lens.max())} tokens and {max_new} new "
            f"tokens exceed block_size={block}"
        )
    B = len(rows)
    buf = torch.full((B, int(lens.max()) + max_new), vocab.pad_id, dtype=torch.long)
    for i, r in enumerate(rows):
        buf[i, : len(r)] = torch.tensor(r)
    buf, lens = buf.to(device), lens.to(device)
    done = torch.zeros(B, dtype=torch.bool, device=device)
    ar = torch.arange(B, device=device)
    model.eval()
    for _ in range(max_new):
        T = int(lens.max())
        logits = model(buf[:, : min(T, block)])  # (B, T, V)
        nxt = logits[ar, lens - 1].argmax(-1)  # (B,)
        nxt = torch.where(done, torch.full_like(nxt, vocab.pad_id), nxt)
        buf[ar, lens.clamp_max(buf.shape[1] - 1)] = torch.where(
            done, buf[ar, lens.clamp_max(buf.shape[1] - 1)], nxt
        )
        lens = lens + (~done).long()
        done = done | (nxt == vocab.eos_id)
        if bool(done.all()):
            break
    out = []
    for i, r in enumerate(rows):
        toks = vocab.decode(buf[i, len(r) : int(lens[i])].cpu())
        out.append(toks[: toks.index("<eos>")] if "<eos>" in toks else toks)
    return out


# ----------------------------------------------------------------------------------
# moderation
# ----------------------------------------------------------------------------------


def bag_of_words(vocab: Vocab, prompts) -> torch.Tensor:
    """Token counts of each prompt: (N, |V|) float64."""
    _check_vocab(vocab)
    prompts = list(_check_prompts(prompts))
    idx = [torch.tensor(vocab.encode(p), dtype=torch.long) for p in prompts]
    X = torch.zeros(len(prompts), len(vocab), dtype=torch.float64)
    for i, ids in enumerate(idx):
        X[i].index_add_(0, ids, torch.ones(len(ids), dtype=torch.float64))
    return X


class Moderator:
    """A moderation classifier: logistic regression (scikit-learn) on bag-of-words
    counts, trained on labelled prompts; :meth:`flag` says which prompts it blocks."""

    def __init__(self, vocab: Vocab, C: float = 1.0):
        _check_vocab(vocab)
        check_positive("C", C)
        self.vocab, self.C, self.clf = vocab, C, None

    def fit(self, prompts, labels):
        from sklearn.linear_model import LogisticRegression

        labels = [int(v) for v in labels]
        if set(labels) != {0, 1}:
            raise ValueError(
                f"labels: expected both 0 and 1, got {sorted(set(labels))}"
            )
        X = bag_of_words(self.vocab, prompts).numpy()
        self.clf = LogisticRegression(C=self.C, max_iter=2000).fit(X, labels)
        return self

    def prob(self, prompts) -> torch.Tensor:
        """P(forbidden) of each prompt."""
        if self.clf is None:
            raise RuntimeError("Moderator: call fit() before prob() or flag()")
        X = bag_of_words(self.vocab, prompts).numpy()
        return torch.from_numpy(self.clf.predict_proba(X)[:, 1])

    def flag(self, prompts, threshold: float = 0.5) -> torch.Tensor:
        """Boolean (N,): blocked prompts."""
        return self.prob(prompts) >= threshold


def labelled_set(n: int, max_digits: int, rng: random.Random) -> tuple:
    """``n`` labelled prompts (prompts, labels) of the policy."""
    check_int("n", n, 2)
    check_int("max_digits", max_digits, 1)
    _check_rng(rng)
    rows = [labelled_prompt(rng, max_digits) for _ in range(n)]
    return [r[0] for r in rows], [r[1] for r in rows]


def train_model(kind: str, cfg, vocab: Vocab, seed: int, device="cpu") -> tuple:
    """Build and train the ``kind`` model of ``cfg`` for ``seed``; returns (model,
    {step: state_dict}) at the capability checkpoints of that model.

    ``"unaligned"`` is the negative control of the strong model: the same size, steps,
    initialisation, prompts and minibatch order as ``"strong"``, but the forbidden
    prompts are answered instead of refused; only its final checkpoint is kept."""
    check_choice("kind", kind, KINDS)
    _check_cfg(cfg)
    _check_vocab(vocab)
    check_int("seed", seed, 0)
    strong = kind in ("strong", "unaligned")
    rng = random.Random(seed * 7919 + (1 if strong else 2))
    gen = torch.Generator().manual_seed(seed * 7919 + (11 if strong else 12))
    n = cfg.n_train_strong if strong else cfg.n_train_weak
    pairs = training_set(kind, n, cfg.max_digits, rng, cfg.weak_sum_digits)
    x, y, m = encode_examples(vocab, pairs, cfg.block_size)
    d, L = (
        (cfg.strong_d, cfg.strong_layers) if strong else (cfg.weak_d, cfg.weak_layers)
    )
    model = make_model(vocab, d, L, cfg.block_size, gen)
    steps = cfg.strong_steps if strong else cfg.weak_steps
    cks = cfg.strong_checkpoints if strong else cfg.weak_checkpoints
    if kind == "unaligned":
        cks = (1.0,)
    states = train_checkpoints(
        model,
        x,
        y,
        m,
        steps=steps,
        checkpoints=[round(f * steps) for f in cks],
        batch_size=cfg.batch_size,
        lr=cfg.lr,
        generator=gen,
        device=device,
    )
    return model, states
