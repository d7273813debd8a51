"""Starting points of training: balanced on the reduced manifold, or small and random.

A balanced start (book chapter 4, 'The logistic solution') puts ``p_alpha(0) = q_alpha(0)`` on
the null manifold ``p1 = q2 = 0`` where the reduced theory applies; a random start leaves it
(book chapter 2, 'The null parameters').
"""

from __future__ import annotations

import numpy as np

from ..model import Params
from ..validation import check_generator, check_int, check_nonnegative, check_orthogonal

__all__ = ["balanced_init", "random_init"]


def _check_scale(scale, d, name="scale"):
    """One finite amplitude, or ``d`` of them, as a (d,) array."""
    message = f"{name} must be a finite number or {d} finite numbers, got {scale!r}"
    try:
        raw = np.asarray(scale)
    except ValueError:          # a ragged list: numbers, but not d of them
        raise ValueError(message) from None
    if raw.dtype.kind not in "iuf":     # strings, None, bools, objects: not numbers
        raise TypeError(message)
    a = raw.astype(float)
    if a.ndim == 0:
        a = np.full(d, float(a))
    if a.shape != (d,) or not np.all(np.isfinite(a)):
        raise ValueError(message)
    return a


def balanced_init(d, scale, U=None):
    """Balanced start on the reduced manifold: ``p2 = q1 = U diag(scale) U^T``.

    Every other block of ``W^P`` and ``W^Q`` (``p1``, ``q2`` and the unreachable blocks) is
    exactly zero, so the start lies on the null manifold ``p1 = q2 = 0`` where the reduced
    theory applies, with ``p_alpha(0) = q_alpha(0) = scale`` (``C_alpha = 0``) and
    ``a_alpha(0) = scale^2`` (a balanced start, book chapter 4, 'The logistic solution').

    Parameters
    ----------
    d : int
    scale : float or array_like, shape (d,)
        Mode amplitude(s) ``p_alpha(0) = q_alpha(0)``.
    U : array_like, shape (d, d), optional
        Eigenbasis (matters only for a per-mode ``scale``).

    Returns
    -------
    Params
    """
    d = check_int("d", d, 1)
    sc = _check_scale(scale, d)
    U = check_orthogonal("U", U, d)
    M = np.diag(sc) if U is None else (U * sc) @ U.T
    return Params.from_blocks(p2=M, q1=M.copy(), d=d)


def random_init(d, scale, rng):
    """Small random start: every entry of ``W^P`` and ``W^Q`` i.i.d. ``N(0, scale^2)``.

    This leaves the null manifold: the ``p1 Sigma_hat W^T q2`` pathway starts non-zero and can
    capture a mode (book chapter 2, 'The null parameters').

    Parameters
    ----------
    d : int
    scale : float
        Standard deviation of the entries, ``>= 0``.
    rng : numpy.random.Generator

    Returns
    -------
    Params
    """
    d = check_int("d", d, 1)
    scale = check_nonnegative("scale", scale)
    rng = check_generator("rng", rng)
    D = 2 * d
    return Params(scale * rng.standard_normal((D, D)), scale * rng.standard_normal((D, D)))
