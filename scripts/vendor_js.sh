#!/usr/bin/env bash
# Vendor the JavaScript the built book needs, so it works offline (fetched from npm at set-up into
# book/_static/, not committed):
#  - @jupyter-widgets/html-manager (embed-amd.js) and requirejs (require.js): render saved widget state;
#  - MathJax 3 (es5 bundle and fonts): typeset math without a CDN.
set -euo pipefail
HTML_MANAGER_VERSION=1.0.15
REQUIREJS_VERSION=2.3.8
MATHJAX_VERSION=3.2.2
static="$(cd "$(dirname "$0")/.." && pwd)/book/_static"
stamp="$static/.vendored-$HTML_MANAGER_VERSION-$REQUIREJS_VERSION-$MATHJAX_VERSION"
[ -f "$stamp" ] && exit 0
if ! command -v npm >/dev/null 2>&1; then
  echo "vendor_js: npm not found; install Node.js/npm (widgets and math in the book need it)" >&2
  exit 1
fi
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
( cd "$tmp" && npm pack --silent "@jupyter-widgets/html-manager@$HTML_MANAGER_VERSION" \
    "requirejs@$REQUIREJS_VERSION" "mathjax@$MATHJAX_VERSION" >/dev/null )
rm -rf "$static/widgets" "$static/mathjax"
mkdir -p "$static/widgets" "$tmp/hm" "$tmp/rq" "$tmp/mj"
tar -xzf "$tmp"/jupyter-widgets-html-manager-*.tgz -C "$tmp/hm"
cp "$tmp/hm/package/dist/embed-amd.js" "$static/widgets/embed-amd.js"
tar -xzf "$tmp"/requirejs-*.tgz -C "$tmp/rq"
cp "$tmp/rq/package/require.js" "$static/widgets/require.js"
tar -xzf "$tmp"/mathjax-*.tgz -C "$tmp/mj"
cp -r "$tmp/mj/package/es5" "$static/mathjax"
rm -f "$static"/.vendored-*
touch "$stamp"
echo "vendor_js: html-manager $HTML_MANAGER_VERSION, requirejs $REQUIREJS_VERSION, mathjax $MATHJAX_VERSION -> $static"
