#!/usr/bin/env bash
# Set up everything the build, the tests and JupyterLab need, on a fresh machine with Python
# 3.11: a virtual environment in .venv with the pinned requirements.txt (the same file Binder
# installs), then postBuild (icllib editable, chapters open as notebooks), as Binder does.
# Idempotent: a second run only compares a stamp of the inputs.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  echo "[setup] creating .venv with $($PYTHON --version)"
  "$PYTHON" -m venv .venv
fi
stamp=.venv/.requirements.sha
want=$(sha1sum requirements.txt pyproject.toml postBuild scripts/jupyterlab_settings.py | sha1sum | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  echo "[setup] installing pinned requirements (about a minute)"
  pip=(.venv/bin/python -m pip install -q --disable-pip-version-check)
  "${pip[@]}" --upgrade pip
  requirements=requirements.txt
  # requirements.txt names PyTorch's CPU index (so a machine on the internet gets the ~200 MB
  # CPU build of torch, not PyPI's multi-GB CUDA build). Where pip already finds the pinned
  # torch without any index (a local wheel in pip's find-links), skip that index: a machine
  # that cannot reach it would retry it for minutes.
  torch_pin=$(grep -E '^torch==' requirements.txt)
  if "${pip[@]}" --dry-run --ignore-installed --no-index --no-deps "$torch_pin" >/dev/null 2>&1; then
    requirements=.venv/requirements-local.txt
    grep -v -e '^--extra-index-url' requirements.txt > "$requirements"
    echo "[setup] $torch_pin found locally; PyTorch's index not needed"
  fi
  "${pip[@]}" -r "$requirements"
  PYTHON=.venv/bin/python bash postBuild
  echo "$want" > "$stamp"
fi
