"""Several seeds of one chapter-6 setting trained as one batched model (for a GPU).

:func:`train_attention_only_seeds` trains the seeds ``seeds`` of one (architecture, task,
optimiser) setting with :class:`icllib.nonlinear.batched.BatchedSeeds`: the seeds' weights are
stacked, one vmapped forward and backward serves all of them, and one Adam over the stacked
tensors performs the ``S`` independent runs (Adam acts element by element).  Each seed keeps
its own initialisation (``torch.Generator`` seeded ``seed``) and its own stream of training
batches (seeded ``seed + 1``), drawn in the same order as by
:func:`~icllib.nonlinear.induction.training.train_attention_only`, and all share the fixed
evaluation batch (:data:`~icllib.nonlinear.induction.training.EVAL_SEED`).  The result is one
:class:`~icllib.nonlinear.induction.training.AttentionOnlyRun` per seed, as the single-run
function returns it, so :func:`~icllib.nonlinear.induction.runs.summarize_run` and the run
files are the same.

What differs from single runs is only the order of floating-point sums (the vmapped products
and the loss of ``S`` seeds; on the CPU ``scaled_dot_product_attention`` has no vmap rule and
runs seed by seed), like a run on another CPU: the runs then drift apart as chaotic training
does.  The checkpoints are measured seed by seed with the single run's own code on a copy of
each seed's weights (:meth:`BatchedSeeds.model`), except the head scores, which are computed
on the device (:func:`~icllib.nonlinear.induction.analysis.head_scores_on_device`, the
implementation that :func:`~icllib.nonlinear.induction.analysis.head_scores` runs too) instead
of copying every attention pattern to the host, which at full scale would cost more than the
training (``bench/bench_ch6_full_scale.py``).  ``tests/test_nonlinear_batched.py`` checks a batched
run against single runs.  ``scripts/make_ch6_runs.py --batched`` uses it.
"""

from __future__ import annotations

import time

import numpy as np
import torch

from ...validation import check_int
from ..batched import BatchedSeeds
from ..circuits import parameters_norm
from ..device import deterministic, resolve_device
from .analysis import head_score_masks, head_scores_on_device
from .model import AttentionOnlyConfig, AttentionOnlyTransformer
from .task import InductionTask
from .training import (
    EVAL_SEED,
    AttentionOnlyRun,
    TrainConfig,
    check_configs,
    checkpoint_steps,
    sequence_losses,
    token_losses,
)

#: head_score_masks and head_scores_on_device live in .analysis (re-exported here)
__all__ = ["head_score_masks", "head_scores_on_device", "train_attention_only_seeds"]


def train_attention_only_seeds(model_config: AttentionOnlyConfig, task: InductionTask,
                               train_config: TrainConfig, seeds, *, device: str = "cpu",
                               progress: bool = True, keep_model: bool = False,
                               num_threads: int | None = None) -> list[AttentionOnlyRun]:
    """Train the seeds ``seeds`` of one setting as one batched model (Adam, online batches).

    Parameters
    ----------
    model_config, task, train_config
        As for :func:`~icllib.nonlinear.induction.training.train_attention_only`.
    seeds : sequence of int
        Distinct, ``>= 0`` (at least one).
    device : {"cpu", "cuda"}
    progress : bool
        Show a tqdm progress bar.
    keep_model : bool
        Keep each seed's trained module in its result.
    num_threads : int, optional
        Torch threads on the CPU.  Deterministic algorithms are on inside the call
        (:func:`icllib.nonlinear.device.deterministic`, which also fixes the cuBLAS workspace).

    Returns
    -------
    list of AttentionOnlyRun
        One per seed, in order; ``seconds`` is the shared wall time of the batch.
    """
    check_configs(model_config, task, train_config)
    seeds = [check_int("seed", s, 0) for s in seeds]
    if not seeds or len(set(seeds)) != len(seeds):
        raise ValueError(f"seeds must be a non-empty sequence of distinct integers, got {seeds}")
    dev = resolve_device(device)
    S, tc, mc = len(seeds), train_config, model_config
    with deterministic(dev, num_threads):
        models = [AttentionOnlyTransformer(mc, torch.Generator().manual_seed(s)).to(dev)
                  for s in seeds]
        template = AttentionOnlyTransformer(mc, torch.Generator().manual_seed(0)).to(dev)
        batched = BatchedSeeds(models)
        del models
        gens = [torch.Generator().manual_seed(s + 1) for s in seeds]
        eval_tokens, eval_mask = task.sample(tc.eval_size, torch.Generator().manual_seed(EVAL_SEED))
        eval_tokens, eval_mask = eval_tokens.to(dev), eval_mask.to(dev)
        masks = head_score_masks(eval_mask)
        opt = torch.optim.Adam(batched.params.values(), lr=tc.lr)

        def seed_loss(logits, tokens):
            return token_losses(logits, tokens).mean()

        vloss = torch.vmap(seed_loss)
        ck = checkpoint_steps(tc.steps, tc.n_checkpoints)
        C = len(ck)
        qk = np.empty((S, C, mc.n_layers, mc.n_heads, mc.d_model, mc.d_model))
        ov = np.empty_like(qk)
        values = []                       # per checkpoint: (S, 3 + 3 L H) on the host
        # on the device: a GPU step then never waits for a copy to the host
        train_loss = torch.empty(tc.steps, S, device=dev)

        def record(i):
            rows = []
            for n in range(S):
                m = batched.model(n, template)
                qk[n, i], ov[n, i] = m.circuits()
                with torch.no_grad():
                    norm = parameters_norm(m.parameters())
                    logits, patterns = m(eval_tokens, return_attention=True)
                    a, b = sequence_losses(logits, eval_tokens, eval_mask)
                    scores = head_scores_on_device(patterns, masks)
                rows.append(torch.cat([torch.stack([a.double(), b.double(), norm]),
                                       scores.flatten()]))
            values.append(torch.stack(rows).cpu().numpy())       # one copy per checkpoint

        from tqdm.auto import tqdm
        bar = tqdm(range(tc.steps), desc=f"{mc.n_layers}-layer, {S} seeds",
                   disable=not progress, leave=False)
        t0 = time.perf_counter()
        record(0)
        nxt = 1
        for step in bar:
            tokens = torch.stack([task.sample(tc.batch_size, g)[0] for g in gens])  # (S, B, T)
            if dev.type == "cuda":        # pinned: the copy does not wait for the GPU
                tokens = tokens.pin_memory().to(dev, non_blocking=True)
            losses = vloss(batched(tokens), tokens)
            opt.zero_grad(set_to_none=True)
            losses.sum().backward()
            opt.step()
            train_loss[step] = losses.detach()
            if nxt < C and ck[nxt] == step + 1:
                record(nxt)
                nxt += 1
        seconds = time.perf_counter() - t0
        kept = [batched.model(n, AttentionOnlyTransformer(mc, torch.Generator()).to(dev))
                if keep_model else None for n in range(S)]
    v = np.stack(values)                                          # (C, S, 3 + 3 L H)
    LH = (mc.n_layers, mc.n_heads)
    losses_host = train_loss.double().cpu().numpy()
    runs = []
    for n, s in enumerate(seeds):
        icl, first, pnorm = v[:, n, 0], v[:, n, 1], v[:, n, 2]
        if not np.all(np.isfinite(icl)):
            raise FloatingPointError(f"training diverged (non-finite ICL loss, seed {s}) with "
                                     f"lr={tc.lr}; lower lr")
        sc = v[:, n, 3:].reshape(C, 3, *LH)
        runs.append(AttentionOnlyRun(mc, task, tc, s, ck, icl.copy(), first.copy(), pnorm.copy(),
                                     qk[n], ov[n], sc[:, 0].copy(), sc[:, 1].copy(),
                                     sc[:, 2].copy(), losses_host[:, n].copy(), seconds, kept[n],
                                     str(dev)))
    return runs
