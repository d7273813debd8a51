r"""Training on a fixed set of ``P`` tasks (book chapter 5b, 'A finite set of tasks').

The paper trains on ``P`` tasks ``W^mu = U diag(lambda^mu) U^T``; here each SGD step draws
``B`` prompts, each with a task picked uniformly from the fixed set and a **fresh** context
and query (:func:`icllib.train.train_sgd` with ``tasks=...``).  The mean flow of that SGD is
the gradient flow of the *task-set loss*

    l_P(p, q) = 1/2 sum_a m_a [s_a - 2 s_a^2 a_a + ((N+1)/N) s_a^3 a_a^2]
                + (1/(2N)) (sum_a m_a s_a p_a^2) (sum_b s_b^2 q_b^2),

on the reduced manifold (book chapter 5b, proposition ``ch5b-loss``), where
``m_a = (1/P) sum_mu (lambda^mu_a)^2`` is the task set's empirical second moment of mode
``a``; fresh tasks have ``m_a = 1`` and this is :func:`icllib.theory.exact_loss`.

Time: with the batch-mean loss and step ``eta`` time is in SGD steps (``tau = 1/(eta s^2)``).
The paper sums the loss over the ``P`` tasks and counts passes over the task set; one pass is
``P`` prompts, i.e. ``P / B`` steps, and the per-prompt step is ``eta / B``, so
``tau = 1/((eta/B) P s^2)`` passes (:func:`steps_to_passes`, :func:`tau_in_passes`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike
from scipy.integrate import solve_ivp

from ..data import DataConfig, sample_statistics
from ..model import Params, predict_from_statistics
from ..theory import exact_loss, tau
from ..validation import (
    check_array,
    check_generator,
    check_instance,
    check_int,
    check_modes,
    check_positive,
    check_positive_array,
    check_spectrum,
    check_time_grid,
)

__all__ = [
    "task_second_moments",
    "task_set_loss",
    "task_set_velocity",
    "TaskSetFlow",
    "task_set_flow",
    "task_set_fixed_point",
    "task_set_fixed_point_pq",
    "task_set_floor",
    "fresh_excess_constant",
    "steps_to_passes",
    "tau_in_passes",
    "monte_carlo_loss",
]


def task_second_moments(tasks, U=None):
    r"""Empirical second moment ``m_a = (1/P) sum_mu (lambda^mu_a)^2`` of each mode.

    Book chapter 5b, proposition ``ch5b-loss``: the diagonal of
    ``(1/P) sum_mu lambda^mu lambda^mu^T``, which replaces ``E[lambda lambda^T] = I``.

    Parameters
    ----------
    tasks : array_like, shape (P, d, d)
        Task matrices ``U diag(lambda^mu) U^T`` (e.g. :func:`icllib.data.sample_task_set`).
    U : array_like, shape (d, d), optional
        Their shared eigenbasis; ``None`` is the identity.

    Returns
    -------
    ndarray, shape (d,)
    """
    tasks = check_array("tasks", tasks)
    if tasks.ndim != 3 or tasks.shape[1] != tasks.shape[2] or tasks.shape[0] < 1:
        raise ValueError(f"tasks must have shape (P, d, d) with P >= 1, got {tasks.shape}")
    if U is not None:
        U = check_array("U", U, tasks.shape[1:])
        tasks = np.matmul(np.matmul(U.T, tasks), U)
    lam = np.diagonal(tasks, axis1=1, axis2=2)
    return np.mean(lam ** 2, axis=0)


def _check_m(m, d):
    m = check_positive_array("m", m)
    if m.shape != (d,):
        raise ValueError(f"m must have shape ({d},) (one second moment per mode), got {m.shape}")
    return m


def task_set_loss(p, q, s, N, m):
    r"""Mean loss over a task set with second moments ``m`` (chapter 5b, ``ch5b-loss``).

    ``l_P = 1/2 sum_a m_a [s_a - 2 s_a^2 a_a + ((N+1)/N) s_a^3 a_a^2 + s_a p_a^2 Q / N]``
    with ``Q = sum_b s_b^2 q_b^2``; ``m = 1`` gives :func:`icllib.theory.exact_loss`.

    Parameters
    ----------
    p, q : array_like, shape (..., d)
        Mode amplitudes of ``p2`` and ``q1`` on the reduced manifold.
    s : array_like, shape (d,)
    N : int
    m : array_like, shape (d,)
        Second moments of the task eigenvalues (:func:`task_second_moments`), ``> 0``.

    Returns
    -------
    ndarray, shape (...)
    """
    s = check_spectrum("s", s)
    N = check_int("N", N, 1)
    m = _check_m(m, s.size)
    p = check_modes("p", p, s.size)
    q = check_modes("q", q, s.size)
    a = p * q
    Q = np.sum(s ** 2 * q * q, axis=-1, keepdims=True)
    per_mode = s - 2 * s ** 2 * a + ((N + 1) / N) * s ** 3 * a ** 2 + s * p * p * Q / N
    return 0.5 * np.sum(m * per_mode, axis=-1)


def task_set_velocity(p: ArrayLike, q: ArrayLike, s: ArrayLike, N: int, m: ArrayLike, *,
                      eta: float) -> tuple[np.ndarray, np.ndarray]:
    r"""``-eta`` times the gradient of :func:`task_set_loss` (chapter 5b, ``ch5b-flow``).

    ``tau_a dp_a/dt = m_a [q_a - p_a (((N+1)/N) s_a q_a^2 + Q / (N s_a))]``,
    ``tau_a dq_a/dt = m_a p_a - q_a (((N+1)/N) m_a s_a p_a^2 + P_m / N)``,
    ``Q = sum_b s_b^2 q_b^2``, ``P_m = sum_b m_b s_b p_b^2``, ``tau_a = 1/(eta s_a^2)`` steps.

    Parameters
    ----------
    p, q : array_like, shape (..., d)
        Mode amplitudes of ``p2`` and ``q1``.
    s, N, m : as in :func:`task_set_loss`
    eta : float
        Learning rate, ``> 0`` (keyword, required: it sets the time scale).

    Returns
    -------
    dp, dq : ndarray, shape (..., d)
    """
    s = check_spectrum("s", s)
    N = check_int("N", N, 1)
    m = _check_m(m, s.size)
    eta = check_positive("eta", eta)
    p = check_modes("p", p, s.size)
    q = check_modes("q", q, s.size)
    c = (N + 1) / N
    Q = np.sum(s ** 2 * q * q, axis=-1, keepdims=True)
    Pm = np.sum(m * s * p * p, axis=-1, keepdims=True)
    rate = eta * s ** 2
    dp = rate * m * (q - p * (c * s * q * q + Q / (N * s)))
    dq = rate * (m * p - q * (c * m * s * p * p + Pm / N))
    return dp, dq


@dataclass(frozen=True)
class TaskSetFlow:
    """A trajectory of the task-set mean flow and its two losses.

    Attributes
    ----------
    t : ndarray (T,)
        Times in SGD steps (batch-mean loss).
    p, q, a : ndarray (T, d)
        Mode amplitudes and their products.
    train_loss : ndarray (T,)
        :func:`task_set_loss`, the loss on the training tasks.
    test_loss : ndarray (T,)
        :func:`icllib.theory.exact_loss`, the loss on fresh tasks.
    """

    t: np.ndarray
    p: np.ndarray
    q: np.ndarray
    a: np.ndarray
    train_loss: np.ndarray
    test_loss: np.ndarray


def task_set_flow(t: ArrayLike, p0: ArrayLike, q0: ArrayLike, s: ArrayLike, N: int,
                  m: ArrayLike, *, eta: float, rtol: float = 1e-10,
                  atol: float = 1e-13) -> TaskSetFlow:
    r"""Integrate the task-set mean flow (chapter 5b, ``ch5b-flow``) on the grid ``t``.

    ``t`` in SGD steps; LSODA (the flow is stiff once the fast modes have converged).  The
    arguments come in the order of :func:`icllib.flows.exact_mean_flow` (times first), with
    the task set's second moments ``m`` after ``N``.

    Parameters
    ----------
    t : array_like, shape (T,)
        Increasing times starting at 0.
    p0, q0 : array_like, shape (d,)
    s, N, m : as in :func:`task_set_loss`
    eta : float
        Learning rate, ``> 0`` (keyword, required: it sets the time scale).
    rtol, atol : float
        ``solve_ivp`` tolerances.

    Returns
    -------
    TaskSetFlow
    """
    s = check_spectrum("s", s)
    N = check_int("N", N, 1)
    m = _check_m(m, s.size)
    eta = check_positive("eta", eta)
    p0 = check_modes("p0", p0, s.size)
    q0 = check_modes("q0", q0, s.size)
    t = check_time_grid("t", t, start=0.0)
    d = s.size

    def fun(_, y):
        dp, dq = task_set_velocity(y[:d], y[d:], s, N, m, eta=eta)
        return np.concatenate([dp, dq])

    sol = solve_ivp(fun, (t[0], t[-1]), np.concatenate([p0, q0]), method="LSODA",
                    t_eval=t, rtol=rtol, atol=atol)
    if not sol.success:  # pragma: no cover - LSODA on this smooth flow does not fail
        raise RuntimeError(f"task_set_flow: the ODE solver failed: {sol.message}")
    p, q = sol.y[:d].T, sol.y[d:].T
    return TaskSetFlow(t=t.copy(), p=p, q=q, a=p * q, train_loss=task_set_loss(p, q, s, N, m),
                       test_loss=exact_loss(p, q, s, N))


def task_set_fixed_point(s, N, m):
    r"""Products ``a_a = p_a q_a`` at the minimum of :func:`task_set_loss` (``ch5b-fixed``).

    With ``u_a = sqrt(m_a s_a)``:
    ``s_a a_a = (N/(N+1)) [1 - (sum_{b in A} u_b) / ((N+1+|A|) u_a)]`` on the active set
    ``A`` (water-filling: ``a`` is active iff ``u_a (N+1+|A|) > sum_{b in A} u_b``), ``0`` off
    it.  ``m = 1`` gives :func:`icllib.theory.exact_fixed_point`.

    Returns
    -------
    ndarray, shape (d,)
    """
    s = check_spectrum("s", s)
    N = check_int("N", N, 1)
    m = _check_m(m, s.size)
    u = np.sqrt(m * s)
    order = np.argsort(-u, kind="stable")
    csum = np.cumsum(u[order])
    k = 1
    for j in range(s.size, 0, -1):
        if u[order[j - 1]] * (N + 1 + j) > csum[j - 1]:
            k = j
            break
    active = np.zeros(s.size, dtype=bool)
    active[order[:k]] = True
    b = (N / (N + 1)) * (1.0 - csum[k - 1] / ((N + 1 + k) * u))
    return np.where(active, b, 0.0) / s


def task_set_fixed_point_pq(s, N, m):
    r"""A minimiser ``(p, q)`` of :func:`task_set_loss`: ``p_a / q_a = (s_a / m_a)^{1/4}``.

    The split ``p_a^2 / q_a^2 proportional to s_a / m_a`` is the Cauchy-Schwarz equality case
    of the proof of ``ch5b-fixed``; the common factor is free (``p -> c p, q -> q / c``
    changes neither loss) and fixed here to 1.  Inactive modes get ``p = q = 0``.

    Returns
    -------
    p, q : ndarray, shape (d,)
    """
    a = task_set_fixed_point(s, N, m)
    s, m = np.asarray(s, dtype=float), np.asarray(m, dtype=float)
    ratio = (s / m) ** 0.25
    return np.sqrt(a) * ratio, np.sqrt(a) / ratio


def task_set_floor(s, N, m):
    r"""Minimum of :func:`task_set_loss`, ``1/2 sum_a m_a s_a (1 - s_a a_a)`` (``ch5b-fixed``).

    With every mode active this is
    ``1/2 [sum_a m_a s_a / (N+1) + N (sum_a sqrt(m_a s_a))^2 / ((N+1)(N+1+d))]``.

    Returns
    -------
    float
    """
    a = task_set_fixed_point(s, N, m)
    s, m = np.asarray(s, dtype=float), np.asarray(m, dtype=float)
    return float(0.5 * np.sum(m * s * (1.0 - s * a)))


def fresh_excess_constant(s, N, *, h=1e-3):
    r"""``C`` in ``E[l(theta*_P)] - l* = C / P + O(P^{-2})`` (chapter 5b, ``ch5b-excess``).

    ``l(theta*_P)`` is the fresh-task loss (:func:`icllib.theory.exact_loss`) at the
    minimiser of the task-set loss (:func:`task_set_fixed_point_pq`), a smooth function
    ``E(m)`` with a minimum ``l*`` at ``m = 1``.  The ``m_a`` are means of ``P`` independent
    ``lambda^2`` (variance 2), so ``E[E(m)] - l* = (1/P) sum_a d^2E/dm_a^2 + O(P^{-2})``;
    the second derivatives are taken by central differences of step ``h``.

    Returns
    -------
    float
    """
    s = check_spectrum("s", s)
    N = check_int("N", N, 1)
    h = check_positive("h", h)

    def excess(m):
        return float(exact_loss(*task_set_fixed_point_pq(s, N, m), s, N))

    one = np.ones(s.size)
    base = excess(one)
    total = 0.0
    for e in np.eye(s.size) * h:
        total += (excess(one + e) - 2 * base + excess(one - e)) / h ** 2
    return total


def steps_to_passes(steps, B, P):
    r"""SGD steps of ``B`` prompts as passes over ``P`` tasks: ``steps * B / P``.

    One pass of the paper's summed loss visits each of the ``P`` tasks once (``P`` prompts).
    """
    B = check_int("B", B, 1)
    P = check_int("P", P, 1)
    return np.asarray(steps, dtype=float) * B / P


def tau_in_passes(s, eta, B, P):
    r"""``tau_a = 1/((eta/B) P s_a^2)`` passes (paper eq. 12 with the loss summed over tasks).

    The batch-mean SGD step ``eta`` on ``B`` prompts moves each prompt's gradient by
    ``eta / B``: that is the paper's learning rate on its summed loss.
    """
    eta = check_positive("eta", eta)
    B = check_int("B", B, 1)
    return tau(s, eta / B, P=P, convention="passes")


def monte_carlo_loss(params, config, n, rng, *, tasks=None, batch=4096):
    r"""Expected loss of the full model, by Monte Carlo over ``n`` prompts.

    Prompts come from the task set ``tasks`` (the training loss) or, with ``tasks=None``, a
    fresh task each (the test loss); exact sufficient statistics
    (:func:`icllib.data.sample_statistics`).

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
        Prompts per call of the forward pass.

    Returns
    -------
    mean, stderr : float
        The mean loss and its standard error (the spread of the ``n`` per-prompt losses
        over ``sqrt(n)``).
    """
    check_instance("params", params, Params, "an icllib.model.Params")
    check_instance("config", config, DataConfig)
    n = check_int("n", n, 2)
    rng = check_generator("rng", rng)
    batch = check_int("batch", batch, 1)
    if config.noise > 0:
        raise ValueError("monte_carlo_loss needs noise-free labels (config.noise = 0), got "
                         f"noise = {config.noise}")
    P = None if tasks is None else np.shape(tasks)[0]
    cfg = DataConfig(s=config.s, N=config.N, U=config.U, P=P, noise=config.noise)
    losses = []
    for lo in range(0, n, batch):
        b = sample_statistics(cfg, min(batch, n - lo), rng, tasks=tasks)
        y = predict_from_statistics(b.Sigma_hat, b.W, b.xq, params, cfg.N)
        losses.append(0.5 * np.sum((b.target - y) ** 2, axis=-1))
    losses = np.concatenate(losses)
    return float(losses.mean()), float(losses.std(ddof=1) / np.sqrt(n))
