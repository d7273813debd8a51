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

The package holds one idea per module; the names in brackets (and ``PromptSampler``) are
importable from here, the modules' helpers from the modules themselves:

:mod:`icllib.data.config`
    ``covariance``, ``random_rotation``, ``DataConfig``;
:mod:`icllib.data.tasks`
    the task set (``sample_task_set``);
:mod:`icllib.data.batches`
    ``PromptBatch``, ``ContextStatistics``;
:mod:`icllib.data.wishart`
    the Bartlett factor of the Wishart statistic (``wishart_factor``);
:mod:`icllib.data.draws`
    the vectorised standard normal draws every sampler uses (Box-Muller);
:mod:`icllib.data.gram_actions`
    the Gram matrix drawn only where an SGD step looks at it (``GramActions``; the
    ``"actions"`` sampler of :func:`icllib.train.train_sgd`);
:mod:`icllib.data.sampler`
    ``sample_prompts``, ``sample_statistics`` and the ``PromptSampler`` they share with
    :func:`icllib.train.train_sgd`.
"""

from .batches import ContextStatistics, PromptBatch
from .config import DataConfig, covariance, random_rotation
from .gram_actions import GramActions
from .sampler import PromptSampler, sample_prompts, sample_statistics
from .tasks import sample_task_set
from .wishart import wishart_factor

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
    "PromptSampler",
    "GramActions",
]
