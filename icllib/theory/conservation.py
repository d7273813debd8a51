r"""Conserved quantities of the gradient flows and their drift under SGD (book chapter 3).

The loss is invariant under ``p -> c p, q -> q/c``; by Noether's argument the gradient flow
conserves ``C = ||p||^2 - ||q||^2`` (book chapter 3, 'The conservation law and where it comes
from'), the paper's decoupled flow (eqs. 9-10) even each ``C_a = p_a^2 - q_a^2``, and one SGD
step changes ``C`` by exactly ``eta^2 (||g_p||^2 - ||g_q||^2)``.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from ..validation import check_array, check_positive

__all__ = ["conserved_quantity", "conserved_per_mode", "sgd_conservation_drift"]


def conserved_quantity(p: ArrayLike, q: ArrayLike,
                       axis: int | tuple[int, ...] = -1) -> np.ndarray | float:
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

    Returns
    -------
    ndarray or float
        ``C`` with the summed axes removed (a float when every axis is summed).
    """
    p = check_array("p", p)
    q = check_array("q", q)
    if p.shape != q.shape:
        raise ValueError(f"p and q must have the same shape, got {p.shape} and {q.shape}")
    return np.sum(p * p, axis=axis) - np.sum(q * q, axis=axis)


def conserved_per_mode(p: ArrayLike, q: ArrayLike) -> np.ndarray:
    r"""``C_a = p_a^2 - q_a^2`` per mode, conserved by the paper's flow (eqs. 9-10) only.

    The exact mean flow changes each ``C_a`` at rate
    ``(2 eta / N) (s_a^2 q_a^2 sum_b s_b p_b^2 - s_a p_a^2 sum_b s_b^2 q_b^2)``, which sums
    to zero over modes (book chapter 3, 'The conservation law and where it comes from').

    Parameters
    ----------
    p, q : array_like, shape (..., d)
        Mode amplitudes of ``p2`` and ``q1``, the same shape.

    Returns
    -------
    ndarray, shape (..., d)
    """
    p = check_array("p", p)
    q = check_array("q", q)
    if p.shape != q.shape:
        raise ValueError(f"p and q must have the same shape, got {p.shape} and {q.shape}")
    return p * p - q * q


def sgd_conservation_drift(grad_p: ArrayLike, grad_q: ArrayLike, eta: float,
                           axis: int | tuple[int, ...] | None = None) -> np.ndarray | float:
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

    Returns
    -------
    ndarray or float
        The change of ``C``, with the summed axes removed.
    """
    eta = check_positive("eta", eta)
    gp = check_array("grad_p", grad_p)
    gq = check_array("grad_q", grad_q)
    return eta ** 2 * (np.sum(gp * gp, axis=axis) - np.sum(gq * gq, axis=axis))
