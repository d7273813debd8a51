"""Argument checks shared by every module of icllib (one rule per kind of argument).

Every public function of the library validates its arguments with these helpers, so one kind
of argument is accepted, converted and reported the same way everywhere.  Each helper takes
``(name, value, ...)`` in that order, returns the converted value and raises an error whose
message names the argument, states what is allowed and shows what was given, e.g.
``N must be an integer >= 1, got 2.5``.

Python's convention decides the error's class: a value of the wrong *type* (``rng=0``, a float
where a count is due, a string for a number) raises :class:`TypeError`; a value of the right
type outside the allowed range (``N=0``, a NaN, a wrong shape) raises :class:`ValueError`.

The rules
---------
integers (:func:`check_int`)
    :class:`numbers.Integral` values only (Python ``int``, numpy integers); ``bool`` is
    rejected, and so is an integral-valued float such as ``10.0``: a count is never a float.
real numbers (:func:`check_real`, :func:`check_positive`, :func:`check_nonnegative`)
    :class:`numbers.Real` values (Python ``int``/``float``, numpy scalars), finite, optionally
    within bounds; ``bool`` is rejected.
arrays (:func:`check_array` and the specialised checks below it)
    anything :func:`numpy.asarray` turns into a real float array, with finite entries and,
    where asked, a given shape; returned as a float64 array.
others
    :func:`check_choice` (one of a few values), :func:`check_generator` (an explicit
    :class:`numpy.random.Generator`; nothing in icllib uses global random state),
    :func:`check_instance`.
"""

from __future__ import annotations

import numbers
from collections.abc import Iterable
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

__all__ = [
    "ORTHOGONALITY_TOLERANCE",
    "check_int",
    "check_real",
    "check_positive",
    "check_nonnegative",
    "check_choice",
    "check_generator",
    "check_instance",
    "check_array",
    "check_spectrum",
    "check_positive_array",
    "check_modes",
    "check_times",
    "check_time_grid",
    "check_orthogonal",
]

#: largest ``max |U^T U - I|`` accepted for an orthogonal matrix
ORTHOGONALITY_TOLERANCE = 1e-8


# ----------------------------------------------------------------------------- scalars


def _is_bool(value) -> bool:
    return isinstance(value, (bool, np.bool_))


def _range_text(minimum, maximum, exclusive_minimum=False, exclusive_maximum=False) -> str:
    """``">= 1"``, ``"> 0"``, ``"in [0, 1)"``, ... (empty when unbounded)."""
    if minimum is not None and maximum is not None:
        lo = "(" if exclusive_minimum else "["
        hi = ")" if exclusive_maximum else "]"
        return f" in {lo}{minimum:g}, {maximum:g}{hi}"
    if minimum is not None:
        return f" {'>' if exclusive_minimum else '>='} {minimum:g}"
    if maximum is not None:
        return f" {'<' if exclusive_maximum else '<='} {maximum:g}"
    return ""


def check_int(name: str, value: Any, minimum: int | None = None,
              maximum: int | None = None) -> int:
    """An integer ``minimum <= value <= maximum`` (either bound optional), as a Python int.

    Only :class:`numbers.Integral` values are integers: ``bool`` and integral-valued floats
    (``10.0``) are rejected.

    Parameters
    ----------
    name : str
        The argument's name, used in the error message.
    value : object
        The value given.
    minimum, maximum : int, optional
        Inclusive bounds.

    Returns
    -------
    int

    Raises
    ------
    TypeError
        If ``value`` is not an integer: ``"{name} must be an integer >= {minimum}, got
        {value}"`` (``in {minimum}..{maximum}`` with both bounds).
    ValueError
        The same message, for an integer out of range.
    """
    if minimum is not None and maximum is not None:
        allowed = f" in {minimum}..{maximum}"
    elif minimum is not None:
        allowed = f" >= {minimum}"
    elif maximum is not None:
        allowed = f" <= {maximum}"
    else:
        allowed = ""
    if _is_bool(value) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer{allowed}, got {value!r}")
    v = int(value)
    if (minimum is not None and v < minimum) or (maximum is not None and v > maximum):
        raise ValueError(f"{name} must be an integer{allowed}, got {v}")
    return v


def check_real(name: str, value: Any, minimum: float | None = None,
               maximum: float | None = None, *, exclusive_minimum: bool = False,
               exclusive_maximum: bool = False) -> float:
    """A finite real number within optional bounds, as a Python float.

    Parameters
    ----------
    name : str
        The argument's name, used in the error message.
    value : object
        The value given.
    minimum, maximum : float, optional
        Bounds, inclusive unless ``exclusive_minimum`` / ``exclusive_maximum``.
    exclusive_minimum, exclusive_maximum : bool
        Make the corresponding bound strict.

    Returns
    -------
    float

    Raises
    ------
    TypeError
        If ``value`` is not a real number (a string, ``None``, a bool):
        ``"{name} must be a finite number > 0, got {value!r}"`` (the range part follows the
        bounds: ``>= 0``, ``in [0, 1)``, ...; absent without bounds).
    ValueError
        The same message, for a NaN, an infinity or a number out of range.
    """
    allowed = _range_text(minimum, maximum, exclusive_minimum, exclusive_maximum)
    message = f"{name} must be a finite number{allowed}, got {value!r}"
    if _is_bool(value) or not isinstance(value, numbers.Real):
        raise TypeError(message)
    v = float(value)
    if not np.isfinite(v):
        raise ValueError(message)
    if minimum is not None and (v <= minimum if exclusive_minimum else v < minimum):
        raise ValueError(message)
    if maximum is not None and (v >= maximum if exclusive_maximum else v > maximum):
        raise ValueError(message)
    return v


def check_positive(name: str, value: Any) -> float:
    """A finite real number ``> 0`` (:func:`check_real`).

    Parameters
    ----------
    name : str
        The argument's name, used in the error message.
    value : object
        The value given.

    Returns
    -------
    float
    """
    return check_real(name, value, 0, exclusive_minimum=True)


def check_nonnegative(name: str, value: Any) -> float:
    """A finite real number ``>= 0`` (:func:`check_real`).

    Parameters
    ----------
    name : str
        The argument's name, used in the error message.
    value : object
        The value given.

    Returns
    -------
    float
    """
    return check_real(name, value, 0)


def check_choice(name: str, value: Any, choices: Iterable[Any]) -> Any:
    """One of ``choices`` (compared with ``==``); returned unchanged.

    Parameters
    ----------
    name : str
        The argument's name, used in the error message.
    value : object
        The value given.
    choices : iterable
        The allowed values.

    Returns
    -------
    object
        ``value``.

    Raises
    ------
    ValueError
        ``"{name} must be 'a' or 'b', got 'c'"`` (``one of 'a', 'b', 'c'`` for more).
    """
    choices = tuple(choices)
    try:
        known = value in choices
    except (TypeError, ValueError):  # e.g. an array, whose == is elementwise
        known = False
    if not known:
        if len(choices) == 2:
            allowed = f"{choices[0]!r} or {choices[1]!r}"
        else:
            allowed = "one of " + ", ".join(repr(c) for c in choices)
        raise ValueError(f"{name} must be {allowed}, got {value!r}")
    return value


def check_generator(name: str, value: Any) -> np.random.Generator:
    """An explicit :class:`numpy.random.Generator` (icllib never uses global random state).

    Parameters
    ----------
    name : str
        The argument's name, used in the error message.
    value : object
        The value given.

    Returns
    -------
    numpy.random.Generator
        ``value``.

    Raises
    ------
    TypeError
        For anything else (a seed, a ``RandomState``): ``"{name} must be a
        numpy.random.Generator (np.random.default_rng(seed)), got {type}"``.
    """
    if not isinstance(value, np.random.Generator):
        raise TypeError(f"{name} must be a numpy.random.Generator "
                        f"(np.random.default_rng(seed)), got {type(value).__name__}")
    return value


def check_instance(name: str, value: Any, cls: type | tuple[type, ...],
                   what: str | None = None) -> Any:
    """``value`` if it is an instance of ``cls``; ``what`` names the type in the message.

    Parameters
    ----------
    name : str
        The argument's name, used in the error message.
    value : object
        The value given.
    cls : type or tuple of type
    what : str, optional
        How the message names the type (default ``"a {cls.__name__}"``).

    Returns
    -------
    object
        ``value``.

    Raises
    ------
    TypeError
        ``"{name} must be {what}, got {type}"``.
    """
    if not isinstance(value, cls):
        what = what or f"a {cls.__name__}"
        raise TypeError(f"{name} must be {what}, got {type(value).__name__}")
    return value


# ----------------------------------------------------------------------------- arrays


def _shape_text(shape) -> str:
    parts = ["..." if s is Ellipsis else ("*" if s is None else str(s)) for s in shape]
    return "(" + ", ".join(parts) + (",)" if len(parts) == 1 else ")")


def _shape_matches(actual, shape) -> bool:
    shape = tuple(shape)
    if shape and shape[0] is Ellipsis:
        tail = shape[1:]
        if len(actual) < len(tail):
            return False
        actual = actual[len(actual) - len(tail):]
        shape = tail
    if len(actual) != len(shape):
        return False
    return all(s is None or a == s for a, s in zip(actual, shape))


def check_array(name: str, value: ArrayLike, shape: tuple | None = None, *,
                hint: str = "") -> np.ndarray:
    """A real float64 array with finite entries, optionally of a given shape.

    Parameters
    ----------
    name : str
    value : array_like
    shape : tuple, optional
        Required shape; ``None`` entries match any length and a leading ``...`` any number
        of leading axes, e.g. ``(..., d, d)``.
    hint : str
        Appended to the shape message (e.g. ``" to match Sigma_hat"``).

    Returns
    -------
    ndarray of float64

    Raises
    ------
    TypeError
        ``"{name} must be a real array, got ..."`` for what is not numbers.
    ValueError
        ``"{name} must have shape (..., 3, 3), got (2, 2)"`` or
        ``"{name} must hold finite values"``.
    """
    try:
        arr = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be a real array, got {value!r}") from None
    if shape is not None and not _shape_matches(arr.shape, shape):
        raise ValueError(f"{name} must have shape {_shape_text(shape)}{hint}, got {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must hold finite values")
    return arr


def check_spectrum(name: str, value: ArrayLike) -> np.ndarray:
    """A spectrum: a non-empty 1-D array of positive finite eigenvalues (float64).

    Parameters
    ----------
    name : str
        The argument's name, used in the error message.
    value : array_like, shape (d,)

    Returns
    -------
    ndarray of float64, shape (d,)
    """
    try:
        s = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be a 1-D array of positive finite eigenvalues, "
                        f"got {value!r}") from None
    if s.ndim != 1 or s.size < 1:
        raise ValueError(f"{name} must be a 1-D array of positive finite eigenvalues, "
                         f"got shape {s.shape}")
    if not np.all(np.isfinite(s)) or np.any(s <= 0):
        raise ValueError(f"{name} must hold positive finite eigenvalues, got {s}")
    return s


def check_positive_array(name: str, value: ArrayLike) -> np.ndarray:
    """A non-empty float64 array (any shape) of positive finite values.

    Parameters
    ----------
    name : str
        The argument's name, used in the error message.
    value : array_like

    Returns
    -------
    ndarray of float64
    """
    try:
        arr = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise TypeError(
            f"{name} must hold positive finite numbers, got {value!r}") from None
    if arr.size == 0 or not np.all(np.isfinite(arr)) or np.any(arr <= 0):
        raise ValueError(f"{name} must hold positive finite numbers, got {arr}")
    return arr


def check_modes(name: str, value: ArrayLike, d: int) -> np.ndarray:
    """A finite array whose last axis is the mode axis, of length ``d`` (leading axes free).

    Parameters
    ----------
    name : str
        The argument's name, used in the error message.
    value : array_like, shape (..., d)
    d : int
        Number of modes (the length of ``s``).

    Returns
    -------
    ndarray of float64, shape (..., d)
    """
    arr = check_array(name, value)
    if arr.ndim == 0 or arr.shape[-1] != d:
        raise ValueError(f"{name} must have the mode axis last with length d={d} "
                         f"(the length of s), got shape {arr.shape}")
    return arr


def check_times(name: str, value: ArrayLike) -> np.ndarray:
    """Finite times ``>= 0`` (any shape; time since the start).

    Parameters
    ----------
    name : str
        The argument's name, used in the error message.
    value : array_like

    Returns
    -------
    ndarray of float64
    """
    arr = check_array(name, value)
    if np.any(arr < 0):
        raise ValueError(f"{name} must be >= 0 (time since the start), got min {arr.min()}")
    return arr


def check_time_grid(name: str, value: ArrayLike, *, strict: bool = False,
                    start: float | None = None) -> np.ndarray:
    """A non-empty 1-D grid of finite times, non-decreasing (increasing with ``strict``).

    Parameters
    ----------
    name : str
        The argument's name, used in the error message.
    value : array_like, shape (T,)
    strict : bool
        Require strictly increasing times.
    start : float, optional
        Lower bound on the first time (``0``: output times of a flow that starts at
        ``t = 0``).

    Returns
    -------
    ndarray of float64, shape (T,)
    """
    arr = check_array(name, value)
    order = "increasing" if strict else "non-decreasing"
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(f"{name} must be a non-empty 1-D {order} array of times, "
                         f"got shape {arr.shape}")
    steps = np.diff(arr)
    if np.any(steps <= 0) if strict else np.any(steps < 0):
        raise ValueError(f"{name} must be {order}")
    if start is not None and arr[0] < start:
        raise ValueError(f"{name} must start at >= {start:g}, got {arr[0]:g}")
    return arr


def check_orthogonal(name: str, value: ArrayLike | None, d: int) -> np.ndarray | None:
    """An orthogonal ``d x d`` matrix (``U^T U = I`` to :data:`ORTHOGONALITY_TOLERANCE`).

    Parameters
    ----------
    name : str
        The argument's name, used in the error message.
    value : array_like, shape (d, d), or None
        ``None`` passes through (it stands for the identity).
    d : int

    Returns
    -------
    ndarray of float64, shape (d, d), or None
    """
    if value is None:
        return None
    try:
        U = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise TypeError(
            f"{name} must be an orthogonal {d} x {d} matrix, got {value!r}") from None
    if U.shape != (d, d):
        raise ValueError(f"{name} must be an orthogonal {d} x {d} matrix, got shape {U.shape}")
    if not np.all(np.isfinite(U)):
        raise ValueError(f"{name} must hold finite values")
    err = np.max(np.abs(U.T @ U - np.eye(d)))
    if err > ORTHOGONALITY_TOLERANCE:
        raise ValueError(f"{name} must be orthogonal (U^T U = I to "
                         f"{ORTHOGONALITY_TOLERANCE:g}), deviation {err:.3g}")
    return U
