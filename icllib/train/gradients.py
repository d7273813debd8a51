"""The batch-mean loss of the full linear transformer and its analytic gradients (book ch. 2).

With ``W^P_y = [p1 p2]`` (d x 2d), ``W^Q_{:,x} = [q1; q2]`` (2d x d), ``k = W^Q_{:,x} x_q``,
``v = Gamma k``, ``y_hat = W^P_y v`` (paper eq. 1, its y-block) and the residual
``r = y_hat - W x_q``, the batch-mean loss ``L = (1 / B) sum_b 1/2 ||r_b||^2`` has

    dL/dW^P_y     = (1/B) sum_b r_b v_b^T
    dL/dW^Q_{:,x} = (1/B) sum_b (Gamma_b W^P_y^T r_b) x_q,b^T

and every other block of ``W^P`` and ``W^Q`` gets exactly zero gradient (it never reaches
``y_hat``).  ``Gamma`` is never formed: with the context rows ``C`` of a batch (real tokens, or
the virtual tokens of :func:`icllib.data.sample_statistics`),
``Gamma k = (C^T (C k) + z_q (x_q . k_x)) / N``, so the cost is ``O(B m d)``.

:class:`WhitenedGradients` is the same computation for tasks sharing the eigenbasis of
``Sigma_x``, on the raw whitened draws with the batch axis last (the fast path of
:func:`icllib.train.train_sgd`).
"""

from __future__ import annotations

import numpy as np

from ..data.batches import ContextStatistics, PromptBatch
from ..data.gram_actions import GramActions
from ..model import Params
from ..validation import check_instance

__all__ = ["loss_and_grads", "block_grads", "WhitenedGradients"]


def block_grads(WPy: np.ndarray, WQx: np.ndarray, C: np.ndarray, xq: np.ndarray,
                target: np.ndarray, N: int) -> tuple[float, np.ndarray, np.ndarray]:
    """Batch-mean loss and gradients w.r.t. ``W^P_y`` (d x 2d) and ``W^Q_{:,x}`` (2d x d).

    Parameters
    ----------
    WPy : ndarray, shape (d, 2d)
    WQx : ndarray, shape (2d, d)
    C : ndarray, shape (B, m, 2d)
        Context rows.
    xq : ndarray, shape (B, d)
    target : ndarray, shape (B, d)
        ``W x_q``.
    N : int
        The divisor of ``Gamma``.

    Returns
    -------
    loss : float
    gP : ndarray, shape (d, 2d)
    gQ : ndarray, shape (2d, d)
    """
    B = xq.shape[0]
    d = xq.shape[1]
    k = xq @ WQx.T  # (B, 2d): [q1 x_q; q2 x_q]
    h = np.matmul(C, k[:, :, None])  # (B, m, 1): C k
    v = np.matmul(h.transpose(0, 2, 1), C)[:, 0, :]  # (B, 2d): C^T C k
    v[:, :d] += xq * np.einsum("bi,bi->b", xq, k[:, :d])[:, None]
    v *= 1.0 / N  # v = Gamma k
    r = v @ WPy.T
    r -= target  # residual y_hat - W x_q
    loss = 0.5 * np.einsum("bi,bi->", r, r) / B
    gP = (r.T @ v) * (1.0 / B)
    w = r @ WPy  # (B, 2d): W^P_y^T r
    h = np.matmul(C, w[:, :, None])
    u = np.matmul(h.transpose(0, 2, 1), C)[:, 0, :]
    u[:, :d] += xq * np.einsum("bi,bi->b", xq, w[:, :d])[:, None]
    u *= 1.0 / N  # u = Gamma W^P_y^T r
    gQ = (u.T @ xq) * (1.0 / B)
    return float(loss), gP, gQ


class WhitenedGradients:
    """:func:`block_grads` for tasks ``diag(lam)`` in the eigenbasis, from the raw draws.

    The arrays have the batch axis *last* (as :meth:`icllib.data.PromptSampler.draw_raw`
    returns them), so every operation runs over contiguous length-``B`` rows, and the work
    arrays are allocated once and reused by every call.  Context rows
    ``x_i = sqrt(s) * G_i[:d]``, ``y_i = lam * x_i + noise * G_i[d:]``, query
    ``x_q = sqrt(s) * gq``.  The labels are never formed:
    ``C k = G [sqrt(s) (k_x + lam k_y); noise k_y]`` and
    ``C^T h = [sqrt(s) G_x^T h, lam sqrt(s) G_x^T h + noise G_e^T h]``, so each contraction
    runs over ``(m, D, B)`` with ``D = d`` (``2d`` with noise) instead of ``2d``.  The
    parameters must be expressed in the eigenbasis.

    Parameters
    ----------
    sqrt_s : ndarray, shape (d,)
        Square roots of the eigenvalues of ``Sigma_x``.
    noise : float
        Label-noise standard deviation.
    N : int
        The divisor of ``Gamma`` (the context length).
    B : int
        Batch size.

    Calling it with ``(WPy, WQx, G, lam, gq)`` -- ``W^P_y`` (d, 2d), ``W^Q_{:,x}`` (2d, d),
    ``G`` (m, D, B), ``lam`` (d, B), ``gq`` (d, B) -- returns ``(loss, gP, gQ)`` as
    :func:`block_grads` does.  ``G`` may instead be a drawn
    :class:`icllib.data.gram_actions.GramActions`: the two products ``G^T G z`` of a step
    (forward, then backward) are then its :meth:`~GramActions.first` and
    :meth:`~GramActions.second` (``sampler="actions"`` of :func:`icllib.train.train_sgd`).
    """

    def __init__(self, sqrt_s: np.ndarray, noise: float, N: int, B: int) -> None:
        d = sqrt_s.size
        self.d, self.B, self.noise, self.N = d, B, float(noise), N
        self.root = np.ascontiguousarray(sqrt_s[:, None])
        self.root2 = np.concatenate([sqrt_s, sqrt_s])  # scales both halves of a 2d vector
        self.root_N = self.root / N
        D = 2 * d if noise > 0 else d
        self._h = {}  # (m, B) per number of context rows
        self.xq, self.xq_N, self.dot = np.empty((d, B)), np.empty((d, B)), np.empty(B)
        self.z, self.g, self.tmp = np.empty((D, B)), np.empty((D, B)), np.empty((d, B))
        self.k, self.v, self.u = np.empty((2 * d, B)), np.empty((2 * d, B)), np.empty((2 * d, B))
        self.r = np.empty((d, B))

    def _gamma_times(self, ks, G, lam, gq, out, second=False):
        """``out = Gamma k`` (2d, B), given ``ks = sqrt(s) * k`` (both halves scaled).

        ``Gamma k = (C^T C k + z_q (x_q . k_x)) / N`` with ``C k = G z``,
        ``z = [sqrt(s) (k_x + lam k_y); noise k_y]`` and ``x_q . k_x = g_q . (sqrt(s) k_x)``.
        """
        d, noise = self.d, self.noise
        z = self.z
        zx = z[:d]
        np.multiply(ks[d:], lam, out=zx)
        zx += ks[:d]
        if noise > 0:
            np.multiply(ks[d:], noise / self.root, out=z[d:])  # noise k_y
        if isinstance(G, GramActions):  # only the actions of G^T G (icllib.data.gram_actions)
            g = (G.second if second else G.first)(z, self.g)
        else:
            m = G.shape[0]
            h = self._h.get(m)
            if h is None:
                h = self._h[m] = np.empty((m, self.B))
            np.einsum("ijb,jb->ib", G, z, out=h)  # C k, in whitened rows
            g = np.einsum("ijb,ib->jb", G, h, out=self.g)  # G^T C k
        ax = out[:d]
        np.multiply(g[:d], self.root_N, out=ax)  # X^T C k / N
        np.multiply(ax, lam, out=out[d:])  # Y^T C k / N (noise-free part)
        if noise > 0:
            g[d:] *= noise / self.N
            out[d:] += g[d:]
        np.einsum("ib,ib->b", gq, ks[:d], out=self.dot)  # x_q . k_x
        np.multiply(self.xq_N, self.dot, out=self.tmp)
        ax += self.tmp  # + x_q (x_q . k_x) / N
        return out

    def __call__(self, WPy: np.ndarray, WQx: np.ndarray, G: np.ndarray | GramActions,
                 lam: np.ndarray, gq: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
        """Batch-mean loss and gradients, as :func:`block_grads` returns them.

        Parameters
        ----------
        WPy : ndarray, shape (d, 2d)
            ``W^P_y`` in the eigenbasis.
        WQx : ndarray, shape (2d, d)
            ``W^Q_{:,x}`` in the eigenbasis.
        G : ndarray, shape (m, D, B), or GramActions
            Whitened context rows (or the drawn actions of their Gram matrix).
        lam : ndarray, shape (d, B)
            Task eigenvalues.
        gq : ndarray, shape (d, B)
            Whitened queries.

        Returns
        -------
        loss : float
        gP : ndarray, shape (d, 2d)
        gQ : ndarray, shape (2d, d)
        """
        B = self.B
        xq = np.multiply(gq, self.root, out=self.xq)
        np.multiply(xq, 1.0 / self.N, out=self.xq_N)
        ks = np.matmul(WQx * self.root2[:, None], xq, out=self.k)
        v = self._gamma_times(ks, G, lam, gq, self.v)
        r = np.matmul(WPy, v, out=self.r)
        np.multiply(lam, xq, out=self.tmp)
        r -= self.tmp  # residual y_hat - W x_q
        loss = 0.5 * float(np.einsum("ib,ib->", r, r)) / B
        gP = r @ v.T
        gP *= 1.0 / B
        ks = np.matmul((WPy * self.root2).T, r, out=self.k)
        u = self._gamma_times(ks, G, lam, gq, self.u, second=True)
        gQ = u @ xq.T
        gQ *= 1.0 / B
        return loss, gP, gQ


def _batch_arrays(batch, d):
    for name in ("C", "xq", "W", "N"):
        if not hasattr(batch, name):
            raise TypeError(
                "batch must be a PromptBatch or ContextStatistics (from icllib.data), "
                f"got {type(batch).__name__}"
            )
    C = np.asarray(batch.C, float)
    xq = np.asarray(batch.xq, float)
    if C.ndim != 3 or C.shape[2] != 2 * d or xq.shape != (C.shape[0], d):
        raise ValueError(
            f"batch has token dimension {C.shape[-1]} and queries {xq.shape}, "
            f"but params have d = {d} (token dimension {2 * d})"
        )
    for name, a in (("C", C), ("xq", xq), ("W", batch.W)):
        if not np.all(np.isfinite(a)):
            raise ValueError(f"batch.{name} must hold finite values")
    return C, xq, batch.target, int(batch.N)


def loss_and_grads(params: Params,
                   batch: PromptBatch | ContextStatistics) -> tuple[float, Params]:
    """Batch-mean loss ``(1/B) sum_b 1/2 ||W_b x_q,b - y_hat_b||^2`` and its exact gradients.

    Parameters
    ----------
    params : Params
    batch : PromptBatch or ContextStatistics
        From :func:`icllib.data.sample_prompts` or :func:`icllib.data.sample_statistics`.

    Returns
    -------
    loss : float
    grads : Params
        Gradients w.r.t. the full ``W^P`` and ``W^Q`` (2d x 2d); the blocks that never reach
        the prediction (``W^P[x, :]``, ``W^Q[:, y]``) are exactly zero.
    """
    check_instance("params", params, Params, "an icllib.model.Params")
    d = params.d
    C, xq, target, N = _batch_arrays(batch, d)
    loss, gP, gQ = block_grads(params.WP_y, params.WQ_x, C, xq, target, N)
    gWP = np.zeros_like(params.WP)
    gWQ = np.zeros_like(params.WQ)
    gWP[d:, :] = gP
    gWQ[:, :d] = gQ
    return loss, Params(gWP, gWQ)
