"""Does the full scale of chapter 6 fit one H200 beside chapter 7?  An estimate from a benchmark.

Run:  python bench/bench_ch6_full_scale.py [--steps 100] [--seeds 5]

A benchmark, never a test.  No GPU was available when it was written, so, as in
``bench/bench_ch7_full_scale.py`` (same bounds, same method), the estimate is built from what
can be measured on a CPU and stated bounds for the GPU:

1. **Work per step** of the full setting (vocabulary 64, 64 tokens, d_model 128, 4 heads of 32,
   batch 64), counted analytically per depth L: per token and layer QKV 6 d^2, W_O 2 d^2, the
   T x T scores and their mix 4 T d (the full square: pessimistic for causal attention), the
   unembedding 2 d V; training = 3x forward (forward + backward).  The evaluation at each
   checkpoint (1024 sequences with explicit attention patterns, the duplicate-token and
   induction reductions of the head scores on the device, the circuits) is amortised over the
   steps between checkpoints.  Training alone: 2.21 / 4.23 / 6.24 / 8.25 GFLOP per seed step
   for L = 1..4; with the evaluation +5 % (201 checkpoints in 20 000 steps) or +11 % (101 in
   5000).
2. **Kernels per step**: the ATen operator calls of one training step (forward, loss,
   backward, Adam with ``foreach``, the loss written into a device tensor, + 1 for the tokens'
   copy to the GPU), counted with ``torch.profiler`` on the CPU (leaf operators that launch
   work), for one seed (the step of ``train_attention_only``) and for the vmapped step of
   ``BatchedSeeds`` (that of ``train_attention_only_seeds``) with 1 and S seeds.  The count
   does not depend on the batch size, so it is taken with batch 2.  On the CPU
   ``scaled_dot_product_attention`` has no vmap batching rule and runs seed by seed, so the
   count grows linearly with S (interpolated between the 1- and S-seed counts); PyTorch's CUDA
   attention kernels have batching rules, so on the GPU it should stay near the 1-seed count:
   the CPU count is a pessimistic bound.  The host also draws each seed's batch on the CPU
   every step (the same stream as a single run); that time is measured and added.
3. **GPU time per step** = max(FLOP time at 10 % of the H200's ~60 TFLOP/s FP32, host time
   = kernels x 10 us + batch drawing), the bounds of ``bench_ch7_full_scale.py``.
4. **Host metrics**: :func:`summarize_run` (SVDs of every head's and layer's circuits at every
   checkpoint) timed on a synthetic 4-layer full-size run of 11 checkpoints (random rank-32
   circuits), per checkpoint, scaled to the depth (layers / 4) and the checkpoint count, the
   runs spread over 15 of the H200 machine's 16 cores (``make_ch6_runs.py --batched``
   summarises a group's runs in worker processes while the next group trains, deepest group
   first, so only the last, 1-layer group's metrics come after the training).  The head
   scores are computed on the device (``head_scores_on_device``): on the host
   (``analysis.head_scores``) one layer of the 1024-sequence evaluation batch took 0.46 s
   here, i.e. 201 checkpoints x 10 layers (depths 1-4) x 0.46 s = 15 CPU-minutes per seed,
   more than the whole budget.

Measured on the shared 2-core machine (2026-12-02, one thread, other jobs running; load
average 2.9 / 3.0 / 2.5 at the start of the run quoted; ``--seeds 5``, defaults otherwise):

* full setting, kernels per step for L = 1..4: one seed 83 / 96 / 109 / 122; vmapped, 1 seed
  104 / 125 / 146 / 167, 5 seeds (attention seed by seed) 152 / 221 / 290 / 359;
* drawing 5 full-size batches: 1.75 ms per step (3.7 ms in an earlier run at load 4);
* quick setting (2 layers, batch 32, 100 steps and 2 checkpoints) on this CPU: 1 seed 124
  steps/s, 5 seeds batched 132 seed-steps/s (1.06x over 5 separate runs; 1.03-1.22x over
  four runs: one small model already keeps a CPU core busy; the attention runs seed by seed);
* host metrics of a full-size 4-layer run: 0.46 s per checkpoint (93 s for 201; 108 and 154 s
  in earlier runs under more load).

**The previous full plan did not fit.**  ``shipped_grid("full")`` was every setting of the
factors (learned/sinusoidal positions x init_std 0.1/1) at depths 1-4 with 5 seeds, 20 000
steps and 201 checkpoints: 80 runs, 16 batched groups of 5.  Estimate: 26.6 min of training
(the deep groups FLOP-bound: 5 seeds x 9.15 GFLOP / 6 TFLOP/s = 7.6 ms per 4-layer step),
78 CPU-minutes of host metrics (4.8 min on 16 cores): **27 minutes** with the metrics beside
the training, 31.5 one after the other; unbatched 36.7 min of training.  Chapter 7's full plan
takes 5.0 of the 10 minutes (``bench_ch7_full_scale.py``), so chapter 6 has about 5.

**The full plan now** (``shipped_grid("full")``, ``experiment_seeds("full")`` and
``experiment_settings(..., "full")``; the quick scale is unchanged): the quick grid's cells at
full size (the reference setting, learned positions and init_std 0.1, at depths 1-4; the
three other settings at depths 2-3), 3 seeds each (30 runs, 10 batched groups of 3), 5000
steps and 101 checkpoints (every 50 steps).  Estimate: 2.7 min of training (the 1- and
2-layer groups host-bound at 2.3 and 2.8 ms per step, the deeper ones FLOP-bound), 14.6
CPU-minutes of host metrics (0.9 min on 16 cores, 0.2 min after the last group): **2.9
minutes** with the metrics beside the training, 3.6 one after the other (unbatched: 3.4 min
of training).  **With chapter 7's 5.0 minutes: 7.9 (at most 8.6) of the 10.**  The bounds
are pessimistic (10 % of FP32 peak, 10 us per launch, attention seed by seed, batch drawing
and metrics timed on a loaded CPU); the estimate is to be replaced by a measurement on the
GPU (``scripts/make_ch6_runs.py --scale full --device cuda --batched`` prints each group's
time).  What was given up: 20 000 -> 5000 steps (20 M training tokens, 9x a quick run's
2.3 M, whose ICL windows start at 575-1300 of 3000 steps; whether the full-scale transitions
fall inside 5000 steps is known only once the runs are made: if not, more steps with fewer
cells is the trade), 5 -> 3 seeds per cell, and the cells outside the quick grid (the other
three settings at depths 1 and 4).
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch
from _h200 import EFFICIENCY, H200_FP32_FLOPS, LAUNCH_SECONDS  # shared estimate constants
from threadpoolctl import threadpool_limits

from icllib.nonlinear.batched import BatchedSeeds
from icllib.nonlinear.induction import (
    AttentionOnlyRun,
    AttentionOnlyTransformer,
    TrainConfig,
    experiment_settings,
    shipped_grid,
    summarize_run,
    train_attention_only,
    train_attention_only_seeds,
)
from icllib.nonlinear.induction.training import token_losses

HOST_CORES = 16
#: the full plan before this benchmark: 4 settings x depths 1-4 x 5 seeds, 20 000 steps
OLD_FULL_GRID = {(p, s): {L: tuple(range(5)) for L in (1, 2, 3, 4)}
                 for p in ("learned", "sinusoidal") for s in (0.1, 1.0)}
OLD_FULL_STEPS, OLD_FULL_CHECKPOINTS = 20_000, 201


def forward_flops(mc, n_sequences) -> float:
    """Matrix-product FLOPs of one forward pass on ``n_sequences`` sequences."""
    d, T, V = mc.d_model, mc.seq_len, mc.vocab_size
    per_token = mc.n_layers * (8 * d * d + 4 * T * d) + 2 * d * V
    return n_sequences * T * per_token


def flops_per_step(mc, tc, steps=None) -> float:
    """FLOPs of one training step plus the amortised checkpoint evaluation (one seed)."""
    steps = tc.steps if steps is None else steps
    T, H, d, e = mc.seq_len, mc.n_heads, mc.d_model, mc.d_head
    scores = 2 * 2 * tc.eval_size * H * T * T * mc.n_layers           # dup and ind reductions
    circuits = 2 * 2 * mc.n_layers * H * d * d * e
    per_checkpoint = forward_flops(mc, tc.eval_size) + scores + circuits
    return 3 * forward_flops(mc, tc.batch_size) + tc.n_checkpoints / steps * per_checkpoint


_NO_LAUNCH = ("aten::empty", "aten::view", "aten::as_strided", "aten::empty_strided",
              "aten::detach", "aten::t", "aten::reshape", "aten::permute", "aten::transpose",
              "aten::unsqueeze", "aten::expand", "aten::_reshape_alias", "aten::alias",
              "aten::select", "aten::slice", "aten::_unsafe_view", "aten::squeeze",
              "aten::unbind", "aten::lift_fresh", "aten::resolve_conj", "aten::resolve_neg")


def _count_kernels(step) -> int:
    from torch.profiler import ProfilerActivity, profile

    step()
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        step()
    # leaf operators only: those that launch work (views and wrappers launch nothing)
    return len([e for e in prof.events() if e.name.startswith("aten::") and e.cpu_children == []
                and e.name not in _NO_LAUNCH])


def kernels_per_step(mc, task, S=None) -> int:
    """ATen operator calls of one training step: one seed (``S=None``) or S seeds vmapped.

    The batch is drawn outside the profiled region (host work, timed separately); one copy
    kernel is added for the tokens' copy to the GPU.
    """
    batch = 2
    if S is None:
        model = AttentionOnlyTransformer(mc, torch.Generator().manual_seed(0))
        params = list(model.parameters())
        loss_log = torch.empty(4)

        def loss_fn(tokens):
            return token_losses(model(tokens), tokens).mean()
    else:
        batched = BatchedSeeds([AttentionOnlyTransformer(mc, torch.Generator().manual_seed(s))
                                for s in range(S)])
        params = list(batched.params.values())
        loss_log = torch.empty(4, S)
        vloss = torch.vmap(lambda logits, tok: token_losses(logits, tok).mean())

        def loss_fn(tokens):
            return vloss(batched(tokens), tokens)
    opt = torch.optim.Adam(params, lr=1e-3, foreach=True)
    g = torch.Generator().manual_seed(1)
    shape = (batch,) if S is None else (S, batch)
    tokens = task.sample(int(np.prod(shape)), g)[0].view(*shape, -1)

    def step():
        loss = loss_fn(tokens)
        opt.zero_grad(set_to_none=True)
        loss.sum().backward()
        opt.step()
        loss_log[0] = loss.detach()

    return _count_kernels(step) + 1


def sampling_seconds(task, batch_size, S, repeats=20) -> float:
    """Host seconds to draw one step's batches of S seeds (as the trainers do)."""
    gens = [torch.Generator().manual_seed(s) for s in range(S)]
    t0 = time.perf_counter()
    for _ in range(repeats):
        torch.stack([task.sample(batch_size, g)[0] for g in gens])
    return (time.perf_counter() - t0) / repeats


def host_metrics_seconds(n_layers=4, n_checkpoints=11) -> float:
    """Seconds of :func:`summarize_run` for a synthetic full-size run, per checkpoint."""
    task, mc, tc = experiment_settings(n_layers, "full")
    rng = np.random.default_rng(0)
    C, L, H, d, e = n_checkpoints, mc.n_layers, mc.n_heads, mc.d_model, mc.d_head
    a, b = rng.standard_normal((2, C, L, H, d, e))
    qk = np.einsum("clhde,clhfe->clhdf", a, b)                          # rank d_head
    ov = np.einsum("clhde,clhfe->clhdf", b, a)
    z = np.zeros((C, L, H))
    run = AttentionOnlyRun(mc, task, tc, 0, np.arange(C), np.ones(C), np.ones(C), np.ones(C),
                           qk, ov, z, z, z, np.ones(tc.steps))
    t0 = time.perf_counter()
    summarize_run(run, scale="full")
    return (time.perf_counter() - t0) / C


def estimate(grid, steps, n_checkpoints, measured):
    """Seconds of a plan on one H200: training (batched, unbatched) and host metrics.

    Returns ``(train, unbatched, metrics_cpu, tail)``: the batched and unbatched training
    times, the CPU seconds of all host metrics, and the metrics of the last group (the runs
    of one group are summarised in parallel while the GPU trains the next group,
    deepest group first, ``scripts/make_ch6_runs.py --batched``; only the last, shallowest
    group's are left after training).
    """
    train = single = metrics = 0.0
    tail = float("inf")
    for depths in grid.values():
        for L, seeds in depths.items():
            S = len(seeds)
            _, mc, tc = experiment_settings(L, "full")
            tc = TrainConfig(steps=steps, batch_size=tc.batch_size, lr=tc.lr,
                             n_checkpoints=n_checkpoints, eval_size=tc.eval_size)
            f = flops_per_step(mc, tc)
            k1, kb1, kbS = measured["kernels"][L]
            kS = kb1 + (kbS - kb1) * (S - 1) / (measured["S"] - 1)   # linear in S (CPU)
            host = measured["sampling_s"] / measured["S"]             # per seed batch
            gpu = max(S * f / (EFFICIENCY * H200_FP32_FLOPS), kS * LAUNCH_SECONDS + S * host)
            one = max(f / (EFFICIENCY * H200_FP32_FLOPS), k1 * LAUNCH_SECONDS + host)
            train += steps * gpu
            single += S * steps * one
            per_run = measured["metrics_s"] * L / 4 * n_checkpoints
            metrics += S * per_run
            tail = min(tail, per_run)
    return train, single, metrics, tail


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=100, help="steps of the quick-speed runs")
    ap.add_argument("--seeds", type=int, default=5)
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    S = args.seeds
    measured = {"S": S, "kernels": {}}
    with threadpool_limits(1):
        for L in (1, 2, 3, 4):
            task, mc, tc = experiment_settings(L, "full")
            k = (kernels_per_step(mc, task), kernels_per_step(mc, task, 1),
                 kernels_per_step(mc, task, S))
            measured["kernels"][L] = k
            print(f"full setting, {L} layer(s): {flops_per_step(mc, tc) / 1e9:.2f} GFLOP per "
                  f"seed step (training {3 * forward_flops(mc, tc.batch_size) / 1e9:.2f}), "
                  f"kernels per step: 1 seed {k[0]}, vmapped 1 seed {k[1]}, {S} seeds {k[2]}")
        task, mc, tc = experiment_settings(2, "full")
        measured["sampling_s"] = sampling_seconds(task, tc.batch_size, S)
        print(f"drawing {S} full-size batches: {measured['sampling_s'] * 1e3:.2f} ms per step")
        task, mc, tc = experiment_settings(2, "quick")
        short = TrainConfig(steps=args.steps, batch_size=tc.batch_size, lr=tc.lr,
                            n_checkpoints=2, eval_size=tc.eval_size)
        one = train_attention_only(mc, task, short, seed=0, progress=False)
        many = train_attention_only_seeds(mc, task, short, range(S), progress=False,
                                          num_threads=1)
        sps1, spsS = args.steps / one.seconds, S * args.steps / many[0].seconds
        print(f"quick setting (2 layers) on this CPU: 1 seed {sps1:.0f} steps/s, {S} seeds "
              f"batched {spsS:.0f} seed-steps/s (speed-up {spsS / sps1:.2f}x over {S} separate "
              f"runs; 2 checkpoints included)")
        measured["metrics_s"] = host_metrics_seconds()
        print(f"host metrics of one full-size 4-layer run: {measured['metrics_s']:.3f} s per "
              f"checkpoint ({201 * measured['metrics_s']:.0f} s for 201)")
    now = experiment_settings(1, "full")[2]
    for name, grid, steps, n_ck in (
            ("before (5 seeds, 4 settings x depths 1-4)", OLD_FULL_GRID, OLD_FULL_STEPS,
             OLD_FULL_CHECKPOINTS),
            ("now (shipped_grid('full'))", shipped_grid("full"), now.steps, now.n_checkpoints)):
        n_runs = sum(len(s) for d in grid.values() for s in d.values())
        n_groups = sum(len(d) for d in grid.values())
        train, single, metrics, tail = estimate(grid, steps, n_ck, measured)
        overlapped = max(train, metrics / (HOST_CORES - 1)) + tail
        print(f"H200 estimate, full plan {name}: {n_runs} runs as {n_groups} batched groups, "
              f"{steps} steps, {n_ck} checkpoints: training {train / 60:.1f} min, host "
              f"metrics {metrics / 60:.1f} CPU-min ({metrics / HOST_CORES / 60:.1f} min on "
              f"{HOST_CORES} cores, last group {tail / 60:.1f} min); total "
              f"{overlapped / 60:.1f} min with the metrics beside the training, "
              f"{(train + metrics / HOST_CORES) / 60:.1f} min one after the other. "
              f"Unbatched: {single / 60:.1f} min of training.")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
