"""Checkers for the exercises of chapter 4 (book/04-timescales.md)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from .core import CheckResult, check_function

__all__ = ["check_logistic_a", "check_plateau_length"]


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
