#!/usr/bin/env bash
# Build the book: set-up, then a fresh execution of every chapter into _build/html.
# Warnings are errors (-W -n --keep-going): a failing notebook cell or a broken reference fails.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
start=$(date +%s)
.venv/bin/jupyter-book build . --all -W -n --keep-going
echo "[build] done in $(( $(date +%s) - start )) s; size $(du -sh _build/html | cut -f1)"
echo "[build] open file://$(pwd)/_build/html/index.html"
