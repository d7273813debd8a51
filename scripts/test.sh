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
# every frame of every interactive figure is exercised: the tests (conftest.py) draw and check
# each one, the book build also rasterises each one (icllib.widgets, modes checked and static)
# lint first (seconds): pyproject.toml [tool.ruff] is the project's style
.venv/bin/ruff check .
t0=$(date +%s)
cpu_ticks() { awk '/^cpu /{print $2+$3+$4+$7+$8, $5+$6}' /proc/stat 2>/dev/null || echo "0 0"; }
read -r busy0 idle0 <<< "$(cpu_ticks)"
# Three streams side by side: the numerics under other kernels (unit tests), JupyterLab (every
# chapter opened, run and moved as a notebook; it needs no build), and in front the build under
# this machine's kernels, then the tests of the built pages. nbval (every chapter, under other
# kernels) is a queue that each stream takes chapters from when its own work is done (conftest.py,
# ICLLIB_NBVAL_QUEUE), so the three end together. They share only the CPU (nbval, the build and
# JupyterLab execute the chapters without changing them; the page tests read _build/ after the
# build), so side by side they change the wall time only, and one stream's waits on the browser
# are filled by the others' work.
# Half the cores per stream's BLAS/OpenMP (one thread on a 2-core machine): multi-threaded
# numerics on too few cores wait for each other (PyTorch's small ops slow down several times
# when oversubscribed), and a larger machine still uses all of its cores.
cores=$(.venv/bin/python -c 'import os; print(len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count())')
threads=$(( cores / 2 > 0 ? cores / 2 : 1 ))
export OMP_NUM_THREADS=$threads OPENBLAS_NUM_THREADS=$threads MKL_NUM_THREADS=$threads
echo "[test] $cores cores: $threads BLAS/OpenMP thread(s) per stream"
logs=$(mktemp -d)
queue="$logs/nbval-claimed"
mkdir "$queue"
nbval_queue() {
  local t; t=$(date +%s)
  ICLLIB_NBVAL_QUEUE="$queue" \
    scripts/other-cpu .venv/bin/python -m pytest book --nbval-lax --nbval-current-env -q -p no:cacheprovider
  echo "[test] nbval chapters (other kernels) $(( $(date +%s) - t )) s"
}
(
  scripts/other-cpu .venv/bin/python -m pytest tests -m "not browser" -q -p no:cacheprovider
  echo "[test] unit (other kernels) $(( $(date +%s) - t0 )) s"
  nbval_queue
) > "$logs/other" 2>&1 &
other_pid=$!
(
  .venv/bin/python -m pytest tests/test_jupyterlab.py -m browser -q -p no:cacheprovider
  echo "[test] JupyterLab $(( $(date +%s) - t0 )) s"
  nbval_queue
) > "$logs/lab" 2>&1 &
lab_pid=$!
show_logs() {
  echo "[test] other-kernel stream (unit tests, then nbval chapters):"; cat "$logs/other"
  echo "[test] JupyterLab stream (then nbval chapters):"; cat "$logs/lab"
}
# a failing build stops the script: stop the other streams with it and show what they printed
trap 'for pid in "$other_pid" "$lab_pid"; do pkill -TERM -P "$pid" 2>/dev/null || true; kill "$pid" 2>/dev/null || true; done; show_logs' EXIT
bash scripts/build.sh
t1=$(date +%s)
.venv/bin/python -m pytest tests -m browser --ignore=tests/test_jupyterlab.py -q -p no:cacheprovider
t2=$(date +%s)
nbval_queue
trap - EXIT
status=0; wait "$other_pid" || status=$?
lab_status=0; wait "$lab_pid" || lab_status=$?
show_logs
read -r busy1 idle1 <<< "$(cpu_ticks)"
echo "[test] build $((t1-t0)) s, built pages $((t2-t1)) s, all $(( $(date +%s) - t0 )) s;" \
     "CPU busy $(( (busy1 - busy0) / 100 )) core-s, idle $(( (idle1 - idle0) / 100 )) core-s"
# every chapter nbval collects was claimed (and so run) by one of the streams
unclaimed=$(.venv/bin/python -c 'import os, sys, pathlib, conftest
claimed = set(os.listdir(sys.argv[1]))
print(" ".join(p.name for p in sorted(pathlib.Path("book").glob("*.md"))
               if conftest._is_myst_notebook(p) and p.name not in claimed))' "$queue")
if [ -n "$unclaimed" ]; then
  echo "[test] nbval ran no stream over: $unclaimed"
  exit 1
fi
if [ "$status" != 0 ]; then
  echo "[test] the unit tests or nbval under other kernels failed (exit $status)"
  exit "$status"
fi
if [ "$lab_status" != 0 ]; then
  echo "[test] the JupyterLab tests or nbval under other kernels failed (exit $lab_status)"
  exit "$lab_status"
fi
