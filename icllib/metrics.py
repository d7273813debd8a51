r"""Matrix metrics for weight dynamics, linear and non-linear chapters (book chapter 6).

The definitions are those of book chapter 6, section 'Three metrics'.

Exact definitions used throughout the book.  Let ``sigma_1 >= sigma_2 >= ... >= 0`` be the
singular values of a matrix ``M`` (shape ``(m, n)``), and call ``sigma_i`` *numerically
zero* when ``sigma_i <= rtol * sigma_1``, with ``rtol = max(m, n) * machine epsilon`` unless
given (the cut-off of ``numpy.linalg.matrix_rank``; the epsilon of the input's own floating
type, so a float32 matrix from a network is judged at float32 precision); numerically zero
values are set to 0.

Effective rank (Roy & Vetterli 2007)
    ``p_i = sigma_i / sum_j sigma_j``, ``H = -sum_i p_i ln p_i`` (terms with ``p_i = 0``
    contribute 0), ``EffRank(M) = exp(H)``.  It lies in ``[1, rank(M)]``, equals ``r`` when
    ``M`` has ``r`` equal non-zero singular values, and is invariant under
    ``M -> c A M B`` for ``c != 0`` and orthogonal ``A, B``.  Undefined (ValueError) for the
    zero matrix.
Marginal effective rank
    The effective rank of the singular values left after removing the ``k`` leading ones,
    ``sigma_{k+1}, sigma_{k+2}, ...`` (renormalised among themselves).  ``k = 0`` is the
    effective rank.  Defined for ``0 <= k < rank(M)`` (at least one non-zero value must
    remain).
Subspace distance
    ``dist(M_t, M_T) = ||M_T (I - Pi_t)||_F / ||M_T||_F = min_A ||A M_t^(r) - M_T||_F /
    ||M_T||_F``, where ``M_t^(r)`` is ``M_t`` truncated to its top-``r`` singular
    directions and ``Pi_t = pinv(M_t^(r)) M_t^(r) = V_r V_r^T`` is the orthogonal projector
    onto its row space (``V_r``: the top-``r`` right singular vectors with non-zero
    singular value).  It is the fraction of ``M_T`` (in Frobenius norm) lying outside the
    row space of ``M_t^(r)``, in ``[0, 1]``: 0 when the row space of ``M_T`` lies in that of
    ``M_t^(r)``, 1 when they are orthogonal.  With ``rank=None`` there is no truncation;
    then it is **identically 0 whenever ``M_t`` has full column rank** (its row space is
    all of ``R^n``), so it only carries information for low-rank matrices (e.g. per-head
    circuits with ``d_head < d_model``) or with a truncation rank ``r`` below ``n``.
    A zero ``M_t`` has an empty row space (distance 1).
"""

from __future__ import annotations

import numpy as np

from .validation import check_array, check_int, check_nonnegative, check_real, check_time_grid

__all__ = ["effective_rank", "marginal_effective_rank", "subspace_distance", "first_crossing",
           "half_way_time"]


def _as_matrices(M, name):
    """``M`` as a finite float64 array of shape (..., m, n) with m, n >= 1."""
    arr = check_array(name, M)
    if arr.ndim < 2 or arr.shape[-1] == 0 or arr.shape[-2] == 0:
        raise ValueError(f"{name} must have shape (..., m, n) with m, n >= 1, "
                         f"got shape {arr.shape}")
    return arr


def _input_eps(M):
    """Machine epsilon of the precision the caller computed ``M`` in (float32 stays float32)."""
    dtype = getattr(M, "dtype", None)
    if dtype is not None and np.issubdtype(dtype, np.floating):
        return float(np.finfo(dtype).eps)
    return float(np.finfo(float).eps)


_FLOAT64_EPS = float(np.finfo(float).eps)


def _check_rtol(rtol, shape, eps=_FLOAT64_EPS):
    """The singular-value cut-off: ``max(m, n) * eps`` by default, else a number in [0, 1)."""
    if rtol is None:
        return max(shape[-2:]) * eps
    return check_real("rtol", rtol, 0, 1, exclusive_maximum=True)


def _clean_singular_values(M, rtol, name):
    """Singular values (descending) with numerically-zero ones set to 0."""
    sv = np.linalg.svd(M, compute_uv=False)
    smax = sv[..., :1]
    if np.any(smax == 0):
        raise ValueError(f"{name} must not be the zero matrix (its effective rank is "
                         "undefined)")
    return np.where(sv > rtol * smax, sv, 0.0)


def _entropy_rank(sv):
    """exp(entropy) of the normalised non-negative values along the last axis."""
    total = sv.sum(axis=-1, keepdims=True)
    p = sv / total
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(p > 0, -p * np.log(p), 0.0)
    return np.exp(terms.sum(axis=-1))


def effective_rank(M, *, rtol=None):
    r"""Effective rank ``exp(H(sigma / sum sigma))`` (Roy & Vetterli 2007; book chapter 6).

    Parameters
    ----------
    M : array_like, shape (m, n) or (..., m, n)
        A matrix or a stack of matrices (e.g. one per recorded training step).
    rtol : float, optional
        Relative cut-off below which singular values count as zero (module docstring).

    Returns
    -------
    float or ndarray, shape (...)
        In ``[1, min(m, n)]``.

    Raises
    ------
    ValueError
        For a zero matrix, non-finite entries, or fewer than two axes.
    """
    eps = _input_eps(M)
    M = _as_matrices(M, "M")
    rtol = _check_rtol(rtol, M.shape, eps)
    out = _entropy_rank(_clean_singular_values(M, rtol, "M"))
    return float(out) if out.ndim == 0 else out


def marginal_effective_rank(M, k, *, rtol=None):
    r"""Effective rank after removing the ``k`` leading singular values (book chapter 6).

    ``EffRank`` of ``(sigma_{k+1}, sigma_{k+2}, ...)``, renormalised among themselves;
    ``k = 0`` gives :func:`effective_rank`.

    Parameters
    ----------
    M : array_like, shape (m, n) or (..., m, n)
    k : int
        Number of leading singular values to remove, ``0 <= k < rank(M)`` (numerical rank,
        for every matrix of a stack).
    rtol : float, optional
        Relative cut-off for numerically-zero singular values.

    Returns
    -------
    float or ndarray, shape (...)
    """
    eps = _input_eps(M)
    M = _as_matrices(M, "M")
    k = check_int("k", k, 0)
    rtol = _check_rtol(rtol, M.shape, eps)
    sv = _clean_singular_values(M, rtol, "M")
    ranks = np.count_nonzero(sv, axis=-1)
    if np.any(k >= ranks):
        raise ValueError(f"k must satisfy 0 <= k < rank(M) = {int(ranks.min())} (numerical "
                         f"rank; at least one non-zero singular value must remain), got {k}")
    out = _entropy_rank(sv[..., k:])
    return float(out) if out.ndim == 0 else out


def subspace_distance(M_t, M_final, rank=None, *, rtol=None):
    r"""Normalised distance from ``M_final`` to the row space of ``M_t`` (book chapter 6).

    ``||M_final (I - pinv(M_t^(r)) M_t^(r))||_F / ||M_final||_F`` with ``M_t^(r)`` the
    truncation of ``M_t`` to its top-``rank`` singular directions (see the module
    docstring; without truncation this is identically 0 for a full-column-rank ``M_t``).

    Parameters
    ----------
    M_t : array_like, shape (m, n) or (T, m, n)
        The matrix at time ``t``, or a stack of them over recorded times.
    M_final : array_like, shape (m', n)
        The reference (final) matrix; must be non-zero and have the same number of columns.
    rank : int, optional
        Truncation rank ``r``, ``1 <= r <= min(m, n)``; ``None`` keeps every direction with
        a non-zero singular value.
    rtol : float, optional
        Singular values ``<= rtol * sigma_max(M_t)`` count as zero (their directions are
        never part of the row space).

    Returns
    -------
    float or ndarray, shape (T,)
        In ``[0, 1]``.
    """
    eps = _input_eps(M_t)
    Mt = _as_matrices(M_t, "M_t")
    if Mt.ndim > 3:
        raise ValueError(f"M_t must have shape (m, n) or (T, m, n), got {Mt.shape}")
    Mf = _as_matrices(M_final, "M_final")
    if Mf.ndim != 2:
        raise ValueError(f"M_final must be one (m, n) matrix, got shape {Mf.shape}")
    n = Mt.shape[-1]
    if Mf.shape[-1] != n:
        raise ValueError(f"M_final must have the same number of columns as M_t ({n}), "
                         f"got shape {Mf.shape}")
    norm_f = np.linalg.norm(Mf)
    if norm_f == 0:
        raise ValueError("M_final must not be the zero matrix (the distance is normalised "
                         "by its norm)")
    kmax = min(Mt.shape[-2:])
    if rank is not None:
        rank = check_int("rank", rank, 1)
        if rank > kmax:
            raise ValueError(f"rank must be <= min(m, n) = {kmax} for M_t of shape "
                             f"{Mt.shape[-2:]}, got {rank}")
    rtol = _check_rtol(rtol, Mt.shape, eps)
    single = Mt.ndim == 2
    stack = Mt[None] if single else Mt
    _, sv, Vh = np.linalg.svd(stack, full_matrices=False)      # Vh: (T, kmax, n)
    keep = sv > rtol * sv[:, :1]
    if rank is not None:
        keep[:, rank:] = False
    coef = np.einsum("in,tkn->tik", Mf, Vh) * keep[:, None, :]   # (T, m', kmax)
    resid = Mf[None] - np.einsum("tik,tkn->tin", coef, Vh)
    dist = np.linalg.norm(resid, axis=(-2, -1)) / norm_f
    dist = np.clip(dist, 0.0, 1.0)
    return float(dist[0]) if single else dist


# ----------------------------------------------------------------------------------------
# timing on trajectories
# ----------------------------------------------------------------------------------------

def first_crossing(t, y, level, *, below=False, interpolate=True):
    r"""First time a trajectory reaches a level, linearly interpolated between samples.

    Used for half-rise times (the time ``a_alpha(t)`` first reaches half its final value,
    :func:`icllib.theory.half_rise_time`), for the times of the loss cliffs and, without
    interpolation, for the first evaluation step at which an accuracy passes a level
    (chapter 7).

    Parameters
    ----------
    t : array_like, shape (T,)
        Increasing sample times.
    y : array_like, shape (T,) or (T, d)
        The trajectory; each column is treated separately.
    level : float or array_like, shape (d,)
        The level to reach, one per column.
    below : bool
        ``False``: first time ``y >= level`` (a rise); ``True``: first ``y <= level`` (a drop).
    interpolate : bool
        ``True``: interpolate linearly between the last sample before and the first sample
        at or beyond the level; ``False``: the time of that first sample.

    Returns
    -------
    float or ndarray, shape (d,)
        ``t[0]`` if the condition already holds at the start, ``nan`` if it never holds.
    """
    t = check_time_grid("t", t, strict=True)
    y = np.asarray(y, dtype=float)  # may hold nan: such samples never count as reached
    if y.shape[:1] != t.shape or y.ndim not in (1, 2):
        raise ValueError(f"y must have shape ({t.size},) or ({t.size}, d), got {y.shape}")
    single = y.ndim == 1
    Y = y[:, None] if single else y
    L = np.broadcast_to(check_array("level", level), Y.shape[1:])
    sign = -1.0 if below else 1.0
    reached = sign * (Y - L) >= 0                                  # (T, d)
    out = np.full(Y.shape[1], np.nan)
    for k in range(Y.shape[1]):
        hits = np.flatnonzero(reached[:, k])
        if hits.size == 0:
            continue
        i = hits[0]
        if i == 0 or not interpolate:
            out[k] = t[i]
        else:
            frac = (L[k] - Y[i - 1, k]) / (Y[i, k] - Y[i - 1, k])
            out[k] = t[i - 1] + frac * (t[i] - t[i - 1])
    return float(out[0]) if single else out


def half_way_time(t, y, *, min_change: float = 0.0) -> float:
    r"""First sample time at which a curve is half as far from its last value as it started.

    The first ``t_i`` with ``|y_i - y_T| <= |y_0 - y_T| / 2`` (book chapter 6, 'Three metrics', and
    chapter 7, 'The jump, and when a curve has fallen').  For a monotone curve that is where it has
    come half-way from its first to its last value; for a distance to the last checkpoint
    (``y_T = 0``) it is where the distance has halved.  A curve that overshoots its end value
    early does not count as half-way while it is further beyond the end value than half the
    initial gap.  No interpolation: the half-times of chapters 6 and 7 are checkpoint steps.

    Parameters
    ----------
    t : array_like, shape (T,)
        Increasing sample times, ``T >= 2``.
    y : array_like, shape (T,)
        The curve.
    min_change : float
        ``>= 0``; ``nan`` is returned when ``|y_T - y_0| <= min_change`` (no signal).

    Returns
    -------
    float
    """
    t = check_time_grid("t", t, strict=True)
    y = check_array("y", y, shape=(t.size,))
    min_change = check_nonnegative("min_change", min_change)
    if t.size < 2:
        raise ValueError(f"t and y must hold at least 2 samples, got {t.size}")
    gap = np.abs(y - y[-1])
    if not gap[0] > min_change:
        return float("nan")
    return float(first_crossing(t, gap, gap[0] / 2, below=True, interpolate=False))
