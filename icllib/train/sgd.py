"""Online SGD on the full linear transformer, and what it records (book chapters 2-4).

Every step of :func:`train_sgd` draws ``B`` fresh prompts and takes
``theta -> theta - eta grad L`` with ``L`` the batch-**mean** loss
(:mod:`icllib.train.gradients`), so the time constant of mode ``alpha`` is
``tau_alpha = 1 / (eta s_alpha^2)`` **SGD steps** (book chapter 4, ``convention="steps"`` in
:mod:`icllib.theory`).

When the tasks share the eigenbasis ``U`` of ``Sigma_x`` (fresh tasks, or a task set from
:func:`icllib.data.sample_task_set`), the loop runs in that basis: the model is equivariant
under ``R = diag(U, U)`` (``Gamma -> R Gamma R^T``, loss unchanged), so SGD on
``R^T W^P R, R^T W^Q R`` with eigenbasis data is the same SGD, and there the labels are
``lambda * x`` elementwise: no ``d x d`` product per prompt at all.  Tests check this path
against the original-basis code step by step.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

try:  # optional: hold BLAS to one thread inside the SGD loop (see train_sgd)
    from threadpoolctl import threadpool_limits
except ImportError:  # pragma: no cover
    threadpool_limits = None

from ..data import DataConfig, PromptSampler, sample_task_set
from ..data.wishart import ERLANG_MAX_DOF, upper_count
from ..model import Params
from ..theory import conserved_quantity
from ..validation import check_choice, check_generator, check_instance, check_int, check_positive
from .gradients import WhitenedGradients, block_grads
from .stability import DIVERGENCE_FACTOR, DivergenceError, stable_eta

if TYPE_CHECKING:
    from .run_groups import PriceRun, StoredRun

__all__ = ["ModeProducts", "Recording", "train_sgd", "auto_sampler", "pathway_products",
           "mode_products"]

#: the samplers of :func:`train_sgd` (see :mod:`icllib.data.sampler`); "auto" picks the faster
#: exact one of "statistics" and "actions" (:func:`auto_sampler`)
SAMPLERS = ("auto", "statistics", "tokens", "actions")


def auto_sampler(N, D, shared_basis) -> str:
    """The sampler ``sampler="auto"`` of :func:`train_sgd` runs: the faster exact one.

    ``"actions"`` (:mod:`icllib.data.gram_actions`) draws ``2 D`` normals and two chi-squares
    per prompt; the Bartlett factor of ``"statistics"`` (:mod:`icllib.data.wishart`) draws
    ``upper_count(N, D)`` normals and ``min(N, D)`` chi-squares, but its two contractions are
    a handful of array operations where the actions need a few dozen.  So the factor is
    faster when it needs no more normals than the actions and all its chi-squares are sums
    of exponentials (``N <= ERLANG_MAX_DOF``), e.g. ``D = 4``, ``N = 10`` (the book's running
    example); the actions are faster otherwise (``bench/bench_sgd.py``: at ``d = 16``,
    ``N = 10``, ``B = 4096`` about twice as fast).  ``"actions"`` needs tasks that share
    the eigenbasis of ``Sigma_x`` (``shared_basis``); without, ``"statistics"``.

    Parameters
    ----------
    N : int
        Context length.
    D : int
        Dimension of the whitened context rows (``d``, or ``2 d`` with label noise).
    shared_basis : bool
        Whether every task is diagonal in the eigenbasis of ``Sigma_x``.
    """
    if not shared_basis:
        return "statistics"
    if upper_count(N, D) <= 2 * D and N <= ERLANG_MAX_DOF:
        return "statistics"
    return "actions"


class ModeProducts:
    """The mode products of a run, one definition for every kind of run (:class:`Recording`,
    the stored runs of :mod:`icllib.train.run_groups`): ``a`` sums both pathways
    (:func:`mode_products`), ``via_p2q1`` and ``via_p1q2`` are each pathway alone
    (:func:`pathway_products`); all float64, shape (T, d), at the run's recorded steps."""

    @property
    def a(self) -> np.ndarray:
        """Mode products ``a_alpha``, both pathways (:func:`mode_products`), shape (T, d)."""
        return mode_products(self)

    @property
    def via_p2q1(self) -> np.ndarray:
        """The ``(p2)_aa (q1)_aa`` pathway of each mode alone (:func:`pathway_products`)."""
        return pathway_products(self)[0]

    @property
    def via_p1q2(self) -> np.ndarray:
        """The ``(p1)_aa (q2)_aa`` pathway of each mode alone (:func:`pathway_products`)."""
        return pathway_products(self)[1]


@dataclass(eq=False)
class Recording(ModeProducts):
    """What :func:`train_sgd` records every ``record_every`` steps.

    Matrices are stored **in the U basis** (``U^T M U``), so their diagonals are the mode
    amplitudes of the reduced theory.  Time is in SGD steps with the batch-mean loss, so
    ``tau_alpha = 1 / (eta s_alpha^2)`` steps.

    Attributes
    ----------
    steps : ndarray (T,)
        Number of SGD updates applied before the record (0 = the initialisation).
    p1, p2, q1, q2 : ndarray (T, d, d)
        The four reachable blocks, in the U basis.
    loss : ndarray (T,)
        Batch-mean loss of a fresh batch at the recorded parameters (the batch of the next
        update; a noisy estimate of the expected loss).
    conserved : ndarray (T,)
        ``||W^P_y||_F^2 - ||W^Q_{:,x}||_F^2`` (book chapter 3, 'The conservation law').
    params : Params
        The final parameters (original basis).
    """

    steps: np.ndarray
    p1: np.ndarray
    p2: np.ndarray
    q1: np.ndarray
    q2: np.ndarray
    loss: np.ndarray
    conserved: np.ndarray
    params: Params
    config: DataConfig
    eta: float
    B: int
    sampler: str
    U: np.ndarray = field(repr=False, default=None)

    @property
    def p(self) -> np.ndarray:
        """Mode amplitudes ``p_alpha`` = diagonal of ``U^T p2 U``, shape (T, d)."""
        return np.diagonal(self.p2, axis1=1, axis2=2).copy()

    @property
    def q(self) -> np.ndarray:
        """Mode amplitudes ``q_alpha`` = diagonal of ``U^T q1 U``, shape (T, d)."""
        return np.diagonal(self.q1, axis1=1, axis2=2).copy()



def train_sgd(
    config,
    params0,
    *,
    eta,
    B,
    steps,
    rng,
    record_every=None,
    tasks=None,
    sampler="auto",
    progress=False,
):
    """Online SGD on the full linear transformer (all blocks), with exact gradients.

    Every step draws ``B`` fresh prompts (from the task set when ``config.P`` is set), takes
    ``W^P -> W^P - eta dL/dW^P``, ``W^Q -> W^Q - eta dL/dW^Q`` with ``L`` the batch-**mean**
    loss, so ``tau_alpha = 1 / (eta s_alpha^2)`` in SGD steps (book chapter 4).

    Parameters
    ----------
    config : DataConfig
    params0 : Params
        Start (not modified); see :func:`balanced_init`, :func:`random_init`.
    eta : float
        Learning rate, ``> 0``; see :func:`stable_eta` for the stable range.
    B : int
        Prompts per step, ``>= 1``.
    steps : int
        Number of SGD updates, ``>= 0``.
    rng : numpy.random.Generator
    record_every : int, optional
        Record every this many steps (and always the first and last); default
        ``max(1, steps // 1000)``.
    tasks : ndarray (P, d, d), optional
        Task set; when ``config.P`` is set and ``tasks`` is None, one is drawn from ``rng``
        first (:func:`icllib.data.sample_task_set`).
    sampler : {"auto", "statistics", "tokens", "actions"}
        ``"statistics"`` draws the exact sufficient statistic (Wishart,
        :func:`icllib.data.sample_statistics`), ``O(B d^2)`` random numbers per step for
        any ``N``; ``"tokens"`` draws the
        ``N`` tokens; ``"actions"`` draws only the two products of the (whitened) Gram matrix
        that a step uses, ``O(B d)`` random numbers for any ``N``
        (:mod:`icllib.data.gram_actions`; tasks sharing the eigenbasis only).  All three give
        the same dynamics in distribution, from different random streams.  ``"auto"`` (the
        default) is the faster of ``"statistics"`` and ``"actions"`` for this size
        (:func:`auto_sampler`; ``"statistics"`` unless the tasks share the eigenbasis, as
        fresh tasks and task sets from :func:`icllib.data.sample_task_set` do); the
        recording's ``sampler`` says which ran.
    progress : bool
        Show a tqdm progress bar.

    Returns
    -------
    Recording

    Raises
    ------
    DivergenceError
        If a batch loss is non-finite or exceeds ``DIVERGENCE_FACTOR`` times the larger of the
        first batch loss and ``Tr S / 2``; its ``step`` is the step at which it did, and the
        message names the step, ``eta`` and the estimated stable range (:func:`stable_eta`).
    """
    check_instance("config", config, DataConfig)
    check_instance("params0", params0, Params, "an icllib.model.Params")
    d = config.d
    if params0.d != d:
        raise ValueError(f"params0 has d = {params0.d} but config has d = {d} (len(s))")
    eta = check_positive("eta", eta)
    B = check_int("B", B, 1)
    steps = check_int("steps", steps, 0)
    rng = check_generator("rng", rng)
    if record_every is None:
        record_every = max(1, steps // 1000)
    record_every = check_int("record_every", record_every, 1)
    sampler = check_choice("sampler", sampler, SAMPLERS)
    if tasks is None and config.P is not None:
        tasks = sample_task_set(config, rng)
    sam = PromptSampler(config, rng, tasks)
    if sampler == "auto":  # the faster exact sampler that applies (bench/bench_sgd.py)
        sampler = auto_sampler(sam.N, sam.D, sam.shared_basis)
    if sampler == "actions" and not sam.shared_basis:
        raise ValueError(
            "sampler='actions' needs tasks that share the eigenbasis of Sigma_x (fresh tasks, "
            "or a task set from sample_task_set); use sampler='statistics' for general tasks"
        )

    U = config.basis
    rotate = config.U is not None
    record_at = set(range(0, steps + 1, record_every)) | {steps}
    T = len(record_at)
    rec_steps = np.empty(T, dtype=np.int64)
    blocks = np.empty((4, T, d, d))
    rec_loss = np.empty(T)
    rec_cons = np.empty(T)

    # With tasks sharing the eigenbasis of Sigma_x (book chapter 1) the loop runs in
    # that basis: the model is equivariant under R = diag(U, U), so SGD on R^T W^P R, R^T W^Q R
    # with eigenbasis data is the same SGD; the data then need no rotation and the labels
    # no d x d products (see WhitenedGradients).
    eigen = sam.shared_basis
    params = params0.copy()
    if eigen and rotate:
        R = np.zeros((2 * d, 2 * d))
        R[:d, :d] = U
        R[d:, d:] = U
        params = Params(R.T @ params.WP @ R, R.T @ params.WQ @ R)
    record_rotation = rotate and not eigen
    WPy = params.WP_y  # views: the updates below change params in place
    WQx = params.WQ_x
    N = config.N
    sqrt_s = np.sqrt(config.s)
    ref_loss = None
    # work arrays reused by every step (fresh large arrays each step cost page faults)
    buffers = {}
    grads = WhitenedGradients(sqrt_s, config.noise, N, B) if eigen else None
    j = 0

    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=steps, desc="SGD", unit="step")
    # Every product in a step is small (B x 2d times 2d x d): one BLAS thread is fastest, and
    # multi-threaded OpenBLAS on such products is several times slower on a busy machine.
    one_thread = (
        threadpool_limits(limits=1, user_api="blas")
        if threadpool_limits is not None
        else contextlib.nullcontext()
    )
    try:
        with one_thread:
            for step in range(steps + 1):
                if eigen:
                    G, lam, _, gq = sam.draw_raw(B, sampler, buffers=buffers)
                    loss, gP, gQ = grads(WPy, WQx, G, lam, gq)
                else:
                    C, xq, target, _ = sam.draw(B, sampler, need_W=False)
                    loss, gP, gQ = block_grads(WPy, WQx, C, xq, target, N)
                if ref_loss is None:
                    ref_loss = max(loss, 0.5 * float(np.sum(config.s)))
                if not np.isfinite(loss) or loss > DIVERGENCE_FACTOR * ref_loss:
                    C0 = float(conserved_quantity(params0.WP_y, params0.WQ_x.T, axis=(-2, -1)))
                    raise DivergenceError(
                        f"SGD diverged at step {step}: batch loss {loss:.3g} "
                        f"(first batch {ref_loss:.3g}). eta = {eta:g} is outside the stable range "
                        f"0 < eta < ~{stable_eta(config, C0):.3g} estimated by stable_eta() from "
                        f"the top curvature s_max^2 s_inf,max (p^2 + q^2) (large-B limit; with "
                        f"B = {B} minibatch noise lowers it, see stable_eta); lower eta.",
                        step=step,
                    )
                if step in record_at:
                    rec_steps[j] = step
                    mats = (params.p1, params.p2, params.q1, params.q2)
                    for i, M in enumerate(mats):
                        blocks[i, j] = U.T @ M @ U if record_rotation else M
                    rec_loss[j] = loss
                    rec_cons[j] = conserved_quantity(WPy, WQx.T, axis=(-2, -1))
                    j += 1
                if step < steps:
                    gP *= eta
                    gQ *= eta
                    WPy -= gP
                    WQx -= gQ
                    if bar is not None and (step + 1) % record_every == 0:
                        bar.update(record_every)
    finally:
        if bar is not None:
            bar.n = min(bar.total, bar.n)
            bar.close()

    if eigen and rotate:  # back to the original basis
        params = Params(R @ params.WP @ R.T, R @ params.WQ @ R.T)
    return Recording(
        steps=rec_steps,
        p1=blocks[0],
        p2=blocks[1],
        q1=blocks[2],
        q2=blocks[3],
        loss=rec_loss,
        conserved=rec_cons,
        params=params,
        config=config,
        eta=eta,
        B=B,
        sampler=sampler,
        U=U,
    )


def pathway_products(run: Recording | StoredRun | PriceRun) -> tuple[np.ndarray, np.ndarray]:
    r"""Mode ``alpha``'s two pathways, ``(p2)_aa (q1)_aa`` and ``(p1)_aa (q2)_aa``.

    Book chapter 2 ('Two pathways'): in the eigenbasis, mode ``alpha`` of the query reaches
    the prediction through ``p2 q1`` and through ``p1 q2``; the mode amplitude is the sum
    ``a_alpha = (p2)_aa (q1)_aa + (p1)_aa (q2)_aa`` (:func:`mode_products`), and on the null
    manifold ``p1 = q2 = 0`` only the first pathway carries it.  This and
    :func:`mode_products` are the library's one definition of a mode's product: the ``a``,
    ``via_p2q1`` and ``via_p1q2`` of :class:`Recording`,
    :class:`~icllib.train.run_groups.StoredRun` and
    :class:`~icllib.train.run_groups.PriceRun` call them.

    Parameters
    ----------
    run : Recording, icllib.train.run_groups.StoredRun or icllib.train.run_groups.PriceRun
        A run with the four blocks ``p1, p2, q1, q2`` (T, d, d) in the eigenbasis, or with
        their ``diagonals`` (T, 4, d).

    Returns
    -------
    via_p2q1, via_p1q2 : ndarray (T, d)
    """
    if hasattr(run, "diagonals"):              # a stored run keeps only the diagonals
        p1, p2, q1, q2 = np.moveaxis(run.diagonals.astype(float), 1, 0)
    else:
        p1, p2, q1, q2 = (np.einsum("tii->ti", getattr(run, b)) for b in ("p1", "p2", "q1", "q2"))
    return p2 * q1, p1 * q2


def mode_products(run: Recording | StoredRun | PriceRun) -> np.ndarray:
    """Each mode's product ``a_alpha``, the sum of its two pathways (book chapter 2).

    ``a_alpha = (p2)_aa (q1)_aa + (p1)_aa (q2)_aa`` in the eigenbasis
    (:func:`pathway_products`); on the null manifold ``p1 = q2 = 0`` it is the eigenvalue
    ``p_alpha q_alpha`` of ``p2 q1`` that the flows of :mod:`icllib.flows` follow.

    Parameters
    ----------
    run : Recording, icllib.train.run_groups.StoredRun or icllib.train.run_groups.PriceRun

    Returns
    -------
    ndarray (T, d)
    """
    via_p2q1, via_p1q2 = pathway_products(run)
    return via_p2q1 + via_p1q2
