"""Checkers for the exercises of chapter 4 (book/04-timescales.md)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from .core import CheckResult, check_function

__all__ = ["check_logistic_a"]


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

    Reference: :func:`icllib.theory.logistic_a` (paper eq. 12; book chapter 4, 'The logistic
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
