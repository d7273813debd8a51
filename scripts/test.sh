#!/usr/bin/env bash
# Run every test: set-up (venv, Debian chromium), the icllib unit tests and nbval over every
# chapter under OTHER numeric kernels (scripts/other-cpu), every chapter in JupyterLab, and a
# fresh build of the book under this machine's own kernels followed by the built pages' tests.
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
# Three streams. Two in the background: the numerics under other kernels (unit tests, then
# nbval) and JupyterLab (every chapter opened, run and moved as a notebook; it needs no build).
# In front: the build under this machine's kernels, then the tests of the built pages. They
# share only the CPU (nbval, the build and JupyterLab execute the chapters without changing
# them; the page tests read _build/ after the build), so side by side they change the wall
# time only, and JupyterLab's waits on the browser are filled by the others' work.
# Half the cores per stream's BLAS/OpenMP (one thread on a 2-core machine): multi-threaded
# numerics on too few cores wait for each other (PyTorch's small ops slow down several times
# when oversubscribed), and a larger machine still uses all of its cores.
cores=$(.venv/bin/python -c 'import os; print(len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count())')
threads=$(( cores / 2 > 0 ? cores / 2 : 1 ))
export OMP_NUM_THREADS=$threads OPENBLAS_NUM_THREADS=$threads MKL_NUM_THREADS=$threads
echo "[test] $cores cores: $threads BLAS/OpenMP thread(s) per stream"
other_log=$(mktemp); lab_log=$(mktemp)
(
  scripts/other-cpu .venv/bin/python -m pytest tests -m "not browser" -q -p no:cacheprovider
  t=$(date +%s); echo "[test] unit (other kernels) $((t-t0)) s"
  scripts/other-cpu .venv/bin/python -m pytest book --nbval-lax --nbval-current-env -q -p no:cacheprovider
  echo "[test] nbval (other kernels) $(( $(date +%s) - t )) s"
) > "$other_log" 2>&1 &
other_pid=$!
(
  .venv/bin/python -m pytest tests/test_jupyterlab.py -m browser -q -p no:cacheprovider
  echo "[test] JupyterLab $(( $(date +%s) - t0 )) s"
) > "$lab_log" 2>&1 &
lab_pid=$!
# a failing build stops the script: stop the other streams with it and show what they printed
trap 'for pid in "$other_pid" "$lab_pid"; do pkill -TERM -P "$pid" 2>/dev/null || true; kill "$pid" 2>/dev/null || true; done
      echo "[test] other-kernel stream:"; cat "$other_log"; echo "[test] JupyterLab stream:"; cat "$lab_log"' EXIT
bash scripts/build.sh
t1=$(date +%s)
.venv/bin/python -m pytest tests -m browser --ignore=tests/test_jupyterlab.py -q -p no:cacheprovider
t2=$(date +%s)
trap - EXIT
status=0; wait "$other_pid" || status=$?
lab_status=0; wait "$lab_pid" || lab_status=$?
echo "[test] other-kernel stream (unit tests, nbval):"
cat "$other_log"
echo "[test] JupyterLab stream:"
cat "$lab_log"
echo "[test] build $((t1-t0)) s, built pages $((t2-t1)) s, all $(( $(date +%s) - t0 )) s"
if [ "$status" != 0 ]; then
  echo "[test] the unit tests or nbval under other kernels failed (exit $status)"
  exit "$status"
fi
if [ "$lab_status" != 0 ]; then
  echo "[test] the JupyterLab tests failed (exit $lab_status)"
  exit "$lab_status"
fi
