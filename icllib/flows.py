r"""Mean-field gradient flows of the reduced linear transformer (book chapters 2 and 3).

Two ODE systems for the mode amplitudes ``p_a`` (of ``p2``) and ``q_a`` (of ``q1``), both in
the ``"steps"`` time convention of :mod:`icllib.theory` (batch-mean loss, step ``eta``,
``tau_a = 1/(eta s_a^2)``, ``t`` in SGD steps):

:func:`decoupled_flow`
    the paper's eqs. 9-10, ``tau_a dp_a/dt = q_a (1 - p_a q_a s_inf_a)`` and
    ``tau_a dq_a/dt = p_a (1 - p_a q_a s_inf_a)``: the gradient flow of
    :func:`icllib.theory.paper_loss`;
:func:`exact_mean_flow`
    the gradient flow ``d(p, q)/dt = -eta grad l`` of the exact task- and data-averaged
    loss :func:`icllib.theory.exact_loss` (book chapter 2, 'The exact mean loss and its
    gradient flow'), whose modes are coupled
    through ``sum_b s_b p_b^2`` and ``sum_b s_b^2 q_b^2``.

Both take the output times first and the learning rate as a required keyword,
``decoupled_flow(t, p0, q0, s, N, eta=eta)`` (as :func:`icllib.theory.logistic_a` takes
``t`` first; ``eta`` sets the time scale, so it has no default), and are integrated by
``scipy.integrate.solve_ivp`` with LSODA and the analytic Jacobian
(the problem is stiff once the fast modes have converged: an explicit DOP853 run at the same
tolerance is slower and ~100x less accurate in the converged fast modes; see
``bench/bench_theory.py``).  The right-hand sides are numpy-vectorised over modes (and over
any leading axes, when called directly as :func:`paper_velocity` and
:func:`exact_mean_velocity`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike
from scipy.integrate import solve_ivp

from .theory import exact_loss, paper_loss, s_inf
from .validation import (
    check_array,
    check_int,
    check_modes,
    check_positive,
    check_spectrum,
    check_time_grid,
)

__all__ = [
    "FlowSolution",
    "paper_velocity",
    "exact_mean_velocity",
    "decoupled_flow",
    "exact_mean_flow",
]


@dataclass(frozen=True)
class FlowSolution:
    """A solved trajectory of a mode flow.

    Attributes
    ----------
    t : ndarray, shape (T,)
        Times, in SGD steps.
    p, q : ndarray, shape (T, d)
        Mode amplitudes of ``p2`` and ``q1``.
    a : ndarray, shape (T, d)
        Products ``p * q`` (the eigenvalues of ``p2 q1``).
    loss : ndarray, shape (T,)
        The flow's own loss: :func:`icllib.theory.paper_loss` for
        :func:`decoupled_flow`, :func:`icllib.theory.exact_loss` for
        :func:`exact_mean_flow`.
    """

    t: np.ndarray
    p: np.ndarray
    q: np.ndarray
    a: np.ndarray
    loss: np.ndarray


def paper_velocity(p: ArrayLike, q: ArrayLike, s: ArrayLike, N: int, *,
                   eta: float) -> tuple[np.ndarray, np.ndarray]:
    r"""Right-hand side of the paper's decoupled flow (eqs. 9-10).

    ``dp_a/dt = eta s_a^2 q_a (1 - p_a q_a s_inf_a)``,
    ``dq_a/dt = eta s_a^2 p_a (1 - p_a q_a s_inf_a)`` (``tau_a = 1/(eta s_a^2)``, ``t`` in
    SGD steps; paper eqs. 9-10).

    Parameters
    ----------
    p, q : array_like, shape (..., d)
        Mode amplitudes of ``p2`` and ``q1``; leading axes are kept.
    s : array_like, shape (d,)
        Eigenvalues of ``Sigma_x``.
    N : int
        Context length, ``>= 1``.
    eta : float
        Learning rate, ``> 0`` (keyword, required: it sets the time scale).

    Returns
    -------
    dp, dq : ndarray, shape (..., d)
    """
    s = check_spectrum("s", s)
    eta = check_positive("eta", eta)
    p = check_modes("p", p, s.size)
    q = check_modes("q", q, s.size)
    f = eta * s ** 2 * (1.0 - p * q * s_inf(s, N))
    return q * f, p * f


def exact_mean_velocity(p: ArrayLike, q: ArrayLike, s: ArrayLike, N: int, *,
                        eta: float) -> tuple[np.ndarray, np.ndarray]:
    r"""Right-hand side of the exact mean flow (book chapter 2, equation ``ch2-exact-flow``).

    ``tau_a dp_a/dt = q_a - p_a [((N+1)/N) s_a q_a^2 + (1/(N s_a)) sum_b s_b^2 q_b^2]``,
    ``tau_a dq_a/dt = p_a - q_a [((N+1)/N) s_a p_a^2 + (1/N) sum_b s_b p_b^2]``,
    ``tau_a = 1/(eta s_a^2)``; this is ``-eta`` times the gradient of
    :func:`icllib.theory.exact_loss`.

    Parameters
    ----------
    p, q : array_like, shape (..., d)
        Mode amplitudes of ``p2`` and ``q1``; leading axes are kept.
    s : array_like, shape (d,)
        Eigenvalues of ``Sigma_x``.
    N : int
        Context length, ``>= 1``.
    eta : float
        Learning rate, ``> 0`` (keyword, required: it sets the time scale).

    Returns
    -------
    dp, dq : ndarray, shape (..., d)
    """
    s = check_spectrum("s", s)
    N = check_int("N", N, 1)
    eta = check_positive("eta", eta)
    p = check_modes("p", p, s.size)
    q = check_modes("q", q, s.size)
    c = (N + 1) / N
    Qs = np.sum(s ** 2 * q * q, axis=-1, keepdims=True)
    Ps = np.sum(s * p * p, axis=-1, keepdims=True)
    inv_tau = eta * s ** 2
    dp = inv_tau * (q - p * (c * s * q * q + Qs / (N * s)))
    dq = inv_tau * (p - q * (c * s * p * p + Ps / N))
    return dp, dq


def _check_flow_inputs(p0, q0, s, N, t, eta, rtol, atol):
    s = check_spectrum("s", s)
    N = check_int("N", N, 1)
    eta = check_positive("eta", eta)
    rtol = check_positive("rtol", rtol)
    atol = check_positive("atol", atol)
    d = s.size
    p0 = check_array("p0", p0, (d,), hint=" (one amplitude per mode of s)")
    q0 = check_array("q0", q0, (d,), hint=" (one amplitude per mode of s)")
    t = check_time_grid("t", t, start=0)
    return p0, q0, s, N, t, eta, rtol, atol


def _integrate(fun, jac, y0, t, rtol, atol):
    d = y0.size // 2
    if t[-1] == 0:
        Y = np.broadcast_to(y0, (t.size, 2 * d)).copy()
    else:
        sol = solve_ivp(fun, (0.0, float(t[-1])), y0, method="LSODA", t_eval=t,
                        rtol=rtol, atol=atol, jac=jac)
        if not sol.success:
            raise RuntimeError(f"solve_ivp failed: {sol.message}")
        Y = sol.y.T.copy()
        Y[t == 0] = y0          # the initial state exactly, not its interpolation
    return Y[:, :d].copy(), Y[:, d:].copy()


def _paper_jacobian(p, q, inv_tau, k):
    """Jacobian of the flat decoupled RHS ``[dp; dq]`` with respect to ``[p; q]``."""
    d = p.size
    idx = np.arange(d)
    off = inv_tau * (1.0 - 2.0 * k * p * q)
    J = np.zeros((2 * d, 2 * d))
    J[idx, idx] = -inv_tau * k * q * q
    J[idx, d + idx] = off
    J[d + idx, idx] = off
    J[d + idx, d + idx] = -inv_tau * k * p * p
    return J


def _exact_jacobian(p, q, s, N, eta):
    """Jacobian of the flat exact-mean-flow RHS ``[dp; dq]`` with respect to ``[p; q]``."""
    d = p.size
    idx = np.arange(d)
    c = (N + 1) / N
    s2, s3 = s ** 2, s ** 3
    Qs = np.dot(s2, q * q)
    Ps = np.dot(s, p * p)
    J = np.zeros((2 * d, 2 * d))
    # rank-one couplings through sum_b s_b^2 q_b^2 and sum_b s_b p_b^2
    J[:d, d:] = -(2.0 * eta / N) * np.outer(s * p, s2 * q)
    J[d:, :d] = -(2.0 * eta / N) * np.outer(s2 * q, s * p)
    J[idx, idx] = -eta * (c * s3 * q * q + s * Qs / N)
    J[d + idx, d + idx] = -eta * (c * s3 * p * p + s2 * Ps / N)
    off = eta * (s2 - 2.0 * c * s3 * p * q)
    J[idx, d + idx] += off
    J[d + idx, idx] += off
    return J


def decoupled_flow(t: ArrayLike, p0: ArrayLike, q0: ArrayLike, s: ArrayLike, N: int, *,
                   eta: float, rtol: float = 1e-11, atol: float = 1e-14) -> FlowSolution:
    r"""Integrate the paper's decoupled mode dynamics (eqs. 9-12).

    ``tau_a dp_a/dt = q_a (1 - p_a q_a s_inf_a)``, ``tau_a dq_a/dt = p_a (1 - p_a q_a
    s_inf_a)``, ``tau_a = 1/(eta s_a^2)``, ``t`` in SGD steps (batch-mean loss; paper
    eqs. 9-10).  Conserves every ``p_a^2 - q_a^2``.

    Parameters
    ----------
    t : array_like, shape (T,)
        Output times in SGD steps, non-decreasing, ``>= 0``.
    p0, q0 : array_like, shape (d,)
        Initial amplitudes at ``t = 0``.
    s : array_like, shape (d,)
        Eigenvalues of ``Sigma_x``.
    N : int
        Context length, ``>= 1``.
    eta : float
        Learning rate, ``> 0`` (keyword, required: it sets the time scale
        ``tau = 1/(eta s^2)``).
    rtol, atol : float
        ``solve_ivp`` tolerances.

    Returns
    -------
    FlowSolution
        with ``loss = paper_loss(a, s, N)``.
    """
    p0, q0, s, N, t, eta, rtol, atol = _check_flow_inputs(p0, q0, s, N, t, eta, rtol, atol)
    d = s.size
    inv_tau = eta * s ** 2
    k = s_inf(s, N)
    # flat form for speed: with y = (p, q) and y[swap] = (q, p), dy = y[swap] (R - R k y y[swap])
    swap = np.r_[d:2 * d, 0:d]
    R = np.concatenate([inv_tau, inv_tau])
    Rk = np.concatenate([inv_tau * k, inv_tau * k])

    def fun(_, y):
        ys = y[swap]
        return ys * (R - Rk * (y * ys))

    def jac(_, y):
        return _paper_jacobian(y[:d], y[d:], inv_tau, k)

    p, q = _integrate(fun, jac, np.concatenate([p0, q0]), t, rtol, atol)
    a = p * q
    return FlowSolution(t=t.copy(), p=p, q=q, a=a, loss=paper_loss(a, s, N))


def exact_mean_flow(t: ArrayLike, p0: ArrayLike, q0: ArrayLike, s: ArrayLike, N: int, *,
                    eta: float, rtol: float = 1e-11, atol: float = 1e-14) -> FlowSolution:
    r"""Integrate the exact mean gradient flow of the reduced model (book chapter 2).

    ``d(p, q)/dt = -eta grad exact_loss(p, q)``, written out in
    :func:`exact_mean_velocity`; ``t`` in SGD steps.  Conserves ``sum_a p_a^2 - q_a^2``
    but not the per-mode ``p_a^2 - q_a^2`` (unless ``S`` is isotropic and ``p, q`` are
    mode-uniform).  Converges to the minimiser given by
    :func:`icllib.theory.exact_fixed_point_pq` (where ``p_a / q_a`` is proportional to
    ``sqrt(s_a)``, even from a balanced start).

    Two features the paper's flow lacks: the coupling slows the late (small-``s``) modes,
    strongly when ``Tr S / (N s_a)`` is not small (``d = 8``, ``s`` from 4 to 0.25, ``N = 10``:
    the smallest mode reaches half its final value ~15x later, from ``p = q = 1e-3``); and
    the per-mode balances ``p_a^2 - q_a^2`` relax on a slow time scale that grows like
    ``N``, so the final approach to the minimum has a small slow tail (relative size ~1e-3
    in ``a``).

    Parameters
    ----------
    t : array_like, shape (T,)
        Output times in SGD steps, non-decreasing, ``>= 0``.
    p0, q0 : array_like, shape (d,)
        Initial amplitudes at ``t = 0``.
    s : array_like, shape (d,)
        Eigenvalues of ``Sigma_x``.
    N : int
        Context length, ``>= 1``.
    eta : float
        Learning rate, ``> 0`` (keyword, required: it sets the time scale
        ``tau = 1/(eta s^2)``).
    rtol, atol : float
        ``solve_ivp`` tolerances.

    Returns
    -------
    FlowSolution
        with ``loss = exact_loss(p, q, s, N)``.
    """
    p0, q0, s, N, t, eta, rtol, atol = _check_flow_inputs(p0, q0, s, N, t, eta, rtol, atol)
    d = s.size
    inv_tau = eta * s ** 2
    c = (N + 1) / N
    # flat form for speed (exact_mean_velocity, rearranged): with y = (p, q) and
    # y[swap] = (q, p), dy = R y[swap] - y (M (y * y)), where M holds the diagonal terms
    # c s_a / tau_a and the rank-one couplings through sum_b s_b^2 q_b^2 and sum_b s_b p_b^2
    swap = np.r_[d:2 * d, 0:d]
    R = np.concatenate([inv_tau, inv_tau])
    M = np.zeros((2 * d, 2 * d))
    M[:d, d:] = np.diag(inv_tau * c * s) + np.outer(inv_tau / (N * s), s ** 2)
    M[d:, :d] = np.diag(inv_tau * c * s) + np.outer(inv_tau / N, s)

    def fun(_, y):
        return R * y[swap] - y * (M @ (y * y))

    def jac(_, y):
        return _exact_jacobian(y[:d], y[d:], s, N, eta)

    p, q = _integrate(fun, jac, np.concatenate([p0, q0]), t, rtol, atol)
    return FlowSolution(t=t.copy(), p=p, q=q, a=p * q, loss=exact_loss(p, q, s, N))
