"""Training tasks ``W^mu = U diag(lambda^mu) U^T`` (book chapter 1, 'The data model').

Tasks share the eigenbasis ``U`` of ``Sigma_x`` and have i.i.d. standard normal eigenvalues
``lambda^mu_alpha ~ N(0, 1)``: a finite task set of ``P`` of them (:func:`sample_task_set`), or
a fresh task for every prompt (``P = None``, drawn by the samplers).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from ..validation import check_array, check_generator, check_instance
from .config import DataConfig

__all__ = ["task_matrices", "sample_task_set", "task_set_eigenvalues"]


def task_matrices(lam: np.ndarray, U: np.ndarray | None) -> np.ndarray:
    """``U diag(lam) U^T`` for every row of ``lam``.

    Parameters
    ----------
    lam : ndarray, shape (..., d)
        Task eigenvalues.
    U : ndarray, shape (d, d), or None
        The eigenbasis; ``None`` is the identity (then the result is exactly diagonal).

    Returns
    -------
    ndarray, shape (..., d, d)
    """
    d = lam.shape[-1]
    if U is None:
        W = np.zeros(lam.shape + (d,))
        idx = np.arange(d)
        W[..., idx, idx] = lam
        return W
    W = np.matmul(U * lam[..., None, :], U.T)
    return 0.5 * (W + np.swapaxes(W, -1, -2))


def sample_task_set(config: DataConfig, rng: np.random.Generator) -> np.ndarray:
    """Draw the ``P`` training tasks ``W^mu = U diag(lambda^mu) U^T``, ``lambda ~ N(0, 1)``.

    Book chapter 1, 'The data model'.  Requires ``config.P`` to be set.

    Parameters
    ----------
    config : DataConfig
    rng : numpy.random.Generator

    Returns
    -------
    ndarray, shape (P, d, d)
    """
    check_instance("config", config, DataConfig)
    rng = check_generator("rng", rng)
    if config.P is None:
        raise ValueError(
            "config.P is None (a fresh task for every prompt): there is no finite task set; "
            "set P to an integer >= 1"
        )
    return task_matrices(rng.standard_normal((config.P, config.d)), config.U)


def task_set_eigenvalues(config: DataConfig,
                         tasks: ArrayLike) -> tuple[np.ndarray, np.ndarray | None]:
    """Validate a task set against ``config``; return ``(tasks, eigenvalues or None)``.

    The eigenvalues ``(P, d)`` are returned when every task is ``U diag(lambda) U^T`` in the
    config's basis (to round-off), which lets the samplers skip the ``d x d`` products;
    ``None`` for general task matrices.

    Parameters
    ----------
    config : DataConfig
    tasks : array_like, shape (P, d, d)
        ``P`` must match ``config.P`` when that is set.

    Returns
    -------
    tasks : ndarray, shape (P, d, d)
        The validated task set, float64.
    eigenvalues : ndarray, shape (P, d), or None
        Each task's eigenvalues in the config's basis, or None when the tasks do not share it.
    """
    d = config.d
    tasks = check_array("tasks", tasks)
    if tasks.ndim != 3 or tasks.shape[1:] != (d, d) or tasks.shape[0] < 1:
        raise ValueError(f"tasks must have shape (P, {d}, {d}) with P >= 1, got {tasks.shape}")
    if config.P is not None and tasks.shape[0] != config.P:
        raise ValueError(f"tasks holds {tasks.shape[0]} tasks but config.P = {config.P}")
    U = config.basis
    T = np.matmul(np.matmul(U.T, tasks), U)
    lam = np.diagonal(T, axis1=1, axis2=2).copy()
    scale = max(1.0, float(np.max(np.abs(tasks))))
    off = T - task_matrices(lam, None)
    shared = np.max(np.abs(off)) <= 1e-12 * scale
    return tasks, (lam if shared else None)
