"""The two exact prompt samplers and their shared state (book chapter 1, 'The data model').

* :func:`sample_prompts` draws the ``N`` tokens (``O(B N d)`` random numbers);
* :func:`sample_statistics` draws only the sufficient statistic, the context Gram matrix
  ``N Sigma_hat ~ Wishart_d(N, Sigma_x)``, by the Bartlett decomposition
  (:mod:`icllib.data.wishart`): ``O(B d^2)`` random numbers whatever ``N`` is.

Normals come from the vectorised Box-Muller transform of :mod:`icllib.data.draws`.

Both go through a :class:`PromptSampler`, which :func:`icllib.train.train_sgd` also uses, so
that training and the public samplers consume the same random stream.  Every sampler takes an
explicit :class:`numpy.random.Generator`; nothing uses global state.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from ..validation import check_generator, check_instance, check_int
from .batches import ContextStatistics, PromptBatch
from .config import DataConfig
from .draws import standard_normal
from .gram_actions import GramActions
from .tasks import task_matrices, task_set_eigenvalues
from .wishart import bartlett_factor, normal_count

__all__ = ["PromptSampler", "sample_prompts", "sample_statistics"]


class PromptSampler:
    """Pre-validated sampler state shared by the public samplers and by ``train_sgd``.

    Draws are made in the eigenbasis of ``Sigma_x`` (whitened coordinates scaled by
    ``sqrt(s)``) and rotated by ``U`` once at the end: one matrix product for the whole batch.

    Parameters
    ----------
    config : DataConfig
    rng : numpy.random.Generator
    tasks : array_like, shape (P, d, d), optional
        Task set to draw from uniformly; required when ``config.P`` is set, ``None`` with
        ``config.P = None`` draws a fresh task per prompt.
    """

    def __init__(self, config: DataConfig, rng: np.random.Generator,
                 tasks: ArrayLike | None = None) -> None:
        check_instance("config", config, DataConfig)
        self.config = config
        self.rng = check_generator("rng", rng)
        self.d = config.d
        self.sqrt_s = np.sqrt(config.s)
        self.U = config.U
        self.noise = config.noise
        self.N = config.N
        self.tasks = None  # general task matrices (P, d, d), used when lam_set is None
        self.lam_set = None  # task eigenvalues (P, d) in the U basis
        self.fresh = False
        if tasks is not None:
            self.tasks, self.lam_set = task_set_eigenvalues(config, tasks)
        elif config.P is None:
            self.fresh = True
        else:
            raise ValueError(
                f"config.P = {config.P}: pass the task set explicitly, "
                "tasks=sample_task_set(config, rng), so that every batch uses the same tasks"
            )
        self.D = 2 * self.d if self.noise > 0 else self.d
        self.m = min(self.N, self.D)

    # -- raw draws -------------------------------------------------------------------------
    def draw_raw(self, B: int, method: str, buffers: dict | None = None) -> tuple[
            np.ndarray | GramActions, np.ndarray | None, np.ndarray | None, np.ndarray]:
        """One batch of raw draws in the eigenbasis, batch axis last: ``(G, lam, W, gq)``.

        ``G`` (rows, D, B): whitened context rows, ``x = sqrt(s) * G[:, :d]`` in the U basis
        and noise ``e = G[:, d:]`` (the Bartlett factor of :mod:`icllib.data.wishart` for
        ``method="statistics"``, the real tokens for ``"tokens"``; for ``"actions"`` a
        :class:`icllib.data.gram_actions.GramActions`, which draws only the Gram matrix's
        action on the two vectors an SGD step needs); ``lam`` (d, B): the task
        eigenvalues when the tasks share the basis, else None and ``W`` (B, d, d) the task
        matrices; ``gq`` (d, B): whitened queries.  ``buffers``: a dict in which the sampler
        keeps its work arrays between calls with the same ``B`` and ``method`` (a training
        loop passes the same one every step; the returned arrays are then overwritten by the
        next call).

        The random stream of a batch follows the data model's order: the context (the
        normals of :func:`icllib.data.draws.standard_normal`, then for the statistics the
        chi-square diagonal of :func:`icllib.data.wishart.bartlett_factor`), then the tasks
        (normal eigenvalues, or the indices into a task set), then the queries.  For
        ``"actions"`` with fresh tasks the task eigenvalues and queries are drawn in the same
        call as the context's normals (:meth:`icllib.data.gram_actions.GramActions.draw`).

        Parameters
        ----------
        B : int
            Number of prompts (not validated: the callers have).
        method : {"statistics", "tokens", "actions"}
        buffers : dict, optional
            Work arrays kept between calls (see above).

        Returns
        -------
        G : ndarray (rows, D, B) or GramActions
        lam : ndarray (d, B) or None
        W : ndarray (B, d, d) or None
        gq : ndarray (d, B)
        """
        d = self.d
        n_ctx = normal_count(self.N, self.D) if method == "statistics" else self.N * self.D
        n_last = 2 * d if self.fresh else d  # [fresh task eigenvalues,] queries
        buf = {} if buffers is None else buffers
        if buf.get("key") != (method, n_ctx, B):
            buf.clear()
            buf["key"] = (method, n_ctx, B)
        if method == "actions":  # with fresh tasks, their normals come in the same call
            if "acts" not in buf:
                buf["acts"] = GramActions(self.N, self.D, B, extra=n_last if self.fresh else 0)
            G = buf["acts"].draw(self.rng)
        elif method == "statistics":
            Z = buf["Z"] = standard_normal(self.rng, (n_ctx, B), out=buf.get("Z"))
            chi = buf.setdefault("chi", np.empty((self.m, B)))
            G = buf["G"] = bartlett_factor(self.rng, self.N, self.D, B, normals=Z,
                                           out=buf.get("G"), scratch=chi)
        else:
            Z = buf["Z"] = standard_normal(self.rng, (n_ctx, B), out=buf.get("Z"))
            G = Z.reshape(self.N, self.D, B)
        lam = W = None
        if not self.fresh:
            idx = self.rng.integers(self.tasks.shape[0], size=B)
            if self.lam_set is not None:
                lam = self.lam_set.T[:, idx]  # (d, B), contiguous
            else:
                W = self.tasks[idx]
        if method == "actions" and self.fresh:
            last = G.extra
        else:
            last = buf["last"] = standard_normal(self.rng, (n_last, B), out=buf.get("last"))
        if self.fresh:
            lam = last[:d]
        return G, lam, W, last[-d:]

    @property
    def shared_basis(self) -> bool:
        """True when every task is ``U diag(lambda) U^T`` (fresh tasks, or such a task set)."""
        return self.fresh or self.lam_set is not None

    def draw(self, B: int, method: str,
             need_W: bool = True) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray | None]:
        """Return ``(C, xq, target, W)`` with the batch axis first; ``W`` is None unless ``need_W``.

        ``method`` is ``"statistics"`` (virtual tokens) or ``"tokens"`` (real tokens).  Same
        random stream as :meth:`draw_raw`.

        Parameters
        ----------
        B : int
            Number of prompts.
        method : {"statistics", "tokens"}
        need_W : bool
            Form the task matrices (``W`` is None otherwise, when the tasks share the basis).

        Returns
        -------
        C : ndarray, shape (B, m, 2d)
            Context rows.
        xq : ndarray, shape (B, d)
            Queries.
        target : ndarray, shape (B, d)
            ``W x_q``.
        W : ndarray, shape (B, d, d), or None
        """
        if method not in ("statistics", "tokens"):
            raise ValueError(f"method must be 'statistics' or 'tokens', got {method!r}")
        d = self.d
        G, lam, Wg, gq = self.draw_raw(B, method)
        G = np.moveaxis(G, -1, 0)  # (B, m, D)
        m = G.shape[1]
        gq = gq.T
        lam = None if lam is None else lam.T

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
            W = task_matrices(lam, self.U) if need_W else None
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


def sample_prompts(config: DataConfig, B: int, rng: np.random.Generator,
                   tasks: ArrayLike | None = None) -> PromptBatch:
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
    B = check_int("B", B, 1)
    C, xq, _, W = PromptSampler(config, rng, tasks).draw(B, "tokens")
    return PromptBatch(C=C, xq=xq, W=W)


def sample_statistics(config: DataConfig, B: int, rng: np.random.Generator,
                      tasks: ArrayLike | None = None) -> ContextStatistics:
    """Draw ``B`` prompts' sufficient statistics exactly.

    ``N Sigma_hat ~ Wishart_d(N, Sigma_x)`` is drawn by the Bartlett decomposition: with
    ``Sigma_x = L L^T`` (``L = U diag(sqrt(s))``) and an upper-trapezoidal ``G`` of
    ``m = min(N, d)`` rows (``G_jj^2 ~ chi^2_{N-j}``, standard normals above the diagonal),
    ``N Sigma_hat = L G^T G L^T``.  That costs ``O(d^2)`` random numbers per prompt for any
    ``N``.  For ``N < d`` the same ``G`` is the triangular factor of the QR decomposition of
    the ``N x d`` token matrix, so the sampler stays exact (and needs fewer numbers than the
    tokens).  With label noise the stacked ``[x; e]`` (dimension ``2d``) is drawn the same
    way.  The query ``x_q`` and the task ``W`` are drawn as in :func:`sample_prompts`.

    Parameters
    ----------
    config, B, rng, tasks
        As in :func:`sample_prompts`.

    Returns
    -------
    ContextStatistics
        ``C`` holds the ``m`` virtual context rows (``Sigma_hat = X^T X / N``), plus ``xq``,
        ``W`` and ``N``.
    """
    B = check_int("B", B, 1)
    C, xq, _, W = PromptSampler(config, rng, tasks).draw(B, "statistics")
    return ContextStatistics(C=C, xq=xq, W=W, N=config.N)
