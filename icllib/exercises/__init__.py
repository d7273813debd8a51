"""Checkers for the book's coding exercises.

A checker calls the reader's function and icllib's reference implementation on the same
random inputs, compares the outputs, prints a one-line verdict and returns a
:class:`CheckResult` (truthy when the reader's function passed).  The book's figures always
come from the reference code, never from the reader's answer.

Layout: :mod:`icllib.exercises.core` holds the generic engine (:func:`check_function`); each
chapter's checkers live in their own module (``setup``, ``dynamics``, ``fixed_points``,
``timescales``, ``loss``, ...), each a small ``check_<thing>`` wrapper that names the reference
and draws the inputs.  A new checker goes in its chapter's module and is re-exported here.
Model and theory modules never import this package.

Example
-------
>>> from icllib.exercises import check_exact_mean_velocity
>>> from icllib.flows import exact_mean_velocity
>>> def velocity(p, q, s, N, eta):
...     return exact_mean_velocity(p, q, s, N, eta=eta)
>>> result = check_exact_mean_velocity(velocity)
PASSED exact_mean_velocity: ...
"""

from .core import CheckResult, check_function
from .dynamics import (
    check_exact_mean_velocity,
    check_first_separation,
    check_frozen_growth_rate,
)
from .finite_tasks import check_manifold_preserving_set, check_task_set_fixed_point
from .fixed_points import check_exact_fixed_point, check_water_filling
from .loss import check_exact_floor, check_paper_loss, check_zero_product_excess
from .nonlinear import check_embedding_fourier_power, check_induction_score
from .setup import (
    check_all_modes_active_from,
    check_floor_excess_spectrum,
    check_prediction_at_convergence,
)
from .timescales import check_logistic_a, check_plateau_length, check_slow_mode_lag

__all__ = [
    "CheckResult",
    "check_function",
    "check_prediction_at_convergence",
    "check_all_modes_active_from",
    "check_exact_mean_velocity",
    "check_frozen_growth_rate",
    "check_first_separation",
    "check_floor_excess_spectrum",
    "check_slow_mode_lag",
    "check_zero_product_excess",
    "check_manifold_preserving_set",
    "check_exact_fixed_point",
    "check_water_filling",
    "check_logistic_a",
    "check_plateau_length",
    "check_paper_loss",
    "check_exact_floor",
    "check_task_set_fixed_point",
    "check_induction_score",
    "check_embedding_fourier_power",
]
