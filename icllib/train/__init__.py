"""SGD on the full linear transformer with analytic gradients (book chapters 2-4).

Loss and time convention
------------------------
The loss of a minibatch of ``B`` prompts is the batch **mean**

    L = (1 / B) sum_b 1/2 || W_b x_q,b - y_hat_b ||^2,

and one SGD step is ``theta -> theta - eta grad L``.  The mean flow of this is the gradient
flow of the expected loss with time measured in SGD steps, so the time constant of mode
``alpha`` is ``tau_alpha = 1 / (eta s_alpha^2)`` **SGD steps** (book chapter 4,
``convention="steps"`` in :mod:`icllib.theory`).

The package holds one idea per module; the names in brackets are importable from here:

:mod:`icllib.train.gradients`
    the loss and its exact gradients (``loss_and_grads``);
:mod:`icllib.train.initialisation`
    ``balanced_init``, ``random_init``;
:mod:`icllib.train.stability`
    ``stable_eta``, ``DivergenceError``;
:mod:`icllib.train.sgd`
    the training loop ``train_sgd``, its ``Recording``, the sampler it picks by default
    (``auto_sampler``) and a mode's two pathways
    (``pathway_products``, ``mode_products``);
:mod:`icllib.train.run_groups`
    a group of long SGD runs: its specification, its training, and its runs as a run file's
    arrays and back (the three kinds of group and their runs);
:mod:`icllib.train.registry`
    the book's linear experiments: which groups chapters 1-5b load, with their
    specifications;
:mod:`icllib.train.stored`
    the book's long SGD runs, trained once and stored in the run store
    :mod:`icllib.runstore` (``load_group``).
"""

from . import finite_tasks
from .gradients import loss_and_grads
from .initialisation import balanced_init, random_init
from .sgd import Recording, auto_sampler, mode_products, pathway_products, train_sgd
from .stability import DIVERGENCE_FACTOR, DivergenceError, stable_eta
from .stored import load_group

__all__ = [
    "loss_and_grads",
    "balanced_init",
    "random_init",
    "stable_eta",
    "DivergenceError",
    "Recording",
    "train_sgd",
    "auto_sampler",
    "pathway_products",
    "mode_products",
    "DIVERGENCE_FACTOR",
    "finite_tasks",
    "load_group",
]
