r"""Time scales and closed-form trajectories of the mode dynamics (book chapter 4).

Time units (book chapter 4, 'Time convention').  Two conventions are supported wherever a
time scale enters, through the keyword arguments ``P`` and ``convention``:

``convention="steps"`` (default)
    The loss is the *mean* over a batch of prompts and SGD takes steps of size ``eta``;
    then ``tau_a = 1 / (eta s_a^2)`` and ``t`` counts SGD steps.  This is the convention of
    ``icllib.train`` and of :mod:`icllib.flows`.
``convention="passes"``
    The paper's convention: the loss is *summed* over ``P`` training tasks; then
    ``tau_a = 1 / (eta P s_a^2)`` and ``t`` counts passes over the task set.

Paper equations: eq. 12 the decoupled mode equations with their time scale ``tau``
(:func:`tau`), eq. 13 their logistic solution from a balanced start (:func:`logistic_a`).
The plateau of an unbalanced start (:func:`plateau_length`) and the discrete-step factor
(:func:`discrete_step_factor`) are derived in book chapter 4, not taken from the paper.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from ..validation import (
    check_array,
    check_choice,
    check_int,
    check_positive,
    check_positive_array,
    check_spectrum,
    check_times,
)
from .moments import s_inf

__all__ = ["tau", "logistic_a", "unbalanced_a", "escape_time", "half_rise_time", "plateau_length",
           "discrete_step_factor"]


def _time_factor(convention, P):
    """The factor ``P`` of ``tau = 1/(eta P s^2)``: 1 for ``"steps"``, ``P`` for ``"passes"``."""
    convention = check_choice("convention", convention, ("steps", "passes"))
    if convention == "steps":
        if P is not None:
            raise ValueError("P is only used with convention='passes' (the loss summed over "
                             f"P tasks); with convention='steps' pass P=None, got P={P!r}")
        return 1
    if P is None:
        raise ValueError("P must be given (an integer >= 1) with convention='passes'")
    return check_int("P", P, 1)


def tau(s: ArrayLike, eta: float, P: int | None = None,
        convention: str = "steps") -> np.ndarray:
    r"""Time constant of each mode, ``tau_a = 1 / (eta s_a^2)`` (paper eq. 12).

    Parameters
    ----------
    s : array_like
        Eigenvalues (any shape; positive, finite).
    eta : float
        Learning rate, ``> 0``.
    P : int, optional
        Number of training tasks; only with ``convention="passes"``.
    convention : {"steps", "passes"}
        ``"steps"``: the loss is the batch *mean* and SGD steps by ``eta``; then
        ``tau = 1/(eta s^2)``, measured in SGD steps.  ``"passes"``: the paper's loss
        *summed* over ``P`` tasks; then ``tau = 1/(eta P s^2)``, measured in passes over the
        task set (book chapter 4, 'Time convention').

    Returns
    -------
    ndarray, same shape as ``s``
    """
    s = check_positive_array("s", s)
    eta = check_positive("eta", eta)
    P = _time_factor(convention, P)
    return 1.0 / (eta * P * s ** 2)


def logistic_a(t: ArrayLike, a0: ArrayLike, s: ArrayLike, N: int, eta: float, *,
               P: int | None = None, convention: str = "steps") -> np.ndarray:
    r"""Logistic solution of the decoupled dynamics from a balanced start (paper eq. 13).

    For ``p_a(0) = q_a(0)`` (so ``C_a = p_a^2 - q_a^2 = 0`` and ``a_a = p_a^2 > 0``) the mode
    equations (paper eq. 12) reduce to ``tau_a da/dt = 2 a (1 - a s_inf_a)``, solved by

    ``a(t) = a_inf a0 / (a0 + (a_inf - a0) exp(-2 t / tau_a))``,  ``a_inf = 1 / s_inf_a``

    (book chapter 4, 'The logistic solution').

    Parameters
    ----------
    t : array_like, shape (T,) or scalar
        Times (>= 0) in the units of ``convention`` (SGD steps by default).
    a0 : float or array_like, shape (d,)
        Initial product ``p_a(0) q_a(0) = p_a(0)^2``; must be ``> 0``.  ``a0 = 0`` is the
        saddle and never moves; a negative product means ``p = -q``, which decays to 0 and
        is not logistic (use :func:`unbalanced_a`, which covers every start).
    s : array_like, shape (d,)
        Eigenvalues of ``Sigma_x``.
    N : int
        Context length.
    eta : float
        Learning rate.
    P, convention
        Time convention, see :func:`tau`.

    Returns
    -------
    ndarray, shape ``t.shape + (d,)``
    """
    s = check_spectrum("s", s)
    t = check_times("t", t)
    a0 = check_array("a0", a0)
    a0 = np.broadcast_to(a0, s.shape) if a0.ndim == 0 else a0
    if a0.shape != s.shape:
        raise ValueError(f"a0 must be a scalar or have shape {s.shape} (one per mode), "
                         f"got shape {a0.shape}")
    if np.any(a0 <= 0):
        raise ValueError("a0 must be > 0 for the logistic solution: a0 = 0 is the saddle "
                         "(never leaves it) and a0 < 0 means p = -q, which decays; got "
                         f"{a0}")
    ainf = 1.0 / s_inf(s, N)
    tt = tau(s, eta, P, convention)
    E = np.exp(-2.0 * t[..., None] / tt)
    return ainf * a0 / (a0 + (ainf - a0) * E)


def _riccati_attractor(z0, zp, zm, lam, t):
    """Solution of ``dz/dt = -c (z - zp)(z - zm)`` with ``zp > zm``, ``z0 > zm``.

    With ``rho(t) = rho0 exp(-lam t)``, ``rho0 = (z0 - zp)/(z0 - zm)`` and
    ``lam = c (zp - zm)``: ``z = zp + (zp - zm) rho / (1 - rho)``
    ``= zm + (zp - zm) / (1 - rho)``; the form without cancellation is chosen.
    ``1 - rho`` is computed as ``-expm1(-lam t) + E (1 - rho0)``, a sum of non-negative terms.
    """
    E = np.exp(-lam * t)
    rho0 = (z0 - zp) / (z0 - zm)
    one_minus_rho0 = (zp - zm) / (z0 - zm)
    rho = rho0 * E
    one_minus_rho = -np.expm1(-lam * t) + E * one_minus_rho0
    near = np.abs(rho) <= 0.5
    with np.errstate(divide="ignore", invalid="ignore"):
        z_near = zp + (zp - zm) * rho / one_minus_rho
        z_far = zm + (zp - zm) / one_minus_rho
    return np.where(near, z_near, z_far)


def unbalanced_a(t: ArrayLike, a0: ArrayLike, C: ArrayLike, s: ArrayLike, N: int, eta: float,
                 *, P: int | None = None, convention: str = "steps") -> np.ndarray:
    r"""Exact solution of the decoupled dynamics of one mode from any start (book chapter 4).

    Each mode of the paper's eq. 12 conserves ``C_a = p_a^2 - q_a^2`` and its product ``a = p q``
    obeys ``tau da/dt = sqrt(C^2 + 4 a^2) (1 - a s_inf)``.  The closed form used here
    (derived in the book, chapter "timescales"): with ``x = p + q``, ``y = p - q`` one has
    ``x y = C``, ``a = (x^2 - y^2)/4`` and ``tau dx/dt = x (1 - a s_inf)``, so ``X = x^2``
    obeys the constant-coefficient Riccati equation

    ``tau dX/dt = -(s_inf/2) (X - X_+)(X - X_-)``,
    ``X_+- = (2/s_inf)(1 +- r)``, ``r = sqrt(1 + (s_inf C / 2)^2)``,

    whose solution is ``X = X_+ + (X_+ - X_-) rho/(1 - rho)`` with
    ``rho = rho0 exp(-2 r t / tau)``, ``rho0 = (X0 - X_+)/(X0 - X_-)``; then
    ``a = (X - C^2/X) / 4``.  For ``a0 < 0`` the same is done with ``Y = y^2``
    (roots ``(2/s_inf)(-1 +- r)``), which keeps full relative precision when ``p = -q``.
    ``C = 0, a0 > 0`` reproduces :func:`logistic_a`; ``C = 0, a0 < 0`` decays to 0; ``C = 0,
    a0 = 0`` stays at the saddle; every other start converges to ``1/s_inf``.  Growth from
    ``a0 ~ 0`` with ``C != 0`` starts linearly (rate ``|C|/tau``), not sigmoidally.

    Near ``p = -q`` the result is only as accurate as ``C``: compute it as
    ``(p0 - q0) * (p0 + q0)`` rather than ``p0**2 - q0**2`` there.

    Parameters
    ----------
    t : array_like, shape (T,) or scalar
        Times (>= 0) in the units of ``convention``.
    a0 : float or array_like, shape (d,)
        Initial products ``p_a(0) q_a(0)`` (any real value).
    C : float or array_like, shape (d,)
        Conserved per-mode quantities ``p_a^2 - q_a^2`` (any real value; only ``|C|``
        matters for ``a``).
    s, N, eta, P, convention
        As in :func:`logistic_a`.

    Returns
    -------
    ndarray, shape ``t.shape + (d,)``
    """
    s = check_spectrum("s", s)
    t = check_times("t", t)
    shape = s.shape
    a0 = check_array("a0", a0)
    C = check_array("C", C)
    if a0.ndim == 0:
        a0 = np.full(shape, float(a0))
    if C.ndim == 0:
        C = np.full(shape, float(C))
    if a0.shape != shape:
        raise ValueError(f"a0 must be a scalar or have shape {shape}, got {a0.shape}")
    if C.shape != shape:
        raise ValueError(f"C must be a scalar or have shape {shape}, got {C.shape}")
    k = s_inf(s, N)
    tt = tau(s, eta, P, convention)
    C2 = C * C
    b = k * np.abs(C) / 2.0
    r = np.sqrt(1.0 + b * b)
    r_minus_1 = b * b / (1.0 + r)                 # r - 1 without cancellation
    lam = 2.0 * r / tt
    # p0^2 + q0^2 = sqrt(C^2 + 4 a0^2); X0 = (p0+q0)^2, Y0 = (p0-q0)^2, X0 Y0 = C^2.
    # Evolve the larger of the two, X for a0 >= 0 and Y for a0 < 0; it is computed directly
    # (no cancellation) and stays > 0 (except at the saddle a0 = C = 0, set below).
    use_X = a0 >= 0
    Z0 = np.sqrt(C2 + 4.0 * a0 * a0) + 2.0 * np.abs(a0)
    Zp = np.where(use_X, (2.0 / k) * (1.0 + r), (2.0 / k) * r_minus_1)
    Zm = np.where(use_X, -(2.0 / k) * r_minus_1, -(2.0 / k) * (1.0 + r))
    sign = np.where(use_X, 1.0, -1.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        Z = _riccati_attractor(Z0, Zp, Zm, lam, t[..., None])
        out = sign * (Z - np.where(Z > 0, C2 / Z, 0.0)) / 4.0
    saddle = (a0 == 0) & (C == 0)
    out[..., saddle] = 0.0
    return out


def escape_time(a0: ArrayLike, s: ArrayLike, N: int, eta: float, *, P: int | None = None,
                convention: str = "steps") -> np.ndarray:
    r"""Escape time from a small balanced start ``a0`` (book chapter 4).

    ``t*_a = (tau_a / 2) ln(1 / (s_inf_a a0)) = (tau_a/2) ln(a_inf / a0)``, the leading
    small-``a0`` behaviour of :func:`half_rise_time` (their difference is
    ``-(tau/2) ln(1 - s_inf a0) = O(tau s_inf a0)``).  It is an *escape* (transition) time,
    not a convergence time, and it scales as ``1/eta`` (a circulating form
    ``1/2 eta P s^2 log(...)`` inverts the prefactor; book chapter 4, remark ``ch4-units``).

    Parameters
    ----------
    a0 : float or array_like, shape (d,)
        Initial product ``a_alpha(0)`` of a balanced start, ``0 < a0 < a_inf``.
    s, N, eta, P, convention
        As in :func:`logistic_a`.

    Returns
    -------
    ndarray, shape (d,)
        In SGD steps (or passes, with ``convention="passes"``).
    """
    s = check_spectrum("s", s)
    a0 = check_array("a0", a0)
    k = s_inf(s, N)
    if np.any(a0 <= 0) or np.any(a0 * k >= 1):
        raise ValueError(f"a0 must satisfy 0 < a0 < a_inf = 1/s_inf = {1 / k}, got {a0}")
    return 0.5 * tau(s, eta, P, convention) * np.log(1.0 / (k * a0))


def half_rise_time(a0: ArrayLike, s: ArrayLike, N: int, eta: float, *, P: int | None = None,
                   convention: str = "steps") -> np.ndarray:
    r"""Exact time at which the logistic solution reaches half its final value.

    From :func:`logistic_a`, ``a(t) = a_inf / 2`` exactly at

    ``t_half = (tau / 2) ln((a_inf - a0) / a0)``,  ``a_inf = 1/s_inf``

    (book chapter 4).  This is also the logistic's inflection point, where
    ``da/dt`` is largest.  It is negative for ``a_inf/2 < a0 < a_inf`` (the extended
    trajectory crossed ``a_inf/2`` before ``t = 0``).

    Parameters
    ----------
    a0 : float or array_like, shape (d,)
        Balanced initial product, ``0 < a0 < a_inf``.
    s, N, eta, P, convention
        As in :func:`logistic_a`.

    Returns
    -------
    ndarray, shape (d,)
    """
    s = check_spectrum("s", s)
    a0 = check_array("a0", a0)
    ainf = 1.0 / s_inf(s, N)
    if np.any(a0 <= 0) or np.any(a0 >= ainf):
        raise ValueError(f"a0 must satisfy 0 < a0 < a_inf = {ainf}, got {a0}")
    return 0.5 * tau(s, eta, P, convention) * np.log((ainf - a0) / a0)


def plateau_length(p0: ArrayLike, q0: ArrayLike, s: ArrayLike, N: int, eta: float, *,
                   P: int | None = None, convention: str = "steps") -> np.ndarray:
    r"""Plateau length of a small start ``(p0, q0)``, balanced or not (book chapter 4).

    Near the saddle (``s_inf a << 1``) the decoupled mode equations (paper eq. 12) give
    ``tau dx/dt = x`` for ``x = p + q`` and ``tau dy/dt = -y`` for ``y = p - q``, so
    ``a = (x^2 - y^2)/4`` is soon ``~ (x0^2/4) exp(2 t / tau)``: every small start escapes as
    a balanced start with ``a0_eff = (p0 + q0)^2 / 4``, after

    ``t* = (tau/2) ln(4 / (s_inf (p0 + q0)^2))``

    (book chapter 4, exercise 'The plateau of any start').  For ``p0 = q0`` this is
    :func:`escape_time` with ``a0 = p0^2``; for ``q0 = 0`` it is
    ``(tau/2) ln(4 / (s_inf |C|))``, ``C = p0^2``.  Only ``(p0 + q0)^2`` matters, not the
    product ``p0 q0``.  The leading-order form: corrections are ``O(tau s_inf (p0^2 + q0^2))``.

    Parameters
    ----------
    p0, q0 : float or array_like, shape (d,)
        Initial amplitudes, with ``p0 + q0 != 0`` (``p = -q`` decays to the saddle) and
        ``(p0 + q0)^2 / 4 < a_inf = 1/s_inf``.
    s, N, eta, P, convention
        As in :func:`logistic_a`.

    Returns
    -------
    ndarray, shape (d,)
    """
    s = check_spectrum("s", s)
    p0 = check_array("p0", p0)
    q0 = check_array("q0", q0)
    for name, value in (("p0", p0), ("q0", q0)):
        if value.ndim and value.shape != s.shape:
            raise ValueError(f"{name} must be a scalar or have shape {s.shape}, "
                             f"got {value.shape}")
    k = s_inf(s, N)
    X0 = (p0 + q0) ** 2
    if np.any(X0 == 0) or np.any(X0 * k / 4 >= 1):
        raise ValueError("p0 + q0 must be non-zero (p = -q decays to the saddle) with "
                         f"(p0 + q0)^2 / 4 < a_inf = {1 / k}; got p0 + q0 = {p0 + q0}")
    return 0.5 * tau(s, eta, P, convention) * np.log(4.0 / (k * X0))


def discrete_step_factor(s: ArrayLike, eta: float) -> np.ndarray:
    r"""SGD steps per step of flow time on a plateau: ``eta s^2 / ln(1 + eta s^2)`` (chapter 4).

    Near the saddle one gradient step multiplies ``p + q`` by ``1 + eta s^2``, the flow over
    one unit of time by ``exp(eta s^2)``; so discrete steps need this factor (``> 1``) more
    time to escape, ``1 + eta s^2 / 2`` to first order (book chapter 4, 'Staged learning').
    The time convention is SGD steps.

    Parameters
    ----------
    s : array_like
        Eigenvalues (positive).
    eta : float
        Step size, ``> 0``.

    Returns
    -------
    ndarray, same shape as ``s``
    """
    s = check_positive_array("s", s)
    eta = check_positive("eta", eta)
    x = eta * s ** 2
    return x / np.log1p(x)
