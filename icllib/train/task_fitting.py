r"""How the full model fits a finite task set: pathway sizes, ablations, the q2 drive (ch. 5b).

The prediction of the full linear transformer is the sum of four pathways
(:func:`icllib.model.pathways`, paper eq. 6):

    y_hat = p1 Gamma_xx q1 x_q          (in-weights: no task in it)
          + p1 Sigma_hat W^T q2 x_q     (linear in the task)
          + p2 W Sigma_hat q1 x_q       (in-context: the reduced model, eq. 8)
          + p2 W Sigma_hat W^T q2 x_q   (quadratic in the task).

:func:`pathway_losses` measures, on one sample of prompts, the loss of the model, the loss
with each pathway removed (an ablation: that pathway's term set to zero at the end of
training, nothing retrained) and the RMS size of each term.  Every quantity uses the same
prompts, so the differences between them carry no sampling noise of their own.

:func:`q2_drive` is the mean gradient of the training loss with respect to ``q2`` at a point
of the reduced manifold (book chapter 5b, proposition ``ch5b-odd``): it is diagonal and is
driven by the set's third moments ``T_{b d d} = (1/P) sum_mu lambda^mu_b (lambda^mu_d)^2``,
which vanish for fresh tasks.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..data import DataConfig, sample_statistics
from ..model import Params, pathways
from ..validation import (
    check_array,
    check_generator,
    check_instance,
    check_int,
    check_modes,
    check_spectrum,
)

__all__ = ["PATHWAYS", "PathwayLosses", "pathway_losses", "mean_pathway_losses",
           "task_third_moments", "q2_drive"]

#: the four pathways of the prediction, in the order of :class:`icllib.model.Pathways`
PATHWAYS = ("p1_q1", "p1_q2", "p2_q1", "p2_q2")


@dataclass(frozen=True)
class PathwayLosses:
    """Loss, ablated losses and pathway sizes of one model on one sample of prompts.

    Attributes
    ----------
    loss : float
        Mean loss ``1/2 |W x_q - y_hat|^2``.
    loss_se : float
        Its standard error (spread of the per-prompt losses over ``sqrt(n)``).
    ablated : ndarray (4,)
        Mean loss with pathway ``k`` (order :data:`PATHWAYS`) removed from ``y_hat``.
    ablated_se : ndarray (4,)
        Standard error of ``ablated - loss`` (paired: the same prompts).
    rms : ndarray (4,)
        ``sqrt(E |pathway_k|^2)``, the size of each term of the prediction.
    target_rms : float
        ``sqrt(E |W x_q|^2)``, the size of the target, for scale.
    """

    loss: float
    loss_se: float
    ablated: np.ndarray
    ablated_se: np.ndarray
    rms: np.ndarray
    target_rms: float


def pathway_losses(params, config, n, rng, *, tasks=None, batch=4096) -> PathwayLosses:
    r"""Loss, loss with each pathway removed, and RMS of each pathway, on ``n`` prompts.

    Prompts come from the task set ``tasks`` (training prompts) or, with ``tasks=None``,
    each with a fresh task (test prompts); exact sufficient statistics
    (:func:`icllib.data.sample_statistics`), noise-free labels.

    Parameters
    ----------
    params : Params
    config : DataConfig
        Its ``P`` is ignored; ``tasks`` decides.
    n : int
        Number of prompts, ``>= 2``.
    rng : numpy.random.Generator
    tasks : ndarray (P, d, d), optional
    batch : int
        Prompts per call.

    Returns
    -------
    PathwayLosses
    """
    check_instance("params", params, Params, "an icllib.model.Params")
    check_instance("config", config, DataConfig)
    n = check_int("n", n, 2)
    rng = check_generator("rng", rng)
    batch = check_int("batch", batch, 1)
    if config.noise > 0:
        raise ValueError("pathway_losses needs noise-free labels (config.noise = 0), got "
                         f"noise = {config.noise}")
    P = None if tasks is None else np.shape(tasks)[0]
    cfg = DataConfig(s=config.s, N=config.N, U=config.U, P=P)
    full, drops, sq, tsq = [], [], [], []
    for lo in range(0, n, batch):
        b = sample_statistics(cfg, min(batch, n - lo), rng, tasks=tasks)
        terms = np.stack(pathways(b.Sigma_hat, b.W, b.xq, params, cfg.N))   # (4, B, d)
        resid = b.target - terms.sum(axis=0)                               # (B, d)
        full.append(0.5 * np.sum(resid ** 2, axis=-1))
        # removing term k adds it back to the residual
        drops.append(0.5 * np.sum((resid[None] + terms) ** 2, axis=-1))    # (4, B)
        sq.append(np.sum(terms ** 2, axis=-1))
        tsq.append(np.sum(b.target ** 2, axis=-1))
    full, drops = np.concatenate(full), np.concatenate(drops, axis=1)
    sq, tsq = np.concatenate(sq, axis=1), np.concatenate(tsq)
    diff = drops - full[None]
    return PathwayLosses(
        loss=float(full.mean()), loss_se=float(full.std(ddof=1) / np.sqrt(n)),
        ablated=drops.mean(axis=1), ablated_se=diff.std(axis=1, ddof=1) / np.sqrt(n),
        rms=np.sqrt(sq.mean(axis=1)), target_rms=float(np.sqrt(tsq.mean())))


def mean_pathway_losses(models, config, n, seed, *, tasks=None) -> PathwayLosses:
    r""":func:`pathway_losses` averaged over several models (e.g. late SGD iterates).

    Every model is evaluated on the same ``n`` prompts (``numpy.random.default_rng(seed)``
    afresh for each), and each field is averaged over the models; the standard errors are
    the models' mean standard error (the prompts are shared, so they do not shrink).

    Averaging *losses* over iterates, not parameters, keeps the measure meaningful when a
    mode changes pathway between the iterates (book chapter 2): the average of two models
    that carry a mode through different pathways is neither of them.

    Parameters
    ----------
    models : sequence of Params
    config : DataConfig
    n : int
    seed : int or sequence of int
        Seed of the prompts' generator.
    tasks : ndarray (P, d, d), optional

    Returns
    -------
    PathwayLosses
    """
    models = list(models)
    if not models:
        raise ValueError("models must hold at least one Params")
    res = [pathway_losses(m, config, n, np.random.default_rng(seed), tasks=tasks)
           for m in models]

    def mean(f):
        return np.mean([np.asarray(getattr(r, f), float) for r in res], axis=0)

    return PathwayLosses(loss=float(mean("loss")), loss_se=float(mean("loss_se")),
                         ablated=mean("ablated"), ablated_se=mean("ablated_se"),
                         rms=mean("rms"), target_rms=float(mean("target_rms")))


def task_third_moments(lam):
    r"""Third moments ``T[b, d] = (1/P) sum_mu lambda^mu_b (lambda^mu_d)^2`` of a task set.

    The diagonal ``T[b, b]`` holds the odd moments ``(1/P) sum_mu (lambda^mu_b)^3``.  For fresh
    tasks (``lambda ~ N(0, I)``) every entry has mean zero; for a set of ``P`` tasks each is a
    mean of ``P`` independent terms, of variance ``15/P`` on the diagonal and ``3/P`` off it.

    Parameters
    ----------
    lam : array_like, shape (P, d)
        Task eigenvalues (the diagonals of the tasks in the eigenbasis).

    Returns
    -------
    ndarray, shape (d, d)
    """
    lam = check_array("lam", lam)
    if lam.ndim != 2 or lam.shape[0] < 1:
        raise ValueError(f"lam must have shape (P, d) with P >= 1, got {lam.shape}")
    return np.einsum("mb,md->bd", lam, lam ** 2) / lam.shape[0]


def q2_drive(p, q, s, N, lam):
    r"""Mean gradient of the training loss w.r.t. ``q2`` on the reduced manifold (its diagonal).

    At ``p2 = diag(p)``, ``q1 = diag(q)``, ``p1 = q2 = 0`` (eigenbasis) the gradient of the
    mean loss over a task set with eigenvalues ``lam`` is diagonal (book chapter 5b,
    proposition ``ch5b-odd``), with

        g_b = s_b^2 [ T_bb p_b ((N+2)/N s_b a_b - 1) + (q_b / N) sum_{d != b} T_bd s_d p_d^2 ],

    ``a_b = p_b q_b`` and ``T`` the third moments (:func:`task_third_moments`).  Near the
    saddle this is ``-T_bb s_b^2 p_b``: the odd moment of mode ``b`` drives ``q2`` as the mean
    task drives ``p1`` (there the ``p1`` drive is ``-lambda_bar_b h_b`` with
    ``h_b = (N+2)/N s_b^2 q_b + s_b sum_c s_c q_c / N``, proposition ``ch5b-drive``).  As the
    modes grow, the own term changes at relative order ``a`` (the factor ``(N+2)/N s_b a_b``)
    and the mixed moments enter at relative order ``a / N`` (absolute ``a^{3/2} / N``).

    Parameters
    ----------
    p, q : array_like, shape (d,)
    s : array_like, shape (d,)
    N : int
    lam : array_like, shape (P, d)

    Returns
    -------
    ndarray, shape (d,)
        The diagonal of ``d l_P / d q2`` (its off-diagonal entries are zero).
    """
    s = check_spectrum("s", s)
    N = check_int("N", N, 1)
    p = check_modes("p", p, s.size)
    q = check_modes("q", q, s.size)
    lam = check_array("lam", lam, (None, s.size))
    T = task_third_moments(lam)
    own = np.diag(T) * p * ((N + 2) / N * s * p * q - 1.0)
    off = T - np.diag(np.diag(T))
    mixed = q / N * (off @ (s * p * p))
    return s ** 2 * (own + mixed)
