#!/usr/bin/env bash
# Run every test: set-up (venv, Debian chromium), the icllib unit tests and nbval over every
# chapter under OTHER numeric kernels (scripts/other-cpu), a fresh build of the book under this
# machine's own kernels, then the browser tests (built pages; chapters in JupyterLab).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
if ! command -v chromium >/dev/null 2>&1; then
  echo "[test] installing Debian chromium for the browser tests"
  export DEBIAN_FRONTEND=noninteractive
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq chromium >/dev/null
fi
# every frame of every interactive figure is exercised: conftest.py and the book build choose
# static figures (icllib.widgets.use_static_figures)
# lint first (seconds): pyproject.toml [tool.ruff] is the project's style
.venv/bin/ruff check .
t0=$(date +%s)
scripts/other-cpu .venv/bin/python -m pytest tests -m "not browser" -q -p no:cacheprovider
t1=$(date +%s)
scripts/other-cpu .venv/bin/python -m pytest book --nbval-lax --nbval-current-env -q -p no:cacheprovider
t2=$(date +%s)
bash scripts/build.sh
t3=$(date +%s)
.venv/bin/python -m pytest tests -m browser -q -p no:cacheprovider
t4=$(date +%s)
echo "[test] unit (other kernels) $((t1-t0)) s, nbval (other kernels) $((t2-t1)) s," \
     "build $((t3-t2)) s, browser + JupyterLab $((t4-t3)) s"
