#!/usr/bin/env bash
# Copy pytest and its pure-Python dependencies from the venv into _build/gpu_site, a folder small
# enough to carry to the GPU machine (which may lack pytest), for scripts/gpu_check.sh:
#   bash scripts/gpu_site.sh && GPU_SITE=_build/gpu_site bash scripts/gpu_check.sh wctm ...
set -euo pipefail
cd "$(dirname "$0")/.."
site=$(.venv/bin/python -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")
rm -rf _build/gpu_site && mkdir -p _build/gpu_site
for pkg in pytest _pytest pluggy iniconfig packaging py.py; do
  [ -e "$site/$pkg" ] && cp -r "$site/$pkg" _build/gpu_site/
done
du -sh _build/gpu_site
