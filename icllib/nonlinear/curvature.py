r"""Curvature of the loss autocorrelation and of parameter norms (book chapter 6).

The paper tracks two more measures in its attention-only runs, the curvature of the loss
autocorrelation and the curvature of parameter norms, without giving its estimators.  The
book uses the two estimators below; both are tested on curves with known answers
(``tests/test_nonlinear_curvature.py``).  Both need samples on a uniform time grid (spacing
``delta`` steps).

Loss autocorrelation and its curvature at zero lag
    In a window of ``W`` consecutive samples ``L_i`` the loss is first detrended (the
    least-squares straight line over the window is subtracted: a falling loss would
    otherwise dominate every lag), leaving residuals ``r_i``.  The normalised
    autocorrelation at lag ``k`` (``k = 0..K``) is

    ``A(k) = [(1/(W-k)) sum_i r_i r_{i+k}] / [(1/W) sum_i r_i^2]``,  so ``A(0) = 1``.

    Near zero lag a smooth autocorrelation is a parabola, ``A(k) ~ 1 + (kappa/2) (k delta)^2``;
    ``kappa`` is fitted by least squares over ``k = 1..K`` with ``A(0) = 1`` held fixed:

    ``kappa = 2 sum_k (A(k) - 1) x_k^2 / sum_k x_k^4``,  ``x_k = k delta``.

    For a stationary smooth signal ``kappa = -E[r'^2] / E[r^2]`` (units 1/step^2): it is
    ``-omega^2`` for a sinusoid of angular frequency ``omega`` (``A(k) = cos(omega k delta)``),
    near 0 for a loss that changes slowly within the window and strongly negative
    (``-2 sum x^2 / sum x^4``) for uncorrelated noise.  ``kappa`` is negative unless
    ``A(k) > 1`` at some lag (rare); its *peak* (largest, least negative value) marks the
    window in which the residual loss varies most smoothly relative to its size, its trough
    the one closest to white noise.
Curvature of a parameter norm
    ``d^2 ||theta|| / dt^2`` from a Savitzky-Golay filter (``scipy.signal.savgol_filter``,
    a local least-squares polynomial of degree ``polyorder`` over ``W`` samples,
    differentiated twice): exact for polynomials up to that degree, and it smooths the
    step-to-step noise that a plain second difference would amplify by ``4 / delta^2``.
"""

from __future__ import annotations

import numpy as np
from scipy.signal import savgol_filter

from ..validation import check_array, check_int, check_time_grid

__all__ = ["uniform_spacing", "window_autocorrelation", "autocorrelation_curvature",
           "norm_curvature"]


def uniform_spacing(t) -> float:
    """The spacing of a uniform, increasing time grid ``t`` (at least two samples).

    Raises
    ------
    ValueError
        If ``t`` is not increasing or its spacing varies by more than ``1e-9`` relative.
    """
    t = check_time_grid("t", t, strict=True)
    if t.size < 2:
        raise ValueError(f"t must hold at least 2 times, got {t.size}")
    steps = np.diff(t)
    delta = float(steps.mean())
    if np.max(np.abs(steps - delta)) > 1e-9 * delta:
        raise ValueError("t must be uniformly spaced (the estimators use a fixed lag)")
    return delta


def _detrend(window: np.ndarray) -> np.ndarray:
    """Residuals after subtracting the least-squares line (last axis)."""
    W = window.shape[-1]
    x = np.arange(W) - (W - 1) / 2.0
    mean = window.mean(axis=-1, keepdims=True)
    slope = (window * x).sum(axis=-1, keepdims=True) / (x * x).sum()
    return window - mean - slope * x


def window_autocorrelation(loss, window: int, max_lag: int) -> np.ndarray:
    """Normalised autocorrelation ``A(k)`` of the detrended loss in every full window.

    Parameters
    ----------
    loss : array_like, shape (T,)
        Loss samples on a uniform grid.
    window : int
        Samples per window ``W``, ``4 <= W <= T``.
    max_lag : int
        Largest lag ``K``, ``1 <= K <= W - 2`` (lags in samples).

    Returns
    -------
    ndarray, shape (T - W + 1, K + 1)
        Row ``j`` is ``A(0..K)`` for the window starting at sample ``j``; ``A(0) = 1``.
        A window whose residuals vanish (a loss exactly linear there) gives ``nan``.
    """
    loss = check_array("loss", loss, shape=(None,))
    window = check_int("window", window, 4, loss.size)
    max_lag = check_int("max_lag", max_lag, 1, window - 2)
    frames = np.lib.stride_tricks.sliding_window_view(loss, window)     # (J, W)
    r = _detrend(frames)
    variance = (r * r).mean(axis=-1)
    out = np.empty((frames.shape[0], max_lag + 1))
    for k in range(max_lag + 1):
        out[:, k] = (r[:, : window - k] * r[:, k:]).mean(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        out = out / variance[:, None]
    out[variance <= 0] = np.nan
    return out


def autocorrelation_curvature(t, loss, *, window: int, max_lag: int):
    r"""Curvature ``kappa`` at zero lag of the windowed loss autocorrelation.

    Parameters
    ----------
    t : array_like, shape (T,)
        Uniform, increasing sample times (steps).
    loss : array_like, shape (T,)
    window, max_lag : int
        Window ``W`` and largest lag ``K`` in samples (see :func:`window_autocorrelation`).

    Returns
    -------
    centres : ndarray, shape (T - W + 1,)
        Time at the centre of each window.
    kappa : ndarray, shape (T - W + 1,)
        ``2 sum_k (A(k) - 1) x_k^2 / sum_k x_k^4`` over ``k = 1..K``, ``x_k = k delta``
        (module docstring); units 1/step^2.
    """
    delta = uniform_spacing(t)
    t = np.asarray(t, dtype=float)
    loss = check_array("loss", loss, shape=(t.size,))
    A = window_autocorrelation(loss, window, max_lag)
    x = np.arange(1, A.shape[1]) * delta
    kappa = 2.0 * ((A[:, 1:] - 1.0) * x**2).sum(axis=1) / (x**4).sum()
    centres = np.lib.stride_tricks.sliding_window_view(t, window).mean(axis=1)
    return centres, kappa


def norm_curvature(t, norm, *, window: int, polyorder: int = 2) -> np.ndarray:
    r"""Second derivative ``d^2 ||theta|| / dt^2`` of a parameter norm (Savitzky-Golay).

    Parameters
    ----------
    t : array_like, shape (T,)
        Uniform, increasing sample times (steps).
    norm : array_like, shape (T,)
        The norm at those times.
    window : int
        Odd number of samples in each local fit, ``polyorder < window <= T``.
    polyorder : int
        Degree of the local polynomial, ``2 <= polyorder <= 5``.

    Returns
    -------
    ndarray, shape (T,)
        The curvature at every sample (units norm/step^2); exact for polynomials of degree
        ``<= polyorder``.
    """
    delta = uniform_spacing(t)
    norm = check_array("norm", norm, shape=(np.size(t),))
    polyorder = check_int("polyorder", polyorder, 2, 5)
    window = check_int("window", window, polyorder + 1, norm.size)
    if window % 2 == 0:
        raise ValueError(f"window must be odd, got {window}")
    return savgol_filter(norm, window, polyorder, deriv=2, delta=delta, mode="interp")
