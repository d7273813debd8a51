"""The one switch between the quick scale (CI, Binder, laptops) and the larger scales.

Every experiment in the book reads its size through :func:`pick`, so one environment
variable changes the whole book::

    ICLLIB_SCALE=full jupyter-book build .

``quick`` (the default) keeps every chapter within about a minute on a 2-core CPU;
``medium`` sizes the non-linear experiments (chapters 6b and 7) for a few CPU-hours of a
2-core machine, trained once and shipped, and keeps the quick size of every experiment that
names no medium value (the linear chapters are exact and cheap already); ``full`` is the
larger setting meant for a GPU machine.
"""

from __future__ import annotations

import os
from typing import TypeVar

from .validation import check_choice

__all__ = ["SCALES", "ENV_VAR", "current_scale", "pick"]

T = TypeVar("T")

SCALES = ("quick", "medium", "full")
ENV_VAR = "ICLLIB_SCALE"


def current_scale() -> str:
    """Return the scale selected by the ``ICLLIB_SCALE`` environment variable.

    Returns
    -------
    str
        ``"quick"`` (default, also when the variable is unset or empty), ``"medium"`` or
        ``"full"``.

    Raises
    ------
    ValueError
        If the variable holds anything else.
    """
    value = os.environ.get(ENV_VAR, "").strip().lower() or "quick"
    return check_choice(f"{ENV_VAR} (unset means 'quick')", value, SCALES)


_UNSET = object()


def pick(*, quick: T, full: T, medium: T = _UNSET, scale: str | None = None) -> T:
    """Return the value for ``scale`` (default :func:`current_scale`).

    Parameters
    ----------
    quick, full
        The values at the quick and the full scale.
    medium : optional
        The value at the medium scale; when not given, the medium scale uses ``quick``
        (an experiment that has no medium size keeps its quick one).
    scale : {"quick", "medium", "full"}, optional
        An explicit scale (e.g. a script's ``--scale``); ``None`` reads ``ICLLIB_SCALE``.

    Examples
    --------
    >>> steps = pick(quick=2_000, full=200_000, scale="quick")
    >>> steps
    2000
    >>> pick(quick=1, full=3, scale="medium")
    1
    >>> pick(quick=1, medium=2, full=3, scale="medium")
    2
    """
    scale = current_scale() if scale is None else check_choice("scale", scale, SCALES)
    if scale == "full":
        return full
    if scale == "medium" and medium is not _UNSET:
        return medium
    return quick
