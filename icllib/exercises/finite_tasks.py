"""Checkers for the exercises of chapter 5b (book/05b-finite-tasks.md)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..validation import check_array, check_int, check_spectrum
from .core import CheckResult, check_function, start_checker

__all__ = ["check_task_set_fixed_point", "check_manifold_preserving_set", "two_order_loss",
           "check_two_order_rule"]

#: "every mode used" in :func:`check_manifold_preserving_set`: each mode's second moment above
#: this share of the modes' mean (a mode scaled down by 1e-3 has a share near 1e-6).  It is
#: applied from ``P = 16`` tasks on: with fewer, a fair draw leaves a mode that small by chance
#: (a set of ``P/2`` pairs +-lambda has ``m_a`` a mean of ``P/2`` values of lambda^2; at
#: ``P = 2`` a mode falls below 5 % of the mean in about 1 draw in 6, at ``P = 16`` in about
#: 1 in 20 000, fewer at larger ``P``), so smaller sets only need every ``m_a > 0``.
MIN_MODE_SHARE = 0.05
_MIN_P_FOR_SHARE = 16


def _sample_task_set_inputs(rng):
    """A spectrum, a context length and task-set second moments; some draws switch modes off.

    ``d`` in ``2..6``, ``s`` log-uniform in ``[0.1, 5]``, ``m`` the mean square of ``P`` standard
    normals per mode with ``P`` in ``1..64`` (so from very uneven to nearly 1), ``N`` in
    ``1..40`` (small ``N`` with an uneven ``m s`` switches the weakest modes off).
    """
    d = int(rng.integers(2, 7))
    s = np.exp(rng.uniform(np.log(0.1), np.log(5.0), size=d))
    P = int(rng.integers(1, 65))
    m = np.mean(rng.standard_normal((P, d)) ** 2, axis=0)
    return {"s": s, "N": int(rng.integers(1, 41)), "m": np.maximum(m, 1e-3)}


def check_task_set_fixed_point(candidate: Callable, *, trials: int = 40,
                               seed: int = 0) -> CheckResult:
    """Check ``candidate(s, N, m) -> a`` against the minimiser of the task-set loss.

    Reference: :func:`icllib.train.finite_tasks.task_set_fixed_point` (book chapter 5b,
    proposition ``ch5b-fixed``): water-filling on ``u_a = sqrt(m_a s_a)``, with
    ``s_a a_a = (N/(N+1)) [1 - sum_{b in A} u_b / ((N+1+|A|) u_a)]`` on the active set and
    ``0`` off it.  Random ``d`` in ``2..6``, ``s`` in ``[0.1, 5]``, ``N`` in ``1..40``,
    ``m`` from ``P`` in ``1..64`` tasks; about a third of the draws switch a mode off.
    Tolerance ``rtol = 1e-9``.
    """
    from ..train.finite_tasks import task_set_fixed_point

    return check_function(candidate, task_set_fixed_point, _sample_task_set_inputs,
                          trials=trials, seed=seed, rtol=1e-9, atol=1e-12,
                          name="task_set_fixed_point")


def check_manifold_preserving_set(candidate: Callable, *, trials: int = 20,
                                  seed: int = 0) -> CheckResult:
    """Check ``candidate(P, d, rng) -> lam`` (shape ``(P, d)``): a task set off which the
    mean flow cannot push a point of the reduced manifold.

    Book chapter 5b, exercise ``ch5b-ex1``.  For random even ``P`` in ``2..64`` and ``d`` in
    ``2..6`` the set must be non-degenerate (every mode used: its second moment ``m_a`` above
    :data:`MIN_MODE_SHARE` of the modes' mean wherever ``P >= 16``, and above 0 at every
    ``P``; another generator gives another set) and its drives off the manifold must vanish: the
    mean task (which drives ``p1``, proposition ``ch5b-drive``) and every third moment
    ``(1/P) sum_mu lambda_b lambda_d^2`` (which drive ``q2``, proposition ``ch5b-odd``), to
    ``1e-10`` of the set's scale.  On the last trial the ``q2`` drive is also evaluated at
    a random manifold point (:func:`icllib.train.task_fitting.q2_drive`).
    """
    from ..train.task_fitting import q2_drive, task_third_moments

    trials, rng, verdict = start_checker(candidate, trials, seed)

    for trial in range(1, trials + 1):
        P, d = 2 * int(rng.integers(1, 33)), int(rng.integers(2, 7))
        try:
            lam = np.asarray(candidate(P, d, np.random.default_rng(rng.integers(2**31))),
                             dtype=float)
            other = np.asarray(candidate(P, d, np.random.default_rng(rng.integers(2**31))),
                               dtype=float)
        except NotImplementedError:
            return verdict(False, trial, "not written yet (NotImplementedError)")
        where = f"trial {trial} (P = {P}, d = {d})"
        if lam.shape != (P, d) or not np.all(np.isfinite(lam)):
            return verdict(False, trial, f"{where}: expected a finite array of shape "
                                         f"({P}, {d}), got shape {lam.shape}")
        m = np.mean(lam ** 2, axis=0)
        floor = MIN_MODE_SHARE * float(np.mean(m)) if P >= _MIN_P_FOR_SHARE else 0.0
        if np.any(m <= floor):
            return verdict(False, trial, f"{where}: a mode has second moment {m.min():.3g}, "
                                         f"not above {100 * MIN_MODE_SHARE:g} % of the modes' "
                                         f"mean {np.mean(m):.3g}: those tasks barely use it")
        if other.shape == lam.shape and np.allclose(other, lam):
            return verdict(False, trial, f"{where}: two generators gave the same set: draw it")
        scale = float(np.mean(m)) ** 1.5
        mean_task = np.abs(lam.mean(axis=0)).max()
        third = np.abs(task_third_moments(lam)).max()
        if mean_task > 1e-10 * scale ** (1 / 3) or third > 1e-10 * scale:
            return verdict(False, trial,
                           f"{where}: the set still drives the manifold: largest |mean task| "
                           f"{mean_task:.2g}, largest third moment {third:.2g}")
    s = np.exp(rng.uniform(np.log(0.3), np.log(3.0), d))
    p, q = rng.uniform(0.2, 1.0, d), rng.uniform(0.2, 1.0, d)
    g_q2 = np.abs(q2_drive(p, q, s, 5, lam)).max()
    if g_q2 > 1e-10 * scale:
        return verdict(False, trials, f"the q2 drive at a manifold point is {g_q2:.2g}, not 0")
    return verdict(True, trials, f"{trials} random task sets, none drives p1 or q2 off the "
                                 f"reduced manifold")


def two_order_loss(A, B, C, D, s, N, lam) -> np.ndarray:
    """Exact expected loss of the task-linear rule with both orders of ``W`` and ``Sigma_hat``.

    The rule is ``y_hat = A W Sigma_hat B x_q + C Sigma_hat W D x_q`` with ``W = diag(lam)``
    (the eigenbasis of ``Sigma_x = diag(s)``), the model's two in-context pathways
    ``p2 W Sigma_hat q1 + p1 Sigma_hat W q2`` without the cross pathways that come with them in
    the full model.  Book chapter 5b, exercise ``ch5b-ex3``.  The loss
    ``1/2 E |y_hat - W x_q|^2`` is averaged exactly over the context (``N`` Gaussian inputs)
    and the query, for the task ``lam``: the bias ``|(L(S) - W) S^{1/2}|_F^2`` of the rule's
    mean ``L(S)`` plus the variance from
    ``Cov(Sigma_hat_ij, Sigma_hat_kl) = (S_ik S_jl + S_il S_jk) / N``.

    Parameters
    ----------
    A, B, C, D : array_like, shape (d, d)
    s : array_like, shape (d,)
        The spectrum.
    N : int
        Context length.
    lam : array_like, shape (..., d)
        The task's eigenvalues; leading axes give one loss per task.  The loss is a quadratic
        form in ``lam``, so its mean over fresh tasks ``lam ~ N(0, I)`` is
        ``two_order_loss(A, B, C, D, s, N, np.eye(d)).sum()``.

    Returns
    -------
    ndarray, shape (...)
    """
    s = check_spectrum("s", s)
    d = s.size
    A, B, C, D = (check_array(name, M, (d, d)) for name, M in zip("ABCD", (A, B, C, D)))
    N = check_int("N", N, 1)
    lam = check_array("lam", lam, (..., d))
    W = lam[..., :, None] * np.eye(d)
    root = np.sqrt(s)
    mean_rule = A @ W @ np.diag(s) @ B + C @ np.diag(s) @ W @ D
    bias = np.sum(((mean_rule - W) * root) ** 2, axis=(-1, -2))
    # G[i, j] = L(E_ij) S^{1/2}, the rule's response to the context entry (i, j)
    G = (np.einsum("...ai,jb->...ijab", A @ W, B * root)
         + np.einsum("ai,...jb->...ijab", C, (W @ D) * root))
    gram = np.einsum("...ijab,...klab->...ijkl", G, G)
    ss = s[:, None] * s[None, :]
    var = np.sum(ss * (np.einsum("...ijij->...ij", gram) + np.einsum("...ijji->...ij", gram)),
                 axis=(-1, -2)) / N
    return 0.5 * (bias + var)


def _sample_one_task(rng):
    """``d`` in ``2..5``, ``s`` log-uniform in ``[0.2, 4]``, ``N`` in ``5..40``, one task."""
    d = int(rng.integers(2, 6))
    return (np.exp(rng.uniform(np.log(0.2), np.log(4.0), d)), int(rng.integers(5, 41)),
            rng.standard_normal(d))


#: how far below the reduced rule's floor ``l*_P`` a two-order rule must reach to pass
#: :func:`check_two_order_rule` (the reference solution reaches 12-36 % below it)
TWO_ORDER_MARGIN = 0.05


def check_two_order_rule(candidate: Callable, *, trials: int = 8, seed: int = 0) -> CheckResult:
    """Check ``candidate(s, N, lam) -> (A, B, C, D)``: a task-linear rule that fits one task.

    Book chapter 5b, exercise ``ch5b-ex3``.  For random ``d`` in ``2..5``, spectra, ``N`` in
    ``5..40`` and one task ``lam``, the rule ``A W Sigma_hat B + C Sigma_hat W D`` must reach a
    training loss (:func:`two_order_loss` on that task) at least :data:`TWO_ORDER_MARGIN` below
    the reduced rule's floor on the set ``{lam}``,
    ``l*_P`` (:func:`icllib.train.finite_tasks.task_set_floor` with ``m = lam^2``), which no
    rule ``p2 W Sigma_hat q1`` on the reduced manifold goes below.
    """
    from ..train.finite_tasks import task_set_floor

    trials, rng, verdict = start_checker(candidate, trials, seed)

    worst = 0.0
    for trial in range(1, trials + 1):
        s, N, lam = _sample_one_task(rng)
        where = f"trial {trial} (d = {s.size}, N = {N})"
        try:
            out = candidate(s.copy(), N, lam.copy())
        except NotImplementedError:
            return verdict(False, trial, "not written yet (NotImplementedError)")
        try:
            A, B, C, D = (np.asarray(M, dtype=float) for M in out)
            loss = float(two_order_loss(A, B, C, D, s, N, lam))
        except (TypeError, ValueError) as exc:
            return verdict(False, trial, f"{where}: expected four {s.size} x {s.size} "
                                         f"matrices (A, B, C, D): {exc}")
        floor = float(task_set_floor(s, N, lam ** 2))
        worst = max(worst, loss / floor)
        if loss > (1 - TWO_ORDER_MARGIN) * floor:
            return verdict(False, trial, f"{where}: training loss {loss:.4g}, not "
                                         f"{100 * TWO_ORDER_MARGIN:g} % below the reduced "
                                         f"rule's floor {floor:.4g}")
    return verdict(True, trials, f"on {trials} random tasks the training loss is at most "
                                 f"{100 * worst:.0f} % of the reduced rule's floor")

