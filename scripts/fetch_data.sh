#!/usr/bin/env bash
# Data that ships in Debian packages, unpacked into data/ without root (apt-get download + dpkg -x).
# Called by `make setup`; idempotent. Each dataset is one block below.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)/data"
mkdir -p "$root"
