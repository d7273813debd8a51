"""Steps per second for S seeds of one chapter-6 configuration trained as one batched model.

Run:  python bench/bench_batched_seeds.py [--seeds 1 2 4 8] [--steps 30] [--threads T]
                                         [--layers 2] [--scale quick|full] [--device cpu|cuda]

For each S the script times ``--steps`` Adam steps of :class:`icllib.nonlinear.batched.
BatchedSeeds` (S stacked weight sets, each seed its own batch, one vmapped forward and one
backward), after two warm-up steps, and prints seed-steps per second and the speed-up over S
separate runs (S x the time of one seed alone, measured the same way).  The numbers are a
benchmark, never a test; on a shared machine run it twice and look at the spread.

Measured on the shared 2-core CPU machine (2026-12-01, quick 2-layer setting, batch 32, one
thread): 330 seed-steps/s for one seed, 380 / 400 / 410 for S = 2 / 4 / 8 (speed-up 1.16 /
1.23 / 1.24 over S separate runs); two threads 1.16 / 1.32 / 1.39.  A CPU core is already
busy with one small model, so stacking saves only the per-step Python and dispatch overhead;
``scaled_dot_product_attention`` has no vmap batching rule in torch 2.13 and falls back to a
loop over seeds (an explicit softmax attention raised S = 8 to 1.52x).  On a GPU, where one
small model leaves the device mostly idle, the stacked step is where the gain is.
"""

from __future__ import annotations

import argparse
import time

import torch

from icllib.nonlinear.batched import BatchedSeeds, train_step
from icllib.nonlinear.induction import AttentionOnlyTransformer, experiment_settings


def _loss(logits, tokens):
    V = logits.shape[-1]
    return torch.nn.functional.cross_entropy(logits[:, :-1].reshape(-1, V),
                                             tokens[:, 1:].reshape(-1))


def seconds_per_step(S, model_config, task, batch_size, lr, steps, device):
    models = [AttentionOnlyTransformer(model_config, torch.Generator().manual_seed(s)).to(device)
              for s in range(S)]
    batched = BatchedSeeds(models)
    opt = torch.optim.Adam(batched.params.values(), lr=lr)
    gens = [torch.Generator().manual_seed(1000 + s) for s in range(S)]

    def step():
        tokens = torch.stack([task.sample(batch_size, g)[0] for g in gens]).to(device)
        train_step(batched, opt, _loss, tokens)

    for _ in range(2):
        step()
    if device == "cuda":
        torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(steps):
        step()
    if device == "cuda":
        torch.cuda.synchronize()
    return (time.perf_counter() - t0) / steps


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 4, 8])
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--scale", default="quick", choices=["quick", "full"])
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    args = ap.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    settings = experiment_settings(args.layers, args.scale)
    task, model_config, train_config = settings
    one = seconds_per_step(1, model_config, task, train_config.batch_size, train_config.lr,
                           args.steps, args.device)
    print(f"{args.layers}-layer {args.scale} setting on {args.device}, "
          f"{torch.get_num_threads()} threads, batch {train_config.batch_size}")
    print(f"{'S':>3} {'s/step':>9} {'seed-steps/s':>13} {'speed-up vs S runs':>19}")
    for S in args.seeds:
        t = one if S == 1 else seconds_per_step(S, model_config, task, train_config.batch_size,
                                                train_config.lr, args.steps, args.device)
        print(f"{S:>3} {t:9.4f} {S / t:13.1f} {S * one / t:19.2f}")


if __name__ == "__main__":
    main()
