"""The single-layer linear transformer and its block form (paper eqs. 1, 6, 8; book chapter 1).

    f(Z) = Z + W^P (Z Z^T / N) W^Q Z,          Gamma = Z Z^T / N                 (eq. 1)

``N`` is the number of *context* tokens (``Z`` has ``N + 1`` columns; the query's column is
included in ``Gamma`` but the divisor is ``N``).  The prediction is the y-block of the last
column of ``f(Z)``.  Writing

    W^P = [[., .], [p1, p2]],        W^Q = [[q1, .], [q2, .]]

(all blocks ``d x d``), only the bottom row-block ``W^P_y = [p1 p2]`` and the left column-block
``W^Q_{:,x} = [q1; q2]`` reach the prediction:

    y_hat = [p1 p2] Gamma [q1; q2] x_q.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from .validation import check_array, check_instance, check_int

__all__ = [
    "Params",
    "forward",
    "predict",
    "predict_from_statistics",
    "gamma_blocks",
    "Pathways",
    "pathways",
    "reduced_predict",
]


@dataclass(eq=False)
class Params:
    """Parameters ``W^P, W^Q`` (each ``2d x 2d``) of the linear transformer (eq. 1).

    The block properties are views: assigning into ``params.p2[...]`` changes ``W^P``.
    """

    WP: np.ndarray
    WQ: np.ndarray

    def __post_init__(self):
        WP = check_array("WP", self.WP)
        WQ = check_array("WQ", self.WQ)
        if WP.ndim != 2 or WP.shape[0] != WP.shape[1] or WP.shape[0] % 2 or WP.shape[0] < 2:
            raise ValueError(
                f"WP must be a square 2d x 2d matrix with d >= 1, got shape {WP.shape}")
        if WQ.shape != WP.shape:
            raise ValueError(f"WQ must have the shape of WP {WP.shape}, got {WQ.shape}")
        # own contiguous copies, so that block views and in-place updates are safe
        self.WP = np.array(WP, dtype=float, order="C")
        self.WQ = np.array(WQ, dtype=float, order="C")

    @classmethod
    def from_blocks(cls, p1=None, p2=None, q1=None, q2=None, d=None):
        """Build ``W^P, W^Q`` from the four reachable blocks; every other block is zero."""
        blocks = {"p1": p1, "p2": p2, "q1": q1, "q2": q2}
        given = [np.asarray(b) for b in blocks.values() if b is not None]
        if d is None:
            if not given:
                raise ValueError("d must be given when no block is")
            d = given[0].shape[0]
        d = check_int("d", d, 1)
        for name, b in blocks.items():
            if b is not None:
                blocks[name] = check_array(name, b, (d, d))
        WP = np.zeros((2 * d, 2 * d))
        WQ = np.zeros((2 * d, 2 * d))
        if blocks["p1"] is not None:
            WP[d:, :d] = blocks["p1"]
        if blocks["p2"] is not None:
            WP[d:, d:] = blocks["p2"]
        if blocks["q1"] is not None:
            WQ[:d, :d] = blocks["q1"]
        if blocks["q2"] is not None:
            WQ[d:, :d] = blocks["q2"]
        return cls(WP, WQ)

    @property
    def d(self) -> int:
        """Task dimension ``d`` (``W^P, W^Q`` are ``2d x 2d``)."""
        return self.WP.shape[0] // 2

    @property
    def p1(self) -> np.ndarray:
        """``W^P[y, x]``: reads the x-rows of ``Gamma`` into the prediction."""
        return self.WP[self.d :, : self.d]

    @property
    def p2(self) -> np.ndarray:
        """``W^P[y, y]``: reads the y-rows of ``Gamma`` into the prediction."""
        return self.WP[self.d :, self.d :]

    @property
    def q1(self) -> np.ndarray:
        """``W^Q[x, x]``: maps the query ``x_q`` onto the x-columns of ``Gamma``."""
        return self.WQ[: self.d, : self.d]

    @property
    def q2(self) -> np.ndarray:
        """``W^Q[y, x]``: maps the query ``x_q`` onto the y-columns of ``Gamma``."""
        return self.WQ[self.d :, : self.d]

    @property
    def WP_y(self) -> np.ndarray:
        """Bottom row-block ``[p1 p2]`` of ``W^P`` (d x 2d), a view."""
        return self.WP[self.d :, :]

    @property
    def WQ_x(self) -> np.ndarray:
        """Left column-block ``[q1; q2]`` of ``W^Q`` (2d x d), a view."""
        return self.WQ[:, : self.d]

    def copy(self) -> Params:
        """An independent copy (new arrays)."""
        return Params(self.WP.copy(), self.WQ.copy())


def _check_params(params):
    """``params`` if it is a :class:`Params`, else ValueError."""
    return check_instance("params", params, Params, "an icllib.model.Params")


def _check_Z(Z, d):
    """A finite batch of embedded prompts (..., 2d, N+1) with at least one context column."""
    Z = check_array("Z", Z)
    if Z.ndim < 2 or Z.shape[-2] != 2 * d:
        raise ValueError(
            f"Z must have shape (..., {2 * d}, N+1) to match params (d = {d}), got {Z.shape}")
    if Z.shape[-1] < 2:
        raise ValueError(
            f"Z needs at least one context column and the query (N+1 >= 2), got {Z.shape}")
    return Z


def forward(Z, params):
    """``f(Z) = Z + W^P (Z Z^T / N) W^Q Z`` with ``N = Z.shape[-1] - 1`` (paper eq. 1).

    Parameters
    ----------
    Z : ndarray, shape (..., 2d, N+1)
        Embedded prompts (eq. 4); leading axes are a batch.
    params : Params

    Returns
    -------
    ndarray, same shape as ``Z``.
    """
    params = _check_params(params)
    Z = _check_Z(Z, params.d)
    N = Z.shape[-1] - 1
    Gamma = np.matmul(Z, np.swapaxes(Z, -1, -2)) / N
    return Z + np.matmul(np.matmul(params.WP, Gamma), np.matmul(params.WQ, Z))


def predict(Z, params):
    """The y-block of the last column of ``f(Z)``: ``[p1 p2] Gamma [q1; q2] x_q`` (eq. 1).

    Computes only the query column (``O(N d^2)`` per prompt).  Returns shape (..., d).
    """
    params = _check_params(params)
    Z = _check_Z(Z, params.d)
    N = Z.shape[-1] - 1
    k = np.matmul(params.WQ, Z[..., -1:])  # (..., 2d, 1)
    v = np.matmul(Z, np.matmul(np.swapaxes(Z, -1, -2), k)) / N  # Gamma k
    return np.matmul(params.WP_y, v)[..., 0]


def gamma_blocks(Sigma_hat, W, xq, N):
    """``Gamma`` from the statistics (book chapter 1, 'The block form'), shape (..., 2d, 2d).

    ``Gamma_xx = Sigma_hat + x_q x_q^T / N``, ``Gamma_xy = Sigma_hat W^T``,
    ``Gamma_yx = W Sigma_hat``, ``Gamma_yy = W Sigma_hat W^T`` (noise-free labels).
    """
    Sigma_hat, W, xq, N = _check_statistics(Sigma_hat, W, xq, N)
    d = xq.shape[-1]
    WS = np.matmul(W, Sigma_hat)
    G = np.empty(Sigma_hat.shape[:-2] + (2 * d, 2 * d))
    G[..., :d, :d] = Sigma_hat + xq[..., :, None] * xq[..., None, :] / N
    G[..., d:, :d] = WS
    G[..., :d, d:] = np.swapaxes(WS, -1, -2)
    G[..., d:, d:] = np.matmul(WS, np.swapaxes(W, -1, -2))
    return G


def _check_statistics(Sigma_hat, W, xq, N):
    """Finite ``Sigma_hat`` (..., d, d), ``W`` (..., d, d), ``xq`` (..., d) and ``N >= 1``."""
    Sigma_hat = check_array("Sigma_hat", Sigma_hat)
    if Sigma_hat.ndim < 2 or Sigma_hat.shape[-1] != Sigma_hat.shape[-2]:
        raise ValueError(f"Sigma_hat must have shape (..., d, d), got {Sigma_hat.shape}")
    d = Sigma_hat.shape[-1]
    W = check_array("W", W, (..., d, d), hint=" to match Sigma_hat")
    xq = check_array("xq", xq, (..., d), hint=" to match Sigma_hat")
    N = check_int("N", N, 1)
    return Sigma_hat, W, xq, N


def predict_from_statistics(Sigma_hat, W, xq, params, N):
    """``y_hat = [p1 p2] Gamma [q1; q2] x_q`` with ``Gamma`` built from the statistics.

    Paper eq. 6 (``Gamma`` from :func:`gamma_blocks`).  Equals :func:`predict` on a
    prompt with context covariance ``Sigma_hat``, task ``W``, query ``x_q`` and length ``N``.
    Batched over leading axes; returns shape (..., d).
    """
    params = _check_params(params)
    G = gamma_blocks(Sigma_hat, W, xq, N)
    if G.shape[-1] != 2 * params.d:
        raise ValueError(f"statistics have d = {G.shape[-1] // 2} but params have d = {params.d}")
    k = np.matmul(params.WQ_x, np.asarray(xq, float)[..., None])
    return np.matmul(params.WP_y, np.matmul(G, k))[..., 0]


class Pathways(NamedTuple):
    """The four terms of the prediction (paper eq. 6), named by the blocks they use."""

    p1_q1: np.ndarray  # p1 Gamma_xx q1 x_q
    p1_q2: np.ndarray  # p1 Sigma_hat W^T q2 x_q
    p2_q1: np.ndarray  # p2 W Sigma_hat q1 x_q   (the reduced model, eq. 8)
    p2_q2: np.ndarray  # p2 W Sigma_hat W^T q2 x_q

    @property
    def total(self) -> np.ndarray:
        """The prediction ``y_hat``, the sum of the four pathways."""
        return self.p1_q1 + self.p1_q2 + self.p2_q1 + self.p2_q2


def pathways(Sigma_hat, W, xq, params, N):
    """The four pathways of ``y_hat`` separately (paper eq. 6; book chapter 1).

        y_hat = p1 Gamma_xx q1 x_q + p1 Sigma_hat W^T q2 x_q
              + p2 W Sigma_hat q1 x_q + p2 W Sigma_hat W^T q2 x_q

    with ``Gamma_xx = Sigma_hat + x_q x_q^T / N``.  Batched over leading axes.
    """
    params = _check_params(params)
    Sigma_hat, W, xq, N = _check_statistics(Sigma_hat, W, xq, N)
    if Sigma_hat.shape[-1] != params.d:
        raise ValueError(
            f"statistics have d = {Sigma_hat.shape[-1]} but params have d = {params.d}")
    x = xq[..., None]
    Gxx = Sigma_hat + np.matmul(x, np.swapaxes(x, -1, -2)) / N
    WT = np.swapaxes(W, -1, -2)
    q1x = np.matmul(params.q1, x)
    q2x = np.matmul(params.q2, x)
    return Pathways(
        p1_q1=np.matmul(params.p1, np.matmul(Gxx, q1x))[..., 0],
        p1_q2=np.matmul(params.p1, np.matmul(Sigma_hat, np.matmul(WT, q2x)))[..., 0],
        p2_q1=np.matmul(params.p2, np.matmul(W, np.matmul(Sigma_hat, q1x)))[..., 0],
        p2_q2=np.matmul(params.p2, np.matmul(W, np.matmul(Sigma_hat, np.matmul(WT, q2x))))[..., 0],
    )


def reduced_predict(p2, q1, W, Sigma_hat, xq):
    """Reduced predictor on the null manifold ``p1 = q2 = 0``: ``p2 W Sigma_hat q1 x_q`` (eq. 8).

    Batched over leading axes of ``W``, ``Sigma_hat``, ``xq``; returns shape (..., d).
    """
    Sigma_hat = check_array("Sigma_hat", Sigma_hat)
    d = Sigma_hat.shape[-1]
    p2 = check_array("p2", p2, (d, d))
    q1 = check_array("q1", q1, (d, d))
    W = check_array("W", W, (..., d, d))
    xq = check_array("xq", xq, (..., d))
    return np.matmul(p2, np.matmul(W, np.matmul(Sigma_hat, np.matmul(q1, xq[..., None]))))[..., 0]
