"""Which heads a trained model needs: its losses with heads removed (book chapter 6).

Removing head ``(l, h)`` sets its output matrix ``W_O[l, h]`` to zero, so the head adds
nothing to the residual stream (*zero ablation*); every other weight is unchanged.  The
losses are measured on the chapter's fixed evaluation batch (seed
:data:`~icllib.nonlinear.induction.training.EVAL_SEED`), the batch of the run's curves, so
"no head removed" reproduces the run's last recorded ICL loss.
"""

from __future__ import annotations

import copy

import torch

from ...validation import check_instance, check_int
from .model import AttentionOnlyTransformer
from .task import InductionTask
from .training import EVAL_SEED, sequence_losses

__all__ = ["ablated_losses"]


def ablated_losses(model: AttentionOnlyTransformer, task: InductionTask, heads=(),
                   eval_size: int = 512) -> tuple[float, float]:
    """ICL and first-period loss (nats) of ``model`` with the heads ``heads`` removed.

    Parameters
    ----------
    model : AttentionOnlyTransformer
        Not modified (a copy is ablated).
    task : InductionTask
        The task the model was trained on (same vocabulary and length).
    heads : iterable of (layer, head)
        Heads to remove, 0-indexed; empty: the model as it is.
    eval_size : int
        Sequences of the evaluation batch (the run's ``eval_size``, 512 in the chapter).

    Returns
    -------
    (icl_loss, first_period_loss) : tuple of float
    """
    check_instance("model", model, AttentionOnlyTransformer, "an AttentionOnlyTransformer")
    check_instance("task", task, InductionTask, "an InductionTask")
    c = model.config
    if (c.vocab_size, c.seq_len) != (task.vocab_size, task.seq_len):
        raise ValueError(f"task has vocab_size={task.vocab_size}, seq_len={task.seq_len}; the "
                         f"model was built for {c.vocab_size}, {c.seq_len}")
    eval_size = check_int("eval_size", eval_size, 1)
    heads = [(check_int("layer", lh[0], 0, c.n_layers - 1),
              check_int("head", lh[1], 0, c.n_heads - 1)) for lh in heads]
    ablated = copy.deepcopy(model)
    dev = next(ablated.parameters()).device
    with torch.no_grad():
        for layer, head in heads:
            ablated.W_O[layer, head] = 0.0
        tokens, mask = task.sample(eval_size, torch.Generator().manual_seed(EVAL_SEED))
        icl, first = sequence_losses(ablated(tokens.to(dev)), tokens.to(dev), mask.to(dev))
    return float(icl), float(first)
