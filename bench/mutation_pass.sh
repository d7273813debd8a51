#!/usr/bin/env bash
# Mutation testing of icllib modules with mutmut (PyPI mutmut 3.8.1), the maintained tool that
# replaced the project's own mutation tester. Installs mutmut, with the packages it needs that
# the lock does not hold, into the ignored .tools/ on first use (needs PyPI once).
#
#   bash bench/mutation_pass.sh icllib/metrics.py tests/test_metrics.py
#   bash bench/mutation_pass.sh icllib/theory/losses.py icllib/flows.py tests/test_theory*.py
#
# Arguments under icllib/ are the modules to mutate, the others the test files to run against
# each mutant (mutmut runs only the tests that reach the mutated function). It works in a copy
# in a temporary folder, never in the checkout, so the library can be used meanwhile; it prints
# mutmut's summary and every surviving mutant, and the folder where `mutmut show NAME` shows one.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
python="$root/.venv/bin/python"
tools="$root/.tools/mutmut-3.8.1"
modules=() tests=()
for arg in "$@"; do
  case "$arg" in
    icllib/*.py) modules+=("$arg") ;;
    *) tests+=("$arg") ;;
  esac
done
if [ ${#modules[@]} -eq 0 ] || [ ${#tests[@]} -eq 0 ]; then
  echo "usage: bash bench/mutation_pass.sh icllib/MODULE.py... tests/TEST_FILE.py..." >&2
  exit 2
fi
if [ ! -x "$tools/bin/mutmut" ]; then
  echo "[mutation_pass] installing mutmut 3.8.1 into .tools/"
  # --no-deps: everything else mutmut imports (click, coverage, pytest, pygments, ...) is
  # in the lock, and the copy in .tools must not shadow the environment's own versions
  "$python" -m pip install -q --no-deps --target "$tools" mutmut==3.8.1 libcst==1.9.0 \
    textual==8.2.8 rich==15.0.0 setproctitle==1.3.8
fi
work="$(mktemp -d /tmp/mutation_pass.XXXXXX)"
cp -r "$root/icllib" "$root/tests" "$root/conftest.py" "$root/pyproject.toml" "$root/setup.py" "$work/"
mkdir -p "$work/book" && cp -r "$root/book/data" "$work/book/"
quote() { printf '"%s", ' "$@"; }
cat >> "$work/pyproject.toml" <<TOML

[tool.mutmut]
source_paths = [$(quote "${modules[@]}")]
pytest_add_cli_args_test_selection = [$(quote "${tests[@]}")]
TOML
# the copy's pytest collects only tests/ (the chapters are not part of a mutation run)
sed -i 's/^testpaths = .*/testpaths = ["tests"]/' "$work/pyproject.toml"
cd "$work"
export PYTHONPATH="$tools" OMP_NUM_THREADS=1
"$python" -m mutmut run
echo "[mutation_pass] surviving mutants (in $work: PYTHONPATH=$tools $python -m mutmut show NAME):"
"$python" -m mutmut results
