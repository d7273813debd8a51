"""Checkers for the exercises of chapter 3 (book/03-fixed-points.md)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from .core import CheckResult, check_function

__all__ = ["check_exact_fixed_point"]


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
