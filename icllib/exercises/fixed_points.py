"""Checkers for the exercises of chapter 3 (book/03-fixed-points.md)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from .core import CheckResult, check_function

__all__ = ["check_exact_fixed_point", "check_water_filling"]


def _sample_all_active_spectrum(rng):
    """A spectrum and context length for which every mode of the exact minimiser is active.

    Draws ``d`` in ``1..6``, ``s`` log-uniform in ``[0.1, 5]`` and ``N`` in ``1..300``, and
    redraws until ``sqrt(s_min) (N + 1 + d) > sum_b sqrt(s_b)`` (book chapter 3, 'Where
    training really stops: the exact fixed point': every bracket of ``a*`` positive, so the
    closed form needs no water-filling).
    """
    while True:
        d = int(rng.integers(1, 7))
        s = np.exp(rng.uniform(np.log(0.1), np.log(5.0), size=d))
        N = int(rng.integers(1, 301))
        if np.sqrt(s.min()) * (N + 1 + d) > np.sqrt(s).sum() * (1 + 1e-6):
            return {"s": s, "N": N}


def check_exact_fixed_point(candidate: Callable, *, trials: int = 20,
                            seed: int = 0) -> CheckResult:
    """Check ``candidate(s, N) -> a*`` against the minimiser of the exact mean loss.

    Reference: :func:`icllib.theory.exact_fixed_point` (book chapter 3, 'Where training
    really stops: the exact fixed point'),
    ``a*_a = (N / ((N+1) s_a)) [1 - (sum_b sqrt(s_b)) / ((N+1+d) sqrt(s_a))]``, on random
    spectra (``d`` in ``1..6``, ``s`` in ``[0.1, 5]``) and ``N`` in ``1..300`` for which every
    mode is active.  Tolerance ``rtol = 1e-9``.
    """
    from ..theory import exact_fixed_point

    return check_function(candidate, exact_fixed_point, _sample_all_active_spectrum,
                          trials=trials, seed=seed, rtol=1e-9, atol=1e-12,
                          name="exact_fixed_point")


def _sample_any_spectrum(rng):
    """A spectrum and context length, half of them with switched-off modes.

    Draws ``d`` in ``2..6`` and ``s`` log-uniform in ``[0.01, 5]``; every other trial takes
    ``N`` in ``1..4`` and redraws until at least one mode of the exact minimiser is switched
    off (``a*_a = 0``: water-filling needed, book chapter 3, 'Where training really stops');
    the others take ``N`` in ``1..300`` (usually every mode active).
    """
    from ..theory import exact_fixed_point

    switched_off = rng.random() < 0.5
    while True:
        d = int(rng.integers(2, 7))
        s = np.exp(rng.uniform(np.log(0.01), np.log(5.0), size=d))
        if not switched_off:
            return {"s": s, "N": int(rng.integers(1, 301))}
        N = int(rng.integers(1, 5))
        if np.any(exact_fixed_point(s, N) == 0.0):
            return {"s": s, "N": N}


def check_water_filling(candidate: Callable, *, trials: int = 30,
                        seed: int = 0) -> CheckResult:
    """Check ``candidate(s, N) -> a*`` for any spectrum, switched-off modes included.

    Reference: :func:`icllib.theory.exact_fixed_point` (book chapter 3, exercise 'where the
    weak modes switch off'): the minimiser of the exact mean loss over ``a >= 0``, found by
    water-filling over the modes sorted by ``s``.  Half of the random inputs (``d`` in
    ``2..6``, ``s`` in ``[0.01, 5]`` in any order, ``N`` in ``1..4``) have at least one mode
    with ``a*_a = 0``, so the all-active closed form, even clipped at zero, fails.  Tolerance
    ``rtol = 1e-9``, ``atol = 1e-12``.
    """
    from ..theory import exact_fixed_point

    return check_function(candidate, exact_fixed_point, _sample_any_spectrum,
                          trials=trials, seed=seed, rtol=1e-9, atol=1e-12,
                          name="water_filling")
