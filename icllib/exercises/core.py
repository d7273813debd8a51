"""The checking engine: run a reader's function and the reference on the same random inputs.

A checker calls the reader's function and icllib's reference implementation on the same
random inputs, compares the outputs, prints a one-line verdict and returns a
:class:`CheckResult` (truthy when the reader's function passed).  The book's figures always
come from the reference code, never from the reader's answer.

Layout: :func:`check_function` is the generic engine; every exercise has a small
``check_<thing>`` wrapper below it that names the reference and draws the inputs.  A checker
that judges something else than agreement with a reference runs its own trials and starts
with :func:`start_checker`.  Chapter
writers add new wrappers at the end of this file (append only).

Example
-------
>>> from icllib.exercises import check_exact_mean_velocity
>>> from icllib.flows import exact_mean_velocity
>>> def velocity(p, q, s, N, eta):
...     return exact_mean_velocity(p, q, s, N, eta=eta)
>>> result = check_exact_mean_velocity(velocity)
PASSED exact_mean_velocity: ...
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..validation import check_int, check_nonnegative

__all__ = ["CheckResult", "check_function", "format_vector", "start_checker"]


@dataclass(frozen=True)
class CheckResult:
    """Outcome of a checker.

    Attributes
    ----------
    passed : bool
        True when the candidate agreed with the reference on every trial.
    name : str
        What was checked.
    trials : int
        Number of trials run (the failing trial included).
    max_error : float
        Largest ``|candidate - reference| / (atol + rtol |reference|)`` seen (``<= 1`` passes);
        ``nan`` when the candidate raised or returned the wrong shape.
    message : str
        The verdict that was printed.
    """

    passed: bool
    name: str
    trials: int
    max_error: float
    message: str

    def __bool__(self) -> bool:
        return self.passed


def _as_outputs(value) -> list[np.ndarray]:
    """A function's return value as a list of float arrays (a tuple/list gives several)."""
    if isinstance(value, (tuple, list)):
        return [np.asarray(v, dtype=float) for v in value]
    return [np.asarray(value, dtype=float)]


def format_vector(values, digits: int = 6) -> str:
    """A short 1-d input as the reader would type it: ``[4, 2, 1, 0.1]`` (``digits``
    significant digits per entry)."""
    return "[" + ", ".join(f"{float(x):.{digits}g}" for x in np.ravel(values)) + "]"


#: 1-d array inputs up to this length are shown by their values in a verdict, longer ones
#: and matrices by their shape
SHOW_VALUES_UP_TO = 8


def _describe(inputs: Mapping[str, Any]) -> str:
    parts = []
    for k, v in inputs.items():
        if isinstance(v, np.ndarray) and v.ndim == 1 and v.size <= SHOW_VALUES_UP_TO \
                and v.dtype.kind in "iuf":
            parts.append(f"{k} = {format_vector(v)}")
        elif isinstance(v, np.ndarray):
            parts.append(f"{k}: array of shape {v.shape}")
        elif hasattr(v, "WP") and hasattr(v, "WQ"):
            parts.append(f"{k}: Params with d = {v.WP.shape[0] // 2}")
        else:
            parts.append(f"{k} = {v!r}")
    return ", ".join(parts)


def check_function(candidate: Callable, reference: Callable, sample_inputs: Callable,
                   *, trials: int = 20, rtol: float = 1e-7, atol: float = 1e-10,
                   seed: int = 0, name: str | None = None, verbose: bool = True) -> CheckResult:
    """Compare ``candidate(**inputs)`` with ``reference(**inputs)`` on random inputs.

    Parameters
    ----------
    candidate : callable
        The reader's function.
    reference : callable
        icllib's implementation, called with the same keyword arguments.
    sample_inputs : callable
        ``sample_inputs(rng) -> dict`` of keyword arguments for one trial, drawn from the
        ``numpy.random.Generator`` it is given.
    trials : int
        Number of random input sets, ``>= 1``.
    rtol, atol : float
        An output element passes when ``|c - r| <= atol + rtol |r|``.
    seed : int
        Seed of the generator that draws the inputs (the check is reproducible).
    name : str, optional
        Name used in the verdict (default: the candidate's ``__name__``).
    verbose : bool
        Print the verdict.

    Returns
    -------
    CheckResult
        Truthy when every output of every trial agreed.  The candidate receives its own copy
        of the inputs, so a function that modifies its arguments cannot corrupt the reference.
    """
    if not callable(candidate):
        raise TypeError(f"candidate must be a function, got {type(candidate).__name__}")
    for arg, value in (("reference", reference), ("sample_inputs", sample_inputs)):
        if not callable(value):
            raise TypeError(f"{arg} must be a function, got {type(value).__name__}")
    trials = check_int("trials", trials, 1)
    rtol = check_nonnegative("rtol", rtol)
    atol = check_nonnegative("atol", atol)
    if rtol == 0 and atol == 0:
        raise ValueError("rtol and atol cannot both be 0")
    name = name or getattr(candidate, "__name__", "your function")
    rng = np.random.default_rng(seed)
    worst = 0.0

    def verdict(passed, n, err, text):
        msg = ("PASSED " if passed else "FAILED ") + f"{name}: " + text
        if verbose:
            print(msg)
        return CheckResult(passed, name, n, err, msg)

    for trial in range(1, trials + 1):
        inputs = sample_inputs(rng)
        expected = _as_outputs(reference(**copy.deepcopy(inputs)))
        try:
            got_raw = candidate(**copy.deepcopy(inputs))
        except NotImplementedError:
            return verdict(False, trial, float("nan"),
                           "not implemented yet (it raised NotImplementedError).")
        except Exception as exc:  # the reader's bug, reported rather than raised
            return verdict(False, trial, float("nan"),
                           f"raised {type(exc).__name__}: {exc} on trial {trial} "
                           f"({_describe(inputs)}).")
        try:
            got = _as_outputs(got_raw)
        except (TypeError, ValueError):
            return verdict(False, trial, float("nan"),
                           f"returned {type(got_raw).__name__}, which is not an array "
                           f"(trial {trial}).")
        if len(got) != len(expected):
            return verdict(False, trial, float("nan"),
                           f"returned {len(got)} output(s), expected {len(expected)} "
                           f"(trial {trial}).")
        for k, (g, e) in enumerate(zip(got, expected)):
            which = f"output {k}" if len(expected) > 1 else "the output"
            if g.shape != e.shape:
                return verdict(False, trial, float("nan"),
                               f"{which} has shape {g.shape}, expected {e.shape} on trial "
                               f"{trial} ({_describe(inputs)}).")
            if not np.all(np.isfinite(g)):
                return verdict(False, trial, float("nan"),
                               f"{which} contains non-finite values on trial {trial}.")
            err = float(np.max(np.abs(g - e) / (atol + rtol * np.abs(e)))) if e.size else 0.0
            worst = max(worst, err)
            if err > 1.0:
                i = np.unravel_index(np.argmax(np.abs(g - e) / (atol + rtol * np.abs(e))), e.shape)
                return verdict(False, trial, err,
                               f"{which} differs on trial {trial} ({_describe(inputs)}): at "
                               f"index {tuple(int(j) for j in i)} expected {e[i]:.6g}, got "
                               f"{g[i]:.6g}.")
    return verdict(True, trials, worst,
                   f"agrees with the reference on {trials} random inputs.")


def start_checker(candidate: Callable, trials: int, seed: int, *, name: str | None = None,
                  verbose: bool = True) -> tuple[int, np.random.Generator, Callable]:
    """The start of a checker that runs its own trials instead of :func:`check_function`.

    Checks that ``candidate`` is a function and ``trials`` an integer ``>= 1``, and returns
    ``(trials, rng, verdict)``: ``rng`` the generator seeded with ``seed``, and
    ``verdict(passed, n, text)`` the checker's last word after ``n`` trials: it prints
    ``PASSED <name>: <text>`` or ``FAILED <name>: <text>`` (unless ``verbose`` is false) and
    returns that :class:`CheckResult`, whose ``max_error`` is 0 on a pass and ``nan`` on a
    failure.  ``name`` defaults to the candidate's ``__name__``.
    """
    if not callable(candidate):
        raise TypeError(f"candidate must be a function, got {type(candidate).__name__}")
    trials = check_int("trials", trials, 1)
    rng = np.random.default_rng(seed)
    name = name or getattr(candidate, "__name__", "your function")

    def verdict(passed: bool, n: int, text: str) -> CheckResult:
        msg = ("PASSED " if passed else "FAILED ") + f"{name}: " + text
        if verbose:
            print(msg)
        return CheckResult(passed, name, n, 0.0 if passed else float("nan"), msg)

    return trials, rng, verdict
