r"""The linear bridge: what the linear theory predicts the chapter-6 metrics do (book chapter 6).

In the linear model learned from a small start the matrix ``p_y q_x`` (in the eigenbasis of
the input covariance) is ``diag(a(t))``, and the modes rise one after another (book chapters
2-4).  Two of chapter 6's measurements then have exact readings ('A linear bridge'):

Dip of the marginal effective rank
    The marginal effective rank with ``k`` leading values removed,
    ``EffRank_k(diag(a))`` (:func:`spectrum_effective_rank`), is the effective rank of the
    modes that are not among the ``k`` largest.  From a balanced start all ``d - k`` of them
    are equal (value ``d - k``).  When the ``(k + 1)``-th mode rises it dominates the rest,
    and the value falls towards 1; when the ``(k + 2)``-th and later modes rise it climbs
    again.  With well separated escapes the minimum therefore lies between the half-rise
    times of the ``(k + 1)``-th and ``(k + 2)``-th modes to rise (:func:`dip_bracket`).  A dip
    is the signature of *sequential* learning; modes that rise together give none.
Early settling of a subspace (Wedin's theorem)
    Let ``M(t) = D(t) + E`` with ``D(t)`` diagonal, its values ordered as at the end, and
    ``E`` what the initialisation left (fixed, small).  If the gap between the ``r``-th and
    ``(r + 1)``-th largest ``|D_ii(t)|`` exceeds ``||E||_2``, the top-``r`` right singular
    subspace of ``M(t)`` makes angles with ``span(e_1..e_r)`` whose largest sine is at most

    ``sin theta <= ||E||_2 / (gap_r(t) - ||E||_2)``                   (:func:`wedin_bound`)

    (Wedin 1972, with ``sigma_r(M) >= sigma_r(D) - ||E||_2`` by Weyl).  The subspace is
    therefore fixed once ``gap_r`` is a few times ``||E||_2``, that is, as soon as the
    ``r`` leading modes have cleared the noise, while their *magnitude* still has to grow to
    its final value (:func:`settle_time`).  For a logistic rise from ``a_0`` to ``a^*`` with
    time constant ``tau / 2`` the settle comes about ``(tau/2) ln(a^* / (c ||E||))`` steps
    before the half-rise.
"""

from __future__ import annotations

import numpy as np

from .metrics import first_crossing
from .validation import check_array, check_int, check_real, check_time_grid

__all__ = ["spectrum_effective_rank", "half_rise_times", "dip_bracket", "wedin_bound",
           "settle_time", "top_subspace_sine"]


def spectrum_effective_rank(values, k: int = 0) -> np.ndarray:
    """Effective rank of ``diag(values)`` with the ``k`` largest ``|values|`` removed.

    Equal to :func:`icllib.metrics.marginal_effective_rank` of ``diag(values)`` (book
    chapter 6, eq. ``ch6-effrank``), computed from the values directly.

    Parameters
    ----------
    values : array_like, shape (..., d)
        Diagonal entries (e.g. the mode amplitudes ``a(t)``), not all zero after removal.
    k : int
        ``0 <= k < d``.

    Returns
    -------
    ndarray, shape (...)
    """
    v = np.abs(check_array("values", values))
    if v.ndim < 1 or v.shape[-1] < 1:
        raise ValueError(f"values must have shape (..., d) with d >= 1, got {v.shape}")
    k = check_int("k", k, 0, v.shape[-1] - 1)
    rest = -np.sort(-v, axis=-1)[..., k:]
    total = rest.sum(axis=-1, keepdims=True)
    if np.any(total <= 0):
        raise ValueError("values must keep a non-zero entry after removing the k largest")
    p = rest / total
    with np.errstate(divide="ignore", invalid="ignore"):
        h = -np.where(p > 0, p * np.log(p), 0.0).sum(axis=-1)
    return np.exp(h)


def half_rise_times(t, a) -> np.ndarray:
    """First time each mode covers half of its rise, ``|a(t) - a(0)| >= |a(T) - a(0)| / 2``.

    Parameters
    ----------
    t : array_like, shape (T,)
        Increasing times.
    a : array_like, shape (T, d)
        Mode amplitudes at those times.

    Returns
    -------
    ndarray, shape (d,)
        Linear interpolation between samples; ``nan`` for a mode that did not move.
    """
    t = check_time_grid("t", t, strict=True)
    a = check_array("a", a, shape=(t.size, None))
    rise = np.abs(a - a[0])
    half = rise[-1] / 2
    moved = half > 0
    out = np.full(a.shape[1], np.nan)
    if moved.any():
        out[moved] = first_crossing(t, rise[:, moved], half[moved])
    return out


def dip_bracket(t, a, k: int = 1) -> tuple[float, float]:
    """Where the linear theory puts the minimum of ``EffRank_k(diag(a(t)))``.

    Between the half-rise times (:func:`half_rise_times`) of the ``(k + 1)``-th and the
    ``(k + 2)``-th mode to rise (module docstring), in the order the modes rise.

    Parameters
    ----------
    t : array_like, shape (T,)
    a : array_like, shape (T, d)
        A sequential rise of ``d >= k + 2`` modes.
    k : int
        Leading values removed, ``k >= 0``.

    Returns
    -------
    (start, end) : floats
    """
    a = np.asarray(a, dtype=float)
    if a.ndim != 2:
        raise ValueError(f"a must have shape (T, d), got {np.shape(a)}")
    k = check_int("k", k, 0, a.shape[1] - 2)
    order = np.sort(half_rise_times(t, a))
    return float(order[k]), float(order[k + 1])


def wedin_bound(gap, noise) -> np.ndarray:
    """Wedin's bound on the largest principal-angle sine of a perturbed top-``r`` subspace.

    ``noise / (gap - noise)`` where ``gap > noise`` (capped at 1), else 1 (no bound).

    Parameters
    ----------
    gap : array_like
        ``|D|_(r) - |D|_(r+1)`` of the unperturbed diagonal (module docstring).
    noise : float
        ``||E||_2 >= 0``.
    """
    noise = check_real("noise", noise, 0.0)
    g = np.asarray(gap, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        b = np.where(g > noise, noise / (g - noise), 1.0)
    return np.minimum(b, 1.0)


def settle_time(t, values, r: int, noise: float, level: float = 0.5) -> float:
    """First time from which Wedin's bound keeps the top-``r`` subspace within ``level``.

    With ``gap_r(t)`` the difference between the ``r``-th and ``(r + 1)``-th largest
    ``|values(t)|``, it is the first ``t`` after which ``wedin_bound(gap_r, noise) <= level``
    holds at every later sample, i.e. ``gap_r >= noise (1 + 1/level)``; and the ``r`` largest
    modes must by then be the final ``r`` largest.  ``nan`` if that never happens.

    Parameters
    ----------
    t : array_like, shape (T,)
    values : array_like, shape (T, d)
        The diagonal ``D(t)`` (e.g. ``a(t)``, or ``s * a(t)``), ``d > r``.
    r : int
        Subspace dimension, ``1 <= r < d``.
    noise : float
        ``||E||_2``.
    level : float
        Bound on the sine, in ``(0, 1)``.
    """
    t = check_time_grid("t", t, strict=True)
    v = np.abs(check_array("values", values, shape=(t.size, None)))
    r = check_int("r", r, 1, v.shape[1] - 1)
    level = check_real("level", level, 0.0, 1.0, exclusive_minimum=True,
                       exclusive_maximum=True)
    srt = -np.sort(-v, axis=1)
    gap = srt[:, r - 1] - srt[:, r]
    top_final = set(np.argsort(-v[-1])[:r].tolist())
    same = np.array([set(np.argsort(-row)[:r].tolist()) == top_final for row in v])
    ok = (wedin_bound(gap, noise) <= level) & same
    if not ok[-1]:
        return float("nan")
    bad = np.flatnonzero(~ok)
    return float(t[0] if bad.size == 0 else t[bad[-1] + 1])


def top_subspace_sine(M, reference, r: int) -> np.ndarray:
    """Largest principal-angle sine between the top-``r`` right singular subspace of ``M``
    and the span of the orthonormal columns ``reference``.

    Parameters
    ----------
    M : array_like, shape (..., m, n)
    reference : array_like, shape (n, r)
        Orthonormal columns (e.g. the first ``r`` unit vectors).
    r : int
        ``1 <= r <= min(m, n)``.

    Returns
    -------
    ndarray, shape (...)
        ``||(I - V_r V_r^T) reference||_2``, in ``[0, 1]``.
    """
    M = check_array("M", M)
    if M.ndim < 2:
        raise ValueError(f"M must have shape (..., m, n), got {M.shape}")
    r = check_int("r", r, 1, min(M.shape[-2:]))
    R = check_array("reference", reference, shape=(M.shape[-1], r))
    _, _, vt = np.linalg.svd(M)
    V = np.swapaxes(vt[..., :r, :], -1, -2)                      # (..., n, r)
    resid = R - V @ (np.swapaxes(V, -1, -2) @ R)
    return np.linalg.norm(resid, ord=2, axis=(-2, -1))
