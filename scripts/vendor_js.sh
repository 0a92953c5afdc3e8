#!/usr/bin/env bash
# Vendor the JavaScript the built book needs, so it works offline (fetched from npm at set-up into
# book/_static/, not committed):
#  - @jupyter-widgets/html-manager (embed-amd.js) and requirejs (require.js): render saved widget state;
#  - MathJax 3 (es5 bundle and fonts): typeset math without a CDN.
#
# Everything is unpacked into a temporary folder inside book/_static and checked there; only then
# are widgets/ and mathjax/ swapped in. A failed download or unpack leaves the old files (and their
# stamp) as they were. The stamp counts only while the files it stands for are there.
#
# Overrides (defaults unchanged; used by tests/test_setup_scripts.py):
#   VENDOR_JS_STATIC    the folder to fill (default: <repo>/book/_static)
#   VENDOR_JS_TARBALLS  a folder already holding the three npm .tgz files, used instead of `npm pack`
set -euo pipefail
HTML_MANAGER_VERSION=1.0.15
REQUIREJS_VERSION=2.3.8
MATHJAX_VERSION=3.2.2
repo="$(cd "$(dirname "$0")/.." && pwd)"
static="${VENDOR_JS_STATIC:-$repo/book/_static}"
stamp="$static/.vendored-$HTML_MANAGER_VERSION-$REQUIREJS_VERSION-$MATHJAX_VERSION"
# the files _config.yml points at (mathjax_path and the two widget scripts)
assets=(widgets/embed-amd.js widgets/require.js mathjax/tex-mml-chtml.js)

# missing_assets DIR: print the assets absent (or empty) under DIR; exit 0 only if none are
missing_assets() {
  local a bad=0
  for a in "${assets[@]}"; do
    if [ ! -s "$1/$a" ]; then echo "$a"; bad=1; fi
  done
  return "$bad"
}

if [ -f "$stamp" ] && missing_assets "$static" >/dev/null; then
  exit 0
fi

fail() {
  echo "vendor_js: $*" >&2
  echo "vendor_js: the files already in $static are left as they were;" \
       "to retry: bash scripts/vendor_js.sh (or make setup)" >&2
  exit 1
}

work=()   # temporary folders removed on exit
trap 'rm -rf ${work[@]+"${work[@]}"}' EXIT
tmp=$(mktemp -d); work+=("$tmp")
if [ -n "${VENDOR_JS_TARBALLS:-}" ]; then
  cp "$VENDOR_JS_TARBALLS"/*.tgz "$tmp"/ || fail "no .tgz files in $VENDOR_JS_TARBALLS"
else
  if ! command -v npm >/dev/null 2>&1; then
    fail "npm not found; install Node.js/npm (widgets and math in the book need it)"
  fi
  ( cd "$tmp" && npm pack --silent "@jupyter-widgets/html-manager@$HTML_MANAGER_VERSION" \
      "requirejs@$REQUIREJS_VERSION" "mathjax@$MATHJAX_VERSION" >/dev/null ) \
    || fail "npm pack failed (html-manager $HTML_MANAGER_VERSION, requirejs $REQUIREJS_VERSION," \
            "mathjax $MATHJAX_VERSION)"
fi

# unpack_one PATTERN DIR: unpack the one tarball in $tmp matching PATTERN into DIR
unpack_one() {
  local tgz
  tgz="$(find "$tmp" -maxdepth 1 -name "$1" | head -n 1)"
  [ -n "$tgz" ] || fail "no $1 to unpack"
  mkdir -p "$2"
  tar -xzf "$tgz" -C "$2" || fail "could not unpack $(basename "$tgz") (truncated or damaged?)"
}

mkdir -p "$static"
rm -rf "$static"/.vendor-new.* "$static"/.vendor-old.*   # left by a run that was killed
new="$(mktemp -d "$static/.vendor-new.XXXXXX")"; work+=("$new")
unpack_one 'jupyter-widgets-html-manager-*.tgz' "$tmp/hm"
unpack_one 'requirejs-*.tgz' "$tmp/rq"
unpack_one 'mathjax-*.tgz' "$tmp/mj"
mkdir -p "$new/widgets"
cp "$tmp/hm/package/dist/embed-amd.js" "$new/widgets/embed-amd.js" \
  || fail "html-manager package has no dist/embed-amd.js"
cp "$tmp/rq/package/require.js" "$new/widgets/require.js" || fail "requirejs package has no require.js"
[ -d "$tmp/mj/package/es5" ] || fail "mathjax package has no es5/ folder"
cp -r "$tmp/mj/package/es5" "$new/mathjax" || fail "could not copy mathjax/es5"
if ! missing="$(missing_assets "$new")"; then
  fail "unpacked files incomplete, missing: $(echo $missing)"
fi

# swap in: drop the stamp first, so that an interruption between the two moves is redone next time
rm -f "$static"/.vendored-*
old="$static/.vendor-old.$$"; work+=("$old")
mkdir -p "$old"
for d in widgets mathjax; do
  if [ -e "$static/$d" ]; then mv "$static/$d" "$old/$d"; fi
  mv "$new/$d" "$static/$d"
done
touch "$stamp"
echo "vendor_js: html-manager $HTML_MANAGER_VERSION, requirejs $REQUIREJS_VERSION, mathjax $MATHJAX_VERSION -> $static"
