"""icllib works when installed from its wheel (not editable, no checkout beside it).

The wheel is built from this checkout and unpacked into a temporary folder; a fresh
interpreter (``-S``: no site hooks, so the checkout's editable install is invisible) imports
that copy with the project's dependencies on its path, and loads a stored run of each part of
the book from the folder ``ICLLIB_DATA`` names. Without ``ICLLIB_DATA`` the loaders stop with
an error that names it.
"""

import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

LOAD_ONE_RUN_OF_EACH_CHAPTER = """
import sys, icllib
assert icllib.__file__.startswith(sys.argv[1]), icllib.__file__
from icllib.train.stored import load_group
from icllib.nonlinear.induction.runs import load_runs as load_ch6
from icllib.nonlinear.grokking.runs import load_runs as load_ch7
linear = load_group("running-example")
ch6 = load_ch6([2], [0])
ch7 = load_ch7()
print(len(linear), len(ch6), len(ch7))
"""


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("wheel")
    # build from a copy of what the package is made of: setuptools writes build/ and
    # *.egg-info into the source tree, which must stay the checkout as it was
    source = tmp / "source"
    shutil.copytree(ROOT / "icllib", source / "icllib",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, source / name)
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
                    "-q", "-w", str(tmp / "dist"), str(source)], check=True, capture_output=True)
    (wheel,) = (tmp / "dist").glob("icllib-*.whl")
    target = tmp / "site"
    with zipfile.ZipFile(wheel) as z:          # what `pip install --target` would lay down
        z.extractall(target)
    assert not (target / "book").exists(), "the wheel must not carry the book's files"
    return target


def _run(target, env_extra):
    env = {k: v for k, v in os.environ.items() if k not in ("ICLLIB_DATA", "PYTHONPATH")}
    env.update(env_extra)
    # the installed copy first, then the project's dependencies (numpy, torch, ...)
    env["PYTHONPATH"] = os.pathsep.join([str(target), sysconfig.get_paths()["purelib"]])
    return subprocess.run([sys.executable, "-S", "-c", LOAD_ONE_RUN_OF_EACH_CHAPTER,
                           str(target)], env=env, capture_output=True, text=True,
                          cwd=target)


def test_the_wheel_holds_the_library_and_no_data(installed):
    assert (installed / "icllib" / "datafiles.py").is_file()
    assert not list(installed.rglob("*.npz"))


def test_an_installed_icllib_loads_a_stored_run_of_each_chapter(installed):
    out = _run(installed, {"ICLLIB_DATA": str(ROOT / "book" / "data")})
    assert out.returncode == 0, out.stderr[-3000:]
    linear, ch6, ch7 = map(int, out.stdout.split())
    assert linear >= 1 and ch6 == 1 and ch7 >= 1


def test_without_icllib_data_an_installed_icllib_says_what_to_set(installed):
    out = _run(installed, {})
    assert out.returncode != 0
    assert "FileNotFoundError" in out.stderr and "set ICLLIB_DATA" in out.stderr, out.stderr[-2000:]
