"""Checkers for the exercises of chapter 2 (book/02-dynamics.md)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from .core import CheckResult, check_function

__all__ = ["check_exact_mean_velocity", "check_frozen_growth_rate"]


def _sample_mode_inputs(rng):
    d = int(rng.integers(1, 7))
    return {"p": rng.standard_normal(d), "q": rng.standard_normal(d),
            "s": rng.uniform(0.1, 3.0, size=d), "N": int(rng.integers(1, 60)),
            "eta": float(rng.uniform(0.01, 0.2))}


def check_exact_mean_velocity(candidate: Callable, *, trials: int = 20,
                              seed: int = 0) -> CheckResult:
    """Check ``candidate(p, q, s, N, eta) -> (dp, dq)`` against the exact mean flow.

    Reference: :func:`icllib.flows.exact_mean_velocity` (book chapter 2, 'The exact mean
    loss and its gradient flow'), the gradient flow ``-eta grad l(p, q)`` of the exact mean
    loss, on random ``p, q`` (both signs),
    spectra ``s`` in ``[0.1, 3]`` with ``d`` in ``1..6``, ``N`` in ``1..59``.  Tolerance
    ``rtol = 1e-7``.
    """
    from ..flows import exact_mean_velocity

    def reference(p, q, s, N, eta):
        return exact_mean_velocity(p, q, s, N, eta=eta)

    return check_function(candidate, reference, _sample_mode_inputs, trials=trials, seed=seed,
                          rtol=1e-7, atol=1e-12, name="exact_mean_velocity")


def _sample_frozen_inputs(rng):
    d = int(rng.integers(1, 7))
    return {"p": rng.normal(0.0, 0.7, size=d), "q": rng.normal(0.0, 0.7, size=d),
            "s": np.exp(rng.uniform(np.log(0.1), np.log(4.0), size=d)),
            "N": int(rng.integers(1, 60)), "eta": float(rng.uniform(0.001, 0.1))}


def check_frozen_growth_rate(candidate: Callable, *, trials: int = 20,
                             seed: int = 0) -> CheckResult:
    """Check ``candidate(p, q, s, N, eta) -> lambda`` (shape ``(d,)``) against the reference.

    Reference: :func:`icllib.coupling.frozen_growth_rate` (book chapter 2, exercise 'How hard
    the brake bites'): the growth rate per SGD step of mode ``a`` near zero with the other
    modes held at ``p, q``, ``eta s_a^2 [sqrt(1 + ((D'_a - E'_a)/2)^2) - (D'_a + E'_a)/2]``
    with the brakes of the *other* modes only.  Random ``p, q`` (both signs, sizes up to about
    2), ``d`` in ``1..6`` (``d = 1``: no other mode, ``lambda = eta s^2``), ``s`` in
    ``[0.1, 4]``, ``N`` in ``1..59``, ``eta`` in ``[0.001, 0.1]``.  Tolerance ``rtol = 1e-9``.
    """
    from ..coupling import frozen_growth_rate

    return check_function(candidate, frozen_growth_rate, _sample_frozen_inputs, trials=trials,
                          seed=seed, rtol=1e-9, atol=1e-14, name="frozen_growth_rate")
