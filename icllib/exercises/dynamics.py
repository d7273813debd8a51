"""Checkers for the exercises of chapter 2 (book/02-dynamics.md)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from .core import CheckResult, check_function

__all__ = ["check_exact_mean_velocity", "check_frozen_growth_rate", "check_first_separation"]


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


def _separation_times(s, N, eta, a0, delta):
    """Per mode, the first time at which the two flows differ by more than ``delta a*_a``.

    Both flows from the balanced start ``p = q = sqrt(a0)``, on a log-spaced grid of 20 001
    times (relative spacing below ``1e-3``) up to four slowest-mode timescales times
    ``ln(e / a0)``; the first crossing of ``|a_exact - a_paper| / a*_a`` over ``delta``,
    linearly interpolated (``a*`` the exact end point; ``nan`` where a mode never separates).
    """
    from ..flows import decoupled_flow, exact_mean_flow
    from ..metrics import first_crossing
    from ..theory import exact_fixed_point, tau

    s = np.asarray(s, dtype=float)
    start = np.full(s.size, np.sqrt(a0))
    t_end = 4 * tau(s.min(), eta) * np.log(np.e / a0)
    t = np.concatenate([[0.0], np.geomspace(1e-2, t_end, 20_000)])
    gap = np.abs(exact_mean_flow(t, start, start, s, N, eta=eta).a
                 - decoupled_flow(t, start, start, s, N, eta=eta).a)
    return np.atleast_1d(first_crossing(t, gap / exact_fixed_point(s, N), delta))


def _first_separation(s, N, eta, a0, delta):
    """Reference for :func:`check_first_separation`: ``(mode, step)``, 1-based ``mode``, the
    earliest mode of :func:`_separation_times`; ``(0, nan)`` when no mode separates."""
    times = _separation_times(s, N, eta, a0, delta)
    if np.all(np.isnan(times)):
        return 0, float("nan")
    mode = int(np.nanargmin(times))
    return mode + 1, float(times[mode])


def _sample_separation_inputs(rng):
    """A spectrum where one mode separates first, clearly (every other mode at least 10 %
    later), after at least one step, with every mode well inside the exact optimum (``a*_a``
    at least a fifth of the paper's end point, so that the relative gap is not a ratio of two
    tiny numbers)."""
    from ..theory import exact_fixed_point, paper_fixed_point

    while True:
        d = int(rng.integers(2, 6))
        s = np.sort(np.exp(rng.uniform(np.log(0.25), np.log(4.0), size=d)))[::-1]
        inputs = {"s": s, "N": int(rng.integers(3, 31)), "eta": float(rng.uniform(0.005, 0.02)),
                  "a0": float(np.exp(rng.uniform(np.log(1e-5), np.log(1e-3)))), "delta": 0.1}
        if np.any(exact_fixed_point(s, inputs["N"]) < 0.2 * paper_fixed_point(s, inputs["N"])):
            continue
        times = _separation_times(**inputs)
        if np.all(np.isnan(times)):
            continue
        first = np.nanmin(times)
        others = np.delete(times, np.nanargmin(times))
        if first >= 1 and not np.any(others <= 1.1 * first):
            return inputs


def check_first_separation(candidate: Callable, *, trials: int = 6,
                           seed: int = 0) -> CheckResult:
    """Check ``candidate(s, N, eta, a0, delta) -> (mode, step)``: the shortest experiment.

    Book chapter 2, exercise 'The shortest experiment': from the balanced start
    ``p = q = sqrt(a0)``, the first SGD step (a real number, interpolated between grid
    points) at which the exact mean flow and the paper's decoupled equations differ in some
    mode by more than ``delta`` times that mode's exact end point ``a*_a``, and that mode
    (1-based).  Random spectra with ``d`` in ``2..5`` and ``s`` in ``[0.25, 4]``, ``N`` in
    ``3..30``, ``eta`` in ``[0.005, 0.02]``, ``a0`` in ``[1e-5, 1e-3]``, ``delta = 0.1``,
    drawn so that one mode clearly separates first.  The mode must be exact; the step within
    1 % (any grid of at most a thousandth of the step, or at most one SGD step where the
    step is above 100, passes).
    """
    return check_function(candidate, _first_separation, _sample_separation_inputs,
                          trials=trials, seed=seed, rtol=0.01, atol=0.0,
                          name="first_separation")
