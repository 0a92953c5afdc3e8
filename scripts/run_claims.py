"""`make claims [SLUG=…]`: re-check every chapter's claims on the notebook seeds and on
held-out seeds.

For each chapter whose library declares ``CLAIMS`` (with ``NOTEBOOK_SEEDS``, ``SMOKE``,
``measure_claims(cfg, seeds, device)`` and ``judge(measured)``), this runs the
SMOKE-size measurement on the notebook's seeds and on
:data:`lib.common.claims.HELDOUT_SEEDS`, and writes ``results/claims/<slug>.json`` with
provenance, including a hash of ``lib/<slug>/`` so that a stale file is caught by
``tests/test_claims_files.py``.
"""

import importlib
import json
import os
import pathlib
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("TQDM_DISABLE", "1")
from lib.cpu_pins import pin as _pin_cpu_kernels  # noqa: E402

_pin_cpu_kernels()  # AVX2 kernels on every machine kind, before torch is imported

from lib.common import device as pick_device  # noqa: E402
from lib.common import provenance, seed_everything, set_threads  # noqa: E402
from lib.common import claims as C  # noqa: E402
import dataclasses  # noqa: E402


def chapters_with_claims():
    for init in sorted((ROOT / "lib").glob("*/__init__.py")):
        slug = init.parent.name
        if slug != "common" and "CLAIMS" in init.read_text():
            yield slug


def run(slug: str, dev) -> pathlib.Path:
    mod = importlib.import_module(f"lib.{slug}")
    C.check_seeds(mod.NOTEBOOK_SEEDS)
    t0 = time.perf_counter()
    seed_everything(0)
    nb = mod.judge(mod.measure_claims(mod.SMOKE, mod.NOTEBOOK_SEEDS, dev))
    held = mod.judge(mod.measure_claims(mod.SMOKE, C.HELDOUT_SEEDS, dev))
    wall = time.perf_counter() - t0
    out = {}
    for a, b in zip(nb, held):
        c = a.claim
        out[c.id] = {
            "statement": c.statement,
            "paper": c.paper,
            "where": c.where,
            "statistic": c.statistic,
            "control": c.control,
            "modelled": c.modelled,
            "criterion": None if c.rule is None else c.rule.describe(c.fmt),
            "fmt": c.fmt,
            "expect": c.expect,
            "notebook": a.to_dict(),
            "heldout": b.to_dict(),
            "verdict": C.worse(a.verdict, b.verdict),
        }
    payload = {
        "slug": slug,
        "lib_hash": C.lib_hash(slug),
        "preset": "SMOKE",
        "config": dataclasses.asdict(mod.SMOKE),
        "notebook_seeds": list(mod.NOTEBOOK_SEEDS),
        "heldout_seeds": list(C.HELDOUT_SEEDS),
        "claims": out,
        "provenance": provenance(dev, wall),
    }
    path = C.claims_path(slug)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(
        json.dumps(payload, indent=1, ensure_ascii=False, default=str) + "\n"
    )
    os.replace(tmp, path)
    return path


def main(argv):
    slugs = argv or list(chapters_with_claims())
    set_threads(1)
    dev = pick_device()
    for slug in slugs:
        t0 = time.perf_counter()
        path = run(slug, dev)
        print(
            f"{slug}: claims on notebook + held-out seeds in "
            f"{time.perf_counter() - t0:.0f} s -> "
            f"{path.relative_to(ROOT)}",
            file=sys.stderr,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
