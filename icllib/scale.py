"""The one switch between the quick scale (CI, Binder, laptops) and the paper's scale.

Every experiment in the book reads its size through :func:`pick`, so one environment
variable changes the whole book::

    ICLLIB_SCALE=full jupyter-book build .

``quick`` (the default) keeps every chapter within about a minute on a 2-core CPU;
``full`` is the paper-scale setting, meant for a GPU machine.
"""

from __future__ import annotations

import os
from typing import TypeVar

from .validation import check_choice

__all__ = ["SCALES", "ENV_VAR", "current_scale", "pick"]

T = TypeVar("T")

SCALES = ("quick", "full")
ENV_VAR = "ICLLIB_SCALE"


def current_scale() -> str:
    """Return the scale selected by the ``ICLLIB_SCALE`` environment variable.

    Returns
    -------
    str
        ``"quick"`` (default, also when the variable is unset or empty) or ``"full"``.

    Raises
    ------
    ValueError
        If the variable holds anything else.
    """
    value = os.environ.get(ENV_VAR, "").strip().lower() or "quick"
    return check_choice(f"{ENV_VAR} (unset means 'quick')", value, SCALES)


def pick(*, quick: T, full: T, scale: str | None = None) -> T:
    """Return ``quick`` or ``full`` according to ``scale`` (default :func:`current_scale`).

    Parameters
    ----------
    quick, full
        The two values.
    scale : {"quick", "full"}, optional
        An explicit scale (e.g. a script's ``--scale``); ``None`` reads ``ICLLIB_SCALE``.

    Examples
    --------
    >>> steps = pick(quick=2_000, full=200_000)
    """
    scale = current_scale() if scale is None else check_choice("scale", scale, SCALES)
    return full if scale == "full" else quick
