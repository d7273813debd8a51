r"""Finite-difference derivatives of mode fields (book chapter 3).

Chapter 3 checks its stability statements (the saddle at the origin, the attracting and
neutral directions of the fixed points, the degeneracy of the minima) by differentiating the
velocity fields and loss gradients of :mod:`icllib.flows` and :mod:`icllib.theory`
numerically, independently of any hand-derived Jacobian.  A field here is a function
``f(p, q) -> (f_p, f_q)`` of the mode amplitudes ``p, q`` (shape ``(d,)`` each), the form of
``paper_velocity``, ``exact_mean_velocity``, ``paper_loss_grad`` and ``exact_loss_grad`` with
their other arguments bound; its Jacobian is the ``(2d, 2d)`` matrix
``d(f_p, f_q) / d(p, q)``.  The Jacobian of a loss gradient is the loss's Hessian.

Error model: central differences with step ``h`` have truncation error ``O(h^2 f''')`` and
round-off error ``O(eps |f| / h)``; for the polynomial (cubic) fields of the book and
``h = 1e-6`` both are below about ``1e-9`` relative to the field's scale.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from .validation import check_array, check_positive

__all__ = ["mode_jacobian"]


def mode_jacobian(field: Callable, p, q, *, h: float = 1e-6) -> np.ndarray:
    r"""Jacobian of a mode field ``(p, q) -> (f_p, f_q)`` by central differences.

    Used in book chapter 3 for the linearisation at the saddle (proposition 'Saddle at the
    origin'), on the paper's hyperbola of fixed points (paper eq. 11) and for the Hessians
    of the two losses at their minima.

    Parameters
    ----------
    field : callable
        ``field(p, q)`` returning a pair ``(f_p, f_q)`` of arrays of shape ``(d,)``.
    p, q : array_like, shape (d,)
        The point at which to differentiate.
    h : float
        Finite-difference step (> 0), applied to each of the ``2d`` coordinates.

    Returns
    -------
    ndarray, shape (2d, 2d)
        ``J[i, k] = d f_i / d x_k`` with ``x = (p, q)`` and ``f = (f_p, f_q)``
        concatenated; for ``field`` a loss gradient this is the loss's Hessian.
    """
    if not callable(field):
        raise TypeError(f"field must be a function of (p, q), got {type(field).__name__}")
    p = check_array("p", p, (None,))
    q = check_array("q", q, p.shape)
    h = check_positive("h", h)
    x0 = np.concatenate([p, q])
    cols = []
    for k in range(x0.size):
        step = np.zeros_like(x0)
        step[k] = h
        plus = np.concatenate(field(*np.split(x0 + step, 2)))
        minus = np.concatenate(field(*np.split(x0 - step, 2)))
        cols.append((plus - minus) / (2.0 * h))
    return np.array(cols).T
