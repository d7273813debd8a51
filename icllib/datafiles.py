"""Where the book's stored runs live (``book/data/<chapter>/<scale>/``): the folder, found
without the project's dependencies (the run store itself, file format and loader, is
:mod:`icllib.runstore`).

The runs are kept in the book's repository, in ``book/data``, and the wheel carries a copy of
them as the data package ``icllib._bookdata`` (``setup.py``).  :func:`data_root` looks, in
order, at the folder named by the environment variable ``ICLLIB_DATA`` (a ``book/data``
folder of a checkout, or a copy of it), at ``book/data`` of the checkout the package sits in
(an editable install, Binder, the book's own build: runs made since the install are seen), and
at the copy inside the installed package (``pip install`` of the repository).  With none of
them every loader stops with an error that says what to set.
"""

from __future__ import annotations

import os
from importlib.resources import files
from pathlib import Path

__all__ = ["DATA_ENV", "data_root", "chapter_data_dir"]

#: environment variable naming the data folder (the book's ``book/data``)
DATA_ENV = "ICLLIB_DATA"
#: the folder, inside the installed package, that holds the wheel's copy of ``book/data``
PACKAGED = "_bookdata"


def data_root() -> Path:
    """The folder that holds ``<chapter>/<scale>/`` run files.

    ``$ICLLIB_DATA`` when set, else ``book/data`` of the checkout this package sits in, else
    the copy the wheel installed with the package (``icllib/_bookdata``).

    Raises
    ------
    FileNotFoundError
        If ``ICLLIB_DATA`` names no folder, or it is unset, the package is not inside a
        checkout of the book and holds no copy of the runs (installed from a wheel built
        without them): the message says how to point it at a checkout's ``book/data``.
    """
    named = os.environ.get(DATA_ENV)
    if named:
        path = Path(named).expanduser()
        if not path.is_dir():
            raise FileNotFoundError(f"{DATA_ENV}={named!r} is not a folder; set it to the "
                                    "book/data folder of a checkout of the book")
        return path
    checkout = Path(__file__).resolve().parents[1] / "book" / "data"
    if checkout.is_dir():
        return checkout
    packaged = files(__package__) / PACKAGED
    if isinstance(packaged, Path) and packaged.is_dir():    # not a zip: loaders need real files
        return packaged
    raise FileNotFoundError(
        f"icllib is installed at {Path(__file__).resolve().parent} without the book's stored "
        f"runs beside it or inside it (they are kept in the book's repository, in book/data; "
        f"a wheel built from the repository carries a copy); set {DATA_ENV} to that folder, "
        f"e.g. {DATA_ENV}=/path/to/checkout/book/data")


def chapter_data_dir(chapter: str, scale: str) -> Path:
    """``<data root>/<chapter>/<scale>`` (see :func:`data_root`)."""
    return data_root() / str(chapter) / str(scale)
