"""SGD on the full linear transformer with analytic gradients (book chapters 2-4).

Loss and time convention
------------------------
The loss of a minibatch of ``B`` prompts is the batch **mean**

    L = (1 / B) sum_b 1/2 || W_b x_q,b - y_hat_b ||^2,

and one SGD step is ``theta -> theta - eta grad L``.  The mean flow of this is the gradient
flow of the expected loss with time measured in SGD steps, so the time constant of mode
``alpha`` is ``tau_alpha = 1 / (eta s_alpha^2)`` **SGD steps** (book chapter 4,
``convention="steps"`` in :mod:`icllib.theory`).

Gradients
---------
With ``W^P_y = [p1 p2]`` (d x 2d), ``W^Q_{:,x} = [q1; q2]`` (2d x d), ``k = W^Q_{:,x} x_q``,
``v = Gamma k``, ``y_hat = W^P_y v`` and the residual ``r = y_hat - W x_q``:

    dL/dW^P_y     = (1/B) sum_b r_b v_b^T
    dL/dW^Q_{:,x} = (1/B) sum_b (Gamma_b W^P_y^T r_b) x_q,b^T

and every other block of ``W^P`` and ``W^Q`` gets exactly zero gradient (it never reaches
``y_hat``).  ``Gamma`` is never formed: with the context rows ``C`` of a batch (real tokens, or
the virtual tokens of :func:`icllib.data.sample_statistics`),
``Gamma k = (C^T (C k) + z_q (x_q . k_x)) / N``, so a step costs ``O(B m d)`` for the model
(``m = min(N, d)`` with the statistics sampler) plus the sampling.

When the tasks share the eigenbasis ``U`` of ``Sigma_x`` (fresh tasks, or a task set from
:func:`icllib.data.sample_task_set`), :func:`train_sgd` runs in that basis: the model is
equivariant under ``R = diag(U, U)`` (``Gamma -> R Gamma R^T``, loss unchanged), so SGD on
``R^T W^P R, R^T W^Q R`` with eigenbasis data is the same SGD, and there the labels are
``lambda * x`` elementwise: no ``d x d`` product per prompt at all.  The random numbers
(``O(B min(N, d) d)`` of them) then dominate the cost of a step.  Tests check this path
against the original-basis code step by step.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field

import numpy as np

try:  # optional: hold BLAS to one thread inside the SGD loop (see train_sgd)
    from threadpoolctl import threadpool_limits
except ImportError:  # pragma: no cover
    threadpool_limits = None

from .data import DataConfig, _check_int, _check_orthogonal, _check_rng, _Sampler, sample_task_set
from .model import Params
from .theory import conserved_quantity, s_inf

__all__ = [
    "loss_and_grads",
    "balanced_init",
    "random_init",
    "stable_eta",
    "DivergenceError",
    "Recording",
    "train_sgd",
]

#: a batch loss this many times above the reference loss counts as divergence
DIVERGENCE_FACTOR = 1e6


# ----------------------------------------------------------------------------- gradients


def _loss_and_block_grads(WPy, WQx, C, xq, target, N):
    """Batch-mean loss and gradients w.r.t. ``W^P_y`` (d x 2d) and ``W^Q_{:,x}`` (2d x d).

    ``C`` (B, m, 2d) context rows, ``xq`` (B, d), ``target = W x_q`` (B, d), ``N`` the divisor.
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


def _loss_and_block_grads_eigenbasis(WPy, WQx, G, lam, gq, sqrt_s, noise, N):
    """:func:`_loss_and_block_grads` for tasks ``diag(lam)`` in the eigenbasis of ``Sigma_x``.

    Works on the raw draws: context rows ``x_i = sqrt(s) * G_i[:d]``,
    ``y_i = lam * x_i + noise * G_i[d:]``, query ``x_q = sqrt(s) * gq``.  The labels are never
    formed: ``C k = G[:, :, :d] (sqrt(s) (k_x + lam k_y)) + noise G[:, :, d:] k_y`` and
    ``C^T h = [sqrt(s) G_x^T h, lam sqrt(s) G_x^T h + noise G_e^T h]``, so each batched
    product runs over ``(B, m, D)`` with ``D = d`` (``2d`` with noise) instead of ``2d``.
    The parameters must be expressed in the eigenbasis.
    """
    B, d = gq.shape
    xq = gq * sqrt_s
    target = lam * xq

    def gamma_times(k):
        """Gamma k for k (B, 2d), Gamma = (C^T C + z_q z_q^T) / N."""
        kx, ky = k[:, :d], k[:, d:]
        if noise > 0:
            z = np.empty((B, 2 * d))
            np.multiply(ky, lam, out=z[:, :d])
            z[:, :d] += kx
            z[:, :d] *= sqrt_s
            np.multiply(ky, noise, out=z[:, d:])
        else:
            z = ky * lam
            z += kx
            z *= sqrt_s
        h = np.matmul(G, z[:, :, None])  # (B, m, 1)
        g = np.matmul(h.transpose(0, 2, 1), G)[:, 0, :]  # (B, D): G^T h
        out = np.empty((B, 2 * d))
        ax = out[:, :d]
        np.multiply(g[:, :d], sqrt_s, out=ax)  # X^T h
        np.multiply(ax, lam, out=out[:, d:])  # Y^T h (noise-free part)
        if noise > 0:
            out[:, d:] += noise * g[:, d:]
        ax += xq * np.einsum("bi,bi->b", xq, kx)[:, None]
        out *= 1.0 / N
        return out

    v = gamma_times(xq @ WQx.T)
    r = v @ WPy.T
    r -= target
    loss = 0.5 * np.einsum("bi,bi->", r, r) / B
    gP = (r.T @ v) * (1.0 / B)
    u = gamma_times(r @ WPy)
    gQ = (u.T @ xq) * (1.0 / B)
    return float(loss), gP, gQ


def _batch_arrays(batch, d):
    for name in ("C", "xq", "W", "N"):
        if not hasattr(batch, name):
            raise ValueError(
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


def loss_and_grads(params, batch):
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
    if not isinstance(params, Params):
        raise ValueError(f"params must be an icllib.model.Params, got {type(params).__name__}")
    d = params.d
    C, xq, target, N = _batch_arrays(batch, d)
    loss, gP, gQ = _loss_and_block_grads(params.WP_y, params.WQ_x, C, xq, target, N)
    gWP = np.zeros_like(params.WP)
    gWQ = np.zeros_like(params.WQ)
    gWP[d:, :] = gP
    gWQ[:, :d] = gQ
    return loss, Params(gWP, gWQ)


# ----------------------------------------------------------------------------- initialisations


def _check_scale(scale, d, name="scale"):
    try:
        a = np.asarray(scale, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a finite number or {d} finite numbers, got {scale!r}")
    if a.ndim == 0:
        a = np.full(d, float(a))
    if a.shape != (d,) or not np.all(np.isfinite(a)):
        raise ValueError(f"{name} must be a finite number or {d} finite numbers, got {scale!r}")
    return a


def balanced_init(d, scale, U=None):
    """Balanced start on the reduced manifold: ``p2 = q1 = U diag(scale) U^T``.

    Every other block of ``W^P`` and ``W^Q`` (``p1``, ``q2`` and the unreachable blocks) is
    exactly zero, so the start lies on the null manifold ``p1 = q2 = 0`` where the reduced
    theory applies, with ``p_alpha(0) = q_alpha(0) = scale`` (``C_alpha = 0``) and
    ``a_alpha(0) = scale^2`` (a balanced start, book chapter 4, 'The logistic solution').

    Parameters
    ----------
    d : int
    scale : float or array_like, shape (d,)
        Mode amplitude(s) ``p_alpha(0) = q_alpha(0)``.
    U : array_like, shape (d, d), optional
        Eigenbasis (matters only for a per-mode ``scale``).
    """
    d = _check_int(d, "d", 1)
    sc = _check_scale(scale, d)
    U = _check_orthogonal(U, d)
    M = np.diag(sc) if U is None else (U * sc) @ U.T
    return Params.from_blocks(p2=M, q1=M.copy(), d=d)


def random_init(d, scale, rng):
    """Small random start: every entry of ``W^P`` and ``W^Q`` i.i.d. ``N(0, scale^2)``.

    This leaves the null manifold: the ``p1 Sigma_hat W^T q2`` pathway starts non-zero and can
    capture a mode (book chapter 2, 'The null parameters').
    """
    d = _check_int(d, "d", 1)
    try:
        scale = float(scale)
    except (TypeError, ValueError):
        raise ValueError(f"scale must be a finite number >= 0, got {scale!r}")
    if not np.isfinite(scale) or scale < 0:
        raise ValueError(f"scale must be a finite number >= 0, got {scale!r}")
    rng = _check_rng(rng)
    D = 2 * d
    return Params(scale * rng.standard_normal((D, D)), scale * rng.standard_normal((D, D)))


# ----------------------------------------------------------------------------- stability


def stable_eta(config, conserved=0.0):
    """Estimated upper end of the stable learning-rate range, ``0 < eta < stable_eta``.

    Gradient descent on a loss with top Hessian eigenvalue ``h`` is stable for
    ``eta < 2 / h``.  In mode ``alpha`` the expected loss is
    ``1/2 s^2 s_inf (p q - 1/s_inf)^2 + const`` (paper eq. 14); on the fixed-point
    hyperbola ``p q = 1/s_inf`` its Hessian is ``s^2 s_inf [q, p]^T [q, p]``, of top eigenvalue
    ``s^2 s_inf (p^2 + q^2) = s^2 sqrt((s_inf C)^2 + 4)`` with ``C = p^2 - q^2`` conserved.
    This is the largest curvature met along the trajectory (at the saddle it is ``s^2``), and
    it is largest for the top mode ``s_max``, so

        stable_eta = 2 / (s_max^2 sqrt((s_inf,max C)^2 + 4)),

    which is ``1 / s_max^2`` from a balanced start (``C = 0``).  For ``eta`` above it the top
    mode overshoots and blows up within a few steps.

    It is the large-batch limit.  Per-prompt gradients are heavy-tailed (quartic in Gaussian
    inputs and tasks), and with small ``B`` rare large kicks throw the parameters where the
    curvature is larger: measured at ``s = (4, 2, 1, 0.5)``, ``N = 10`` from a balanced start
    (3000 steps, 3 seeds), SGD stayed stable up to about 0.5 of this value at ``B = 1024``,
    0.3 at ``B = 256``, 0.2 at ``B = 64``, and not even at 0.1 for ``B = 16``.  It also
    ignores label noise and the coupling of the exact mean flow.

    Parameters
    ----------
    config : DataConfig
    conserved : float
        ``||W^P_y||_F^2 - ||W^Q_{:,x}||_F^2`` of the start (0 for a balanced start).
    """
    if not isinstance(config, DataConfig):
        raise ValueError(f"config must be a DataConfig, got {type(config).__name__}")
    C = float(conserved)
    if not np.isfinite(C):
        raise ValueError(f"conserved must be finite, got {conserved!r}")
    i = int(np.argmax(config.s))
    s_max = float(config.s[i])
    k = float(s_inf(config.s, config.N)[i])
    return 2.0 / (s_max**2 * np.sqrt((k * C) ** 2 + 4.0))


class DivergenceError(FloatingPointError):
    """SGD left the stable range: the loss became non-finite or exploded."""


# ----------------------------------------------------------------------------- recording


@dataclass(eq=False)
class Recording:
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

    @property
    def a(self) -> np.ndarray:
        """``a_alpha`` = diagonal of ``U^T p2 q1 U``, shape (T, d)."""
        return np.einsum("tij,tji->ti", self.p2, self.q1)


# ----------------------------------------------------------------------------- training


def _check_eta(eta):
    try:
        e = float(eta)
    except (TypeError, ValueError):
        raise ValueError(f"eta must be a finite number > 0, got {eta!r}")
    if isinstance(eta, (bool, np.bool_)) or not np.isfinite(e) or e <= 0:
        raise ValueError(f"eta must be a finite number > 0, got {eta!r}")
    return e


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
    sampler="statistics",
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
    sampler : {"statistics", "tokens"}
        ``"statistics"`` draws the exact sufficient statistic (Wishart,
        :func:`icllib.data.sample_statistics`), ``O(B d^2)`` random numbers per step for
        any ``N``; ``"tokens"`` draws the
        ``N`` tokens.  The two give the same dynamics in distribution.
    progress : bool
        Show a tqdm progress bar.

    Returns
    -------
    Recording

    Raises
    ------
    DivergenceError
        If a batch loss is non-finite or exceeds ``DIVERGENCE_FACTOR`` times the larger of the
        first batch loss and ``Tr S / 2``; the message names the step, ``eta`` and the
        estimated stable range (:func:`stable_eta`).
    """
    if not isinstance(config, DataConfig):
        raise ValueError(f"config must be a DataConfig, got {type(config).__name__}")
    if not isinstance(params0, Params):
        raise ValueError(f"params0 must be an icllib.model.Params, got {type(params0).__name__}")
    d = config.d
    if params0.d != d:
        raise ValueError(f"params0 has d = {params0.d} but config has d = {d} (len(s))")
    eta = _check_eta(eta)
    B = _check_int(B, "B", 1)
    steps = _check_int(steps, "steps", 0)
    rng = _check_rng(rng)
    if record_every is None:
        record_every = max(1, steps // 1000)
    record_every = _check_int(record_every, "record_every", 1)
    if sampler not in ("statistics", "tokens"):
        raise ValueError(f"sampler must be 'statistics' or 'tokens', got {sampler!r}")
    if tasks is None and config.P is not None:
        tasks = sample_task_set(config, rng)
    sam = _Sampler(config, rng, tasks)

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
    # no d x d products (see _loss_and_block_grads_eigenbasis).
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
                    G, lam, gq = sam.draw_whitened(B, sampler)
                    loss, gP, gQ = _loss_and_block_grads_eigenbasis(
                        WPy, WQx, G, lam, gq, sqrt_s, config.noise, N
                    )
                else:
                    C, xq, target, _ = sam.draw(B, sampler, need_W=False)
                    loss, gP, gQ = _loss_and_block_grads(WPy, WQx, C, xq, target, N)
                if ref_loss is None:
                    ref_loss = max(loss, 0.5 * float(np.sum(config.s)))
                if not np.isfinite(loss) or loss > DIVERGENCE_FACTOR * ref_loss:
                    C0 = float(conserved_quantity(params0.WP_y, params0.WQ_x.T, axis=(-2, -1)))
                    raise DivergenceError(
                        f"SGD diverged at step {step}: batch loss {loss:.3g} "
                        f"(first batch {ref_loss:.3g}). eta = {eta:g} is outside the stable range "
                        f"0 < eta < ~{stable_eta(config, C0):.3g} estimated by stable_eta() from "
                        f"the top curvature s_max^2 s_inf,max (p^2 + q^2) (large-B limit; with "
                        f"B = {B} minibatch noise lowers it, see stable_eta); lower eta."
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
