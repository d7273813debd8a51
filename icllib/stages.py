r"""Staged learning from a small balanced start: both theories on one time grid (chapters 4-5).

Chapters 4 and 5 draw, for many settings, the same pair of curves from a balanced start
``p_a = q_a = sqrt(a0)``: the exact mean flow (:func:`icllib.flows.exact_mean_flow`, book
chapter 2) and the paper's decoupled logistic (paper eq. 13, :func:`icllib.theory.logistic_a`),
with the loss of each (:func:`icllib.theory.exact_loss`, :func:`icllib.theory.paper_loss`,
paper eq. 14) and the escape times (:func:`icllib.theory.escape_time`).
:func:`balanced_start_curves` computes them once, on a logarithmic grid that reaches well past
the slowest mode's escape.  Time is in SGD steps (``tau_a = 1/(eta s_a^2)``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .flows import FlowSolution, exact_mean_flow
from .theory import escape_time, logistic_a, paper_loss, s_inf, tau
from .validation import check_int, check_positive, check_spectrum

__all__ = ["BalancedCurves", "balanced_start_curves"]


@dataclass(frozen=True)
class BalancedCurves:
    """Both theories from one small balanced start, on one time grid.

    Attributes
    ----------
    t : ndarray, shape (T,)
        Times in SGD steps: ``0`` and then a logarithmic grid.
    t_star : ndarray, shape (d,)
        Escape times ``(tau_a/2) ln(1/(s_inf_a a0))`` (book chapter 4).
    s_inf : ndarray, shape (d,)
        ``s_inf_a``; the paper's final products are ``1/s_inf_a``.
    exact : FlowSolution
        The exact mean flow (its ``a``, ``p``, ``q`` and exact ``loss``).
    paper_a : ndarray, shape (T, d)
        The paper's logistic products (paper eq. 13).
    paper_loss : ndarray, shape (T,)
        The paper's loss along its logistic (paper eq. 14).
    """

    t: np.ndarray
    t_star: np.ndarray
    s_inf: np.ndarray
    exact: FlowSolution
    paper_a: np.ndarray
    paper_loss: np.ndarray


def balanced_start_curves(s, N, eta, a0, *, n_points=400, span=6.0) -> BalancedCurves:
    r"""The exact mean flow and the paper's logistic from ``p_a = q_a = sqrt(a0)``.

    The grid is ``t = 0`` followed by ``n_points`` log-spaced times from ``0.1`` to
    ``span * max(max_a t*_a, max_a tau_a)`` SGD steps, so every mode has escaped and settled
    (a balanced mode rises from 10 % to 90 % in ``tau ln 9 ~ 2.2 tau`` after ``t*``; book
    chapter 4).

    Parameters
    ----------
    s : array_like, shape (d,)
        Eigenvalues of ``Sigma_x``.
    N : int
        Context length, ``>= 1``.
    eta : float
        SGD step size (batch-mean loss), ``> 0``.
    a0 : float
        Balanced initial product, ``0 < a0 < 1/s_inf`` for every mode.
    n_points : int
        Number of log-spaced times after ``t = 0``, ``>= 2``.
    span : float
        How far past the slowest escape (or slowest ``tau``) the grid reaches, ``> 0``.

    Returns
    -------
    BalancedCurves
    """
    s = check_spectrum("s", s)
    N = check_int("N", N, 1)
    eta = check_positive("eta", eta)
    a0 = check_positive("a0", a0)
    n_points = check_int("n_points", n_points, 2)
    span = check_positive("span", span)
    k = s_inf(s, N)
    if np.any(a0 * k >= 1):
        raise ValueError(f"a0 must satisfy 0 < a0 < a_inf = 1/s_inf = {1 / k}, got {a0}")
    t_star = escape_time(a0, s, N, eta)
    t_max = span * max(float(t_star.max()), float(tau(s, eta).max()))
    t = np.concatenate([[0.0], np.geomspace(0.1, t_max, n_points)])
    p0 = np.full(s.size, np.sqrt(a0))
    paper_a = logistic_a(t, a0, s, N, eta)
    return BalancedCurves(t=t, t_star=t_star, s_inf=k,
                          exact=exact_mean_flow(t, p0, p0, s, N, eta=eta),
                          paper_a=paper_a, paper_loss=paper_loss(paper_a, s, N))
