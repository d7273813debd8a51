"""Several seeds of one configuration trained as one batched model.

Seeds of a run differ only in their initial weights and their data stream, so ``S`` seeds can
share every kernel launch: the ``S`` weight sets are stacked along a new leading axis
(``torch.func.stack_module_state``) and the model is applied to each seed's own batch with
``torch.vmap`` over ``torch.func.functional_call``.  The loss is the *sum* of the seeds'
losses, so each seed's gradient is exactly its own; Adam and AdamW act element by element
(their step counter is shared, and the same in every seed), so one optimiser over the stacked
tensors performs ``S`` independent runs.  Optimisers that mix elements (gradient clipping by
global norm, LAMB, ...) would couple the seeds and must not be used here.

A batched run equals the ``S`` single runs up to the order of floating-point sums
(``tests/test_nonlinear_batched.py`` checks it in float64); ``bench/bench_batched_seeds.py``
measures steps per second for 1 and ``S`` seeds.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence

import torch
from torch import nn
from torch.func import functional_call, stack_module_state

from ..validation import check_int

__all__ = ["BatchedSeeds", "train_step"]


class BatchedSeeds:
    """``S`` copies of one architecture with their weights stacked along axis 0.

    Parameters
    ----------
    models : sequence of torch.nn.Module
        One initialised model per seed, all of the same class and shapes (``S >= 1``).

    Attributes
    ----------
    params : dict[str, torch.Tensor]
        Stacked parameters, shape ``(S, *shape)``, leaf tensors that require grad: pass
        ``params.values()`` to the optimiser.
    buffers : dict[str, torch.Tensor]
        Stacked buffers (e.g. fixed positional codes).
    """

    def __init__(self, models: Sequence[nn.Module]):
        models = list(models)
        if not models or not all(isinstance(m, nn.Module) for m in models):
            raise ValueError("models must be a non-empty sequence of torch.nn.Module")
        if len({type(m) for m in models}) != 1:
            raise ValueError("models must all be of one class (one configuration, S seeds)")
        params, buffers = stack_module_state(models)
        self.params = {k: v.detach().clone().requires_grad_(True) for k, v in params.items()}
        self.buffers = buffers
        # a weightless template: functional_call only needs its code and its config
        self._template = copy.deepcopy(models[0]).to("meta")

    @property
    def n_seeds(self) -> int:
        """Number of seeds ``S``."""
        return next(iter(self.params.values())).shape[0]

    def _apply_one(self, params, buffers, *args):
        return functional_call(self._template, (params, buffers), args)

    def __call__(self, *inputs: torch.Tensor) -> torch.Tensor:
        """Apply seed ``i``'s weights to ``inputs[...][i]`` for every ``i`` (vmap over axis 0).

        Every input carries the seed axis first: shape ``(S, *single_input_shape)``.
        """
        return torch.vmap(self._apply_one)(self.params, self.buffers, *inputs)

    @torch.no_grad()
    def model(self, i: int, into: nn.Module) -> nn.Module:
        """Copy seed ``i``'s weights into ``into`` (a model of the same class) and return it.

        Use it at checkpoints to call a model's own analysis methods (circuits, head scores).
        """
        i = check_int("i", i, 0, self.n_seeds - 1)
        state = {k: v[i] for k, v in self.params.items()}
        state.update({k: v[i] for k, v in self.buffers.items()})
        into.load_state_dict(state, strict=True)
        return into


def train_step(batched: BatchedSeeds, optimiser: torch.optim.Optimizer,
               loss_fn: Callable[..., torch.Tensor], *inputs: torch.Tensor) -> torch.Tensor:
    """One optimiser step of every seed; returns the per-seed losses, shape ``(S,)``.

    ``loss_fn(outputs_i, *inputs_i)`` is one seed's scalar loss; it is vmapped over seeds and
    the sum is differentiated, so each seed gets its own gradient.
    """
    outputs = batched(*inputs)
    losses = torch.vmap(loss_fn)(outputs, *inputs)
    optimiser.zero_grad(set_to_none=True)
    losses.sum().backward()
    optimiser.step()
    return losses.detach()

