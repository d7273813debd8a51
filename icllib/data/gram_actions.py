"""The context Gram matrix drawn only where one SGD step looks at it (book chapter 1).

One SGD step (book chapter 2) uses a prompt's whitened context Gram matrix
``A = sum_i g_i g_i^T ~ Wishart_D(N, I)`` only through two products: ``A z_1`` (the forward
pass, ``z_1`` fixed before the draw) and ``A z_2``, where ``z_2`` (the backward pass) depends on
``A z_1``.  Both can be drawn exactly without the rest of ``A``, by the Bartlett
decomposition ``A = T^T T`` (``T`` upper trapezoidal, ``T_11 = sqrt(chi^2_N)``,
``T_22 = sqrt(chi^2_{N-1})``, standard normals above the diagonal, all independent) written
in an orthonormal basis ``e_1, e_2, ...`` adapted to the two vectors.  ``A`` is invariant
under rotations, so any basis chosen independently of ``A`` is allowed:

* ``e_1 = z_1 / |z_1|``.  Then ``A e_1 = T_11 t_1`` with ``t_1 = T_11 e_1 + P_1 g_1``, the
  first row of ``T``: ``P_1 g_1`` (``g_1 ~ N(0, I_D)`` with its ``e_1`` component removed) is a
  standard normal vector of ``e_1``'s orthogonal complement, whatever basis completes it.
* ``A = t_1 t_1^T + A'`` where, given ``t_1``, ``A'`` is ``Wishart_{D-1}(N-1, I)`` on the
  complement of ``e_1``, independent of ``t_1``: so ``e_2`` may be chosen after seeing
  ``A z_1``.  With ``p = P_1 z_2``, ``e_2 = p / |p|`` and
  ``t_2 = T_22 e_2 + P_12 g_2`` (``g_2`` with its ``e_1, e_2`` components removed),
  ``A z_2 = t_1 (t_1 . z_2) + |p| T_22 t_2``.

That costs ``2 D`` normals and two chi-squares per prompt whatever ``N`` is (the full
Bartlett factor needs ``O(D min(N, D))``), and ``O(D)`` arithmetic per product.  It holds for
``N < D`` too (the rows of a rank-``N`` factor; ``chi^2_0 = 0`` for ``N = 1``).  Arrays have
the batch axis last, as in :mod:`icllib.data.wishart`.
"""

from __future__ import annotations

import numpy as np

from .draws import standard_normal
from .wishart import ERLANG_MAX_DOF

__all__ = ["GramActions"]


class GramActions:
    """Exact draws of ``A z_1`` and then ``A z_2`` for ``B`` independent ``A ~ Wishart_D(N, I)``.

    Call :meth:`draw` once per batch, then :meth:`first` with ``z_1`` and :meth:`second`
    with ``z_2`` (which may depend on the result of :meth:`first`); see the module docstring
    for the construction.  The work arrays are allocated once and reused (a training loop
    keeps one instance).

    Parameters
    ----------
    N : int
        Degrees of freedom (the context length), ``>= 1``.
    D : int
        Dimension, ``>= 1``.
    B : int
        Number of independent matrices (the batch axis, last).
    extra : int
        Further standard normals per matrix to draw in the same call (the prompt's task and
        query, in :meth:`icllib.data.PromptSampler.draw_raw`), available as ``extra``.
    """

    def __init__(self, N: int, D: int, B: int, extra: int = 0) -> None:
        self.N, self.D, self.B = int(N), int(D), int(B)
        dofs = (self.N, self.N - 1)
        small = [k <= ERLANG_MAX_DOF for k in dofs]
        self._odd = [k % 2 == 1 and s for k, s in zip(dofs, small)]
        self._halves = [k // 2 if s else 0 for k, s in zip(dofs, small)]
        self._gamma = [k / 2.0 if not s else 0.0 for k, s in zip(dofs, small)]
        self.normal_count = 2 * self.D + sum(self._odd)
        self._normals = np.empty((self.normal_count + int(extra), B))
        #: the ``extra`` standard normals (extra, B) drawn with the context's by :meth:`draw`
        self.extra = self._normals[self.normal_count :]
        self.root = np.empty((2, B))  # T_11, T_22
        self.e1, self.t1 = np.empty((D, B)), np.empty((D, B))
        self.e2, self.tmp = np.empty((D, B)), np.empty((D, B))
        self.n, self.dot = np.empty(B), np.empty(B)

    def draw(self, rng: np.random.Generator) -> GramActions:
        """Draw the random part of a batch from ``rng``; returns ``self``.

        The stream: one call of :func:`icllib.data.draws.standard_normal` for the ``2 D``
        normals of ``g_1, g_2``, one per odd chi-square with at most ``ERLANG_MAX_DOF``
        degrees of freedom, and the ``extra`` normals; then one array of uniforms for the
        sums of exponentials of ``chi^2_N`` and ``chi^2_{N-1}`` (at most ``ERLANG_MAX_DOF``
        degrees of freedom); then numpy's gamma draws for the larger ones, in that order.

        Parameters
        ----------
        rng : numpy.random.Generator

        Returns
        -------
        GramActions
            ``self``.
        """
        z = standard_normal(rng, self._normals.shape, out=self._normals)
        odd = iter(z[2 * self.D : self.normal_count])
        n_u = sum(self._halves)
        u = rng.random((n_u, self.B)) if n_u else None
        start = 0
        for row, halves, is_odd, shape in zip(self.root, self._halves, self._odd, self._gamma):
            if shape:
                rng.standard_gamma(shape, size=self.B, out=row)
                row *= 2.0
            elif halves:  # chi^2_k = -2 ln(U_1 ... U_{k//2}) (+ Z^2 for odd k)
                block = u[start : start + halves]
                start += halves
                np.subtract(1.0, block, out=block)  # in (0, 1]
                np.prod(block, axis=0, out=row)
                np.log(row, out=row)
                row *= -2.0
            else:
                row[:] = 0.0
            if is_odd:
                zk = next(odd)
                row += zk * zk
            np.sqrt(row, out=row)
        return self

    def _unit(self, v, out):
        """``out = v / |v|`` column by column (0 where ``v = 0``); returns ``|v|`` (B,)."""
        n = np.einsum("ib,ib->b", v, v, out=self.n)
        np.sqrt(n, out=n)
        if n.all():
            np.divide(v, n, out=out)
        else:
            np.divide(v, np.where(n > 0, n, np.inf), out=out)
        return n

    def first(self, z: np.ndarray, out: np.ndarray) -> np.ndarray:
        """``out`` (D, B) = ``A z`` for ``z`` (D, B) fixed before :meth:`draw`.

        Parameters
        ----------
        z : ndarray, shape (D, B)
        out : ndarray, shape (D, B)
            Filled and returned.

        Returns
        -------
        ndarray, shape (D, B)
        """
        g1 = self._normals[: self.D]
        e1, t1, T11 = self.e1, self.t1, self.root[0]
        n1 = self._unit(z, e1)
        if not n1.all():  # A 0 = 0; any e_1 independent of A completes the construction
            e1[0, n1 == 0] = 1.0
        proj = np.einsum("ib,ib->b", e1, g1, out=self.dot)
        np.subtract(T11, proj, out=proj)
        np.multiply(e1, proj, out=t1)
        t1 += g1  # t_1 = T_11 e_1 + P_1 g_1
        np.multiply(n1, T11, out=self.n)
        return np.multiply(t1, self.n, out=out)

    def second(self, z: np.ndarray, out: np.ndarray) -> np.ndarray:
        """``out`` (D, B) = ``A z`` for ``z`` (D, B) that may depend on :meth:`first`'s result.

        Parameters
        ----------
        z : ndarray, shape (D, B)
        out : ndarray, shape (D, B)
            Filled and returned.

        Returns
        -------
        ndarray, shape (D, B)
        """
        D = self.D
        g2 = self._normals[D : 2 * D]
        e1, e2, t1, tmp, T22 = self.e1, self.e2, self.t1, self.tmp, self.root[1]
        a = np.einsum("ib,ib->b", e1, z, out=self.dot)
        np.multiply(e1, a, out=tmp)
        np.subtract(z, tmp, out=tmp)  # p = P_1 z
        n2 = self._unit(tmp, e2)
        # t_2 = T_22 e_2 + P_12 g_2 = g_2 - e_1 (e_1 . g_2) + e_2 (T_22 - e_2 . g_2), in tmp
        np.einsum("ib,ib->b", e1, g2, out=a)
        np.multiply(e1, a, out=tmp)
        np.subtract(g2, tmp, out=tmp)
        np.einsum("ib,ib->b", e2, g2, out=a)
        np.subtract(T22, a, out=a)
        np.multiply(e2, a, out=e2)
        tmp += e2
        n2 *= T22
        np.multiply(tmp, n2, out=tmp)
        np.einsum("ib,ib->b", t1, z, out=a)
        np.multiply(t1, a, out=out)
        out += tmp
        return out
