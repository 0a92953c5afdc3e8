"""Run every benchmarks/bench_*.py (each has ``main() -> list of compare() rows``) and
write benchmarks/results.md. Usage: python benchmarks/run_all.py [name-filter]"""

import importlib.util
import pathlib
import platform
import sys

import torch

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from harness import table  # noqa: E402


def main(argv):
    pattern = argv[0] if argv else ""
    threads = (
        torch.get_num_threads()
    )  # benchmarks may change it; report what the run started with
    sections = []
    for path in sorted(HERE.glob("bench_*.py")):
        if pattern not in path.stem:
            continue
        spec = importlib.util.spec_from_file_location(path.stem, path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        rows = mod.main()
        sections.append(f"## {path.stem}\n\n{table(rows)}\n")
        print(f"{path.stem}: {len(rows)} rows")
    dev = (
        torch.cuda.get_device_name()
        if torch.cuda.is_available()
        else f"CPU ({platform.machine()}, {threads} threads at start; "
        "some benchmarks set their own)"
    )
    header = (
        f"# Benchmarks\n\nMachine: {dev}; torch {torch.__version__}. "
        "Ratio > 1: ours is faster.\n\n"
    )
    (HERE / "results.md").write_text(header + "\n".join(sections))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
