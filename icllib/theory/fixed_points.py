r"""Fixed points of the mode dynamics and the saddle at the origin (book chapter 3).

* :func:`paper_fixed_point`: the paper's hyperbola ``p_a q_a = 1/s_inf_a`` (eq. 11), the
  fixed point of the decoupled flow (eqs. 9-10);
* :func:`exact_fixed_point`, :func:`exact_fixed_point_pq`: the minimiser of the exact mean
  loss (book chapter 3, 'Where training really stops: the exact fixed point'), as products
  and on a conservation manifold;
* :func:`saddle_eigenvalues`: the linearisation at ``p = q = 0``.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike
from scipy.optimize import brentq

from ..validation import check_int, check_real, check_spectrum
from .moments import s_inf
from .timescales import tau

__all__ = ["paper_fixed_point", "exact_fixed_point", "exact_fixed_point_pq", "saddle_eigenvalues"]


def paper_fixed_point(s: ArrayLike, N: int) -> np.ndarray:
    r"""The paper's fixed-point products ``a_a = p_a q_a = 1 / s_inf_a`` (paper eq. 11).

    Matrix form ``p2 q1 = s_inf(S)^{-1}``; a hyperbola in each ``(p_a, q_a)`` plane.

    Parameters
    ----------
    s : array_like, shape (d,)
        Eigenvalues of ``Sigma_x`` (positive, finite).
    N : int
        Context length, ``>= 1``.

    Returns
    -------
    ndarray, shape (d,)
    """
    return 1.0 / s_inf(s, N)


def _exact_active_set(s, N):
    """Water-filling for the minimiser of the exact loss (see exact_fixed_point)."""
    order = np.argsort(-s, kind="stable")
    rs = np.sqrt(s[order])
    csum = np.cumsum(rs)
    k_active = 1
    for k in range(len(s), 0, -1):
        if rs[k - 1] * (N + 1 + k) > csum[k - 1]:
            k_active = k
            break
    active = np.zeros(len(s), dtype=bool)
    active[order[:k_active]] = True
    return active, csum[k_active - 1], k_active


def exact_fixed_point(s: ArrayLike, N: int) -> np.ndarray:
    r"""Products ``a*_a = p_a q_a`` at the minimum of the exact mean loss (book chapter 3).

    Minimising :func:`exact_loss` over ``p, q`` with ``a = p q`` fixed gives, by
    Cauchy-Schwarz, ``(sum_a s_a p_a^2)(sum_b s_b^2 q_b^2) >= (sum_a s_a^{3/2} |a_a|)^2``
    (equality iff ``p_a^2 = c s_a q_a^2`` for one ``c > 0``).  The remaining strictly
    convex problem in ``a`` has the unique minimiser

    ``a*_a = (N / ((N+1) s_a)) [1 - (sum_{b in A} sqrt(s_b)) / ((N+1+|A|) sqrt(s_a))]``

    on the active set ``A`` of modes where the bracket is positive, and ``a*_a = 0`` off it.
    ``A`` is found by water-filling over the modes sorted by ``s`` (mode ``a`` is active
    iff ``sqrt(s_a) (N+1+|A|) > sum_{b in A} sqrt(s_b)``).  When every mode is active
    ``|A| = d`` and this is the closed form of book chapter 3 (equation ``ch3-astar``); small
    ``N`` with a spread
    spectrum switches the weakest modes off (``s = (4, 2, 1, 0.5)`` at ``N = 1`` already
    does: ``a*_4 = 0``).

    Parameters
    ----------
    s : array_like, shape (d,)
        Eigenvalues of ``Sigma_x`` (positive, finite).
    N : int
        Context length, ``>= 1``.

    Returns
    -------
    ndarray, shape (d,)
    """
    s = check_spectrum("s", s)
    N = check_int("N", N, 1)
    active, sum_sqrt, k = _exact_active_set(s, N)
    a = (N / ((N + 1) * s)) * (1.0 - sum_sqrt / ((N + 1 + k) * np.sqrt(s)))
    return np.where(active, a, 0.0)


def exact_fixed_point_pq(s: ArrayLike, N: int,
                         C: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    r"""The minimiser ``(p, q)`` of the exact loss on the manifold ``sum p^2 - q^2 = C``.

    The minima of :func:`exact_loss` form the curve ``p_a = sqrt(a*_a) (c s_a)^{1/4}``,
    ``q_a = sqrt(a*_a) (c s_a)^{-1/4}``, ``c > 0`` (see :func:`exact_fixed_point`; only a
    global rescaling of ``p`` against ``q`` is free).  The exact mean flow conserves
    ``C = sum_a p_a^2 - q_a^2`` (book chapter 3), which picks ``c`` as the root of
    ``sum_a a*_a (sqrt(c s_a) - 1/sqrt(c s_a)) = C`` (increasing in ``c``; solved by
    ``brentq`` in ``log c``).  The branch ``p, q >= 0`` is returned; a flow started with
    ``p_a, q_a < 0`` ends at ``(-p_a, -q_a)``.  Inactive modes (``a*_a = 0``) get
    ``p_a = q_a = 0``.

    Parameters
    ----------
    s : array_like, shape (d,)
        Eigenvalues of ``Sigma_x`` (positive, finite).
    N : int
        Context length, ``>= 1``.
    C : float
        The conserved ``sum_a p_a^2 - q_a^2`` of the start.

    Returns
    -------
    p, q : ndarray, shape (d,)
    """
    s = check_spectrum("s", s)
    C = check_real("C", C)
    a = exact_fixed_point(s, N)

    def excess(logc):
        g = np.sqrt(np.exp(logc) * s)
        return float(np.sum(a * (g - 1.0 / g))) - C

    lo, hi = -1.0, 1.0
    while excess(lo) > 0:
        lo *= 2.0
    while excess(hi) < 0:
        hi *= 2.0
    logc = brentq(excess, lo, hi, xtol=1e-15, rtol=4 * np.finfo(float).eps, maxiter=500)
    g4 = (np.exp(logc) * s) ** 0.25
    return np.sqrt(a) * g4, np.sqrt(a) / g4


def saddle_eigenvalues(s: ArrayLike, eta: float, *, P: int | None = None,
                       convention: str = "steps") -> np.ndarray:
    r"""Eigenvalues of the linearised flow at ``(p, q) = (0, 0)`` (book chapter 3).

    Each mode's Jacobian is ``[[0, 1], [1, 0]] / tau_a``, with eigenvalue ``+1/tau_a``
    along ``p = q`` (unstable) and ``-1/tau_a`` along ``p = -q`` (stable).  The same holds
    for the exact mean flow (its coupling terms are cubic).

    Parameters
    ----------
    s : array_like
        Eigenvalues (any shape; positive, finite).
    eta : float
        Learning rate, ``> 0``.
    P, convention
        Time convention, see :func:`icllib.theory.tau`.

    Returns
    -------
    ndarray, shape ``s.shape + (2,)``
        ``[..., 0] = +1/tau`` (unstable, eigenvector ``(1, 1)/sqrt 2`` in ``(p_a, q_a)``),
        ``[..., 1] = -1/tau`` (stable, eigenvector ``(1, -1)/sqrt 2``).
    """
    inv = 1.0 / tau(s, eta, P, convention)
    return np.stack([inv, -inv], axis=-1)
