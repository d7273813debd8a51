r"""Closed-form theory of the reduced linear transformer (book chapters 2-5).

Everything here is a pure numpy function of the spectrum ``s`` of the input covariance
``Sigma_x = U diag(s) U^T``, the context length ``N`` and the learning rate ``eta``.
Mode amplitudes ``p`` (of ``p2 = U diag(p) U^T``) and ``q`` (of ``q1 = U diag(q) U^T``) and
their products ``a = p * q`` are arrays whose **last axis is the mode axis** (length ``d``);
any leading axes (typically time) are carried through, so a whole trajectory is evaluated
in one call.

The package is split along the chapters that use it; every public name is importable from here,
``from icllib.theory import s_inf, logistic_a, exact_loss``:

:mod:`icllib.theory.moments`
    ``s_inf``, the effective per-mode variance of the moment identity (book chapter 2),
    shared by all the others;
:mod:`icllib.theory.timescales`
    ``tau`` and the time conventions (``"steps"``/``"passes"``), the closed-form
    trajectories ``logistic_a`` and ``unbalanced_a``, ``escape_time``, ``half_rise_time``,
    ``plateau_length`` (any small start) and ``discrete_step_factor`` (paper eq. 12 the
    mode equations with ``tau``, eq. 13 the logistic; book chapter 4);
:mod:`icllib.theory.fixed_points`
    the paper's fixed points ``p q = 1/s_inf``, the exact minimiser
    ``exact_fixed_point(_pq)`` and the saddle's eigenvalues (book chapter 3);
:mod:`icllib.theory.conservation`
    the conserved quantities and their SGD drift (book chapter 3);
:mod:`icllib.theory.losses`
    the paper's loss (eq. 14), the exact mean loss and their gradients, the
    floors, and the prediction at convergence (book chapters 1, 2 and 5).

Paper equations: eq. 8 the reduced predictor, eq. 12 the decoupled mode equations with their
time scale ``tau = 1/(eta s^2)``, eq. 13 their logistic solution from a balanced start, eq. 14
the loss (book chapter 5, 'The loss as a function of the modes').
"""

from .conservation import conserved_per_mode, conserved_quantity, sgd_conservation_drift
from .fixed_points import (
    exact_fixed_point,
    exact_fixed_point_pq,
    paper_fixed_point,
    saddle_eigenvalues,
)
from .losses import (
    coinciding_floors_ratio,
    converged_loss,
    exact_converged_loss,
    exact_floor_active_set,
    exact_loss,
    exact_loss_grad,
    floor_gap_limit,
    initial_loss,
    paper_loss,
    paper_loss_grad,
    plateau_levels,
    prediction_at_convergence,
)
from .moments import s_inf
from .timescales import (
    discrete_step_factor,
    escape_time,
    half_rise_time,
    logistic_a,
    plateau_length,
    tau,
    unbalanced_a,
)

__all__ = [
    "s_inf",
    "tau",
    "logistic_a",
    "unbalanced_a",
    "escape_time",
    "half_rise_time",
    "plateau_length",
    "discrete_step_factor",
    "paper_fixed_point",
    "exact_fixed_point",
    "exact_fixed_point_pq",
    "saddle_eigenvalues",
    "prediction_at_convergence",
    "paper_loss",
    "paper_loss_grad",
    "exact_loss",
    "exact_loss_grad",
    "converged_loss",
    "exact_converged_loss",
    "initial_loss",
    "floor_gap_limit",
    "exact_floor_active_set",
    "coinciding_floors_ratio",
    "plateau_levels",
    "conserved_quantity",
    "conserved_per_mode",
    "sgd_conservation_drift",
]
