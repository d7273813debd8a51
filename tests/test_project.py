"""Project-level consistency: one set of pins, every chapter in the book, the README true."""

import re
from pathlib import Path

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
    for shadow in ("binder", ".binder", "Pipfile", "setup.py"):
        assert not (ROOT / shadow).exists(), f"{shadow} would change what Binder installs"
    assert (ROOT / "environment.yml").is_file()
    assert (ROOT / "runtime.txt").read_text().strip() == "python-3.11"
    post = (ROOT / "postBuild").read_text()
    assert "--no-deps -e ." in post and "scripts/jupyterlab_settings.py" in post
    # The local environment is set up by the same lock and postBuild.
    setup = (ROOT / "scripts" / "setup.sh").read_text()
    assert "-r \"$requirements\"" in setup and "bash postBuild" in setup


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
    ci = (ROOT / ".ci" / "run").read_text()
    assert "bash scripts/test.sh" in ci
    for script in ("setup.sh", "build.sh", "test.sh"):
        assert (ROOT / "scripts" / script).is_file()


def test_no_committed_notebooks():
    import subprocess

    tracked = subprocess.run(["git", "ls-files", "*.ipynb"], cwd=ROOT, capture_output=True,
                             text=True, check=True).stdout.split()
    assert tracked == [], f"chapters are MyST text notebooks; committed .ipynb: {tracked}"


def run_workflow_linter(*files):
    import subprocess

    return subprocess.run(["bash", "scripts/lint_workflows.sh", *map(str, files)], cwd=ROOT,
                          capture_output=True, text=True, timeout=180)


def test_workflows_pass_actionlint():
    result = run_workflow_linter()
    assert result.returncode == 0, f"actionlint:\n{result.stdout}{result.stderr}"


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


def test_unit_tests_and_nbval_run_under_other_numeric_kernels():
    # Every test run proves two numeric configurations: the unit tests and the chapters under
    # the project's own scripts/other-cpu, the build under the machine's kernels.
    test_sh = (ROOT / "scripts" / "test.sh").read_text()
    assert "scripts/other-cpu .venv/bin/python -m pytest tests -m \"not browser\"" in test_sh
    assert "scripts/other-cpu .venv/bin/python -m pytest book --nbval-lax" in test_sh
    other = (ROOT / "scripts" / "other-cpu").read_text()
    for var in ("OPENBLAS_CORETYPE", "NPY_DISABLE_CPU_FEATURES", "ATEN_CPU_CAPABILITY",
                "MKL_ENABLE_INSTRUCTIONS", "DNNL_MAX_CPU_ISA"):
        assert f"export {var}=" in other, var


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


def test_test_command_lints_with_the_pinned_ruff():
    # the style is checked by the test command itself, with the version requirements.txt pins
    test_sh = (ROOT / "scripts" / "test.sh").read_text()
    assert ".venv/bin/ruff check ." in test_sh
    pins = (ROOT / "requirements.txt").read_text()
    assert re.search(r"^ruff==\d", pins, re.M)
    assert "[tool.ruff]" in (ROOT / "pyproject.toml").read_text()


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


def test_the_test_command_sizes_its_streams_to_the_machine():
    text = (ROOT / "scripts" / "test.sh").read_text()
    assert "OMP_NUM_THREADS=$threads" in text and "cores / 2" in text
