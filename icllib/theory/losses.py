r"""Losses of the reduced model as functions of the modes, and their floors (book ch. 1, 2, 5).

* :func:`paper_loss` (paper eq. 14) and its gradient, whose gradient flow is the paper's
  decoupled dynamics (eqs. 9-10);
* :func:`exact_loss` and its gradient, the exact task- and data-averaged loss (book chapter
  2, 'The exact mean loss and its gradient flow');
* the floors :func:`converged_loss`, :func:`exact_converged_loss` (and its closed form for any
  active set, :func:`exact_floor_active_set`), the spectra on which they coincide at finite
  ``N`` (:func:`coinciding_floors_ratio`) and the starting value :func:`initial_loss` (book
  chapter 5, 'The floor');
* :func:`prediction_at_convergence`, what the model computes at the paper's fixed point
  (eq. 11; book chapters 1 and 3).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from ..validation import check_array, check_int, check_modes, check_spectrum
from .fixed_points import exact_fixed_point
from .moments import s_inf

__all__ = [
    "paper_loss",
    "paper_loss_grad",
    "exact_loss",
    "exact_loss_grad",
    "converged_loss",
    "exact_converged_loss",
    "exact_floor_active_set",
    "coinciding_floors_ratio",
    "initial_loss",
    "floor_gap_limit",
    "plateau_levels",
    "prediction_at_convergence",
]


def paper_loss(a: ArrayLike, s: ArrayLike, N: int) -> np.ndarray:
    r"""The paper's mean loss as a function of the mode products (paper eq. 14).

    ``L = 1/2 sum_a s_a (1 - 2 s_a a_a + s_a s_inf_a a_a^2)`` (book chapter 5, 'The loss as a
    function of the modes').  Its gradient flow with ``tau = 1/(eta s^2)`` is the paper's
    decoupled mode equations.

    Parameters
    ----------
    a : array_like, shape (..., d)
        Products ``p_a q_a``; leading axes (e.g. time) are kept.
    s : array_like, shape (d,)
        Eigenvalues of ``Sigma_x`` (positive, finite).
    N : int
        Context length, ``>= 1``.

    Returns
    -------
    ndarray, shape (...)
    """
    s = check_spectrum("s", s)
    a = check_modes("a", a, s.size)
    k = s_inf(s, N)
    return 0.5 * np.sum(s * (1.0 - 2.0 * s * a + s * k * a * a), axis=-1)


def paper_loss_grad(p: ArrayLike, q: ArrayLike, s: ArrayLike,
                    N: int) -> tuple[np.ndarray, np.ndarray]:
    r"""Gradient ``(dL/dp, dL/dq)`` of :func:`paper_loss` at ``a = p q``.

    ``dL/dp_a = -s_a^2 q_a (1 - s_inf_a a_a)``, ``dL/dq_a = -s_a^2 p_a (1 - s_inf_a a_a)``.

    Parameters
    ----------
    p, q : array_like, shape (..., d)
        Mode amplitudes of ``p2`` and ``q1``.
    s : array_like, shape (d,)
        Eigenvalues of ``Sigma_x`` (positive, finite).
    N : int
        Context length, ``>= 1``.

    Returns
    -------
    g_p, g_q : ndarray, shape (..., d)
    """
    s = check_spectrum("s", s)
    p = check_modes("p", p, s.size)
    q = check_modes("q", q, s.size)
    f = -(s ** 2) * (1.0 - s_inf(s, N) * p * q)
    return f * q, f * p


def exact_loss(p: ArrayLike, q: ArrayLike, s: ArrayLike, N: int) -> np.ndarray:
    r"""Exact task- and data-averaged loss of the reduced model (book chapter 2).

    ``l = 1/2 sum_a [s_a - 2 s_a^2 a_a + ((N+1)/N) s_a^3 a_a^2]``
    ``  + (1/(2N)) (sum_a s_a p_a^2)(sum_b s_b^2 q_b^2)``,  ``a_a = p_a q_a``,

    for ``p2 = U diag(p) U^T``, ``q1 = U diag(q) U^T``, ``p1 = q2 = 0``, tasks with
    ``E[lambda^2] = 1`` and Gaussian data.  It equals :func:`paper_loss` when ``S`` is
    isotropic and ``p, q`` are mode-uniform, or when ``p`` is mode-uniform (``p2 ~ I``).

    Parameters
    ----------
    p, q : array_like, shape (..., d)
        Mode amplitudes of ``p2`` and ``q1``.
    s : array_like, shape (d,)
        Eigenvalues of ``Sigma_x`` (positive, finite).
    N : int
        Context length, ``>= 1``.

    Returns
    -------
    ndarray, shape (...)
    """
    s = check_spectrum("s", s)
    N = check_int("N", N, 1)
    p = check_modes("p", p, s.size)
    q = check_modes("q", q, s.size)
    a = p * q
    diag = 0.5 * np.sum(s - 2.0 * s ** 2 * a + ((N + 1) / N) * s ** 3 * a * a, axis=-1)
    cross = np.sum(s * p * p, axis=-1) * np.sum(s ** 2 * q * q, axis=-1) / (2.0 * N)
    return diag + cross


def exact_loss_grad(p: ArrayLike, q: ArrayLike, s: ArrayLike,
                    N: int) -> tuple[np.ndarray, np.ndarray]:
    r"""Gradient ``(dl/dp, dl/dq)`` of :func:`exact_loss` (book chapter 2).

    ``dl/dp_a = -s_a^2 q_a + ((N+1)/N) s_a^3 a_a q_a + (1/N) s_a p_a sum_b s_b^2 q_b^2``,
    ``dl/dq_a = -s_a^2 p_a + ((N+1)/N) s_a^3 a_a p_a + (1/N) s_a^2 q_a sum_b s_b p_b^2``.

    Parameters
    ----------
    p, q : array_like, shape (..., d)
        Mode amplitudes of ``p2`` and ``q1``.
    s : array_like, shape (d,)
        Eigenvalues of ``Sigma_x`` (positive, finite).
    N : int
        Context length, ``>= 1``.

    Returns
    -------
    g_p, g_q : ndarray, shape (..., d)
    """
    s = check_spectrum("s", s)
    N = check_int("N", N, 1)
    p = check_modes("p", p, s.size)
    q = check_modes("q", q, s.size)
    a = p * q
    Qs = np.sum(s ** 2 * q * q, axis=-1, keepdims=True)
    Ps = np.sum(s * p * p, axis=-1, keepdims=True)
    common = -(s ** 2) + ((N + 1) / N) * s ** 3 * a
    return common * q + s * p * Qs / N, common * p + s ** 2 * q * Ps / N


def converged_loss(s: ArrayLike, N: int) -> float:
    r"""The paper's loss at its fixed point, ``L_inf = 1/2 sum_a s_a (1 - s_a / s_inf_a)``.

    :func:`paper_loss` at ``a = 1/s_inf`` (book chapter 5, 'The floor').  Positive for finite
    ``N`` (the context estimate ``Sigma_hat`` is noisy), ``-> 0`` as ``N -> infinity``.

    Parameters
    ----------
    s : array_like, shape (d,)
        Eigenvalues of ``Sigma_x`` (positive, finite).
    N : int
        Context length, ``>= 1``.

    Returns
    -------
    float
    """
    s = check_spectrum("s", s)
    return 0.5 * float(np.sum(s * (1.0 - s / s_inf(s, N))))


def exact_converged_loss(s: ArrayLike, N: int) -> float:
    r"""Minimum of :func:`exact_loss` (book chapter 5, 'The floor').

    At the minimiser (:func:`exact_fixed_point`) the stationarity conditions reduce the
    loss to ``l* = 1/2 sum_a s_a (1 - s_a a*_a)``; with every mode active,

    ``l* = 1/2 [Tr S / (N+1) + N (sum_a sqrt(s_a))^2 / ((N+1)(N+1+d))]``,

    so ``N l* -> (Tr S + (sum_a sqrt(s_a))^2) / 2`` as ``N -> infinity``, whereas the
    paper's :func:`converged_loss` has ``N L_inf -> (d+1) Tr S / 2``.  By Cauchy-Schwarz
    ``(sum sqrt(s))^2 <= d Tr S``: the two agree for isotropic ``S`` and otherwise the
    paper's value is the larger at large ``N`` (by 11 % for ``s = (4, 2, 1, 0.5)``).
    Computed here as ``1/2 sum_a [s_a - 2 s_a^2 a*_a + ((N+1)/N) s_a^3 a*_a^2]
    + (1/(2N)) (sum_a s_a^{3/2} a*_a)^2``, valid for any active set.

    Parameters
    ----------
    s : array_like, shape (d,)
        Eigenvalues of ``Sigma_x`` (positive, finite).
    N : int
        Context length, ``>= 1``.

    Returns
    -------
    float
    """
    s = check_spectrum("s", s)
    N = check_int("N", N, 1)
    a = exact_fixed_point(s, N)
    diag = 0.5 * np.sum(s - 2.0 * s ** 2 * a + ((N + 1) / N) * s ** 3 * a * a)
    cross = np.sum(s ** 1.5 * a) ** 2 / (2.0 * N)
    return float(diag + cross)


def exact_floor_active_set(s: ArrayLike, N: int) -> float:
    r"""Closed form of :func:`exact_converged_loss` for any active set (book chapter 5).

    With ``A`` the modes the exact minimiser keeps (:func:`exact_fixed_point`, water-filling),
    ``T_A = sum_{a in A} s_a`` and ``R_A = sum_{a in A} sqrt(s_a)``,

    ``l* = 1/2 [Tr S - (N/(N+1)) (T_A - R_A^2 / (N+1+|A|))]``;

    with every mode active this is the closed form of book chapter 5, 'The floor'.

    Parameters
    ----------
    s : array_like, shape (d,)
        Eigenvalues of ``Sigma_x`` (positive, finite).
    N : int
        Context length, ``>= 1``.

    Returns
    -------
    float
    """
    s = check_spectrum("s", s)
    N = check_int("N", N, 1)
    active = exact_fixed_point(s, N) > 0
    T_A, R_A = s[active].sum(), np.sqrt(s[active]).sum()
    k = int(active.sum())
    return 0.5 * float(s.sum() - N / (N + 1) * (T_A - R_A ** 2 / (N + 1 + k)))


def coinciding_floors_ratio(N: int, m_large: int, m_small: int) -> float:
    r"""Spectra on which the paper's floor is exact at finite ``N`` (book chapter 5).

    :func:`converged_loss` equals :func:`exact_converged_loss` iff ``a* = 1/s_inf`` in every
    mode; besides ``S ~ I`` that happens iff ``S`` has two distinct eigenvalues, ``m_large``
    times ``s_large`` and ``m_small`` times ``s_small``, whose square-root ratio
    ``r = sqrt(s_large / s_small) > 1`` solves ``m_large r^2 - (N+1) r + m_small = 0``.
    Returns ``s_large / s_small = r^2`` (e.g. ``6.854`` for ``N = 2``, one mode each).

    Parameters
    ----------
    N : int
        Context length, ``>= 1``.
    m_large, m_small : int
        Multiplicities of the larger and the smaller eigenvalue, ``>= 1``.

    Returns
    -------
    float
        ``s_large / s_small``.

    Raises
    ------
    ValueError
        If the quadratic has no root ``r > 1`` (``N + 1 <= m_large + m_small``).
    """
    N = check_int("N", N, 1)
    m1 = check_int("m_large", m_large, 1)
    m2 = check_int("m_small", m_small, 1)
    if N + 1 <= m1 + m2:
        raise ValueError(f"N must be >= m_large + m_small = {m1 + m2} for a root r > 1, got {N}")
    r = ((N + 1) + np.sqrt((N + 1) ** 2 - 4.0 * m1 * m2)) / (2.0 * m1)
    return float(r * r)


def plateau_levels(s: ArrayLike, N: int, *, theory: str = "exact") -> np.ndarray:
    r"""Loss on each plateau of a staged run: after the ``k`` largest modes are learned.

    Returns ``levels[k]``, ``k = 0..d`` (book chapter 5, 'Plateaus and cliffs'):

    * ``theory="paper"``: :func:`paper_loss` with ``a = 1/s_inf`` in the first ``k`` modes and
      ``0`` in the rest, ``Tr S/2 - sum_{b<=k} s_b^2 / (2 s_inf_b)``;
    * ``theory="exact"``: the unlearned modes (``p, q ~ 0``) drop out of both terms of
      :func:`exact_loss`, so the learned ones sit at the minimum for their own spectrum,
      ``1/2 sum_{b>k} s_b + exact_converged_loss(s[:k], N)``.

    ``s`` must be sorted, largest first (the order in which the modes are learned).

    Parameters
    ----------
    s : array_like, shape (d,)
        Eigenvalues of ``Sigma_x`` (positive, finite), largest first.
    N : int
        Context length, ``>= 1``.
    theory : {"exact", "paper"}
        Which loss the plateaus are levels of.

    Returns
    -------
    ndarray, shape (d + 1,)
    """
    s = check_spectrum("s", s)
    N = check_int("N", N, 1)
    if np.any(np.diff(s) > 0):
        raise ValueError("s must be sorted from largest to smallest")
    if theory not in ("exact", "paper"):
        raise ValueError(f"theory must be 'exact' or 'paper', got {theory!r}")
    d = s.size
    if theory == "paper":
        drops = s ** 2 / (2.0 * s_inf(s, N))
        return 0.5 * s.sum() - np.concatenate([[0.0], np.cumsum(drops)])
    return np.array([0.5 * s[k:].sum() + (exact_converged_loss(s[:k], N) if k else 0.0)
                     for k in range(d + 1)])


def initial_loss(s: ArrayLike) -> float:
    r"""Loss at ``p = q = 0`` (prediction 0): ``Tr S / 2`` (book chapter 5).

    Parameters
    ----------
    s : array_like, shape (d,)
        Eigenvalues of ``Sigma_x`` (positive, finite).

    Returns
    -------
    float
    """
    s = check_spectrum("s", s)
    return 0.5 * float(np.sum(s))


def floor_gap_limit(s: ArrayLike) -> float:
    r"""Large-``N`` limit of ``N (L_inf - l*)``: ``1/2 (d Tr S - (sum_a sqrt(s_a))^2)`` (ch. 1).

    ``N`` times :func:`converged_loss` tends to ``(d+1) Tr S / 2`` and ``N`` times
    :func:`exact_converged_loss` to ``(Tr S + (sum_a sqrt(s_a))^2) / 2`` (book chapter 1, 'How
    much lower: the exact floor'), so the paper's floor exceeds the exact one by this amount
    over ``N``: a gap of order ``1/N``, the same order as the floors.  Non-negative by
    Cauchy-Schwarz, zero iff ``S`` is isotropic.

    Parameters
    ----------
    s : array_like, shape (d,)
        Eigenvalues of ``Sigma_x`` (positive, finite).

    Returns
    -------
    float
    """
    s = check_spectrum("s", s)
    return 0.5 * float(s.size * s.sum() - np.sqrt(s).sum() ** 2)


def prediction_at_convergence(W: ArrayLike, Sigma_hat: ArrayLike, xq: ArrayLike,
                              Sigma_x: ArrayLike, N: int) -> np.ndarray:
    r"""Prediction at the paper's fixed point (paper eq. 11; book chapter 3).

    ``y_hat = W Sigma_hat [((N+1)/N) Sigma_x + (Tr Sigma_x / N) I]^{-1} x_q``: one
    preconditioned gradient step on the context (the optimum of Ahn et al. 2023 and Zhang,
    Frei & Bartlett 2023).  It equals ``p2 W Sigma_hat q1 x_q`` exactly when
    ``p2 q1 = s_inf(Sigma_x)^{-1}`` and ``p2`` is a multiple of ``I``; it tends to
    ``W x_q`` as ``N -> infinity``.

    Parameters
    ----------
    W : array_like, shape (..., d, d)
        Task matrices.
    Sigma_hat : array_like, shape (..., d, d)
        Context covariances ``(1/N) sum_i x_i x_i^T``.
    xq : array_like, shape (..., d)
        Queries.
    Sigma_x : array_like, shape (d, d)
        Input covariance (symmetric positive definite).
    N : int
        Context length.

    Returns
    -------
    ndarray, shape (..., d)
    """
    N = check_int("N", N, 1)
    Sx = check_array("Sigma_x", Sigma_x)
    if Sx.ndim != 2 or Sx.shape[0] != Sx.shape[1]:
        raise ValueError(f"Sigma_x must be a square (d, d) matrix, got shape {Sx.shape}")
    d = Sx.shape[0]
    W = check_array("W", W, (..., d, d))
    Sh = check_array("Sigma_hat", Sigma_hat, (..., d, d))
    xq = check_array("xq", xq, (..., d))
    if not np.allclose(Sx, Sx.T, rtol=1e-10, atol=1e-12 * np.abs(Sx).max()):
        raise ValueError("Sigma_x must be symmetric")
    precond = ((N + 1) / N) * Sx + (np.trace(Sx) / N) * np.eye(d)
    v = np.linalg.solve(precond, xq[..., None])[..., 0]
    return np.einsum("...ij,...jk,...k->...i", W, Sh, v)
