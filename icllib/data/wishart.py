"""The exact Wishart sampler of the context statistic (book chapter 1, 'The data model').

A prompt's context enters the model only through its Gram matrix ``sum_i z_i z_i^T``; for
Gaussian tokens that is Wishart distributed and can be drawn without the ``N`` tokens, by the
generalised Bartlett decomposition: ``O(d^2)`` random numbers per prompt whatever ``N`` is.

The batch axis is *last* here (``(m, D, B)``): every operation of the SGD step then runs over
contiguous length-``B`` rows (see :class:`icllib.train.gradients.WhitenedGradients`).  The
diagonal's chi-square draws with few degrees of freedom (those of the short contexts the book
trains on) are sums of exponentials ``-2 ln U`` and a squared normal, exact and cheaper than
numpy's gamma sampler; the others come from that sampler.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from ..validation import check_generator, check_int
from .draws import standard_normal

__all__ = ["ERLANG_MAX_DOF", "upper_count", "normal_count", "bartlett_factor", "wishart_factor"]


#: diagonal entries with at most this many degrees of freedom are drawn as sums of exponentials
#: and a squared normal (cheaper than numpy's gamma sampler there); larger ones by the gamma
ERLANG_MAX_DOF = 16


def upper_count(N: int, D: int) -> int:
    """Number of strictly-upper entries of the ``min(N, D) x D`` Bartlett factor.

    Parameters
    ----------
    N : int
        Degrees of freedom (the context length).
    D : int
        Dimension.

    Returns
    -------
    int
    """
    m = min(N, D)
    return m * (D - 1) - m * (m - 1) // 2


@lru_cache(maxsize=64)
def _plan(N, D):
    """Index arrays and counts for drawing the Bartlett factor of ``(N, D)``."""
    m = min(N, D)
    i, j = np.triu_indices(m, 1, D)
    dof = N - np.arange(m)  # non-increasing
    j0 = int(np.count_nonzero(dof > ERLANG_MAX_DOF))  # rows j0.. are drawn the Erlang way
    halves = dof[j0:] // 2  # exponentials per row, non-increasing
    layers = tuple(int(np.count_nonzero(halves > ell)) for ell in range(int(halves.max(initial=0))))
    odd_rows = j0 + np.flatnonzero(dof[j0:] % 2)
    return {
        "m": m,
        "upper": i * D + j,  # flat row indices into (m * D, B)
        "diag": np.arange(m) * (D + 1),
        "gamma_shape": (dof[:j0] / 2.0)[:, None],
        "j0": j0,
        "layers": layers,
        "odd_rows": odd_rows,
        "normals": i.size + odd_rows.size,
    }


def normal_count(N: int, D: int) -> int:
    """Standard normals per factor used by :func:`bartlett_factor`.

    :func:`upper_count`, plus one for every diagonal entry with an odd number of degrees of
    freedom up to ``ERLANG_MAX_DOF``.

    Parameters
    ----------
    N : int
        Degrees of freedom (the context length).
    D : int
        Dimension.

    Returns
    -------
    int
    """
    return _plan(N, D)["normals"]


def _chi_square_diagonal(rng, plan, z_odd, out):
    """``out`` (m, B) = chi-square draws with ``N - j`` degrees of freedom in row ``j``.

    ``chi^2_k = -2 ln(U_1 ... U_{k//2}) (+ Z^2 when k is odd)`` with independent uniforms
    ``U`` on (0, 1] and a standard normal ``Z`` (exponentials and squared normals add up to a
    chi-square) for ``k <= ERLANG_MAX_DOF``; ``2 Gamma(k/2)`` from numpy beyond.
    """
    B = out.shape[1]
    j0, layers = plan["j0"], plan["layers"]
    small = out[j0:]
    small[:] = 1.0
    if layers:
        u = rng.random((sum(layers), B))
        np.subtract(1.0, u, out=u)  # in (0, 1]
        start = 0
        for count in layers:  # the rows with more than ell exponentials are a prefix
            small[:count] *= u[start : start + count]
            start += count
    np.log(small, out=small)
    small *= -2.0
    if plan["odd_rows"].size:
        out[plan["odd_rows"]] += z_odd * z_odd
    if j0:
        rng.standard_gamma(plan["gamma_shape"], size=(j0, B), out=out[:j0])
        out[:j0] *= 2.0
    return out


def bartlett_factor(rng: np.random.Generator, N: int, D: int, B: int, *,
                    normals: np.ndarray | None = None, out: np.ndarray | None = None,
                    scratch: np.ndarray | None = None) -> np.ndarray:
    """``G`` (m, D, B), ``m = min(N, D)``, with ``G[..., b]^T G[..., b] ~ Wishart_D(N, I)``.

    ``G`` is upper trapezoidal: ``G_jj = sqrt(chi^2_{N-j})`` (0-indexed ``j``), ``G_jk``
    standard normal for ``k > j``, zero below the diagonal.  For ``N >= D`` this is the
    transpose of the Bartlett factor; for ``N < D`` it is the ``R`` of the QR decomposition
    of an ``N x D`` Gaussian matrix, whose Gram matrix is the same.  Arguments are not
    validated (see :func:`wishart_factor`).

    Parameters
    ----------
    rng : numpy.random.Generator
    N, D, B : int
        Degrees of freedom, dimension and number of factors.
    normals : ndarray, shape (normal_count(N, D), B), optional
        Standard normals: the strictly-upper entries row by row, then one per odd diagonal
        (drawn from ``rng`` by :func:`icllib.data.draws.standard_normal` when not given).
    out : ndarray, shape (m, D, B), optional
        Array to fill whose entries below the diagonal are zero (e.g. an earlier result).
    scratch : ndarray, shape (m, B), optional
        Work space for the chi-square draws (saves an allocation in a training loop).

    Returns
    -------
    ndarray, shape (m, D, B)

    Notes
    -----
    The random stream: the normals (when drawn here), then the uniforms of the diagonal
    entries with at most ``ERLANG_MAX_DOF`` degrees of freedom, then numpy's gamma draws for
    the others.
    """
    plan = _plan(N, D)
    m, upper = plan["m"], plan["upper"]
    if out is None:
        out = np.zeros((m, D, B))
    if normals is None:
        normals = standard_normal(rng, (plan["normals"], B))
    if scratch is None:
        scratch = np.empty((m, B))
    flat = out.reshape(m * D, B)
    flat[upper] = normals[: upper.size]
    chi2 = _chi_square_diagonal(rng, plan, normals[upper.size :], scratch)
    flat[plan["diag"]] = np.sqrt(chi2, out=chi2)
    return out


def wishart_factor(d: int, N: int, B: int, rng: np.random.Generator) -> np.ndarray:
    """Upper-trapezoidal ``G`` (B, min(N, d), d) with ``G^T G ~ Wishart_d(N, I)``.

    The generalised Bartlett decomposition used by :func:`icllib.data.sample_statistics`,
    exposed for tests and for readers: ``G_jj = sqrt(chi^2_{N-j})``, standard normals above
    the diagonal.

    Parameters
    ----------
    d : int
        Dimension, ``>= 1``.
    N : int
        Degrees of freedom (the context length), ``>= 1``.
    B : int
        Number of independent factors, ``>= 1``.
    rng : numpy.random.Generator

    Returns
    -------
    ndarray, shape (B, min(N, d), d)
    """
    d = check_int("d", d, 1)
    N = check_int("N", N, 1)
    B = check_int("B", B, 1)
    rng = check_generator("rng", rng)
    return np.ascontiguousarray(np.moveaxis(bartlett_factor(rng, N, d, B), -1, 0))
