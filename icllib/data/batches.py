"""Batches of prompts as the model sees them (paper eq. 4; book chapter 1, 'The data model').

    Z = [[x_1 .. x_N, x_q], [y_1 .. y_N, 0]]  in R^{2d x (N+1)}        (paper eq. 4)

Both batch types hold context *rows* ``C = [x_i^T, y_i^T]`` (``(B, m, 2d)``) whose Gram matrix
``C^T C`` is ``N`` times the context part of ``Gamma = Z Z^T / N``, the queries ``xq`` and
the tasks ``W``:

* :class:`PromptBatch`: the ``m = N`` real tokens (:func:`icllib.data.sample_prompts`);
* :class:`ContextStatistics`: ``m = min(N, D)`` *virtual tokens* with the same Gram matrix in
  distribution (:func:`icllib.data.sample_statistics`).

The model and the training code only ever use ``C``, ``xq``, ``W`` and ``N``, so they treat
both alike.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["PromptBatch", "ContextStatistics"]


@dataclass(frozen=True, eq=False)
class PromptBatch:
    """``B`` prompts drawn token by token (paper eq. 4).

    Attributes
    ----------
    C : ndarray, shape (B, N, 2d)
        Context rows ``[x_i^T, y_i^T]``.
    xq : ndarray, shape (B, d)
        Queries.
    W : ndarray, shape (B, d, d)
        Each prompt's task matrix.
    """

    C: np.ndarray
    xq: np.ndarray
    W: np.ndarray

    @property
    def d(self) -> int:
        """Task dimension ``d``."""
        return self.xq.shape[-1]

    @property
    def B(self) -> int:
        """Number of prompts."""
        return self.xq.shape[0]

    @property
    def N(self) -> int:
        """Number of context tokens."""
        return self.C.shape[1]

    @property
    def X(self) -> np.ndarray:
        """Context inputs, shape (B, N, d)."""
        return self.C[..., : self.d]

    @property
    def Y(self) -> np.ndarray:
        """Context labels ``y_i = W x_i (+ noise)``, shape (B, N, d)."""
        return self.C[..., self.d :]

    @property
    def target(self) -> np.ndarray:
        """Noise-free query label ``W x_q``, shape (B, d)."""
        return np.einsum("bij,bj->bi", self.W, self.xq)

    @property
    def Z(self) -> np.ndarray:
        """Embedding ``Z = [[x_1..x_N, x_q], [y_1..y_N, 0]]``, shape (B, 2d, N+1) (eq. 4)."""
        B, N, D = self.C.shape
        Z = np.zeros((B, D, N + 1))
        Z[:, :, :N] = self.C.transpose(0, 2, 1)
        Z[:, : self.d, N] = self.xq
        return Z

    @property
    def Sigma_hat(self) -> np.ndarray:
        """Context covariance ``(1/N) sum_i x_i x_i^T``, shape (B, d, d)."""
        X = self.X
        return np.matmul(X.transpose(0, 2, 1), X) / self.N


@dataclass(frozen=True, eq=False)
class ContextStatistics:
    """``B`` prompts represented by their sufficient statistic (:func:`sample_statistics`).

    The rows of ``C`` are ``m = min(N, D)`` *virtual tokens* ``[x^T, y^T]`` whose Gram matrix
    ``C^T C`` has the distribution of ``sum_{i<=N} z_i z_i^T`` for real context tokens; so
    ``Gamma = (C^T C + z_q z_q^T) / N`` has exactly the distribution it has for real prompts.

    Attributes
    ----------
    C : ndarray, shape (B, m, 2d)
    xq : ndarray, shape (B, d)
    W : ndarray, shape (B, d, d)
    N : int
        The real context length (the divisor of ``Gamma``).
    """

    C: np.ndarray
    xq: np.ndarray
    W: np.ndarray
    N: int

    d = PromptBatch.d
    B = PromptBatch.B
    X = PromptBatch.X
    Y = PromptBatch.Y
    target = PromptBatch.target
    Sigma_hat = PromptBatch.Sigma_hat
