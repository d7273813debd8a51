r"""Closed-form theory of the reduced linear transformer (book chapters 2-5).

Everything here is a pure numpy function of the spectrum ``s`` of the input covariance
``Sigma_x = U diag(s) U^T``, the context length ``N`` and the learning rate ``eta``.
Mode amplitudes ``p`` (of ``p2 = U diag(p) U^T``) and ``q`` (of ``q1 = U diag(q) U^T``) and
their products ``a = p * q`` are arrays whose **last axis is the mode axis** (length ``d``);
any leading axes (typically time) are carried through, so a whole trajectory is evaluated
in one call.

Time units (book chapter 4).  Two conventions are supported wherever a time scale
enters, through the keyword arguments ``P`` and ``convention``:

``convention="steps"`` (default)
    The loss is the *mean* over a batch of prompts and SGD takes steps of size ``eta``;
    then ``tau_a = 1 / (eta s_a^2)`` and ``t`` counts SGD steps.  This is the convention of
    ``icllib.train`` and of :mod:`icllib.flows`.
``convention="passes"``
    The paper's convention: the loss is *summed* over ``P`` training tasks; then
    ``tau_a = 1 / (eta P s_a^2)`` and ``t`` counts passes over the task set.

Paper equations: eq. 9-10 the decoupled mode dynamics, eq. 11 the fixed-point hyperbola
``p q = 1/s_inf``, eq. 12 the logistic solution, eq. 13 the time scale, eq. 14 the loss
(as corrected in book chapter 5, 'The loss as a function of the modes').
"""

from __future__ import annotations

import numbers

import numpy as np
from scipy.optimize import brentq

from .data import _check_s

__all__ = [
    "s_inf",
    "tau",
    "logistic_a",
    "unbalanced_a",
    "escape_time",
    "half_rise_time",
    "paper_fixed_point",
    "exact_fixed_point",
    "exact_fixed_point_pq",
    "saddle_eigenvalues",
    "prediction_at_convergence",
    "paper_loss",
    "paper_loss_grad",
    "exact_loss",
    "exact_loss_grad",
    "converged_loss",
    "exact_converged_loss",
    "initial_loss",
    "conserved_quantity",
    "conserved_per_mode",
    "sgd_conservation_drift",
]


# ----------------------------------------------------------------------------------------
# input validation (private; shared with icllib.flows)
# ----------------------------------------------------------------------------------------

def _check_N(N, name="N"):
    """Return ``N`` as a Python int >= 1, or raise ValueError."""
    if isinstance(N, (bool, np.bool_)):
        raise ValueError(f"{name} must be an integer >= 1, got {N!r}")
    if isinstance(N, numbers.Integral):
        n = int(N)
    elif isinstance(N, numbers.Real) and np.isfinite(N) and float(N).is_integer():
        n = int(N)
    else:
        raise ValueError(f"{name} must be an integer >= 1, got {N!r}")
    if n < 1:
        raise ValueError(f"{name} must be an integer >= 1, got {N!r}")
    return n


def _check_positive_scalar(x, name):
    """Return ``x`` as a float > 0 and finite, or raise ValueError."""
    if isinstance(x, (bool, np.bool_)) or not isinstance(x, numbers.Real):
        raise ValueError(f"{name} must be a finite number > 0, got {x!r}")
    x = float(x)
    if not (np.isfinite(x) and x > 0):
        raise ValueError(f"{name} must be a finite number > 0, got {x!r}")
    return x


# One spectrum check for the whole library (the same validation as DataConfig's ``s``).
_check_spectrum = _check_s


def _check_positive_array(s, name="s"):
    """Return ``s`` as a float array (any shape) of positive finite values."""
    try:
        arr = np.asarray(s, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must hold positive finite numbers, got {s!r}") from None
    if arr.size == 0 or not np.all(np.isfinite(arr)) or np.any(arr <= 0):
        raise ValueError(f"{name} must hold positive finite numbers, got {arr}")
    return arr


def _check_finite_array(x, name):
    try:
        arr = np.asarray(x, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be an array of finite numbers, got {x!r}") from None
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must contain only finite values")
    return arr


def _check_modes(x, d, name):
    """A finite array whose last axis has length ``d`` (the mode axis)."""
    arr = _check_finite_array(x, name)
    if arr.ndim == 0 or arr.shape[-1] != d:
        raise ValueError(f"{name} must have the mode axis last with length d={d} "
                         f"(the length of s), got shape {arr.shape}")
    return arr


def _check_times(t, name="t"):
    arr = _check_finite_array(t, name)
    if np.any(arr < 0):
        raise ValueError(f"{name} must be >= 0 (time since the start), got min {arr.min()}")
    return arr


def _check_convention(convention, P):
    if convention == "steps":
        if P is not None:
            raise ValueError("P is only used with convention='passes' (the loss summed over "
                             f"P tasks); with convention='steps' pass P=None, got P={P!r}")
        return 1
    if convention == "passes":
        if P is None:
            raise ValueError("P must be given (an integer >= 1) with convention='passes'")
        return _check_N(P, "P")
    raise ValueError(f"convention must be 'steps' or 'passes', got {convention!r}")


# ----------------------------------------------------------------------------------------
# moments and time scales (book chapters 2 and 4)
# ----------------------------------------------------------------------------------------

def s_inf(s, N):
    r"""Per-mode effective variance ``s_inf_a = ((N+1) s_a + Tr S) / N``.

    The eigenvalues of ``E[Sigma_hat^2] S^{-1} = ((N+1)/N) S + (Tr S / N) I``
    (book chapter 2, 'The moment identity'; the paper's ``s_inf`` entering eqs. 9-11).  It
    tends to ``s_a``
    as ``N -> infinity``.

    Parameters
    ----------
    s : array_like, shape (d,)
        Eigenvalues of ``Sigma_x`` (positive, finite).
    N : int
        Context length, ``N >= 1``.

    Returns
    -------
    ndarray, shape (d,)
    """
    s = _check_spectrum(s)
    N = _check_N(N)
    return ((N + 1) * s + s.sum()) / N


def tau(s, eta, P=None, convention="steps"):
    r"""Time constant of each mode, ``tau_a = 1 / (eta s_a^2)`` (paper eq. 13).

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
    s = _check_positive_array(s)
    eta = _check_positive_scalar(eta, "eta")
    P = _check_convention(convention, P)
    return 1.0 / (eta * P * s ** 2)


# ----------------------------------------------------------------------------------------
# closed-form trajectories (book chapter 4)
# ----------------------------------------------------------------------------------------

def logistic_a(t, a0, s, N, eta, *, P=None, convention="steps"):
    r"""Logistic solution of the decoupled dynamics from a balanced start (paper eq. 12).

    For ``p_a(0) = q_a(0)`` (so ``C_a = p_a^2 - q_a^2 = 0`` and ``a_a = p_a^2 > 0``) eqs. 9-10
    reduce to ``tau_a da/dt = 2 a (1 - a s_inf_a)``, solved by

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
    s = _check_spectrum(s)
    t = _check_times(t)
    a0 = _check_finite_array(a0, "a0")
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


def unbalanced_a(t, a0, C, s, N, eta, *, P=None, convention="steps"):
    r"""Exact solution of the decoupled dynamics of one mode from any start (book chapter 4).

    Each mode of eqs. 9-10 conserves ``C_a = p_a^2 - q_a^2`` and its product ``a = p q``
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
    s = _check_spectrum(s)
    t = _check_times(t)
    shape = s.shape
    a0 = _check_finite_array(a0, "a0")
    C = _check_finite_array(C, "C")
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


def escape_time(eps, s, N, eta, *, P=None, convention="steps"):
    r"""Escape time from a small balanced start ``a0 = eps`` (book chapter 4).

    ``t*_a = (tau_a / 2) ln(1 / (s_inf_a eps)) = (tau_a/2) ln(a_inf / eps)``, the leading
    small-``eps`` behaviour of :func:`half_rise_time` (their difference is
    ``-(tau/2) ln(1 - s_inf eps) = O(tau s_inf eps)``).  It is an *escape* (transition) time,
    not a convergence time, and it scales as ``1/eta`` (a circulating form
    ``1/2 eta P s^2 log(...)`` inverts the prefactor; book chapter 4, remark ``ch4-units``).

    Parameters
    ----------
    eps : float or array_like, shape (d,)
        Initial product, ``0 < eps < a_inf``.
    s, N, eta, P, convention
        As in :func:`logistic_a`.

    Returns
    -------
    ndarray, shape (d,)
        In SGD steps (or passes, with ``convention="passes"``).
    """
    s = _check_spectrum(s)
    eps = _check_finite_array(eps, "eps")
    k = s_inf(s, N)
    if np.any(eps <= 0) or np.any(eps * k >= 1):
        raise ValueError(f"eps must satisfy 0 < eps < a_inf = 1/s_inf = {1 / k}, got {eps}")
    return 0.5 * tau(s, eta, P, convention) * np.log(1.0 / (k * eps))


def half_rise_time(a0, s, N, eta, *, P=None, convention="steps"):
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
    s = _check_spectrum(s)
    a0 = _check_finite_array(a0, "a0")
    ainf = 1.0 / s_inf(s, N)
    if np.any(a0 <= 0) or np.any(a0 >= ainf):
        raise ValueError(f"a0 must satisfy 0 < a0 < a_inf = {ainf}, got {a0}")
    return 0.5 * tau(s, eta, P, convention) * np.log((ainf - a0) / a0)


# ----------------------------------------------------------------------------------------
# fixed points (book chapter 3)
# ----------------------------------------------------------------------------------------

def paper_fixed_point(s, N):
    r"""The paper's fixed-point products ``a_a = p_a q_a = 1 / s_inf_a`` (paper eq. 11).

    Matrix form ``p2 q1 = s_inf(S)^{-1}``; a hyperbola in each ``(p_a, q_a)`` plane.

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


def exact_fixed_point(s, N):
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

    Returns
    -------
    ndarray, shape (d,)
    """
    s = _check_spectrum(s)
    N = _check_N(N)
    active, sum_sqrt, k = _exact_active_set(s, N)
    a = (N / ((N + 1) * s)) * (1.0 - sum_sqrt / ((N + 1 + k) * np.sqrt(s)))
    return np.where(active, a, 0.0)


def exact_fixed_point_pq(s, N, C=0.0):
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
    N : int
    C : float
        The conserved ``sum_a p_a^2 - q_a^2`` of the start.

    Returns
    -------
    p, q : ndarray, shape (d,)
    """
    s = _check_spectrum(s)
    C = float(_check_finite_array(C, "C"))
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


def saddle_eigenvalues(s, eta, *, P=None, convention="steps"):
    r"""Eigenvalues of the linearised flow at ``(p, q) = (0, 0)`` (book chapter 3).

    Each mode's Jacobian is ``[[0, 1], [1, 0]] / tau_a``, with eigenvalue ``+1/tau_a``
    along ``p = q`` (unstable) and ``-1/tau_a`` along ``p = -q`` (stable).  The same holds
    for the exact mean flow (its coupling terms are cubic).

    Returns
    -------
    ndarray, shape ``s.shape + (2,)``
        ``[..., 0] = +1/tau`` (unstable, eigenvector ``(1, 1)/sqrt 2`` in ``(p_a, q_a)``),
        ``[..., 1] = -1/tau`` (stable, eigenvector ``(1, -1)/sqrt 2``).
    """
    inv = 1.0 / tau(s, eta, P, convention)
    return np.stack([inv, -inv], axis=-1)


def prediction_at_convergence(W, Sigma_hat, xq, Sigma_x, N):
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
    N = _check_N(N)
    Sx = _check_finite_array(Sigma_x, "Sigma_x")
    if Sx.ndim != 2 or Sx.shape[0] != Sx.shape[1]:
        raise ValueError(f"Sigma_x must be a square (d, d) matrix, got shape {Sx.shape}")
    d = Sx.shape[0]
    W = _check_finite_array(W, "W")
    Sh = _check_finite_array(Sigma_hat, "Sigma_hat")
    xq = _check_finite_array(xq, "xq")
    if W.ndim < 2 or W.shape[-2:] != (d, d):
        raise ValueError(f"W must have shape (..., {d}, {d}), got {W.shape}")
    if Sh.ndim < 2 or Sh.shape[-2:] != (d, d):
        raise ValueError(f"Sigma_hat must have shape (..., {d}, {d}), got {Sh.shape}")
    if xq.ndim < 1 or xq.shape[-1] != d:
        raise ValueError(f"xq must have shape (..., {d}), got {xq.shape}")
    if not np.allclose(Sx, Sx.T, rtol=1e-10, atol=1e-12 * np.abs(Sx).max()):
        raise ValueError("Sigma_x must be symmetric")
    precond = ((N + 1) / N) * Sx + (np.trace(Sx) / N) * np.eye(d)
    v = np.linalg.solve(precond, xq[..., None])[..., 0]
    return np.einsum("...ij,...jk,...k->...i", W, Sh, v)


# ----------------------------------------------------------------------------------------
# losses (book chapters 2 and 5)
# ----------------------------------------------------------------------------------------

def paper_loss(a, s, N):
    r"""The paper's mean loss as a function of the mode products (eq. 14, corrected).

    ``L = 1/2 sum_a s_a (1 - 2 s_a a_a + s_a s_inf_a a_a^2)`` (book chapter 5; the
    circulating form with ``s_a a_inf a_a^2`` is dimensionally wrong).  Its gradient flow with
    ``tau = 1/(eta s^2)`` is the paper's eqs. 9-10.

    Parameters
    ----------
    a : array_like, shape (..., d)
        Products ``p_a q_a``; leading axes (e.g. time) are kept.
    s : array_like, shape (d,)
    N : int

    Returns
    -------
    ndarray, shape (...)
    """
    s = _check_spectrum(s)
    a = _check_modes(a, s.size, "a")
    k = s_inf(s, N)
    return 0.5 * np.sum(s * (1.0 - 2.0 * s * a + s * k * a * a), axis=-1)


def paper_loss_grad(p, q, s, N):
    r"""Gradient ``(dL/dp, dL/dq)`` of :func:`paper_loss` at ``a = p q``.

    ``dL/dp_a = -s_a^2 q_a (1 - s_inf_a a_a)``, ``dL/dq_a = -s_a^2 p_a (1 - s_inf_a a_a)``.

    Returns
    -------
    g_p, g_q : ndarray, shape (..., d)
    """
    s = _check_spectrum(s)
    p = _check_modes(p, s.size, "p")
    q = _check_modes(q, s.size, "q")
    f = -(s ** 2) * (1.0 - s_inf(s, N) * p * q)
    return f * q, f * p


def exact_loss(p, q, s, N):
    r"""Exact task- and data-averaged loss of the reduced model (book chapter 2).

    ``l = 1/2 sum_a [s_a - 2 s_a^2 a_a + ((N+1)/N) s_a^3 a_a^2]``
    ``  + (1/(2N)) (sum_a s_a p_a^2)(sum_b s_b^2 q_b^2)``,  ``a_a = p_a q_a``,

    for ``p2 = U diag(p) U^T``, ``q1 = U diag(q) U^T``, ``p1 = q2 = 0``, tasks with
    ``E[lambda^2] = 1`` and Gaussian data.  It equals :func:`paper_loss` when ``S`` is
    isotropic and ``p, q`` are mode-uniform, or when ``p`` is mode-uniform (``p2 ~ I``).

    Parameters
    ----------
    p, q : array_like, shape (..., d)
    s : array_like, shape (d,)
    N : int

    Returns
    -------
    ndarray, shape (...)
    """
    s = _check_spectrum(s)
    N = _check_N(N)
    p = _check_modes(p, s.size, "p")
    q = _check_modes(q, s.size, "q")
    a = p * q
    diag = 0.5 * np.sum(s - 2.0 * s ** 2 * a + ((N + 1) / N) * s ** 3 * a * a, axis=-1)
    cross = np.sum(s * p * p, axis=-1) * np.sum(s ** 2 * q * q, axis=-1) / (2.0 * N)
    return diag + cross


def exact_loss_grad(p, q, s, N):
    r"""Gradient ``(dl/dp, dl/dq)`` of :func:`exact_loss` (book chapter 2).

    ``dl/dp_a = -s_a^2 q_a + ((N+1)/N) s_a^3 a_a q_a + (1/N) s_a p_a sum_b s_b^2 q_b^2``,
    ``dl/dq_a = -s_a^2 p_a + ((N+1)/N) s_a^3 a_a p_a + (1/N) s_a^2 q_a sum_b s_b p_b^2``.

    Returns
    -------
    g_p, g_q : ndarray, shape (..., d)
    """
    s = _check_spectrum(s)
    N = _check_N(N)
    p = _check_modes(p, s.size, "p")
    q = _check_modes(q, s.size, "q")
    a = p * q
    Qs = np.sum(s ** 2 * q * q, axis=-1, keepdims=True)
    Ps = np.sum(s * p * p, axis=-1, keepdims=True)
    common = -(s ** 2) + ((N + 1) / N) * s ** 3 * a
    return common * q + s * p * Qs / N, common * p + s ** 2 * q * Ps / N


def converged_loss(s, N):
    r"""The paper's loss at its fixed point, ``L_inf = 1/2 sum_a s_a (1 - s_a / s_inf_a)``.

    :func:`paper_loss` at ``a = 1/s_inf`` (book chapter 5, 'The floor').  Positive for finite
    ``N`` (the context estimate ``Sigma_hat`` is noisy), ``-> 0`` as ``N -> infinity``.
    """
    s = _check_spectrum(s)
    return 0.5 * float(np.sum(s * (1.0 - s / s_inf(s, N))))


def exact_converged_loss(s, N):
    r"""Minimum of :func:`exact_loss` (book chapter 5, 'The floor').

    At the minimiser (:func:`exact_fixed_point`) the stationarity conditions reduce the
    loss to ``l* = 1/2 sum_a s_a (1 - s_a a*_a)``; with every mode active,

    ``l* = 1/2 [Tr S / (N+1) + N (sum_a sqrt(s_a))^2 / ((N+1)(N+1+d))]``,

    so ``N l* -> (Tr S + (sum_a sqrt(s_a))^2) / 2`` as ``N -> infinity``, whereas the
    paper's :func:`converged_loss` has ``N L_inf -> (d+1) Tr S / 2``.  By Cauchy-Schwarz
    ``(sum sqrt(s))^2 <= d Tr S``: the two agree for isotropic ``S`` and otherwise the
    paper's value is the larger at large ``N`` (by 10 % for ``s = (4, 2, 1, 0.5)``).
    Computed here as ``1/2 sum_a [s_a - 2 s_a^2 a*_a + ((N+1)/N) s_a^3 a*_a^2]
    + (1/(2N)) (sum_a s_a^{3/2} a*_a)^2``, valid for any active set.
    """
    s = _check_spectrum(s)
    N = _check_N(N)
    a = exact_fixed_point(s, N)
    diag = 0.5 * np.sum(s - 2.0 * s ** 2 * a + ((N + 1) / N) * s ** 3 * a * a)
    cross = np.sum(s ** 1.5 * a) ** 2 / (2.0 * N)
    return float(diag + cross)


def initial_loss(s):
    r"""Loss at ``p = q = 0`` (prediction 0): ``Tr S / 2`` (book chapter 5)."""
    s = _check_spectrum(s)
    return 0.5 * float(np.sum(s))


# ----------------------------------------------------------------------------------------
# conservation (book chapter 3)
# ----------------------------------------------------------------------------------------

def conserved_quantity(p, q, axis=-1):
    r"""``C = sum p^2 - sum q^2``, conserved by the gradient flow (book chapter 3).

    On the reduced manifold ``C = ||p2||_F^2 - ||q1||_F^2 = sum_a p_a^2 - q_a^2``; for the
    full model pass the blocks ``W^P_y = [p1 p2]`` and ``W^Q_{:,x} = [q1; q2]`` (any shape)
    with ``axis`` covering their matrix axes, e.g. ``axis=(-2, -1)``.  Conserved by the
    exact mean flow and by the paper's flow; under SGD it drifts by
    :func:`sgd_conservation_drift` per step.

    Parameters
    ----------
    p, q : array_like
        Same shape.
    axis : int or tuple of int
        Axes summed over (default: the last, the mode axis).
    """
    p = _check_finite_array(p, "p")
    q = _check_finite_array(q, "q")
    if p.shape != q.shape:
        raise ValueError(f"p and q must have the same shape, got {p.shape} and {q.shape}")
    return np.sum(p * p, axis=axis) - np.sum(q * q, axis=axis)


def conserved_per_mode(p, q):
    r"""``C_a = p_a^2 - q_a^2`` per mode, conserved by the paper's flow (eqs. 9-10) only.

    The exact mean flow changes each ``C_a`` at rate
    ``(2 eta / N) (s_a^2 q_a^2 sum_b s_b p_b^2 - s_a p_a^2 sum_b s_b^2 q_b^2)``, which sums
    to zero over modes (book chapter 3, 'The conservation law and where it comes from').
    """
    p = _check_finite_array(p, "p")
    q = _check_finite_array(q, "q")
    if p.shape != q.shape:
        raise ValueError(f"p and q must have the same shape, got {p.shape} and {q.shape}")
    return p * p - q * q


def sgd_conservation_drift(grad_p, grad_q, eta, axis=None):
    r"""Exact change of ``C`` in one SGD step: ``eta^2 (||g_p||^2 - ||g_q||^2)``.

    For any minibatch loss invariant under ``p -> c p, q -> q/c`` one has
    ``<g_p, p> = <g_q, q>``, so after ``p -> p - eta g_p``, ``q -> q - eta g_q`` the
    first-order terms cancel and ``C`` changes by exactly this amount (book
    chapter 3).  ``g_p`` is the gradient with respect to the whole block ``W^P_y`` (or ``p``),
    ``g_q`` with respect to ``W^Q_{:,x}`` (or ``q``).

    Parameters
    ----------
    grad_p, grad_q : array_like
        Gradients (any shapes).
    eta : float
        Step size, ``> 0``.
    axis : None, int or tuple of int
        Axes summed over for each norm (default: all axes, giving a scalar).
    """
    eta = _check_positive_scalar(eta, "eta")
    gp = _check_finite_array(grad_p, "grad_p")
    gq = _check_finite_array(grad_q, "grad_q")
    return eta ** 2 * (np.sum(gp * gp, axis=axis) - np.sum(gq * gq, axis=axis))
