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
# Two streams, one per core: the numerics under other kernels (unit tests, then nbval) in the
# background, the build and the browser tests under this machine's kernels in front.  They
# share only the CPU (nbval and the build execute the chapters without writing files; the
# browser tests read _build/ after the build), so side by side they change the wall time only.
# Half the cores per stream (one each on a 2-core machine): two streams of multi-threaded
# BLAS/OpenMP on too few cores wait for each other (PyTorch's small ops slow down several times
# when oversubscribed), and a larger machine still uses all of its cores.
cores=$(.venv/bin/python -c 'import os; print(len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count())')
threads=$(( cores / 2 > 0 ? cores / 2 : 1 ))
export OMP_NUM_THREADS=$threads OPENBLAS_NUM_THREADS=$threads MKL_NUM_THREADS=$threads
echo "[test] $cores cores: two streams of $threads thread(s)"
other_log=$(mktemp)
(
  scripts/other-cpu .venv/bin/python -m pytest tests -m "not browser" -q -p no:cacheprovider
  t=$(date +%s); echo "[test] unit (other kernels) $((t-t0)) s"
  scripts/other-cpu .venv/bin/python -m pytest book --nbval-lax --nbval-current-env -q -p no:cacheprovider
  echo "[test] nbval (other kernels) $(( $(date +%s) - t )) s"
) > "$other_log" 2>&1 &
other_pid=$!
# a failing build stops the script: stop the other stream with it and show what it printed
trap 'pkill -TERM -P "$other_pid" 2>/dev/null || true; kill "$other_pid" 2>/dev/null || true; echo "[test] other-kernel stream:"; cat "$other_log"' EXIT
bash scripts/build.sh
t1=$(date +%s)
.venv/bin/python -m pytest tests -m browser -q -p no:cacheprovider
t2=$(date +%s)
trap - EXIT
status=0; wait "$other_pid" || status=$?
echo "[test] other-kernel stream (unit tests, nbval):"
cat "$other_log"
echo "[test] build $((t1-t0)) s, browser + JupyterLab $((t2-t1)) s, all $(( $(date +%s) - t0 )) s"
if [ "$status" != 0 ]; then
  echo "[test] the unit tests or nbval under other kernels failed (exit $status)"
  exit "$status"
fi
