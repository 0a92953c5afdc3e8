#!/usr/bin/env bash
# One prepared device check for a session lent a GPU: the CPU/GPU parity tests and the FULL presets
# of the chapters named, on the GPU, results copied to $OUT (the device tool's return folder).
#   bash scripts/gpu_check.sh brokerage wctm ...
# The GPU machine has torch (CUDA), numpy, scipy, scikit-learn and matplotlib; pytest may be absent,
# in which case the parity tests are reported as not run (carry a pytest wheel to run them).
set -uo pipefail
cd "$(dirname "$0")/.."
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" BOOK_DEVICE="${BOOK_DEVICE:-cuda}" TQDM_DISABLE=1
python -c "import torch; print('torch', torch.__version__, '| device:', torch.cuda.get_device_name() if torch.cuda.is_available() else 'no CUDA')"
status=0
if python -c "import pytest" 2>/dev/null; then
  tests=(); for s in "$@"; do [ -f "tests/test_$s.py" ] && tests+=("tests/test_$s.py"); done
  python -m pytest "${tests[@]}" tests/test_common.py -q -p no:cacheprovider -k "cuda or gpu or parity" || status=1
else
  echo "pytest is not installed here: parity tests NOT run"
fi
for s in "$@"; do
  echo "== FULL preset: $s"
  python -m lib."$s" --preset FULL || status=1
  [ -n "${OUT:-}" ] && [ -f "results/$s.json" ] && cp "results/$s.json" "$OUT/"
done
exit $status
