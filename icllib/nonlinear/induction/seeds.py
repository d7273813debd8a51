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
on the device (:func:`head_scores_on_device`, float64: equal to
:func:`~icllib.nonlinear.induction.analysis.head_scores` up to float64 summation order) instead
of copying every attention pattern to the host, which at full scale would cost more than the
training (``bench/bench_ch6_full_scale.py``).  ``tests/test_batched.py`` checks a batched run
against single runs.  ``scripts/make_ch6_runs.py --batched`` uses it.
"""

from __future__ import annotations

import time

import numpy as np
import torch

from ...validation import check_int
from ..batched import BatchedSeeds
from ..circuits import parameters_norm
from ..device import deterministic, resolve_device
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

__all__ = ["head_score_masks", "head_scores_on_device", "train_attention_only_seeds"]


def head_score_masks(icl_mask: torch.Tensor):
    """The key and query masks of the duplicate-token and induction scores, as tensors.

    For a batch with ``icl_mask`` (:meth:`InductionTask.sample`, shape ``(B, T - 1)``) on its
    device: ``(dup_keys, ind_keys, queries)``, float64 of shapes ``(B, T, T)``, ``(B, T, T)``
    and ``(B, T)``: the keys ``k <= j`` with ``j + offset - k`` a positive multiple of the
    period ``L_b`` (offset 0: duplicate token, 1: induction) and the queries ``j >= L_b``, as
    in :func:`~icllib.nonlinear.induction.analysis.duplicate_token_score` and
    :func:`~icllib.nonlinear.induction.analysis.induction_score`.
    """
    dev = icl_mask.device
    T = icl_mask.shape[1] + 1
    period = (~icl_mask).sum(dim=1) + 1                              # (B,)
    j = torch.arange(T, device=dev)[:, None]
    k = torch.arange(T, device=dev)[None, :]
    Lb = period[:, None, None]
    keys = []
    for offset in (0, 1):
        gap = (j + offset - k)[None]
        keys.append(((k <= j)[None] & (gap >= 1) & (gap % Lb == 0)).double())
    queries = (torch.arange(T, device=dev)[None, :] >= period[:, None]).double()
    return keys[0], keys[1], queries


def head_scores_on_device(patterns, masks) -> torch.Tensor:
    """Previous-token, duplicate-token and induction scores of every head, on the device.

    The same quantities as :func:`~icllib.nonlinear.induction.analysis.head_scores`, in
    float64 on the patterns' device (no copy of the patterns to the host).

    Parameters
    ----------
    patterns : list of (B, n_heads, T, T) tensors, one per layer
    masks : the output of :func:`head_score_masks` for the batch's ``icl_mask``

    Returns
    -------
    torch.Tensor, float64, shape (3, n_layers, n_heads): prev, dup, ind
    """
    dup_keys, ind_keys, queries = masks
    n_q = queries.sum()
    out = []
    for attn in patterns:
        a = attn.detach().double()
        prev = torch.diagonal(a, offset=-1, dim1=-2, dim2=-1).mean(dim=(0, 2))
        dup, ind = ((torch.einsum("bhjk,bjk->bhj", a, keys) * queries[:, None, :]).sum(dim=(0, 2))
                    / n_q for keys in (dup_keys, ind_keys))
        out.append(torch.stack([prev, dup, ind]))
    return torch.stack(out, dim=1)


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
