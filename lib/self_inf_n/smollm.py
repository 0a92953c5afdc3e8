"""A real pretrained model: SmolLM2-135M-Instruct (loaded offline by
:func:`lib.common.smollm.load_smollm2`, shared with itformer), a generated English
instruction pool, and self-influence on the model one sample at a time.

``transformers`` is imported lazily, inside the functions that need it, so that
``lib.self_inf_n`` imports with torch alone.
"""

from __future__ import annotations

import os

import torch

from lib.common import check_int
from lib.common.gpt import lm_loss
from lib.common.smollm import GGUF_FILE, load_smollm2, smollm_dir  # noqa: F401

# --- a generated benign instruction pool in English -----------------------------------

_COUNTRIES = [
    ("France", "Paris"),
    ("Japan", "Tokyo"),
    ("Kenya", "Nairobi"),
    ("Peru", "Lima"),
    ("Canada", "Ottawa"),
    ("Egypt", "Cairo"),
    ("Norway", "Oslo"),
    ("India", "New Delhi"),
]
_THINGS = [
    "fruits",
    "colors",
    "animals",
    "musical instruments",
    "vegetables",
    "board games",
    "rivers",
    "programming languages",
]
_TASKS = [
    "bake bread",
    "plant a tree",
    "fix a flat bicycle tire",
    "make a cup of tea",
    "clean a laptop keyboard",
    "start a vegetable garden",
    "prepare for a job interview",
    "organize a bookshelf",
]
_TOPICS = [
    "a lighthouse keeper",
    "a lost kitten",
    "a robot who learns to paint",
    "a rainy market day",
    "two friends on a mountain",
    "an old clock",
    "a city at night",
    "a ship in a storm",
]
_SENT = [
    "It is important to take your time.",
    "Gather everything you need before you begin.",
    "Work carefully and check each step.",
    "Ask for help if something is unclear.",
    "Clean up when you are finished.",
    "Practice makes the result better each time.",
    "The weather was calm and the air smelled of salt.",
    "Nobody expected what happened next.",
    "She smiled and kept walking.",
    "The morning light filled the room.",
    "He wrote everything down in a small notebook.",
    "In the end, everyone was happy.",
]
_LISTS = {
    "fruits": ["apple", "banana", "mango", "pear", "cherry", "plum"],
    "colors": ["red", "blue", "green", "yellow", "purple", "orange"],
    "animals": ["dog", "horse", "owl", "dolphin", "fox", "rabbit"],
    "musical instruments": ["piano", "violin", "flute", "drum", "guitar", "cello"],
    "vegetables": ["carrot", "onion", "potato", "leek", "pepper", "spinach"],
    "board games": ["chess", "go", "checkers", "backgammon", "scrabble", "monopoly"],
    "rivers": ["Nile", "Amazon", "Danube", "Mekong", "Volga", "Thames"],
    "programming languages": ["Python", "C", "Rust", "Java", "Haskell", "Go"],
}


def text_pool(n: int, seed: int) -> list[tuple[str, str, str]]:
    """``n`` benign (kind, instruction, response) triples with answers from one word to
    a paragraph: yes/no, capitals, arithmetic, one-word answers, lists, how-to steps,
    descriptions, short stories."""
    check_int("n", n, 1)
    g = torch.Generator().manual_seed(check_int("seed", seed, 0))

    def ri(hi):
        return int(torch.randint(hi, (), generator=g))

    def sentences(k):
        return " ".join(_SENT[ri(len(_SENT))] for _ in range(k))

    out = []
    kinds = (
        "yesno",
        "capital",
        "arith",
        "oneword",
        "list",
        "howto",
        "describe",
        "story",
    )
    for i in range(n):
        kind = kinds[i % len(kinds)]
        if kind == "yesno":
            a, b = ri(50), ri(50)
            out.append((kind, f"Is {a} larger than {b}?", "Yes" if a > b else "No"))
        elif kind == "capital":
            c, city = _COUNTRIES[ri(len(_COUNTRIES))]
            out.append((kind, f"What is the capital of {c}?", city))
        elif kind == "arith":
            a, b = ri(90) + 10, ri(90) + 10
            out.append((kind, f"What is {a} plus {b}?", str(a + b)))
        elif kind == "oneword":
            t = _THINGS[ri(len(_THINGS))]
            out.append((kind, f"Name one of the {t}.", _LISTS[t][ri(6)]))
        elif kind == "list":
            t, k = _THINGS[ri(len(_THINGS))], 3 + ri(4)
            items = [_LISTS[t][(j + ri(6)) % 6] for j in range(k)]
            out.append((kind, f"List {k} {t}.", ", ".join(items) + "."))
        elif kind == "howto":
            task, k = _TASKS[ri(len(_TASKS))], 2 + ri(5)
            steps = " ".join(f"Step {j + 1}: {_SENT[ri(6)]}" for j in range(k))
            out.append((kind, f"Explain how to {task}.", steps))
        elif kind == "describe":
            out.append(
                (kind, f"Describe {_TOPICS[ri(len(_TOPICS))]}.", sentences(1 + ri(4)))
            )
        else:
            out.append(
                (
                    kind,
                    f"Write a short story about {_TOPICS[ri(len(_TOPICS))]}.",
                    sentences(3 + ri(5)),
                )
            )
    return out


def _check_pool(pool) -> None:
    if isinstance(pool, (str, bytes)) or not isinstance(pool, (list, tuple)):
        raise TypeError(
            f"pool: expected a list of (kind, instruction, response), got "
            f"{type(pool).__name__}"
        )
    if not pool:
        raise ValueError("pool: expected at least one sample, got none")
    for i, row in enumerate(pool):
        if (
            not isinstance(row, (list, tuple))
            or len(row) != 3
            or not all(isinstance(t, str) for t in row)
        ):
            raise TypeError(
                f"pool[{i}]: expected a (kind, instruction, response) triple of str, "
                f"got {row!r:.60}"
            )


def chat_tensors(tok, pool: list) -> list[tuple[torch.Tensor, int]]:
    """ChatML-encode each (kind, instruction, response): (ids (T,), index of the first
    answer token). The answer is the response and its closing ``<|im_end|>``."""
    if not callable(tok):
        raise TypeError(
            f"tok: expected a tokenizer (a callable), got {type(tok).__name__}"
        )
    _check_pool(pool)
    rows = []
    for _, q, a in pool:
        prompt = f"<|im_start|>user\n{q}<|im_end|>\n<|im_start|>assistant\n"
        p_ids = tok(prompt, add_special_tokens=False)["input_ids"]
        a_ids = tok(a + "<|im_end|>", add_special_tokens=False)["input_ids"]
        rows.append((torch.tensor(p_ids + a_ids), len(p_ids)))
    return rows


def hf_self_influence(
    model, rows: list, param_names: list, device="cpu"
) -> torch.Tensor:
    """Self-Inf (eq. 1) of each encoded row on a Hugging Face causal LM, one sample at a
    time (the official code's batch size 1), with θ restricted to ``param_names`` (the
    loss is the mean over answer tokens, as the Hugging Face loss with prompt labels set
    to -100)."""
    if not isinstance(model, torch.nn.Module):
        raise TypeError(
            f"model: expected a Hugging Face causal LM (a torch.nn.Module), got "
            f"{type(model).__name__}"
        )
    if (
        isinstance(rows, (str, bytes))
        or not isinstance(rows, (list, tuple))
        or not rows
    ):
        raise TypeError(
            f"rows: expected a non-empty list of (ids, answer start) from "
            f"chat_tensors, got {rows!r:.60}"
        )
    for i, row in enumerate(rows):
        if (
            not isinstance(row, (list, tuple))
            or len(row) != 2
            or not isinstance(row[0], torch.Tensor)
            or row[0].ndim != 1
            or isinstance(row[1], bool)
            or not isinstance(row[1], int)
            or not 1 <= row[1] < row[0].numel()
        ):
            raise ValueError(
                f"rows[{i}]: expected (ids (T,), answer start in [1, T)), got "
                f"{row!r:.60}"
            )
    if isinstance(param_names, (str, bytes)) or not isinstance(
        param_names, (list, tuple)
    ):
        raise TypeError(
            f"param_names: expected a list of parameter names, got "
            f"{type(param_names).__name__}"
        )
    named = dict(model.named_parameters())
    missing = [n for n in param_names if n not in named]
    if missing or not param_names:
        raise ValueError(
            f"param_names: expected names of the model's parameters, got unknown "
            f"{missing or 'none'}"
        )
    keep = set(param_names)
    flags = {n: p.requires_grad for n, p in named.items()}
    for n, p in named.items():
        p.requires_grad_(n in keep)  # backward stops below the scored blocks
    params = [named[n] for n in param_names]
    out = []
    try:
        for ids, start in rows:
            x = ids[None, :-1].to(device)  # (1, T-1)
            y = ids[None, 1:].to(device)
            m = torch.zeros_like(y, dtype=torch.bool)
            m[0, start - 1 :] = True  # targets that are answer tokens
            logits = model(input_ids=x).logits  # (1, T-1, V)
            loss = lm_loss(logits, y, m)
            grads = torch.autograd.grad(loss, params)
            out.append(sum(gr.pow(2).sum() for gr in grads).detach().cpu())
    finally:
        for n, p in named.items():
            p.requires_grad_(flags[n])
    return torch.stack(out).double()


def last_block_params(model, n_blocks: int) -> list[str]:
    """Names of the parameters of the last ``n_blocks`` decoder blocks and the final
    norm (``n_blocks`` = number of layers: every parameter)."""
    n_layers = getattr(getattr(model, "config", None), "num_hidden_layers", None)
    if not isinstance(model, torch.nn.Module) or not isinstance(n_layers, int):
        raise TypeError(
            f"model: expected a Hugging Face causal LM (config.num_hidden_layers), "
            f"got {type(model).__name__}"
        )
    check_int("n_blocks", n_blocks, 1)
    if n_blocks >= n_layers:
        return [n for n, _ in model.named_parameters()]
    first = n_layers - n_blocks
    return [
        n
        for n, _ in model.named_parameters()
        if n.startswith("model.norm")
        or any(n.startswith(f"model.layers.{i}.") for i in range(first, n_layers))
    ]


def smollm_length_bias(
    n: int, n_blocks: int, seed: int, device="cpu", model_tok=None
) -> dict:
    """Score a generated benign pool of ``n`` samples on SmolLM2 and report the length
    bias: Spearman correlation of each score with the answer length (tokens), and the
    answer lengths of the top tenth."""
    check_int("n", n, 1)
    check_int("n_blocks", n_blocks, 1)
    check_int("seed", seed, 0)
    if model_tok is not None and (
        not isinstance(model_tok, (tuple, list)) or len(model_tok) != 2
    ):
        raise TypeError(
            f"model_tok: expected a (model, tokenizer) pair or None, got "
            f"{type(model_tok).__name__}"
        )
    from .influence import self_inf_n, spearman

    model, tok = model_tok if model_tok is not None else load_smollm2(device)
    pool = text_pool(n, seed)
    rows = chat_tensors(tok, pool)
    names = last_block_params(model, n_blocks)
    si = hf_self_influence(model, rows, names, device)
    lengths = torch.tensor(
        [len(r[0]) - r[1] - 1 for r in rows]
    )  # answer tokens without <|im_end|>
    sn = self_inf_n(si, lengths)
    trivial = torch.tensor([a.strip().lower() in ("yes", "no", "") for _, _, a in pool])
    k = max(1, n // 10)
    from .influence import select_top

    top = {
        name: select_top(s, k, trivial).tolist()
        for name, s in (("self_inf", si), ("self_inf_n", sn))
    }
    return {
        "n": n,
        "n_blocks": n_blocks,
        "n_params": sum(dict(model.named_parameters())[m].numel() for m in names),
        "kinds": [kd for kd, _, _ in pool],
        "instructions": [q for _, q, _ in pool],
        "responses": [a for _, _, a in pool],
        "length": lengths.tolist(),
        "self_inf": si.tolist(),
        "self_inf_n": sn.tolist(),
        "top": top,
        "k": k,
        "spearman": {
            "self_inf": spearman(si, lengths.double()),
            "self_inf_n": spearman(sn, lengths.double()),
        },
        "top_median_length": {
            name: float(lengths[idx].double().median()) for name, idx in top.items()
        },
    }


def _smollm_job(n: int, n_blocks: int, seed: int, device, threads: int) -> dict:
    """Body of :func:`smollm_length_bias_async` in the worker process."""
    from lib.common import seed_everything, set_threads

    # quiet: a notebook kernel can capture its children's stdout/stderr (transformers'
    # progress bar would land in the cell's output); errors come back through the Future
    os.environ["TQDM_DISABLE"] = "1"
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 1)
    os.dup2(null, 2)
    set_threads(threads)
    seed_everything(seed)
    return smollm_length_bias(n, n_blocks, seed, device=device)


def smollm_length_bias_async(
    n: int, n_blocks: int, seed: int, device="cpu", threads: int = 1
):
    """Start :func:`smollm_length_bias` in a spawned process with ``threads`` torch
    threads (after ``seed_everything(seed)``, as a notebook cell would) and return its
    ``concurrent.futures.Future``; ``.result()`` gives the same dict.

    The chapter starts it before the small world's run, which trains on one thread, so
    the two use both cores of a two-core machine instead of one after the other."""
    import concurrent.futures
    import multiprocessing as mp

    check_int("n", n, 1)
    check_int("n_blocks", n_blocks, 1)
    check_int("seed", seed, 0)
    check_int("threads", threads, 1)
    ex = concurrent.futures.ProcessPoolExecutor(
        1, mp_context=mp.get_context("spawn")  # no fork after torch's pools started
    )
    fut = ex.submit(_smollm_job, n, n_blocks, seed, str(torch.device(device)), threads)
    ex.shutdown(wait=False)  # the job still runs; the worker exits when it is done
    return fut
