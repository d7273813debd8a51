r"""The effective per-mode variance ``s_inf`` of the moment identity (book chapter 2).

Shared by every other module of :mod:`icllib.theory`: the fixed point ``1/s_inf`` (paper
eq. 11), the time scales and trajectories (eqs. 12-13) and the losses (eq. 14).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from ..validation import check_int, check_spectrum

__all__ = ["s_inf"]


def s_inf(s: ArrayLike, N: int) -> np.ndarray:
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
    s = check_spectrum("s", s)
    N = check_int("N", N, 1)
    return ((N + 1) * s + s.sum()) / N
