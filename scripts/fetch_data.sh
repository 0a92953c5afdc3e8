#!/usr/bin/env bash
# Data that ships in Debian packages, unpacked into data/ without root (apt-get download + dpkg -x).
# Called by `make setup`; idempotent. Each dataset is one block below.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)/data"
mkdir -p "$root"

# --- Fashion-MNIST (chapter ood_shaping): Debian's dataset-fashion-mnist, IDX .gz files ----------
fmnist="$root/fashion-mnist"
if [ ! -f "$fmnist/t10k-images-idx3-ubyte.gz" ]; then
  if ! apt-cache show dataset-fashion-mnist >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ]; then
      apt-get update -qq
    else
      echo "fetch_data.sh: apt has no package list containing dataset-fashion-mnist;" \
           "run 'sudo apt-get update' once, then re-run this script" >&2
      exit 1
    fi
  fi
  tmp="$(mktemp -d)"
  trap 'rm -rf "$tmp"' EXIT
  sandbox=()  # as root, apt would otherwise warn that its _apt user cannot write the temp dir
  [ "$(id -u)" = 0 ] && sandbox=(-o APT::Sandbox::User=root)
  (cd "$tmp" && apt-get download -q "${sandbox[@]}" dataset-fashion-mnist >/dev/null)
  dpkg -x "$tmp"/dataset-fashion-mnist_*.deb "$tmp/x"
  src="$(dirname "$(find "$tmp/x" -name 't10k-images-idx3-ubyte.gz' | head -n 1)")"
  mkdir -p "$fmnist"
  cp "$src"/*-ubyte.gz "$fmnist"/
  rm -rf "$tmp"
  trap - EXIT
fi
