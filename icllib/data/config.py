"""What a prompt looks like: the input covariance and the data configuration (book chapter 1).

Inputs ``x ~ N(0, Sigma_x)`` with ``Sigma_x = U diag(s) U^T`` (:func:`covariance`); the tasks
share the eigenbasis ``U`` (a Haar-random one from :func:`random_rotation`); a
:class:`DataConfig` holds ``s``, ``U``, the context length ``N``, the task-set size ``P`` and
the label noise, validated once.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from ..validation import (
    check_generator,
    check_int,
    check_nonnegative,
    check_orthogonal,
    check_spectrum,
)

__all__ = ["covariance", "random_rotation", "DataConfig"]


def covariance(s: ArrayLike, U: ArrayLike | None = None) -> np.ndarray:
    """Input covariance ``Sigma_x = U diag(s) U^T`` (book chapter 1, 'The data model').

    Parameters
    ----------
    s : array_like, shape (d,)
        Eigenvalues ``s_alpha``, positive and finite.
    U : array_like, shape (d, d), optional
        Orthogonal eigenbasis; ``None`` means the identity.

    Returns
    -------
    ndarray, shape (d, d)
        The symmetric positive definite ``Sigma_x``.
    """
    s = check_spectrum("s", s)
    U = check_orthogonal("U", U, s.size)
    if U is None:
        return np.diag(s)
    Sigma = (U * s) @ U.T
    return 0.5 * (Sigma + Sigma.T)


def random_rotation(d: int, rng: np.random.Generator) -> np.ndarray:
    """A Haar-distributed random orthogonal ``d x d`` matrix (QR of a Gaussian, sign-fixed).

    Parameters
    ----------
    d : int
        Dimension, ``>= 1``.
    rng : numpy.random.Generator

    Returns
    -------
    ndarray, shape (d, d)
    """
    d = check_int("d", d, 1)
    rng = check_generator("rng", rng)
    Q, R = np.linalg.qr(rng.standard_normal((d, d)))
    return Q * np.where(np.diag(R) < 0, -1.0, 1.0)


@dataclass(frozen=True, eq=False)
class DataConfig:
    """What a prompt looks like (book chapter 1, 'The data model').

    Parameters
    ----------
    s : array_like, shape (d,)
        Eigenvalues of ``Sigma_x`` (positive, finite).
    N : int
        Context length (number of context tokens), ``>= 1``.
    U : array_like, shape (d, d), optional
        Shared eigenbasis of ``Sigma_x`` and the tasks; ``None`` is the identity.
    P : int, optional
        Number of training tasks; ``None`` draws a fresh task for every prompt (``P -> inf``).
    noise : float
        Standard deviation of the label noise, ``y_i = W x_i + noise * e_i`` with
        ``e_i ~ N(0, I)``.  The loss target stays the noise-free ``W x_q``.
    """

    s: np.ndarray
    N: int
    U: np.ndarray | None = None
    P: int | None = None
    noise: float = 0.0

    def __post_init__(self) -> None:
        s = check_spectrum("s", self.s)
        s.setflags(write=False)
        object.__setattr__(self, "s", s)
        object.__setattr__(self, "N", check_int("N", self.N, 1))
        U = check_orthogonal("U", self.U, s.size)
        if U is not None:
            U = U.copy()
            U.setflags(write=False)
        object.__setattr__(self, "U", U)
        if self.P is not None:
            object.__setattr__(self, "P", check_int("P", self.P, 1))
        object.__setattr__(self, "noise", check_nonnegative("noise", self.noise))

    @property
    def d(self) -> int:
        """Task dimension ``d`` (the token dimension is ``2d``)."""
        return self.s.size

    @property
    def Sigma_x(self) -> np.ndarray:
        """``U diag(s) U^T``."""
        return covariance(self.s, self.U)

    @property
    def basis(self) -> np.ndarray:
        """The eigenbasis ``U`` as an array (the identity when ``U`` is None)."""
        return np.eye(self.d) if self.U is None else self.U

    def __repr__(self) -> str:
        U = "None" if self.U is None else f"<{self.d}x{self.d} rotation>"
        return (
            f"DataConfig(s={np.array2string(self.s, precision=4)}, N={self.N}, U={U}, "
            f"P={self.P}, noise={self.noise})"
        )
