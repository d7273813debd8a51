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

Measured on the 2-core machine, 2026-12-02, one run (load average 0.47 at the start), every
PyTorch variant in the same run (``--torch-configs`` default: float32 x 1 thread and float64 x
2 threads, each in both orders); steps/s, best of 3, and icllib / the fastest PyTorch variant
for the default ``sampler="auto"`` and for ``"statistics"``:

     d    N     B  default  statistics  fastest torch      default  stat.
     4   10   256   1913.6      1779.4   650.4 mv 32/1t       2.9    2.7
     4   10  4096    354.3       332.9   115.8 mv 32/1t       3.1    2.9
     4  100   256   2074.0      2011.6   298.9 gamma 32/1t    6.9    6.7
     4  100  4096    381.9       340.7    20.6 gamma 32/1t   18.5   16.5
     8   10   256   1612.1      1363.8   541.1 mv 32/1t       3.0    2.5
     8   10  4096    184.1       124.5    65.6 mv 32/1t       2.8    1.9
     8  100   256   1615.0      1249.7   149.3 gamma 32/1t   10.8    8.4
     8  100  4096    189.7       130.2     7.6 gamma 32/1t   24.9   17.1
    16   10   256   1119.1       822.8   335.0 mv 32/1t       3.3    2.5
    16   10  4096     98.5        51.1    28.3 mv 32/1t       3.5    1.8
    16  100   256   1146.2       616.8    70.0 mv 32/1t      16.4    8.8
    16  100  4096     82.5        45.2     2.9 mv 32/1t      28.6   15.7

The default: min 2.8x (d = 8, N = 10, B = 4096), median 5.2x, max 28.6x; "statistics" alone:
min 1.8x (d = 16, N = 10, B = 4096), median 4.8x.  float32 single-thread PyTorch was the
fastest variant at every size.  At d = 4, N = 10 the default *is* the statistics sampler
(the two columns differ by run-to-run noise, about 7 %); everywhere else it is the actions.
At d = 16, N = 10 the Bartlett factor needs 105 normals and 10 chi-squares per prompt and four
passes over a 5 MB factor per step; the actions need 32 normals and 2 chi-squares, and PyTorch
draws 160 normals for the tokens.  An earlier run on a busier machine (load 1.5, other jobs
starting) gave the actions sampler 2.3x at d = 16, N = 10, B = 4096 (3.5x here): quote numbers
from a quiet machine.
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
    print(f"icllib (the default sampler, 'auto') / fastest PyTorch variant: "
          f"min {min(ratios):.1f}x, median {np.median(ratios):.1f}x, max {max(ratios):.1f}x")
    print(f"icllib (sampler='statistics') / fastest PyTorch variant: min "
          f"{min(stat_ratios):.1f}x, median {np.median(stat_ratios):.1f}x, "
          f"max {max(stat_ratios):.1f}x")


if __name__ == "__main__":
    main()
