#!/usr/bin/env bash
# Make Debian's headless Chromium available for the browser checks (tests/test_html.py).
# As root (CI, this machine) it is installed with apt-get; without root it cannot be, and the
# browser checks then skip with a message saying so (in CI, CI=true, they fail instead).
set -u
find_chromium() { command -v chromium || command -v chromium-browser || command -v google-chrome || true; }
if [ -n "$(find_chromium)" ]; then exit 0; fi
if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  echo "install_chromium: installing Debian's chromium (about a minute)"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >/dev/null && apt-get install -y -qq --no-install-recommends chromium >/dev/null
  if [ -n "$(find_chromium)" ]; then exit 0; fi
  echo "install_chromium: apt-get install chromium failed" >&2
else
  echo "install_chromium: chromium is not installed and this user cannot install it (needs root and apt-get);" \
       "the browser checks will be skipped" >&2
fi
# Outside CI a missing browser is not fatal: tests/test_html.py skips with the reason.
[ "${CI:-}" = "true" ] && exit 1 || exit 0
