"""icllib works when installed from its wheel (not editable, no checkout beside it).

The wheel is built from a copy of what the package is made of (``icllib/``, ``setup.py``,
``pyproject.toml``, ``README.md`` and the stored runs in ``book/data``) and carries every
stored run as the data package ``icllib._bookdata``.  The cheap tests unpack it into a
temporary folder; a fresh interpreter (``-S``: no site hooks, so the checkout's editable install
is invisible) imports that copy with the project's dependencies on its path and loads a stored
run of each part of the book from the runs it carries, or from the folder ``ICLLIB_DATA``
names; with neither, the loaders stop with an error that names ``ICLLIB_DATA``.  An editable
install keeps reading ``book/data`` of its checkout.

The reader's test (marker ``network``) does what a reader of the site does with a chapter's
".ipynb" download: the wheel with its dependencies in a fresh virtual environment (installed
without an index from wheels downloaded once into the ignored ``.tools/``: that first run needs
PyPI), a linear and a non-linear chapter converted to notebooks (``jupytext --to ipynb``, the
code the download holds), executed in a temporary folder outside the checkout, without
``ICLLIB_DATA``.  About 90 s on a busy 2-core machine (measured 2026-12-04): 25 s to make the
environment (venv with pip 7 s, installing about 55 wheels, torch's the largest, 19 s), then
the chapters (19 s and 36 s: the cost of running them, which the test is about).
"""

import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "book" / "data"
PACKAGED = "icllib/_bookdata/"           # where the wheel holds book/data (setup.py)
# the runs are about 8 MB; this bound catches what should not ship (weights, full-scale runs)
MAX_WHEEL_BYTES = 20_000_000

LOAD_ONE_RUN_OF_EACH_CHAPTER = """
import sys, icllib
assert icllib.__file__.startswith(sys.argv[1]), icllib.__file__
from icllib.datafiles import data_root
from icllib.train.stored import load_group
from icllib.nonlinear.induction.runs import load_runs as load_ch6
from icllib.nonlinear.grokking.runs import load_runs as load_ch7
linear = load_group("running-example")
ch6 = load_ch6([2], [0])
ch7 = load_ch7()
print(len(linear), len(ch6), len(ch7))
print(data_root())
"""
# the same without PyTorch's import (seconds on a busy machine): the folder a loader would read
DATA_ROOT = """
import sys, icllib
assert icllib.__file__.startswith(sys.argv[1]), icllib.__file__
from icllib.datafiles import data_root
print(data_root())
"""
LOAD_A_LINEAR_RUN = """
from icllib.train.stored import load_group
load_group("running-example")
"""


def _stored_runs():
    """The files under book/data now, as paths relative to it.  Not ``*.partial`` (nor the
    older scripts' ``*.partial.npz``): icllib.datafiles.save_run writes a run under such a
    name and renames it when it is whole (setup.py leaves it out).  book/data/ch6/medium may
    be filling while the tests run: this is what exists now."""
    return sorted(p.relative_to(DATA).as_posix() for p in DATA.rglob("*")
                  if p.is_file() and not p.name.endswith((".partial.npz", ".partial")))


def _source_copy(dest, runs):
    """What the package is made of, copied to ``dest``: setuptools writes build/ and
    *.egg-info into the source tree, which must stay the checkout as it was."""
    shutil.copytree(ROOT / "icllib", dest / "icllib",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    for name in ("setup.py", "pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, dest / name)
    (dest / "book" / "data").mkdir(parents=True)
    for name in runs:
        (dest / "book" / "data" / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(DATA / name, dest / "book" / "data" / name)
    return dest


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    """``(the wheel, the runs it was built from, the modules it was built from)``."""
    tmp = tmp_path_factory.mktemp("wheel")
    runs = _stored_runs()
    source = _source_copy(tmp / "source", runs)
    modules = sorted(p.relative_to(source).as_posix() for p in (source / "icllib").rglob("*.py"))
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
                    "-q", "-w", str(tmp / "dist"), str(source)], check=True, capture_output=True)
    (path,) = (tmp / "dist").glob("icllib-*.whl")
    return path, runs, modules


@pytest.fixture(scope="module")
def installed(wheel, tmp_path_factory):
    target = tmp_path_factory.mktemp("site")
    with zipfile.ZipFile(wheel[0]) as z:       # what `pip install --target` would lay down
        z.extractall(target)
    return target


def _run(target, env_extra, script=LOAD_ONE_RUN_OF_EACH_CHAPTER):
    env = {k: v for k, v in os.environ.items() if k not in ("ICLLIB_DATA", "PYTHONPATH")}
    env.update(env_extra)
    # the installed copy first, then the project's dependencies (numpy, torch, ...)
    env["PYTHONPATH"] = os.pathsep.join([str(target), sysconfig.get_paths()["purelib"]])
    return subprocess.run([sys.executable, "-S", "-c", script, str(target)], env=env,
                          capture_output=True, text=True, cwd=target)


def _loaded(out):
    """``(runs of each chapter, data root)`` from LOAD_ONE_RUN_OF_EACH_CHAPTER's output."""
    assert out.returncode == 0, out.stderr[-3000:]
    counts, root = out.stdout.strip().split("\n")
    linear, ch6, ch7 = map(int, counts.split())
    assert linear >= 1 and ch6 == 1 and ch7 >= 1
    return Path(root)


def test_the_wheel_holds_the_library_and_every_stored_run(wheel):
    """Every module, every file under book/data (as the wheel was built: the background jobs
    may add runs), nothing else of the book, and a size a reader downloads without noticing."""
    path, runs, modules = wheel
    with zipfile.ZipFile(path) as z:
        names = z.namelist()
    assert sorted(n.removeprefix(PACKAGED) for n in names if n.startswith(PACKAGED)) == runs
    assert sorted(n for n in names if n.endswith(".py")) == modules
    assert not [n for n in names if n.startswith("book/")]
    assert path.stat().st_size < MAX_WHEEL_BYTES, f"{path.name}: {path.stat().st_size} bytes"


def test_an_installed_icllib_loads_a_stored_run_of_each_chapter_from_its_own_copy(installed):
    root = _loaded(_run(installed, {}))
    assert root == installed / "icllib" / "_bookdata"


def test_icllib_data_comes_before_the_packaged_runs(installed):
    out = _run(installed, {"ICLLIB_DATA": str(DATA)}, DATA_ROOT)
    assert out.returncode == 0, out.stderr[-3000:]
    assert Path(out.stdout.strip()) == DATA


def test_without_any_runs_an_installed_icllib_says_what_to_set(installed, tmp_path):
    """A wheel without the runs (built from a tree without book/data) and no ICLLIB_DATA."""
    shutil.copytree(installed / "icllib", tmp_path / "icllib",
                    ignore=lambda folder, names: ["_bookdata"] if "_bookdata" in names else [])
    out = _run(tmp_path, {}, LOAD_A_LINEAR_RUN)
    assert out.returncode != 0
    assert "FileNotFoundError" in out.stderr and "set ICLLIB_DATA" in out.stderr, out.stderr[-2000:]


def test_an_editable_install_reads_book_data_of_its_checkout(tmp_path):
    """As postBuild installs icllib (``pip install -e .``): the checkout's own book/data, so a
    run made after the install is seen; not a copy."""
    source = _source_copy(tmp_path / "checkout", _stored_runs()[:1])
    prefix = tmp_path / "prefix"
    # --ignore-installed: pip must not uninstall the running environment's own icllib (an
    # install into another prefix still removes a same-named distribution it finds installed)
    subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "--no-build-isolation",
                    "--ignore-installed", "-q", "--prefix", str(prefix), "-e", str(source)],
                   check=True, capture_output=True)
    (source / "book" / "data" / "ch6" / "quick").mkdir(parents=True, exist_ok=True)
    (source / "book" / "data" / "ch6" / "quick" / "made-later.npz").write_bytes(b"")
    (site_dir,) = prefix.glob("lib/python3*/site-packages")
    probe = ("import site, sys; site.addsitedir(sys.argv[1])\n"
             "import icllib\n"
             "from icllib.datafiles import chapter_data_dir, data_root\n"
             "print(icllib.__file__, data_root(), "
             "(chapter_data_dir('ch6', 'quick') / 'made-later.npz').is_file())")
    env = {k: v for k, v in os.environ.items() if k not in ("ICLLIB_DATA", "PYTHONPATH")}
    out = subprocess.run([sys.executable, "-S", "-c", probe, str(site_dir)], env=env,
                         capture_output=True, text=True, cwd=tmp_path)
    assert out.returncode == 0, out.stderr[-3000:]
    module, root, seen = out.stdout.split()
    assert Path(module).is_relative_to(source / "icllib"), module
    assert Path(root) == source / "book" / "data" and seen == "True", out.stdout
    # the environment running the tests still has its own icllib installed
    listed = subprocess.run([sys.executable, "-m", "pip", "show", "icllib"], capture_output=True,
                            text=True, cwd=tmp_path)
    assert listed.returncode == 0 and "Name: icllib" in listed.stdout, listed.stderr


def _repository_url():
    import yaml

    return yaml.safe_load((ROOT / "_config.yml").read_text())["repository"]["url"]


def install_command():
    """The reader's install command: README gives it; the repository is _config.yml's."""
    return f'pip install "icllib[nonlinear] @ git+{_repository_url()}"'


def test_the_readme_gives_the_install_command_of_the_repository():
    assert install_command() in (ROOT / "README.md").read_text(encoding="utf-8")


# --- The reader's test: a downloaded chapter in a fresh environment --------------------------
WHEELS = ROOT / ".tools" / "reader-wheels"   # the dependencies' wheels, downloaded once
READER_CHAPTERS = ("04-timescales", "07-grokking")   # a linear and a non-linear chapter
KERNEL = "icllib-reader"
# appended to each chapter: where the kernel found icllib and the runs
PROBE = ("import sys, icllib\nfrom icllib.datafiles import data_root\n"
         "print('probe', sys.prefix, icllib.__file__, data_root())")


def _lock_constraints(tmp):
    """requirements.txt as a constraints file (its options left out), and the index options
    that go with it: PyTorch's CPU index, unless pip finds the locked torch locally (as
    scripts/setup.sh: a machine that cannot reach that index would retry it for minutes)."""
    text = (ROOT / "requirements.txt").read_text()
    constraints = tmp / "constraints.txt"
    constraints.write_text(re.sub(r"^-.*\n", "", text, flags=re.M))
    torch = re.search(r"^torch==\S+", text, re.M).group(0)
    local = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--dry-run",
                            "--ignore-installed", "--no-index", "--no-deps", torch],
                           capture_output=True).returncode == 0
    options = [] if local else re.findall(r"^(--extra-index-url) (\S+)", text, re.M)
    return constraints, [part for option in options for part in option]


@pytest.fixture(scope="module")
def reader_env(wheel, tmp_path_factory):
    """A fresh virtual environment holding the wheel with its ``nonlinear`` extra and ipykernel
    (what runs a notebook), at the lock's versions, and a kernel spec that starts it."""
    tmp = tmp_path_factory.mktemp("reader")
    venv = tmp / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = venv / "bin" / "python"
    constraints, index = _lock_constraints(tmp)
    wanted = ["-c", str(constraints), f"{wheel[0]}[nonlinear]", "ipykernel"]
    install = [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check",
               "--no-compile", "--no-index", "--find-links", str(WHEELS), *wanted]
    if subprocess.run(install, capture_output=True).returncode != 0:
        subprocess.run([sys.executable, "-m", "pip", "download", "-q", "-d", str(WHEELS),
                        *index, *wanted], check=True)
        for copy in WHEELS.glob("icllib-*.whl"):      # the wheel itself is not a dependency
            copy.unlink()
        done = subprocess.run(install, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr[-3000:]
    spec = tmp / "jupyter" / "kernels" / KERNEL
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [str(python), "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "reader", "language": "python"}))
    return venv, tmp / "jupyter"


@pytest.mark.network
@pytest.mark.parametrize("chapter", READER_CHAPTERS)
def test_a_downloaded_chapter_runs_with_only_the_wheel_installed(reader_env, chapter, tmp_path):
    import jupytext
    import nbformat

    venv, jupyter_path = reader_env
    nb = jupytext.read(ROOT / "book" / f"{chapter}.md")
    nb.cells.append(nbformat.v4.new_code_cell(PROBE))
    notebook = tmp_path / f"{chapter}.ipynb"
    nbformat.write(nb, notebook)
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("ICLLIB_") and k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["JUPYTER_PATH"] = str(jupyter_path)
    done = subprocess.run([str(Path(sys.executable).with_name("jupyter-execute")),
                           f"--kernel_name={KERNEL}", "--timeout=600", "--inplace",
                           notebook.name], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=1200)
    assert done.returncode == 0, done.stderr[-5000:]
    outputs = nbformat.read(notebook, as_version=4).cells[-1].outputs
    (probe,) = [line for out in outputs for line in out.get("text", "").splitlines()
                if line.startswith("probe ")]
    prefix, module, root = map(Path, probe.split()[1:])
    assert prefix == venv and module.is_relative_to(venv), probe
    assert root.is_relative_to(venv) and root.parts[-2:] == ("icllib", "_bookdata"), probe


def test_a_downloaded_notebook_opens_with_the_install_command():
    """The site's download of a chapter (book_site rewrites _sources/*.ipynb) starts with the
    reader's install command, once, and only in notebooks that use icllib."""
    import sys

    sys.path.insert(0, str(ROOT / "book" / "_ext"))
    from book_site import _add_install_note, install_note

    note = install_note(_repository_url())
    assert install_command() in note
    nb = {"nbformat": 4, "nbformat_minor": 5,
          "cells": [{"cell_type": "code", "source": "from icllib import theory"}]}
    assert _add_install_note(nb, note) and not _add_install_note(nb, note)
    assert [c["cell_type"] for c in nb["cells"]] == ["markdown", "code"]
    assert nb["cells"][0]["source"] == note
    plain_nb = {"nbformat": 4, "nbformat_minor": 5,
                "cells": [{"cell_type": "code", "source": "import numpy"}]}
    assert not _add_install_note(plain_nb, note) and len(plain_nb["cells"]) == 1
