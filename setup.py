"""Packaging hook (setuptools; the rest of the packaging is in pyproject.toml).

The book's stored runs travel inside the wheel, so that an ``icllib`` installed with pip from
the repository (README, "Running the chapters yourself") loads every shipped run with no
checkout beside it: ``book/data`` becomes the data package ``icllib._bookdata``, one package
per folder (``icllib._bookdata.ch6.quick`` ...), holding every ``*.npz`` and ``*.json`` in it
(about 8 MB) but no run being written (``icllib.runstore.save_run`` writes it as a hidden
``*.partial`` file, older make_* scripts as ``*.partial.npz``).
:func:`icllib.datafiles.data_root` reads it only when neither ``ICLLIB_DATA`` nor a checkout
is there, so an editable install (development, Binder) keeps reading ``book/data`` itself.

The packages are listed here, not in pyproject.toml, because the data folders are found when
the wheel is built: a folder of runs added later ships without a change here.
"""

from pathlib import Path

from setuptools import find_packages, setup

DATA_PACKAGE = "icllib._bookdata"
DATA_DIR = Path("book", "data")   # relative to this file's folder, the build's working folder
DATA_FILES = ["*.npz", "*.json"]
NOT_SHIPPED = ["*.partial.npz"]

folders = sorted({DATA_DIR, *(p for p in DATA_DIR.rglob("*") if p.is_dir())})
data_packages = [".".join((DATA_PACKAGE, *folder.relative_to(DATA_DIR).parts))
                 for folder in folders]

setup(
    packages=find_packages(include=["icllib", "icllib.*"]) + data_packages,
    package_dir={DATA_PACKAGE: DATA_DIR.as_posix()},
    package_data={name: DATA_FILES for name in data_packages},
    exclude_package_data={name: NOT_SHIPPED for name in data_packages},
)
