"""Where the book's stored runs live (``book/data/<chapter>/<scale>/``).

The runs ship with the book's repository, not inside the ``icllib`` package: from a checkout
(an editable install, Binder, the book's own build) they are found next to the package, in
``book/data``.  An ``icllib`` installed from a wheel or sdist has no checkout beside it; it
reads the folder named by the environment variable ``ICLLIB_DATA`` (the ``book/data`` folder
of a checkout, or a copy of it), and without one every loader stops with an error that says so.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["DATA_ENV", "data_root", "chapter_data_dir"]

#: environment variable naming the data folder (the book's ``book/data``)
DATA_ENV = "ICLLIB_DATA"


def data_root() -> Path:
    """The folder that holds ``<chapter>/<scale>/`` run files.

    ``$ICLLIB_DATA`` when set, else ``book/data`` of the checkout this package sits in.

    Raises
    ------
    FileNotFoundError
        If ``ICLLIB_DATA`` names no folder, or it is unset and the package is not inside a
        checkout of the book (installed from a wheel): the message says how to point it at one.
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
    raise FileNotFoundError(
        f"icllib is installed at {Path(__file__).resolve().parent} without the book's stored "
        f"runs beside it (they ship in the book's repository, in book/data, not in the "
        f"package); set {DATA_ENV} to that folder, e.g. "
        f"{DATA_ENV}=/path/to/checkout/book/data")


def chapter_data_dir(chapter: str, scale: str) -> Path:
    """``<data root>/<chapter>/<scale>`` (see :func:`data_root`)."""
    return data_root() / str(chapter) / str(scale)
