"""A small, self-contained mutation tester for icllib modules (standard library only).

For each module file it generates mutants of the code (never of docstrings, nor of the message
of a ``raise``), runs the given test files against each mutant and reports which mutants the
tests kill and which survive.

Mutation operators
    cmp    comparison swaps: ``<``/``<=``, ``>``/``>=``, ``==``/``!=``, ``is``/``is not``,
           ``in``/``not in``
    arith  arithmetic swaps: ``+``/``-``, ``*``/``/``, ``**`` -> ``*`` (also in ``x op= y``)
    const  numeric constants: ``c -> c + 1`` (so ``0 -> 1``, ``1 -> 2``) and ``0.5 -> 0.25``
    bool   ``True``/``False`` swapped; ``return <value>`` -> ``return None``
    logic  ``and``/``or`` swapped; ``not x`` -> ``x``
    unary  unary minus removed: ``-x`` -> ``x``

Isolation.  The library is imported by other processes while this runs, so the working tree is
never touched: the whole ``icllib/`` package is copied to a work directory, the *copy* is
mutated there, and pytest runs from the repository root with ``PYTHONPATH=<workdir>``,
``python -P`` (no current directory on ``sys.path``) and ``--import-mode=importlib`` (pytest
does not prepend the root conftest's directory), so the copy shadows the editable install.
A small pytest plugin written into the work directory records, at the end of every run, the
file of every ``icllib`` module imported; a run in which any of them lies outside the work
directory is an error, and one that never imported the mutated module is reported as
``not imported``.  The original of the mutated file is kept as ``<file>.orig`` in the copy and
restored after every mutant in a ``finally`` (and at start-up if a backup is left over in a
reused ``--workdir``).

Usage (from the repository root)::

    OMP_NUM_THREADS=1 .venv/bin/python bench/mutation_pass.py \\
        --module icllib/metrics.py --tests tests/test_metrics.py --max 80 --seed 0

    # re-run chosen mutants (ids as printed by a previous run)
    .venv/bin/python bench/mutation_pass.py --module icllib/metrics.py \\
        --tests tests/test_metrics.py --only 12,40

    # list the mutants without running anything
    .venv/bin/python bench/mutation_pass.py --module icllib/metrics.py --list

Several ``--module`` files share one ``--tests`` list.  ``--max N`` samples at most ``N``
mutants per module with ``random.Random(seed)`` and prints the ids sampled.  ``--json`` writes
every result to a file.
"""

from __future__ import annotations

import argparse
import ast
import copy
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "icllib"

GUARD_PLUGIN = '''\
"""pytest plugin written by bench/mutation_pass.py: records where icllib was imported from."""
import os
import sys


def pytest_sessionfinish(session, exitstatus):
    out = os.environ.get("MUTATION_GUARD_OUT")
    if not out:
        return
    files = {name: getattr(mod, "__file__", None) or ""
             for name, mod in list(sys.modules.items())
             if name == "icllib" or name.startswith("icllib.")}
    with open(out, "w", encoding="utf-8") as fh:
        for name, path in sorted(files.items()):
            fh.write(f"{name}\\t{path}\\n")
'''


# ----------------------------------------------------------------------------- mutants

@dataclass
class Mutant:
    module: str
    id: int
    op: str
    line: int
    original: str
    mutated: str
    source: str = field(repr=False, default="")
    status: str = ""
    seconds: float = 0.0
    detail: str = ""


_CMP_SWAP = {ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt,
             ast.Eq: ast.NotEq, ast.NotEq: ast.Eq, ast.Is: ast.IsNot, ast.IsNot: ast.Is,
             ast.In: ast.NotIn, ast.NotIn: ast.In}
_ARITH_SWAP = {ast.Add: ast.Sub, ast.Sub: ast.Add, ast.Mult: ast.Div, ast.Div: ast.Mult,
               ast.Pow: ast.Mult}


def _excluded_nodes(tree):
    """ids of nodes never mutated: docstrings, raise statements' messages, f-strings."""
    skip = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                skip.update(id(n) for n in ast.walk(body[0]))
        if isinstance(node, ast.Raise) or isinstance(node, ast.JoinedStr):
            skip.update(id(n) for n in ast.walk(node))
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__"
                                                for t in node.targets):
            skip.update(id(n) for n in ast.walk(node))
    return skip


def _edits(node):
    """(op, description, function that mutates a deep copy of ``node`` in place) triples."""
    out = []
    if isinstance(node, ast.Compare):
        for i, op in enumerate(node.ops):
            new = _CMP_SWAP.get(type(op))
            if new is not None:
                def f(n, i=i, new=new):
                    n.ops[i] = new()
                out.append(("cmp", f))
    elif isinstance(node, (ast.BinOp, ast.AugAssign)):
        new = _ARITH_SWAP.get(type(node.op))
        if new is not None:
            def f(n, new=new):
                n.op = new()
            out.append(("arith", f))
    elif isinstance(node, ast.Constant):
        v = node.value
        if isinstance(v, bool):
            def f(n):
                n.value = not n.value
            out.append(("bool", f))
        elif isinstance(v, (int, float)) and not isinstance(v, complex):
            def f(n):
                n.value = n.value + 1
            out.append(("const", f))
            if v == 0.5:
                def g(n):
                    n.value = 0.25
                out.append(("const", g))
    elif isinstance(node, ast.Return) and node.value is not None:
        if not (isinstance(node.value, ast.Constant) and node.value.value is None):
            def f(n):
                n.value = ast.Constant(value=None)
            out.append(("bool", f))
    elif isinstance(node, ast.BoolOp):
        def f(n):
            n.op = ast.Or() if isinstance(n.op, ast.And) else ast.And()
        out.append(("logic", f))
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.Not)):
        kind = "unary" if isinstance(node.op, ast.USub) else "logic"
        out.append((kind, "unwrap"))
    return out


def _segment(source, node):
    seg = ast.get_source_segment(source, node)
    return seg if seg is not None else ast.unparse(node)


def _replace_span(source, node, text):
    """``source`` with the span of ``node`` replaced by ``text`` (offsets are UTF-8 bytes)."""
    raw = source.encode("utf-8")
    lines = raw.splitlines(keepends=True)
    starts, total = [], 0
    for line in lines:
        starts.append(total)
        total += len(line)
    a = starts[node.lineno - 1] + node.col_offset
    b = starts[node.end_lineno - 1] + node.end_col_offset
    return (raw[:a] + text.encode("utf-8") + raw[b:]).decode("utf-8")


def generate_mutants(path: Path, module_label: str):
    """Every mutant of the file, in a deterministic order (ids 0, 1, ...)."""
    source = path.read_text(encoding="utf-8")
    tree = ast.parse(source)
    skip = _excluded_nodes(tree)
    nodes = [n for n in ast.walk(tree) if id(n) not in skip and hasattr(n, "lineno")]
    nodes.sort(key=lambda n: (n.lineno, n.col_offset, -(n.end_lineno or 0),
                              -(n.end_col_offset or 0)))
    # index of each node in a full walk, so the same node can be found in a deep copy
    index = {id(n): k for k, n in enumerate(ast.walk(tree))}
    mutants = []
    for node in nodes:
        for kind, edit in _edits(node):
            tree2 = copy.deepcopy(tree)
            target = list(ast.walk(tree2))[index[id(node)]]
            if edit == "unwrap":
                replacement = target.operand
                new_node_text = ast.unparse(replacement)
                original_text = _segment(source, node)
                # structurally: replace the UnaryOp by its operand in the copy
                for parent in ast.walk(tree2):
                    for fname, value in ast.iter_fields(parent):
                        if value is target:
                            setattr(parent, fname, replacement)
                        elif isinstance(value, list):
                            for j, item in enumerate(value):
                                if item is target:
                                    value[j] = replacement
                mutated_text = new_node_text
            else:
                edit(target)
                original_text = _segment(source, node)
                mutated_text = ast.unparse(target)
            expected = ast.dump(tree2)
            if isinstance(node, (ast.expr,)):
                candidate = _replace_span(source, node, f"({mutated_text})")
            else:
                candidate = _replace_span(source, node, mutated_text)
            try:
                ok = ast.dump(ast.parse(candidate)) == expected
            except SyntaxError:
                ok = False
            mutated_source = candidate if ok else ast.unparse(tree2)
            mutants.append(Mutant(module=module_label, id=len(mutants), op=kind,
                                  line=node.lineno, original=" ".join(original_text.split()),
                                  mutated=" ".join(mutated_text.split()),
                                  source=mutated_source))
    return mutants


# ----------------------------------------------------------------------------- running

class Workdir:
    """A private copy of the package, mutated in place and restored after every mutant."""

    def __init__(self, path: Path | None):
        self.owned = path is None
        self.path = Path(tempfile.mkdtemp(prefix="mutation_")) if path is None else path
        self.path.mkdir(parents=True, exist_ok=True)
        pkg = self.path / PACKAGE
        if pkg.exists():
            self.restore_leftovers()
        else:
            shutil.copytree(ROOT / PACKAGE, pkg,
                            ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "*.orig"))
        for cache in pkg.rglob("__pycache__"):
            shutil.rmtree(cache, ignore_errors=True)
        (self.path / "_mutation_guard.py").write_text(GUARD_PLUGIN, encoding="utf-8")

    def restore_leftovers(self):
        for backup in (self.path / PACKAGE).rglob("*.py.orig"):
            shutil.copy2(backup, backup.with_suffix(""))
            backup.unlink()
            print(f"restored {backup.with_suffix('')} from a leftover backup", file=sys.stderr)

    def target(self, module: Path) -> Path:
        rel = module.resolve().relative_to(ROOT)
        t = (self.path / rel).resolve()
        if self.path.resolve() not in t.parents:
            raise RuntimeError(f"refusing to write outside the work directory: {t}")
        return t

    def cleanup(self):
        if self.owned:
            shutil.rmtree(self.path, ignore_errors=True)


def _env(workdir: Path, guard_out: Path):
    env = dict(os.environ)
    env["PYTHONPATH"] = str(workdir)
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env.setdefault("OMP_NUM_THREADS", "1")
    env["MUTATION_GUARD_OUT"] = str(guard_out)
    return env


def run_tests(wd: Workdir, tests, timeout, module_name: str, python: str):
    """(status, seconds, detail): status in killed / survived / timeout / error / not imported."""
    guard_out = wd.path / "_guard.txt"
    guard_out.unlink(missing_ok=True)
    cmd = [python, "-P", "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider",
           "-p", "_mutation_guard", "--rootdir", str(ROOT), "--import-mode=importlib",
           *tests]
    t0 = time.monotonic()
    try:
        proc = subprocess.run(cmd, cwd=ROOT, env=_env(wd.path, guard_out), capture_output=True,
                              text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return "timeout", time.monotonic() - t0, ""
    dt = time.monotonic() - t0
    tail = (proc.stdout + proc.stderr).strip().splitlines()
    last = tail[-1] if tail else ""
    if not guard_out.exists():
        # pytest died before the session ended (e.g. an import error in the mutant): killed
        return ("killed" if proc.returncode else "error"), dt, last
    loaded = dict(line.split("\t", 1) for line in
                  guard_out.read_text(encoding="utf-8").splitlines() if "\t" in line)
    outside = [n for n, f in loaded.items() if f and not f.startswith(str(wd.path))]
    if outside:
        raise RuntimeError(f"icllib modules imported from outside the copy: {outside[:5]}")
    if proc.returncode == 0:
        if module_name not in loaded:
            return "not imported", dt, last
        return "survived", dt, last
    if proc.returncode in (1, 2):     # tests failed / collection interrupted by an error
        failed = [ln for ln in tail if ln.startswith(("FAILED", "ERROR"))]
        return "killed", dt, (failed[0] if failed else last)[:200]
    return "error", dt, f"rc={proc.returncode} {last}"[:200]


def module_name_of(path: Path) -> str:
    rel = path.resolve().relative_to(ROOT).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def run_mutant(wd: Workdir, module: Path, mutant: Mutant, tests, timeout, python):
    target = wd.target(module)
    backup = target.with_name(target.name + ".orig")
    if backup.exists():                      # a leftover: the copy may hold a mutant
        shutil.copy2(backup, target)
    else:
        shutil.copy2(target, backup)
    try:
        target.write_text(mutant.source, encoding="utf-8")
        status, dt, detail = run_tests(wd, tests, timeout, module_name_of(module), python)
    finally:
        shutil.copy2(backup, target)
        backup.unlink()
    mutant.status, mutant.seconds, mutant.detail = status, round(dt, 2), detail
    return mutant


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--module", nargs="+", required=True, help="module files to mutate")
    ap.add_argument("--tests", nargs="+", default=[], help="test files run against each mutant")
    ap.add_argument("--max", type=int, default=None, help="sample at most this many per module")
    ap.add_argument("--seed", type=int, default=0, help="random seed of the sample")
    ap.add_argument("--only", default=None,
                    help="comma-separated mutant ids to run (one --module), e.g. 3,17")
    ap.add_argument("--ops", default=None, help="comma-separated operators to keep (cmp,...)")
    ap.add_argument("--timeout", type=float, default=None,
                    help="seconds per mutant (default: 4 x the clean run + 10)")
    ap.add_argument("--jobs", type=int, default=1, help="mutants run in parallel")
    ap.add_argument("--workdir", type=Path, default=None,
                    help="work directory for the copy (default: a fresh temporary one)")
    ap.add_argument("--json", type=Path, default=None, help="write all results here")
    ap.add_argument("--list", action="store_true", help="list the mutants and exit")
    ap.add_argument("--python", default=sys.executable)
    args = ap.parse_args(argv)

    modules = [Path(m).resolve() for m in args.module]
    plan = {}
    for m in modules:
        label = str(m.relative_to(ROOT))
        muts = generate_mutants(m, label)
        if args.ops:
            keep = set(args.ops.split(","))
            muts = [x for x in muts if x.op in keep]
        generated = len(muts)
        sampled_ids = None
        if args.only is not None:
            if len(modules) != 1:
                ap.error("--only needs exactly one --module")
            wanted = {int(x) for x in args.only.split(",") if x.strip()}
            muts = [x for x in muts if x.id in wanted]
        elif args.max is not None and len(muts) > args.max:
            muts = sorted(random.Random(args.seed).sample(muts, args.max), key=lambda x: x.id)
            sampled_ids = [x.id for x in muts]
        plan[label] = (m, generated, sampled_ids, muts)

    if args.list:
        for label, (_, generated, _, muts) in plan.items():
            print(f"== {label}: {generated} mutants")
            for x in muts:
                print(f"  #{x.id:<4} L{x.line:<4} {x.op:<6} {x.original!r} -> {x.mutated!r}")
        return 0

    if not args.tests:
        ap.error("--tests is required unless --list")
    wds = [Workdir(args.workdir if (args.workdir and k == 0) else
                   (args.workdir.with_name(f"{args.workdir.name}-{k}") if args.workdir else None))
           for k in range(max(1, args.jobs))]
    try:
        # check the isolation and time a clean run
        check = subprocess.run([args.python, "-P", "-c", "import icllib; print(icllib.__file__)"],
                               cwd=ROOT, env=_env(wds[0].path, wds[0].path / "_g"),
                               capture_output=True, text=True, check=True).stdout.strip()
        print(f"work directory {wds[0].path}; icllib.__file__ = {check}")
        if not check.startswith(str(wds[0].path)):
            raise RuntimeError("the copy does not shadow the installed icllib")
        first_module = modules[0]
        status, dt, detail = run_tests(wds[0], args.tests, 600, module_name_of(first_module),
                                       args.python)
        print(f"clean run: {status} in {dt:.1f} s ({detail})")
        if status != "survived":
            raise RuntimeError(f"the tests do not pass on the unmutated copy: {status} {detail}")
        timeout = args.timeout or 4 * dt + 10
        print(f"timeout per mutant: {timeout:.0f} s; tests: {' '.join(args.tests)}")

        results = []
        for label, (m, generated, sampled_ids, muts) in plan.items():
            t0 = time.monotonic()
            print(f"\n== {label}: {generated} mutants generated", flush=True)
            if sampled_ids is not None:
                print(f"   sampled {len(sampled_ids)} (seed {args.seed}): "
                      f"{','.join(map(str, sampled_ids))}")
            elif args.only is not None:
                print(f"   running the chosen ids: {','.join(str(x.id) for x in muts)}")
            pool_queue = list(muts)

            def work(k, pool_queue=pool_queue, m=m):
                done = []
                while True:
                    try:
                        x = pool_queue.pop(0)
                    except IndexError:
                        return done
                    run_mutant(wds[k], m, x, args.tests, timeout, args.python)
                    print(f"   #{x.id:<4} {x.status:<12} {x.seconds:5.1f}s L{x.line} "
                          f"{x.op}: {x.original} -> {x.mutated}", flush=True)
                    done.append(x)

            with ThreadPoolExecutor(len(wds)) as ex:
                list(ex.map(work, range(len(wds))))
            counts = {}
            for x in muts:
                counts[x.status] = counts.get(x.status, 0) + 1
            print(f"-- {label}: generated {generated}, run {len(muts)}, "
                  f"killed {counts.get('killed', 0)}, survived {counts.get('survived', 0)}, "
                  f"timeouts {counts.get('timeout', 0)}, errors {counts.get('error', 0)}, "
                  f"not imported {counts.get('not imported', 0)} "
                  f"({time.monotonic() - t0:.0f} s)")
            for x in muts:
                if x.status in ("survived", "not imported", "error"):
                    print(f"   {x.status.upper()} #{x.id} line {x.line} [{x.op}]\n"
                          f"      original: {x.original}\n      mutated:  {x.mutated}")
            results.append({"module": label, "generated": generated, "sampled": sampled_ids,
                            "seed": args.seed, "counts": counts,
                            "mutants": [{k: v for k, v in asdict(x).items() if k != "source"}
                                        for x in muts]})
        if args.json:
            args.json.write_text(json.dumps(results, indent=1), encoding="utf-8")
    finally:
        for wd in wds:
            wd.restore_leftovers()
            wd.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
