"""Checkers for the exercises of chapter 5b (book/05b-finite-tasks.md)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from .core import CheckResult, check_function

__all__ = ["check_task_set_fixed_point"]


def _sample_task_set_inputs(rng):
    """A spectrum, a context length and task-set second moments; some draws switch modes off.

    ``d`` in ``2..6``, ``s`` log-uniform in ``[0.1, 5]``, ``m`` the mean square of ``P`` standard
    normals per mode with ``P`` in ``1..64`` (so from very uneven to nearly 1), ``N`` in
    ``1..40`` (small ``N`` with an uneven ``m s`` switches the weakest modes off).
    """
    d = int(rng.integers(2, 7))
    s = np.exp(rng.uniform(np.log(0.1), np.log(5.0), size=d))
    P = int(rng.integers(1, 65))
    m = np.mean(rng.standard_normal((P, d)) ** 2, axis=0)
    return {"s": s, "N": int(rng.integers(1, 41)), "m": np.maximum(m, 1e-3)}


def check_task_set_fixed_point(candidate: Callable, *, trials: int = 40,
                               seed: int = 0) -> CheckResult:
    """Check ``candidate(s, N, m) -> a`` against the minimiser of the task-set loss.

    Reference: :func:`icllib.train.finite_tasks.task_set_fixed_point` (book chapter 5b,
    proposition ``ch5b-fixed``): water-filling on ``u_a = sqrt(m_a s_a)``, with
    ``s_a a_a = (N/(N+1)) [1 - sum_{b in A} u_b / ((N+1+|A|) u_a)]`` on the active set and
    ``0`` off it.  Random ``d`` in ``2..6``, ``s`` in ``[0.1, 5]``, ``N`` in ``1..40``,
    ``m`` from ``P`` in ``1..64`` tasks; about a third of the draws switch a mode off.
    Tolerance ``rtol = 1e-9``.
    """
    from ..train.finite_tasks import task_set_fixed_point

    return check_function(candidate, task_set_fixed_point, _sample_task_set_inputs,
                          trials=trials, seed=seed, rtol=1e-9, atol=1e-12,
                          name="task_set_fixed_point")
