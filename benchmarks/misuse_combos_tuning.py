"""Choose the weak model's training budget on the tuning seeds, from its own skill only.

``python benchmarks/misuse_combos_tuning.py`` trains the weak model of
:data:`lib.misuse_combos.TUNING_SEEDS` at each budget of ``OPTIONS``, measures its edit
skill on the hardest tasks (:func:`lib.misuse_combos.tune_weak_steps`), applies the rule
of :func:`lib.misuse_combos.choose_weak_steps` (written before the run: the smallest
budget with accuracy >= 0.9 on every tuning seed) and writes
``results/misuse_combos.tuning.json``. No attack, no strong model and no notebook or
held-out seed is run here.
"""

import json
import pathlib
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from lib.cpu_pins import pin  # noqa: E402

pin()  # AVX2 kernels on every machine kind, before torch is imported

from lib import misuse_combos as Mc  # noqa: E402
from lib.common import provenance  # noqa: E402

OPTIONS = (320, 400, 480)

if __name__ == "__main__":
    t0 = time.perf_counter()
    table = Mc.tune_weak_steps(Mc.SMOKE, Mc.TUNING_SEEDS, OPTIONS, processes=2)
    chosen = Mc.choose_weak_steps(table)
    wall = round(time.perf_counter() - t0, 1)
    out = {
        "options": list(OPTIONS),
        "gate": Mc.WEAK_EDIT_GATE,
        "tuning_seeds": list(Mc.TUNING_SEEDS),
        "chosen_weak_steps": chosen,
        "edit_accuracy": {
            str(k): {str(s): a for s, a in v.items()} for k, v in table.items()
        },
        "wall_time_s": wall,
        "provenance": provenance("cpu", wall),
    }
    path = ROOT / "results" / "misuse_combos.tuning.json"
    path.write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps(out["edit_accuracy"]), "->", chosen, f"({out['wall_time_s']} s)")
