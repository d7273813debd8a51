r"""The coupling of the exact mean flow, read as a brake on each mode (book chapter 2).

Written per mode, the exact mean flow (book chapter 2, equation ``ch2-exact-flow``) is

    tau_a dp_a/dt = q_a - p_a [ ((N+1)/N) s_a q_a^2 + D_a ],   D_a = (1/(N s_a)) sum_b s_b^2 q_b^2
    tau_a dq_a/dt = p_a - q_a [ ((N+1)/N) s_a p_a^2 + E_a ],   E_a = (1/N) sum_b s_b p_b^2

with ``tau_a = 1/(eta s_a^2)``.  ``D_a`` and ``E_a`` act as weight decays on ``p_a`` and
``q_a`` that are fed by *every* mode.  The paper's decoupled equations (eqs. 9-10) have the
same form with the brakes ``(Tr S / N) q_a^2`` and ``(Tr S / N) p_a^2``, fed by mode ``a``
alone (expand ``s_inf_a = ((N+1) s_a + Tr S)/N``).  While all modes sit near zero both brakes
vanish; in the exact flow ``D_a`` switches on as each fast mode is learned, and it slows the
escape of the small modes: :func:`frozen_growth_rate` gives the rate at which a mode near zero
grows while the others are held fixed (book chapter 2, exercise 'How hard the brake bites').
"""

from __future__ import annotations

import numpy as np

from .validation import check_int, check_modes, check_positive, check_spectrum

__all__ = ["coupling_decay", "paper_decay", "frozen_growth_rate"]


def _inputs(p, q, s, N):
    s = check_spectrum("s", s)
    N = check_int("N", N, 1)
    p = check_modes("p", p, s.size)
    q = check_modes("q", q, s.size)
    return p, q, s, N


def coupling_decay(p, q, s, N):
    r"""The exact mean flow's brakes ``D_a`` (on ``p_a``) and ``E_a`` (on ``q_a``).

    ``D_a = (1/(N s_a)) sum_b s_b^2 q_b^2`` and ``E_a = (1/N) sum_b s_b p_b^2`` (book
    chapter 2, proposition 'The coupling is a brake'; the terms of equation
    ``ch2-exact-flow`` beyond the paper's ``((N+1)/N) s_a q_a^2``).

    Parameters
    ----------
    p, q : array_like, shape (..., d)
        Mode amplitudes of ``p2`` and ``q1``.
    s : array_like, shape (d,)
        Eigenvalues of ``Sigma_x``.
    N : int
        Context length, ``>= 1``.

    Returns
    -------
    D, E : ndarray, shape (..., d)
    """
    p, q, s, N = _inputs(p, q, s, N)
    Qs = np.sum(s ** 2 * q * q, axis=-1, keepdims=True)
    Ps = np.sum(s * p * p, axis=-1, keepdims=True)
    return Qs / (N * s), np.broadcast_to(Ps / N, p.shape).copy()


def paper_decay(p, q, s, N):
    r"""The paper's brakes in the same places: ``(Tr S/N) q_a^2`` and ``(Tr S/N) p_a^2``.

    The decoupled equations (paper eq. 12, the per-mode form of its eqs. 9-10) written as
    ``tau_a dp_a/dt = q_a - p_a [((N+1)/N) s_a q_a^2 + (Tr S/N) q_a^2]`` (and ``p <-> q``);
    book chapter 2, proposition 'The coupling is a brake'.

    Parameters and return value as in :func:`coupling_decay`.
    """
    p, q, s, N = _inputs(p, q, s, N)
    trace = s.sum()
    return trace / N * q * q, trace / N * p * p


def frozen_growth_rate(p, q, s, N, eta):
    r"""Growth rate per SGD step of each mode near zero, the other modes held fixed.

    Linearise mode ``a`` of the exact mean flow at ``p_a = q_a = 0`` with every other mode
    frozen: ``tau_a d(p_a, q_a)/dt = [[-D'_a, 1], [1, -E'_a]] (p_a, q_a)``, where ``D'_a`` and
    ``E'_a`` are the brakes of :func:`coupling_decay` *without* mode ``a``'s own term (that
    term is cubic in the mode).  The largest eigenvalue gives the rate

        lambda_a = eta s_a^2 [ sqrt(1 + ((D'_a - E'_a)/2)^2) - (D'_a + E'_a)/2 ],

    so ``a_a = p_a q_a`` grows like ``exp(2 lambda_a t)``; without brakes ``lambda_a =
    1/tau_a`` (book chapter 2, exercise 'How hard the brake bites').  The values of ``p_a,
    q_a`` themselves are ignored.

    Parameters
    ----------
    p, q : array_like, shape (..., d)
        Mode amplitudes of the other modes (entry ``a`` is not used for mode ``a``).
    s : array_like, shape (d,)
    N : int
    eta : float
        SGD step size (batch-mean loss), ``> 0``.

    Returns
    -------
    ndarray, shape (..., d)
        ``lambda_a`` per SGD step.
    """
    p, q, s, N = _inputs(p, q, s, N)
    eta = check_positive("eta", eta)
    D, E = coupling_decay(p, q, s, N)
    D_other = D - s * q * q / N           # drop mode a's own s_a^2 q_a^2 / (N s_a)
    E_other = E - s * p * p / N
    half_diff, half_sum = (D_other - E_other) / 2, (D_other + E_other) / 2
    return eta * s ** 2 * (np.sqrt(1.0 + half_diff ** 2) - half_sum)
