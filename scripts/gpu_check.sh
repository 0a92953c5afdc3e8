#!/usr/bin/env bash
# One prepared device check for a session lent a GPU: the CPU/GPU parity tests and the FULL presets
# of the chapters named, on the GPU, results copied to $OUT (the device tool's return folder).
#   bash scripts/gpu_check.sh brokerage wctm ...
# The GPU machine has torch (CUDA), numpy, scipy, scikit-learn and matplotlib; pytest may be absent,
# in which case the parity tests are reported as not run. To run them, carry a folder holding
# pytest and its pure-Python dependencies and name it in GPU_SITE (scripts/gpu_site.sh makes one).
# GPU_CHECK_DEADLINE (seconds, default 500) bounds the whole check: each FULL preset gets at most
# GPU_CHECK_EACH seconds (default 120) and none starts with under 20 s left, so the results that
# did finish still come back. A chapter's old results file is moved aside before its run, so only
# a run that finished here is copied back; the log of each run goes to $OUT/<slug>.log.
set -uo pipefail
cd "$(dirname "$0")/.."
export PYTHONPATH="$PWD${GPU_SITE:+:$PWD/$GPU_SITE}${PYTHONPATH:+:$PYTHONPATH}"
export BOOK_DEVICE="${BOOK_DEVICE:-cuda}" TQDM_DISABLE=1
deadline=$(( SECONDS + ${GPU_CHECK_DEADLINE:-500} ))
each=${GPU_CHECK_EACH:-120}
python -c "import torch; print('torch', torch.__version__, '| device:', torch.cuda.get_device_name() if torch.cuda.is_available() else 'no CUDA')"
status=0
if python -c "import pytest" 2>/dev/null; then
  tests=(); for s in "$@"; do [ -f "tests/test_$s.py" ] && tests+=("tests/test_$s.py"); done
  timeout 120 python -m pytest "${tests[@]}" tests/test_common.py -q -p no:cacheprovider \
    -p no:xdist -k "cuda or gpu or parity" 2>&1 | tail -n 30 || status=1
else
  echo "pytest is not installed here: parity tests NOT run"
fi
for s in "$@"; do
  left=$(( deadline - SECONDS ))
  if [ "$left" -lt 20 ]; then echo "== FULL preset: $s SKIPPED (deadline)"; status=1; continue; fi
  limit=$(( left - 5 < each ? left - 5 : each ))
  [ -f "results/$s.json" ] && mv "results/$s.json" "results/$s.json.old"
  start=$SECONDS
  echo "== FULL preset: $s (limit ${limit}s)"
  timeout "$limit" python -m lib."$s" --preset FULL > "${OUT:-/tmp}/$s.log" 2>&1
  rc=$?
  echo "   rc=$rc in $(( SECONDS - start ))s"; tail -n 3 "${OUT:-/tmp}/$s.log"
  [ "$rc" -ne 0 ] && status=1
  if [ "$rc" -eq 0 ] && [ -n "${OUT:-}" ] && [ -f "results/$s.json" ]; then
    cp "results/$s.json" "$OUT/"
  fi
done
exit $status
