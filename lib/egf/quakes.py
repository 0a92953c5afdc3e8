"""The earthquake run on the sphere, stored: the same four models as on the volcanoes
(EGF on π/4 rotations, Moser Flow, the π/2 control, the vMF mixture) with the same
settings, on the 1,707 earthquakes of npm ``vega-datasets`` and the notebook seeds.

Twelve more sphere fits do not fit in the chapter's 3-minute budget, so
``python -m lib.egf quakes`` (:data:`COMMAND`) runs them with this chapter's code and
writes :data:`QUAKES_FILE`, which the chapter reads. The file records the code's
fingerprint (:func:`lib.common.claims.lib_hash`, as the claims files do) and the
settings; :func:`load_quake_record` refuses a file whose settings differ from the
chapter's and marks one whose code changed as stale. ``make claims`` fits the same
row independently, on the notebook and the held-out seeds; a test checks that its
notebook-seed values equal this file's."""

from __future__ import annotations

import os
import pathlib
import time

from lib.common import check_instance, check_int
from lib.common.claims import seed_list

#: the stored record the chapter reads
QUAKES_FILE = (
    pathlib.Path(__file__).resolve().parents[2] / "results" / "egf.quakes.json"
)
#: the command that writes it
COMMAND = "python -m lib.egf quakes"
#: the settings the sphere fits read (a file with other values is refused)
SPHERE_FIELDS = (
    "sphere_width",
    "sphere_depth",
    "sphere_steps",
    "sphere_batch",
    "sphere_quad",
    "sphere_b",
    "lr_sphere_egf",
    "lr_sphere_moser",
    "eps",
    "vmf_components",
    "vmf_iters",
)


def _settings(cfg) -> dict:
    return {
        f: list(v) if isinstance(v := getattr(cfg, f), tuple) else v
        for f in SPHERE_FIELDS
    }


def quake_fits(cfg, seeds, device="cpu", processes: int = 1) -> dict:
    """``{model: {seed: metrics}}`` for the networks of
    :data:`lib.egf.earth.SPHERE_MODELS` and ``"vmf"`` on the earthquakes (test and
    validation NLL, negative mass, parameters or the number of components; the
    density map for the first seed only). ``processes`` > 1: in one-thread worker
    processes (the same numbers)."""
    from .claims import _claim_job
    from .earth import SPHERE_MODELS
    from .experiment import _check_cfg, pool_map

    _check_cfg(cfg)
    seeds = seed_list(seeds)
    processes = check_int("processes", processes, 1)
    models = (*SPHERE_MODELS, "vmf")
    jobs = [("sphere", m, "earthquake", cfg, s, device) for m in models for s in seeds]
    done = iter(pool_map(_claim_job, jobs, processes))
    out = {}
    for m in models:
        out[m] = {}
        for i, s in enumerate(seeds):
            r = next(done)
            r.pop("seconds", None)
            if i > 0:
                r.pop("density_map")
            else:  # 5 significant digits are plenty for a drawn map
                r["density_map"] = [[float(f"{v:.5g}") for v in row]
                                    for row in r["density_map"]]  # fmt: skip
            out[m][s] = r
    return out


def save_quake_record(cfg, seeds, path=QUAKES_FILE, device="cpu", processes=1):
    """Run :func:`quake_fits` and write it with the settings, the code fingerprint,
    the command and the run's wall time and machine
    (:func:`lib.egf.records.write_record`); returns the path."""
    from .records import write_record

    check_instance("path", path, (str, os.PathLike), "a path")
    t0 = time.perf_counter()
    fits = quake_fits(cfg, seeds, device, processes)
    settings, seeds = _settings(cfg), seed_list(seeds)
    return write_record(path, COMMAND, settings, seeds, "fits", fits, device, t0)


def load_quake_record(cfg, path=QUAKES_FILE) -> dict:
    """The stored record: ``{"fits": {model: {seed: metrics}}, "seeds", "stale",
    ...}`` with integer seeds; ``stale`` is True when ``lib/egf`` changed since the
    file was written. Raises when the file is missing or its settings are not
    ``cfg``'s."""
    from .experiment import _check_cfg
    from .records import read_record

    _check_cfg(cfg)
    check_instance("path", path, (str, os.PathLike), "a path")
    return read_record(path, COMMAND, _settings(cfg), "fits", "cfg")


def quake_measured(record: dict) -> dict:
    """The earthquake row in :func:`lib.egf.claims.measure_claims`' form, from a
    record of :func:`load_quake_record`: ``{"earth-nll": {"values": {seed: Moser −
    EGF}, "control": {seed: Moser − EGF on π/2 rotations}}}`` (test NLLs)."""
    check_instance("record", record, dict, "a record of load_quake_record")
    if "fits" not in record or "seeds" not in record:
        raise ValueError(
            f"record: expected the keys 'fits' and 'seeds', got {sorted(record)}"
        )
    f, seeds = record["fits"], record["seeds"]

    def nll(m, s):
        return f[m][s]["test_nll"]

    return {
        "earth-nll": {
            "values": {s: nll("moser", s) - nll("egf", s) for s in seeds},
            "control": {s: nll("moser", s) - nll("egf_pi2", s) for s in seeds},
        }
    }


def main() -> pathlib.Path:
    """``python -m lib.egf quakes``: the notebook seeds at SMOKE size, two workers;
    returns the path written."""
    from . import SMOKE
    from .claims import NOTEBOOK_SEEDS

    return save_quake_record(SMOKE, NOTEBOOK_SEEDS, processes=2)


__all__ = [
    "QUAKES_FILE",
    "COMMAND",
    "quake_fits",
    "save_quake_record",
    "load_quake_record",
    "quake_measured",
]
