"""SGD throughput of icllib against an equivalent PyTorch-autograd implementation.

Run:  python bench/bench_sgd.py [--quick] [--torch-configs float32:1,float64:all] [--repeats R]

Both sides do the same training: online SGD on the full linear transformer
``f(Z) = Z + W^P (Z Z^T / N) W^Q Z`` with a fresh task ``W = diag(lambda)``,
``lambda ~ N(0, 1)``, per prompt, inputs ``x ~ N(0, diag(s))``, the batch-mean loss
``1/2 ||W x_q - y_hat||^2`` and step size ``eta``.

* icllib: :func:`icllib.train.train_sgd`, numpy only, float64 arithmetic, analytic gradients
  with the batch axis last in reused work arrays
  (:class:`icllib.train.gradients.WhitenedGradients`), with two of its exact samplers:
  ``sampler="actions"`` draws only the two products of the whitened context Gram matrix a
  step uses (:mod:`icllib.data.gram_actions`: ``2 D`` normals and two chi-squares per prompt
  for any ``N``); ``sampler="statistics"`` ("stat.") draws the whole Bartlett factor
  (:mod:`icllib.data.wishart`, ``O(D min(N, D))`` numbers).  The "default" column is
  ``train_sgd``'s default ``sampler="auto"`` (:func:`icllib.train.auto_sampler`): the
  factor at ``d = 4, N = 10`` (6 upper normals, no gamma draws), the actions at every
  other size of the grid.
  Normals come from a vectorised Box-Muller transform of raw 64-bit words
  (:mod:`icllib.data.draws`).
* PyTorch: draws the ``N`` tokens of every prompt with ``torch.randn``, builds ``Z``, computes
  the prediction with full ``2d x 2d`` matrices and gets the gradients from
  ``loss.backward()``; ``torch.set_num_threads(os.cpu_count())``.  Two contraction orders:
  "torch Gamma" forms ``Gamma = Z Z^T / N`` (the textbook way, ``O(B N d^2)``), "torch mv"
  computes ``Z (Z^T (W^Q z_q)) / N`` (``O(B N d)``, the order icllib uses).

The script prints steps/s for each size and the ratio icllib / (faster PyTorch variant)
(> 1 means icllib is faster).  Each number is the best of ``--repeats`` timed runs of about
``--seconds`` each, run alternately; on a machine shared with other jobs the numbers are
noisy (PyTorch's thread pool suffers most from competing processes), so look at the spread
printed in brackets (worst run) and rerun on a quiet machine before quoting them.

Measured on the 2-core machine, 2026-12-02, one run (load average 2.1 at the start: the tail
of a test run), every PyTorch variant in the same run (``--torch-configs`` default: float32 x 1
thread and float64 x 2 threads, each in both orders); steps/s, best of 3, and icllib / the
fastest PyTorch variant for ``sampler="actions"`` and for the default ``"statistics"``:

     d    N     B  actions  statistics  fastest torch        ratio  stat.
     4   10   256   2025.2      2055.1   797.8 mv 32/1t        2.5    2.6
     4   10  4096    419.2       418.0   136.2 mv 32/1t        3.1    3.1
     4  100   256   2157.5      2032.6   341.8 gamma 32/1t     6.3    5.9
     4  100  4096    520.8       472.5    26.6 gamma 32/1t    19.6   17.7
     8   10   256   1772.6      1555.0   672.2 mv 32/1t        2.6    2.3
     8   10  4096    235.3       160.6    78.0 mv 32/1t        3.0    2.1
     8  100   256   2010.0      1588.4   196.6 gamma 32/1t    10.2    8.1
     8  100  4096    229.7       150.0     9.1 gamma 32/1t    25.3   16.5
    16   10   256   1209.3       864.5   398.2 mv 32/1t        3.0    2.2
    16   10  4096    107.5        58.8    34.8 mv 32/1t        3.1    1.7
    16  100   256   1257.6       737.5    84.4 mv 32/1t       14.9    8.7
    16  100  4096    108.5        48.1     3.2 mv 32/1t       33.8   15.0

``sampler="actions"``: min 2.5x, median 4.7x, max 34x; the default "statistics": min 1.7x
(d = 16, N = 10, B = 4096), median 4.5x.  float32 single-thread PyTorch was the fastest variant
at every size.  At d = 16, N = 10 the Bartlett factor needs 110 normals and 10 chi-squares per
prompt (the statistic of rank 10 in 16 dimensions) and four passes over a 5 MB factor per step;
the actions need 32 normals and 2 chi-squares, and PyTorch draws 160 normals for the tokens.
At d = 4, N = 10 the two icllib samplers draw about as many numbers and run equally fast.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np


def icllib_runner(d, N, B, eta, seed, sampler="auto"):
    from icllib.data import DataConfig
    from icllib.train import balanced_init, train_sgd

    config = DataConfig(s=np.linspace(0.5, 2.0, d), N=N)
    params0 = balanced_init(d, 0.1)
    rng = np.random.default_rng(seed)

    def run(steps):
        train_sgd(config, params0, eta=eta, B=B, steps=steps, rng=rng, record_every=steps,
                  sampler=sampler)

    return run


def torch_runner(d, N, B, eta, seed, dtype, order="gamma"):
    import torch

    gen = torch.Generator().manual_seed(seed)
    sqrt_s = torch.tensor(np.sqrt(np.linspace(0.5, 2.0, d)), dtype=dtype)
    D = 2 * d

    def run(steps):
        WP = torch.zeros(D, D, dtype=dtype)
        WQ = torch.zeros(D, D, dtype=dtype)
        WP[d:, d:] = 0.1 * torch.eye(d, dtype=dtype)
        WQ[:d, :d] = 0.1 * torch.eye(d, dtype=dtype)
        WP.requires_grad_(True)
        WQ.requires_grad_(True)
        for _ in range(steps + 1):  # train_sgd also evaluates one batch after the last step
            X = torch.randn(B, N, d, generator=gen, dtype=dtype) * sqrt_s
            xq = torch.randn(B, d, generator=gen, dtype=dtype) * sqrt_s
            lam = torch.randn(B, d, generator=gen, dtype=dtype)
            Y = X * lam[:, None, :]  # y_i = W x_i with W = diag(lambda)
            Z = torch.zeros(B, D, N + 1, dtype=dtype)
            Z[:, :d, :N] = X.transpose(1, 2)
            Z[:, d:, :N] = Y.transpose(1, 2)
            Z[:, :d, N] = xq
            if order == "gamma":  # the textbook order: form Gamma = Z Z^T / N
                Gamma = Z @ Z.transpose(1, 2) / N
                y_hat = (WP @ Gamma @ (WQ @ Z[:, :, N:]))[:, d:, 0]
            else:  # matrix-vector order: Z (Z^T (W^Q z_q)) / N, never forming Gamma
                k = WQ @ Z[:, :, N:]
                v = Z @ (Z.transpose(1, 2) @ k) / N
                y_hat = (WP[d:] @ v)[:, :, 0]
            loss = 0.5 * ((y_hat - lam * xq) ** 2).sum(dim=1).mean()
            loss.backward()
            with torch.no_grad():
                WP -= eta * WP.grad
                WQ -= eta * WQ.grad
                WP.grad = None
                WQ.grad = None

    return run


def calibrate(run, seconds):
    """Number of steps that takes about ``seconds``."""
    steps = 2
    while True:
        t0 = time.perf_counter()
        run(steps)
        dt = time.perf_counter() - t0
        if dt > seconds / 4 or steps > 10**6:
            return max(2, int(steps * seconds / dt))
        steps *= 4


def with_threads(run, threads):
    """``run`` with ``torch.set_num_threads(threads)`` around it (each variant its own)."""
    import torch

    def timed(steps):
        torch.set_num_threads(threads)
        run(steps)

    return timed


def parse_torch_configs(text, ncores):
    """``"float32:1,float64:all"`` -> [("float32", 1), ("float64", ncores)]."""
    configs = []
    for item in text.split(","):
        dtype, _, threads = item.partition(":")
        if dtype not in ("float32", "float64"):
            raise SystemExit(f"--torch-configs: dtype must be float32 or float64, got {dtype!r}")
        configs.append((dtype, ncores if threads in ("", "all") else int(threads)))
    return configs


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="one short repeat per size")
    ap.add_argument("--torch-configs", default="float32:1,float64:all",
                    help="PyTorch variants timed in the same run, dtype:threads, comma-separated "
                         "(threads 'all' = os.cpu_count()); icllib is always float64. The "
                         "ratio is against the fastest of them.")
    ap.add_argument("--dtype", default=None, choices=["float64", "float32"],
                    help="shorthand for one PyTorch variant: --torch-configs DTYPE:THREADS")
    ap.add_argument("--torch-threads", type=int, default=None,
                    help="with --dtype: torch.set_num_threads (default: os.cpu_count())")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=0.5, help="target seconds per timed run")
    ap.add_argument("--sizes", default=None,
                    help="comma-separated d:N:B triples to run instead of the full grid")
    args = ap.parse_args()
    if args.quick:
        args.repeats, args.seconds = 1, 0.2

    import torch

    ncores = os.cpu_count()
    if args.dtype:
        configs = [(args.dtype, args.torch_threads or ncores)]
    else:
        configs = parse_torch_configs(args.torch_configs, ncores)
    eta = 0.01
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    names = ", ".join(f"{dt} x {th} thread{'s' if th > 1 else ''}" for dt, th in configs)
    print(f"cores {ncores}; PyTorch variants: {names}; load average {load:.2f}; "
          f"best of {args.repeats} runs of ~{args.seconds} s [worst in brackets]")
    if args.sizes:
        sizes = [tuple(int(x) for x in item.split(":")) for item in args.sizes.split(",")]
    else:
        sizes = [(d, N, B) for d in (4, 8, 16) for N in (10, 100) for B in (256, 4096)]
    ratios, stat_ratios = [], []
    for d, N, B in sizes:
        runners = {
            "icllib default": icllib_runner(d, N, B, eta, seed=0),
            "icllib statistics": icllib_runner(d, N, B, eta, seed=0, sampler="statistics"),
        }
        for dt, th in configs:
            for order in ("gamma", "mv"):
                run = torch_runner(d, N, B, eta, seed=0, dtype=getattr(torch, dt), order=order)
                runners[f"torch {order} {dt[5:]}/{th}t"] = with_threads(run, th)
        steps = {k: calibrate(r, args.seconds) for k, r in runners.items()}
        rates = {k: [] for k in runners}
        for _ in range(args.repeats):  # variants alternate, so a load change hits them all
            for k, r in runners.items():
                t0 = time.perf_counter()
                r(steps[k])
                rates[k].append(steps[k] / (time.perf_counter() - t0))
        best = {k: max(v) for k, v in rates.items()}
        worst = {k: min(v) for k, v in rates.items()}
        torch_names = [k for k in runners if k.startswith("torch")]
        fastest = max(torch_names, key=best.get)
        ratios.append(best["icllib default"] / best[fastest])
        stat_ratios.append(best["icllib statistics"] / best[fastest])
        if len(ratios) == 1:
            print(f"{'d':>3} {'N':>4} {'B':>5} | "
                  + " | ".join(f"{k:>19}" for k in runners)
                  + f" | {'fastest torch':>17} | {'default':>7} | {'stat.':>5}")
        cells = " | ".join(f"{best[k]:>8.1f} [{worst[k]:>8.1f}]" for k in runners)
        print(f"{d:>3} {N:>4} {B:>5} | {cells} | {fastest[6:]:>17} | {ratios[-1]:>7.1f} | "
              f"{stat_ratios[-1]:>5.1f}", flush=True)
    print(f"icllib (the default sampler, 'auto' = 'actions' here) / fastest PyTorch variant: "
          f"min {min(ratios):.1f}x, median {np.median(ratios):.1f}x, max {max(ratios):.1f}x")
    print(f"icllib (sampler='statistics') / fastest PyTorch variant: min "
          f"{min(stat_ratios):.1f}x, median {np.median(stat_ratios):.1f}x, "
          f"max {max(stat_ratios):.1f}x")


if __name__ == "__main__":
    main()
