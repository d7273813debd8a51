"""Data model of the linear-transformer ICL problem (book chapter 1, 'The data model').

Inputs ``x ~ N(0, Sigma_x)`` with ``Sigma_x = U diag(s) U^T``; tasks
``W^mu = U diag(lambda^mu) U^T`` with ``lambda^mu_alpha ~ N(0, 1)`` i.i.d. (symmetric tasks
sharing the eigenbasis of ``Sigma_x``); a prompt holds ``N`` context pairs
``(x_i, y_i = W x_i + noise * e_i)`` and a query ``x_q`` whose label slot is 0:

    Z = [[x_1 .. x_N, x_q], [y_1 .. y_N, 0]]  in R^{2d x (N+1)}        (paper eq. 4)

Two exact samplers:

* :func:`sample_prompts` draws the ``N`` tokens (``O(B N d)`` random numbers);
* :func:`sample_statistics` draws only the sufficient statistic: the context Gram matrix
  ``N Sigma_hat ~ Wishart_d(N, Sigma_x)`` by the Bartlett decomposition,
  ``O(B d^2)`` random numbers whatever ``N`` is.

Both return batches with the same interface: ``C`` holds context *rows* ``[x_i^T, y_i^T]``
(``(B, m, 2d)``) whose Gram matrix ``C^T C`` is ``N`` times the context part of
``Gamma = Z Z^T / N``.  For prompts the rows are the ``m = N`` real tokens; for statistics they
are ``m = min(N, D)`` *virtual tokens* (``D = d``, or ``2d`` with label noise) with the same Gram
matrix in distribution.  The model and the training code only ever use ``C``, ``xq``, ``W``
and ``N``, so they treat both alike.

Every sampler takes an explicit :class:`numpy.random.Generator`; nothing uses global state.
"""

from __future__ import annotations

from dataclasses import dataclass
from numbers import Integral

import numpy as np

__all__ = [
    "covariance",
    "random_rotation",
    "DataConfig",
    "PromptBatch",
    "ContextStatistics",
    "sample_task_set",
    "sample_prompts",
    "sample_statistics",
    "wishart_factor",
]

_ORTHO_TOL = 1e-8


# ----------------------------------------------------------------------------- validation


def _check_s(s, name="s"):
    try:
        s = np.asarray(s, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a 1-D array of positive finite eigenvalues, got {s!r}")
    if s.ndim != 1 or s.size < 1:
        raise ValueError(
            f"{name} must be a 1-D array of positive finite eigenvalues, got shape {s.shape}"
        )
    if not np.all(np.isfinite(s)) or np.any(s <= 0):
        raise ValueError(f"{name} must hold positive finite eigenvalues, got {s}")
    return s


def _check_orthogonal(U, d, name="U"):
    if U is None:
        return None
    try:
        U = np.asarray(U, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be an orthogonal {d} x {d} matrix, got {U!r}")
    if U.shape != (d, d):
        raise ValueError(f"{name} must be an orthogonal {d} x {d} matrix, got shape {U.shape}")
    if not np.all(np.isfinite(U)):
        raise ValueError(f"{name} must hold finite values")
    err = np.max(np.abs(U.T @ U - np.eye(d)))
    if err > _ORTHO_TOL:
        raise ValueError(
            f"{name} must be orthogonal (U^T U = I to {_ORTHO_TOL:g}), deviation {err:.3g}"
        )
    return U


def _check_int(value, name, minimum):
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, Integral):
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    if value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value}")
    return int(value)


def _check_rng(rng):
    if not isinstance(rng, np.random.Generator):
        raise ValueError(
            f"rng must be a numpy.random.Generator (np.random.default_rng(seed)), got {type(rng).__name__}"
        )
    return rng


def _check_finite_array(a, name, shape=None):
    try:
        a = np.asarray(a, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a real array, got {a!r}")
    if shape is not None and a.shape != shape:
        raise ValueError(f"{name} must have shape {shape}, got {a.shape}")
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{name} must hold finite values")
    return a


# ----------------------------------------------------------------------------- covariances


def covariance(s, U=None):
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
    s = _check_s(s)
    U = _check_orthogonal(U, s.size)
    if U is None:
        return np.diag(s)
    Sigma = (U * s) @ U.T
    return 0.5 * (Sigma + Sigma.T)


def random_rotation(d, rng):
    """A Haar-distributed random orthogonal ``d x d`` matrix (QR of a Gaussian, sign-fixed)."""
    d = _check_int(d, "d", 1)
    rng = _check_rng(rng)
    Q, R = np.linalg.qr(rng.standard_normal((d, d)))
    return Q * np.where(np.diag(R) < 0, -1.0, 1.0)


# ----------------------------------------------------------------------------- configuration


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

    def __post_init__(self):
        s = _check_s(self.s)
        s.setflags(write=False)
        object.__setattr__(self, "s", s)
        object.__setattr__(self, "N", _check_int(self.N, "N", 1))
        U = _check_orthogonal(self.U, s.size)
        if U is not None:
            U = U.copy()
            U.setflags(write=False)
        object.__setattr__(self, "U", U)
        if self.P is not None:
            object.__setattr__(self, "P", _check_int(self.P, "P", 1))
        try:
            noise = float(self.noise)
        except (TypeError, ValueError):
            raise ValueError(f"noise must be a finite number >= 0, got {self.noise!r}")
        if not np.isfinite(noise) or noise < 0:
            raise ValueError(f"noise must be a finite number >= 0, got {self.noise!r}")
        object.__setattr__(self, "noise", noise)

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

    def __repr__(self):
        U = "None" if self.U is None else f"<{self.d}x{self.d} rotation>"
        return (
            f"DataConfig(s={np.array2string(self.s, precision=4)}, N={self.N}, U={U}, "
            f"P={self.P}, noise={self.noise})"
        )


# ----------------------------------------------------------------------------- batches


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
        return self.xq.shape[-1]

    @property
    def B(self) -> int:
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


# ----------------------------------------------------------------------------- sampling


def _task_eigenvalue_set(config, rng):
    """The ``(P, d)`` eigenvalues ``lambda^mu`` of a task set (the draws behind sample_task_set)."""
    if config.P is None:
        raise ValueError(
            "config.P is None (a fresh task for every prompt): there is no finite task set; "
            "set P to an integer >= 1"
        )
    return rng.standard_normal((config.P, config.d))


def _tasks_from_eigenvalues(lam, U):
    """``U diag(lam) U^T`` for every row of ``lam`` (shape (..., d)) -> (..., d, d)."""
    d = lam.shape[-1]
    if U is None:
        W = np.zeros(lam.shape + (d,))
        idx = np.arange(d)
        W[..., idx, idx] = lam
        return W
    W = np.matmul(U * lam[..., None, :], U.T)
    return 0.5 * (W + np.swapaxes(W, -1, -2))


def sample_task_set(config, rng):
    """Draw the ``P`` training tasks ``W^mu = U diag(lambda^mu) U^T``, ``lambda ~ N(0, 1)``.

    Book chapter 1, 'The data model'.  Requires ``config.P`` to be set.

    Returns
    -------
    ndarray, shape (P, d, d)
    """
    if not isinstance(config, DataConfig):
        raise ValueError(f"config must be a DataConfig, got {type(config).__name__}")
    rng = _check_rng(rng)
    return _tasks_from_eigenvalues(_task_eigenvalue_set(config, rng), config.U)


def _check_tasks(config, tasks):
    """Validate a task array against ``config``; return (tasks, eigenvalues or None).

    The eigenvalues are returned when every task is ``U diag(lambda) U^T`` in the config's
    basis (to round-off), which lets the samplers skip the ``d x d`` products.
    """
    d = config.d
    tasks = _check_finite_array(tasks, "tasks")
    if tasks.ndim != 3 or tasks.shape[1:] != (d, d) or tasks.shape[0] < 1:
        raise ValueError(f"tasks must have shape (P, {d}, {d}) with P >= 1, got {tasks.shape}")
    if config.P is not None and tasks.shape[0] != config.P:
        raise ValueError(f"tasks holds {tasks.shape[0]} tasks but config.P = {config.P}")
    U = config.basis
    T = np.matmul(np.matmul(U.T, tasks), U)
    lam = np.diagonal(T, axis1=1, axis2=2).copy()
    scale = max(1.0, float(np.max(np.abs(tasks))))
    off = T - _tasks_from_eigenvalues(lam, None)
    shared = np.max(np.abs(off)) <= 1e-12 * scale
    return tasks, (lam if shared else None)


class _Sampler:
    """Pre-validated sampler state shared by the public samplers and by ``train_sgd``.

    Draws are made in the eigenbasis of ``Sigma_x`` (whitened coordinates scaled by
    ``sqrt(s)``) and rotated by ``U`` once at the end: one matrix product for the whole batch.
    """

    def __init__(self, config, rng, tasks=None):
        if not isinstance(config, DataConfig):
            raise ValueError(f"config must be a DataConfig, got {type(config).__name__}")
        self.config = config
        self.rng = _check_rng(rng)
        self.d = config.d
        self.sqrt_s = np.sqrt(config.s)
        self.U = config.U
        self.noise = config.noise
        self.N = config.N
        self.tasks = None  # general task matrices (P, d, d), used when lam_set is None
        self.lam_set = None  # task eigenvalues (P, d) in the U basis
        self.fresh = False
        if tasks is not None:
            self.tasks, self.lam_set = _check_tasks(config, tasks)
        elif config.P is None:
            self.fresh = True
        else:
            raise ValueError(
                f"config.P = {config.P}: pass the task set explicitly, "
                "tasks=sample_task_set(config, rng), so that every batch uses the same tasks"
            )
        D = 2 * self.d if self.noise > 0 else self.d
        self.D = D
        self.m = min(self.N, D)
        # diagonal positions of the (m, D) upper-trapezoidal Bartlett factor, flattened
        self._flat_diag = np.arange(self.m) * (D + 1)
        self._gamma_shape = (self.N - np.arange(self.m)) / 2.0

    # -- tasks -----------------------------------------------------------------------------
    def _draw_tasks(self, B):
        """(lam (B, d) or None, W (B, d, d) or None)."""
        if self.fresh:
            return self.rng.standard_normal((B, self.d)), None
        idx = self.rng.integers(self.tasks.shape[0], size=B)
        if self.lam_set is not None:
            return self.lam_set[idx], None
        return None, self.tasks[idx]

    # -- context rows in the U basis, before labels -----------------------------------------
    def _bartlett_rows(self, B):
        """Rows ``G`` (B, m, D) with ``G^T G ~ Wishart_D(N, I)`` (generalised Bartlett).

        ``G`` is upper trapezoidal: ``G_jj = sqrt(chi^2_{N-j})`` (0-indexed ``j``), ``G_jk``
        standard normal for ``k > j``, zero below the diagonal.  For ``N >= D`` this is the
        transpose of the Bartlett factor; for ``N < D`` it is the ``R`` of the QR
        decomposition of an ``N x D`` Gaussian matrix, whose Gram matrix is the same.
        """
        m, D = self.m, self.D
        G = np.zeros((B, m, D))
        for j in range(m):  # row j: standard normals right of the diagonal
            if j + 1 < D:
                G[:, j, j + 1 :] = self.rng.standard_normal((B, D - 1 - j))
        chi = np.sqrt(2.0 * self.rng.standard_gamma(self._gamma_shape, (B, m)))
        G.reshape(B, m * D)[:, self._flat_diag] = chi
        return G

    def _token_rows(self, B):
        """Real whitened tokens (B, N, D)."""
        return self.rng.standard_normal((B, self.N, self.D))

    @property
    def shared_basis(self) -> bool:
        """True when every task is ``U diag(lambda) U^T`` (fresh tasks, or such a task set)."""
        return self.fresh or self.lam_set is not None

    def draw_whitened(self, B, method):
        """Raw draws in the eigenbasis, for tasks sharing it: ``(G, lam, gq)``.

        ``G`` (B, m, D): whitened context rows (``x = sqrt(s) * G[..., :d]`` in the U basis,
        noise ``e = G[..., d:]``); ``lam`` (B, d): task eigenvalues; ``gq`` (B, d): whitened
        queries.  Same random stream as :meth:`draw`.
        """
        G = self._bartlett_rows(B) if method == "statistics" else self._token_rows(B)
        lam, _ = self._draw_tasks(B)
        gq = self.rng.standard_normal((B, self.d))
        return G, lam, gq

    def draw(self, B, method, need_W=True):
        """Return ``(C, xq, target, W)``; ``W`` is None unless ``need_W``.

        ``method`` is ``"statistics"`` (virtual tokens) or ``"tokens"`` (real tokens).
        """
        d = self.d
        G = self._bartlett_rows(B) if method == "statistics" else self._token_rows(B)
        m = G.shape[1]
        lam, Wg = self._draw_tasks(B)
        gq = self.rng.standard_normal((B, d))

        # [x-part, y-part] of the context rows, and [xq, W xq], in the U basis when lam known
        C = np.empty((B, m, 2 * d))
        np.multiply(G[..., :d], self.sqrt_s, out=C[..., :d])
        Q = np.empty((B, 2, d))
        np.multiply(gq, self.sqrt_s, out=Q[:, 0])
        if lam is not None:
            np.multiply(C[..., :d], lam[:, None, :], out=C[..., d:])
            np.multiply(Q[:, 0], lam, out=Q[:, 1])
            if self.noise > 0:
                C[..., d:] += self.noise * G[..., d:]
            if self.U is not None:
                # one product rotates x-part, y-part, query and target together
                C = np.matmul(C.reshape(B, m, 2, d), self.U.T).reshape(B, m, 2 * d)
                Q = np.matmul(Q, self.U.T)
            W = _tasks_from_eigenvalues(lam, self.U) if need_W else None
        else:
            if self.U is not None:
                C[..., :d] = np.matmul(C[..., :d], self.U.T)
                Q[:, 0] = Q[:, 0] @ self.U.T
            np.matmul(C[..., :d], np.swapaxes(Wg, 1, 2), out=C[..., d:])
            if self.noise > 0:
                C[..., d:] += self.noise * G[..., d:]
            Q[:, 1] = np.einsum("bij,bj->bi", Wg, Q[:, 0])
            W = Wg
        return C, Q[:, 0], Q[:, 1], W


def _check_B(B):
    return _check_int(B, "B", 1)


def sample_prompts(config, B, rng, tasks=None):
    """Draw ``B`` prompts token by token (paper eq. 4; book chapter 1, 'The data model').

    Parameters
    ----------
    config : DataConfig
    B : int
        Number of prompts, ``>= 1``.
    rng : numpy.random.Generator
    tasks : ndarray, shape (P, d, d), optional
        Task set to draw from uniformly (e.g. from :func:`sample_task_set`).  Required when
        ``config.P`` is set; ``None`` with ``config.P = None`` draws a fresh task per prompt.

    Returns
    -------
    PromptBatch
        With ``X``, ``Y`` (B, N, d), ``xq`` (B, d), ``W`` (B, d, d) and ``Z`` (B, 2d, N+1).
    """
    B = _check_B(B)
    C, xq, _, W = _Sampler(config, rng, tasks).draw(B, "tokens")
    return PromptBatch(C=C, xq=xq, W=W)


def sample_statistics(config, B, rng, tasks=None):
    """Draw ``B`` prompts' sufficient statistics exactly.

    ``N Sigma_hat ~ Wishart_d(N, Sigma_x)`` is drawn by the Bartlett decomposition: with
    ``Sigma_x = L L^T`` (``L = U diag(sqrt(s))``) and an upper-trapezoidal ``G`` of
    ``m = min(N, d)`` rows (``G_jj^2 ~ chi^2_{N-j}``, standard normals above the diagonal),
    ``N Sigma_hat = L G^T G L^T``.  That costs ``O(d^2)`` random numbers per prompt for any
    ``N``.  For ``N < d`` the same ``G`` is the triangular factor of the QR decomposition of
    the ``N x d`` token matrix, so the sampler stays exact (and needs fewer numbers than the
    tokens).  With label noise the stacked ``[x; e]`` (dimension ``2d``) is drawn the same
    way.  The query ``x_q`` and the task ``W`` are drawn as in :func:`sample_prompts`.

    Returns
    -------
    ContextStatistics
        ``C`` holds the ``m`` virtual context rows (``Sigma_hat = X^T X / N``), plus ``xq``,
        ``W`` and ``N``.
    """
    B = _check_B(B)
    sampler = _Sampler(config, rng, tasks)
    C, xq, _, W = sampler.draw(B, "statistics")
    return ContextStatistics(C=C, xq=xq, W=W, N=config.N)


def wishart_factor(d, N, B, rng):
    """Upper-trapezoidal ``G`` (B, min(N, d), d) with ``G^T G ~ Wishart_d(N, I)``.

    The generalised Bartlett decomposition used by :func:`sample_statistics`, exposed for
    tests and for readers: ``G_jj = sqrt(chi^2_{N-j})``, standard normals above the diagonal.
    """
    d = _check_int(d, "d", 1)
    N = _check_int(N, "N", 1)
    B = _check_B(B)
    cfg = DataConfig(s=np.ones(d), N=N)
    return _Sampler(cfg, rng)._bartlett_rows(B)
