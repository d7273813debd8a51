"""Checkers for the exercises of chapter 4 (book/04-timescales.md)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..validation import check_positive, check_spectrum
from .core import CheckResult, check_function, format_vector

__all__ = ["check_logistic_a", "check_plateau_length", "slow_mode_lag", "check_slow_mode_lag",
           "LAG_HORIZON"]

#: how far :func:`slow_mode_lag` follows the exact flow, in units of the paper's half-rise
#: time of the slowest mode: a mode not half-risen by then has no measured lag (``inf``)
LAG_HORIZON = 40.0


def _sample_logistic_inputs(rng):
    """Times, a balanced initial product (below or above a_inf), spectrum, N and eta."""
    d = int(rng.integers(1, 6))
    s = np.exp(rng.uniform(np.log(0.1), np.log(4.0), size=d))
    N = int(rng.integers(1, 200))
    eta = float(np.exp(rng.uniform(np.log(1e-3), np.log(0.1))))
    tau_max = 1.0 / (eta * s.min() ** 2)
    t = np.sort(rng.uniform(0.0, 12.0 * tau_max, size=int(rng.integers(1, 30))))
    a0 = float(np.exp(rng.uniform(np.log(1e-8), np.log(3.0))))
    return {"t": t, "a0": a0, "s": s, "N": N, "eta": eta}


def check_logistic_a(candidate: Callable, *, trials: int = 20, seed: int = 0) -> CheckResult:
    """Check ``candidate(t, a0, s, N, eta) -> a`` (shape ``(len(t), len(s))``).

    Reference: :func:`icllib.theory.logistic_a` (paper eq. 13; book chapter 4, 'The logistic
    solution'),
    ``a(t) = a_inf a0 / (a0 + (a_inf - a0) exp(-2 t / tau))``, ``a_inf = 1/s_inf``,
    ``tau = 1/(eta s^2)`` (SGD steps), on random times up to 12 of the slowest ``tau``,
    ``a0`` log-uniform in ``[1e-8, 3]`` (so also above ``a_inf``), ``d`` in ``1..5``,
    ``s`` in ``[0.1, 4]``, ``N`` in ``1..199``, ``eta`` in ``[1e-3, 0.1]``.
    Tolerance ``rtol = 1e-8``.
    """
    from ..theory import logistic_a

    return check_function(candidate, logistic_a, _sample_logistic_inputs, trials=trials,
                          seed=seed, rtol=1e-8, atol=1e-14, name="logistic_a")


def _sample_small_starts(rng):
    """A spectrum, N, eta and a small start (p0, q0) per mode, balanced or not, any signs.

    ``p0^2 + q0^2`` is at most ``1e-3 a_inf`` (the plateau regime) and ``|p0 + q0|`` at least
    ``0.05 max(|p0|, |q0|)`` (away from ``p = -q``, which never escapes).
    """
    d = int(rng.integers(1, 6))
    s = np.exp(rng.uniform(np.log(0.1), np.log(4.0), size=d))
    N = int(rng.integers(1, 200))
    eta = float(np.exp(rng.uniform(np.log(1e-3), np.log(0.1))))
    a_inf = N / ((N + 1) * s + s.sum())
    radius = np.sqrt(a_inf * np.exp(rng.uniform(np.log(1e-9), np.log(1e-3), size=d)))
    while True:
        angle = rng.uniform(0.0, 2.0 * np.pi, size=d)
        p0, q0 = radius * np.cos(angle), radius * np.sin(angle)
        if np.all(np.abs(p0 + q0) >= 0.05 * np.maximum(np.abs(p0), np.abs(q0))):
            return {"p0": p0, "q0": q0, "s": s, "N": N, "eta": eta}


def check_plateau_length(candidate: Callable, *, trials: int = 20,
                         seed: int = 0) -> CheckResult:
    """Check ``candidate(p0, q0, s, N, eta) -> t*`` (shape ``(len(s),)``), any small start.

    Reference: :func:`icllib.theory.plateau_length` (book chapter 4, exercise 'The plateau of
    any start'), ``t* = (tau/2) ln(4 / (s_inf (p0 + q0)^2))`` in SGD steps, on random small
    starts of either sign (``p0^2 + q0^2 <= 1e-3 a_inf``, balanced, unbalanced and
    ``p0 q0 < 0`` alike), ``d`` in ``1..5``, ``s`` in ``[0.1, 4]``, ``N`` in ``1..199``,
    ``eta`` in ``[1e-3, 0.1]``.  Tolerance ``rtol = 1e-8``.
    """
    from ..theory import plateau_length

    return check_function(candidate, plateau_length, _sample_small_starts, trials=trials,
                          seed=seed, rtol=1e-8, atol=1e-12, name="plateau_length")


def slow_mode_lag(s, N: int = 10, eta: float = 0.01, a0: float = 1e-4) -> float:
    """Half-rise time of the smallest-variance mode, exact mean flow over the paper's logistic.

    Both from the balanced start ``p = q = sqrt(a0)`` in every mode; the exact flow's
    half-rise is where ``a`` reaches half the exact minimiser ``a*`` (book chapter 4, the
    definition 'Escape time and half-rise time'), the paper's is its logistic's
    (:func:`icllib.theory.half_rise_time`).  ``nan`` when the exact minimiser switches that
    mode off (``a* = 0``: it is never learned); ``inf`` when it has not risen after
    :data:`LAG_HORIZON` (40) times the paper's time, the stretch of flow it follows.
    """
    from ..flows import exact_mean_flow
    from ..metrics import first_crossing
    from ..theory import exact_fixed_point, half_rise_time

    s = check_spectrum("s", s)
    a0 = check_positive("a0", a0)
    slowest = int(np.argmin(s))
    a_star = exact_fixed_point(s, N)[slowest]
    if a_star <= 0:
        return float("nan")
    paper = half_rise_time(a0, s, N, eta)[slowest]
    t = np.concatenate([[0.0], np.geomspace(1e-3 * paper, LAG_HORIZON * paper, 6000)])
    start = np.full(s.size, np.sqrt(a0))
    a = exact_mean_flow(t, start, start, s, N, eta=eta).a[:, slowest]
    exact = first_crossing(t, a, a_star / 2)
    return float("inf") if np.isnan(exact) else float(exact / paper)


def check_slow_mode_lag(spectrum, *, N: int = 10, eta: float = 0.01, a0: float = 1e-4,
                        factor: float = 3.0, max_modes: int = 8,
                        verbose: bool = True) -> CheckResult:
    """Check a designed spectrum: its slowest mode is learned ``factor`` times later than
    the paper's logistic says (book chapter 4, exercise 'A spectrum that fools the paper').

    The spectrum must have at most ``max_modes`` positive variances and every mode must be
    learned (``a* > 0`` in every mode of :func:`icllib.theory.exact_fixed_point`: a mode that
    is switched off has no half-rise at all); then :func:`slow_mode_lag` must be a measured,
    finite lag of at least ``factor``: a slowest mode that has not reached half its final
    value after :data:`LAG_HORIZON` times the paper's half-rise time (one just inside the
    water-filling edge, whose ``a*`` is nearly 0) fails, as the exercise asks for the time at
    which it is learned.  Every failure names the spectrum.  ``verbose=False`` prints nothing
    (the verdict is still returned).
    """
    from ..theory import exact_fixed_point

    name = "slow_mode_lag"

    def verdict(passed, text, lag=float("nan")):
        msg = ("PASSED " if passed else "FAILED ") + f"{name}: " + text
        if verbose:
            print(msg)
        return CheckResult(passed, name, 1, 0.0 if passed else lag, msg)

    try:
        s = np.asarray(spectrum, dtype=float)
    except (TypeError, ValueError):
        return verdict(False, f"the spectrum must be a list of numbers, got {spectrum!r}")
    if s.ndim != 1 or not 1 <= s.size <= max_modes or not np.all(np.isfinite(s)) \
            or np.any(s <= 0):
        return verdict(False, f"the spectrum must be 1 to {max_modes} positive variances, "
                              f"got {spectrum!r}")
    off = np.flatnonzero(exact_fixed_point(s, N) <= 0)
    if off.size:
        return verdict(False, f"s = {format_vector(s)}: modes {(off + 1).tolist()} are "
                              f"switched off at N = {N} (a* = 0, chapter 3): they are never "
                              f"learned (wanted every mode learned, a* > 0)")
    lag = slow_mode_lag(s, N, eta, a0)
    if not np.isfinite(lag):
        a_star = exact_fixed_point(s, N)[np.argmin(s)]
        return verdict(False, f"s = {format_vector(s)}: the slowest mode (s = {s.min():.3g}, "
                              f"a* = {a_star:.3g}) has not reached half its final value after "
                              f"{LAG_HORIZON:g} times the paper's half-rise time, so no lag is "
                              f"measured (wanted a measured lag >= {factor:g}): it sits so close "
                              "to the water-filling edge that it is barely learned; move it "
                              "further inside", lag)
    text = (f"s = {format_vector(s)}: the slowest mode (s = {s.min():.3g}) reaches half its "
            f"final value {lag:.2f} times later than the paper's logistic says "
            f"(wanted >= {factor:g})")
    return verdict(lag >= factor, text, lag)
