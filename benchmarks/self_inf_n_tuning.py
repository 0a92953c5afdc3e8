"""Choose the attack's learning rate on the tuning worlds, with baselines only.

``python benchmarks/self_inf_n_tuning.py`` runs :func:`lib.self_inf_n.tune_attack` on
``TUNING_SEEDS`` over a grid of rates (the paper's 5e-5 included), applies the rule of
:func:`lib.self_inf_n.choose_attack_lr` (written before the run) and writes
``results/self_inf_n.tuning.json``. Self-Inf-N is never run here.
"""

import json
import pathlib
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from lib.common import set_threads  # noqa: E402
from lib import self_inf_n as S  # noqa: E402

LRS = (5e-5, 2e-4, 5e-4, 1e-3, 1.5e-3)

if __name__ == "__main__":
    set_threads(1)
    t0 = time.perf_counter()
    tuned = S.tune_attack(S.SMOKE, S.TUNING_SEEDS, LRS)
    lr = S.choose_attack_lr(tuned, LRS)
    out = {
        "lrs": list(LRS),
        "chosen_lr": lr,
        "worlds": {str(k): v for k, v in tuned.items()},
        "wall_time_s": time.perf_counter() - t0,
    }
    path = ROOT / "results" / "self_inf_n.tuning.json"
    path.write_text(json.dumps(out, indent=1) + "\n")
    print(f"chosen attack lr {lr} ({out['wall_time_s']:.0f} s) -> {path}")
