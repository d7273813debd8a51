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

__all__ = ["ablated_losses", "HEAD_ABLATIONS", "head_ablations"]


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


#: the ablations of :func:`head_ablations`
HEAD_ABLATIONS = ("none", "prev-token head", "other layer-1 heads", "induction head")


def head_ablations(run) -> dict[str, float]:
    """ICL loss (nats) of a run's final model with each of :data:`HEAD_ABLATIONS` removed.

    ``"prev-token head"`` is layer 1's head with the largest final previous-token score,
    ``"other layer-1 heads"`` every other layer-1 head, ``"induction head"`` the run's
    (:meth:`~.runs.InductionRunSummary.induction_head`).

    Parameters
    ----------
    run : InductionRunSummary
        A file with the final weights (``--weights``; two or more layers).
    """
    prev = run.prev_token_score[-1]
    if prev.shape[0] < 2:
        raise ValueError(f"run must have two or more layers, got {prev.shape[0]}")
    model = run.final_model()
    task = InductionTask(**run.meta["config"]["task"])
    helper = int(prev[0].argmax())
    removed = {"none": [], "prev-token head": [(0, helper)],
               "other layer-1 heads": [(0, h) for h in range(prev.shape[1]) if h != helper],
               "induction head": [run.induction_head()]}
    return {name: ablated_losses(model, task, heads)[0] for name, heads in removed.items()}
