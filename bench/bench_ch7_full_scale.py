"""Does the full scale of chapter 7 fit in 10 minutes of one H200?  An estimate from a benchmark.

Run:  python bench/bench_ch7_full_scale.py [--steps 20] [--seeds 5]

A benchmark, never a test.  No GPU was available when it was written, so the estimate is built
from what can be measured on a CPU and stated bounds for the GPU:

1. **Work per step** of the full setting (Nanda et al.: p = 113, d_model 128, 4 heads, MLP
   512, 30 % of the pairs = 3831 training pairs, full batch): counted analytically (matrix
   products of forward + backward = 3x forward; the evaluation on all p^2 pairs every 50
   steps adds 1/50 of a forward on 3.3x the pairs).  About 4.3 GFLOP per step.
2. **Kernels per step**: the number of ATen operator calls of one training step (forward,
   float64 loss, backward, AdamW with ``foreach``), counted with ``torch.profiler`` on the CPU;
   one vmapped step of S seeds has the same count (the seed axis is a batch dimension).
3. **GPU time per step** = max(FLOP time at 10 % of the H200's ~60 TFLOP/s FP32 (non-tensor
   core, i.e. 6 TFLOP/s: a pessimistic efficiency for these small products), launch time
   at 10 us per kernel (a pessimistic eager-mode launch + dispatch cost)).
4. **Metrics**: the subspace distances (3 truncation ranks) and rotations of 101 checkpoints
   are computed on the host's CPU after training; their cost is measured here on the quick
   setting and scaled by (d_model 128 / 64)^3 x (checkpoints 101 / 101) for the SVDs.

Measured on the shared 2-core machine (2026-12-01, one thread, other jobs running;
``--steps 15``):

* full setting: 4.26 GFLOP per step, 220 kernels per step;
* quick setting on this CPU: 1 seed 101 steps/s, 5 seeds vmapped 115 seed-steps/s (1.13x over
  5 separate runs: a CPU core is already busy with one model);
* metrics of 101 checkpoints (quick, all three truncation ranks): 5.2 s.

Estimate for one H200, full plan of chapter 7 (15 runs: 5 seeds x weight decay 1 and 3, 5
random-label controls, each 25 000 steps): the seeds of one (weight decay, labels) group share
a vmapped model, so 3 batched runs; per batched step max(5 x 4.26 GFLOP / 6 TFLOP/s = 3.55 ms,
220 x 10 us = 2.2 ms) = 3.55 ms, i.e. 3 x 25 000 x 3.55 ms = 4.4 min of training, plus 0.6 min
of metrics (5.2 s x (128/64)^3 per run, 15 runs on 16 cores): **about 5 minutes, within the 10**.
Unbatched, the same plan is launch-bound at 2.2 ms per step and needs 13.8 minutes: batching
the seeds is what makes it fit.  Both bounds are pessimistic (10 % of FP32 peak, 10 us per
launch); the estimate is to be replaced by a measurement on the GPU.  Chapter 6's full plan
(30 runs, ``icllib.nonlinear.induction``) is sized by ``bench/bench_ch6_full_scale.py``: 2.9
minutes by the same bounds, 7.9 minutes for both chapters.
"""

from __future__ import annotations

import argparse
import time

import torch
from _h200 import EFFICIENCY, H200_FP32_FLOPS, LAUNCH_SECONDS  # shared estimate constants
from threadpoolctl import threadpool_limits

from icllib.nonlinear.batched import BatchedSeeds
from icllib.nonlinear.grokking import (
    ModularTransformer,
    experiment_plan,
    full_config,
    modular_dataset,
    quick_config,
    summarize_run,
    train_grokking,
)


def flops_per_step(c) -> float:
    """Matrix-product FLOPs of one full-batch training step plus the amortised evaluation."""
    n_train = round(c.train_frac * c.p ** 2)
    d, m, p = c.d_model, c.d_mlp, c.p
    table = 3 * (p + 1)
    per_example = 2 * (d * d + d * d + 2 * d * m + d * p)       # W_Q, W_O, MLP in/out, W_U
    shared = 2 * table * 2 * d * d                                  # keys and values
    forward = n_train * per_example + shared
    evaluation = (p * p * per_example + shared) / c.eval_every
    return 3 * forward + evaluation


def kernels_per_step(c, device="cpu") -> int:
    """ATen operator calls of one training step (forward, float64 loss, backward, AdamW)."""
    from torch.profiler import ProfilerActivity, profile

    data = modular_dataset(c.p, c.op, c.train_frac, 0)
    model = ModularTransformer(c.p, c.d_model, c.n_heads, c.d_mlp,
                               torch.Generator().manual_seed(0)).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=c.lr, weight_decay=c.weight_decay,
                            betas=c.betas, foreach=True)
    x = torch.as_tensor(data.inputs[data.train_idx], device=device)
    y = torch.as_tensor(data.labels[data.train_idx], device=device)

    def step():
        opt.zero_grad(set_to_none=True)
        torch.nn.functional.cross_entropy(model(x).double(), y).backward()
        opt.step()

    step()
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        step()
    # leaf operators only: those that launch work (views and wrappers launch nothing)
    events = [e for e in prof.events() if e.name.startswith("aten::") and e.cpu_children == []]
    return len([e for e in events if e.name not in ("aten::empty", "aten::view",
                                                    "aten::as_strided", "aten::empty_strided",
                                                    "aten::detach", "aten::t", "aten::reshape",
                                                    "aten::permute", "aten::transpose",
                                                    "aten::unsqueeze", "aten::expand",
                                                    "aten::_reshape_alias", "aten::alias")])


def seconds_per_step_batched(c, S, steps) -> float:
    """Seconds per step of S seeds of ``c`` trained as one vmapped model (full batch)."""
    models, xs, ys = [], [], []
    for s in range(S):
        data = modular_dataset(c.p, c.op, c.train_frac, s)
        models.append(ModularTransformer(c.p, c.d_model, c.n_heads, c.d_mlp,
                                         torch.Generator().manual_seed(s)))
        xs.append(torch.as_tensor(data.inputs[data.train_idx]))
        ys.append(torch.as_tensor(data.labels[data.train_idx]))
    batched = BatchedSeeds(models)
    opt = torch.optim.AdamW(batched.params.values(), lr=c.lr, weight_decay=c.weight_decay,
                            betas=c.betas)
    x, y = torch.stack(xs), torch.stack(ys)

    def loss(logits, y_):
        return torch.nn.functional.cross_entropy(logits.double(), y_)

    def step():                    # train_step would hand the labels to the model as well
        losses = torch.vmap(loss)(batched(x), y)
        opt.zero_grad(set_to_none=True)
        losses.sum().backward()
        opt.step()

    step()
    t0 = time.perf_counter()
    for _ in range(steps):
        step()
    return (time.perf_counter() - t0) / steps


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--seeds", type=int, default=5)
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    full, quick = full_config(), quick_config()
    with threadpool_limits(1):
        f_step = flops_per_step(full)
        k_step = kernels_per_step(full)
        print(f"full setting: {f_step / 1e9:.2f} GFLOP per step, {k_step} kernels per step")
        one = seconds_per_step_batched(quick, 1, args.steps)
        many = seconds_per_step_batched(quick, args.seeds, args.steps)
        print(f"quick setting on this CPU: 1 seed {1 / one:.0f} steps/s, {args.seeds} seeds "
              f"batched {args.seeds / many:.0f} seed-steps/s (speed-up "
              f"{args.seeds * one / many:.2f}x over {args.seeds} separate runs)")
        run = train_grokking(quick_config(n_steps=100, checkpoint_every=1), progress=False,
                             num_threads=1, keep_model=False)
        t0 = time.perf_counter()
        summarize_run(run, reference_steps=[100])
        metrics_101 = time.perf_counter() - t0
    print(f"metrics of 101 checkpoints (quick, 3 truncation ranks): {metrics_101:.1f} s here")
    n_runs = sum(1 for _ in experiment_plan("full"))
    n_batched = len({(wd, control) for wd, _, control in experiment_plan("full")})
    S = n_runs // n_batched
    gpu_step = max(S * f_step / (EFFICIENCY * H200_FP32_FLOPS), k_step * LAUNCH_SECONDS)
    single_step = max(f_step / (EFFICIENCY * H200_FP32_FLOPS), k_step * LAUNCH_SECONDS)
    train_s = n_batched * full.n_steps * gpu_step
    metrics_s = metrics_101 * (full.d_model / quick.d_model) ** 3 * n_runs / 16
    print(f"H200 estimate, full plan ({n_runs} runs as {n_batched} batched runs of {S} seeds, "
          f"{full.n_steps} steps): training {train_s / 60:.1f} min "
          f"({gpu_step * 1e3:.2f} ms per batched step), metrics {metrics_s / 60:.1f} min on 16 "
          f"cores; total {(train_s + metrics_s) / 60:.1f} min (budget 10). Unbatched: "
          f"{n_runs * full.n_steps * single_step / 60:.1f} min of training.")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
