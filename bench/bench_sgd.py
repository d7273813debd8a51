"""SGD throughput of icllib against an equivalent PyTorch-autograd implementation.

Run:  python bench/bench_sgd.py [--quick] [--dtype float64|float32] [--repeats R]

Both sides do the same training: online SGD on the full linear transformer
``f(Z) = Z + W^P (Z Z^T / N) W^Q Z`` with a fresh task ``W = diag(lambda)``,
``lambda ~ N(0, 1)``, per prompt, inputs ``x ~ N(0, diag(s))``, the batch-mean loss
``1/2 ||W x_q - y_hat||^2`` and step size ``eta``.

* icllib: :func:`icllib.train.train_sgd`, numpy only, float64 arithmetic, analytic gradients
  with the batch axis last in reused work arrays
  (:class:`icllib.train.gradients.WhitenedGradients`), with two of its exact samplers:
  ``sampler="actions"`` (the "ratio" column) draws only the two products of the whitened
  context Gram matrix a step uses (:mod:`icllib.data.gram_actions`: ``2 D`` normals and two
  chi-squares per prompt for any ``N``); ``sampler="statistics"`` (the default, "stat.")
  draws the whole Bartlett factor (:mod:`icllib.data.wishart`, ``O(D min(N, D))`` numbers).
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

Measured on the shared 2-core machine (load average 12: other jobs held both cores, so
absolute rates are low and noisy; ratios are within one run, runs interleaved), 2026-12-01,
``--dtype float32 --torch-threads 1 --repeats 3``: steps/s, best of 3, and the ratios
icllib / faster PyTorch variant for ``sampler="actions"`` and for the default "statistics":

     d    N     B  actions  statistics   torch  ratio  stat.
     4   10   256   2494.9      2597.5   815.4    3.1    3.2
     4   10  4096    369.2       373.4    87.1    4.2    4.3
     4  100   256   2237.9      2040.6   213.0   10.5    9.6
     4  100  4096    350.1       270.2     7.2   48.7   37.6
     8   10   256   1494.0      1309.5   464.2    3.2    2.8
     8   10  4096    176.9       115.7    47.6    3.7    2.4
     8  100   256   2072.8      1396.6   163.3   12.7    8.6
     8  100  4096    261.5       165.0     5.9   44.2   27.9
    16   10   256   1283.4       883.1   342.1    3.8    2.6
    16   10  4096     86.7        46.2    26.0    3.3    1.8
    16  100   256   1167.2       562.3    54.3   21.5   10.4
    16  100  4096     97.9        35.7     1.8   54.0   19.7

``sampler="actions"``: min 3.1x, median 7.4x, max 54x (a second run: min 3.4x, median
7.1x); the default "statistics": min 1.8x (d = 16, N = 10, B = 4096), median 6.4x.  At
d = 16, N = 10 the Bartlett factor needs 110 normals and 10 chi-squares per prompt (the
statistic of rank 10 in 16 dimensions) and four passes over a 5 MB factor per step; the
actions need 32 normals and 2 chi-squares, and PyTorch draws 160 normals for the tokens.
At d = 4, N = 10 the two icllib samplers draw about as many numbers and run equally fast.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np


def icllib_runner(d, N, B, eta, seed, sampler="statistics"):
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


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="one short repeat per size")
    ap.add_argument("--dtype", default="float64", choices=["float64", "float32"],
                    help="PyTorch dtype (icllib is always float64)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=0.5, help="target seconds per timed run")
    ap.add_argument("--torch-threads", type=int, default=None,
                    help="torch.set_num_threads (default: os.cpu_count())")
    ap.add_argument("--sizes", default=None,
                    help="comma-separated d:N:B triples to run instead of the full grid")
    args = ap.parse_args()
    if args.quick:
        args.repeats, args.seconds = 1, 0.2

    import torch

    ncores = os.cpu_count()
    torch.set_num_threads(args.torch_threads or ncores)
    dtype = getattr(torch, args.dtype)
    eta = 0.01
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"cores {ncores}, torch threads {torch.get_num_threads()}, torch dtype {args.dtype}, "
          f"load average {load:.2f}; best of {args.repeats} runs of ~{args.seconds} s "
          "[worst in brackets]")
    header = (f"{'d':>3} {'N':>4} {'B':>5} | {'icllib actions':>19} | {'icllib statistics':>19} | "
              f"{'torch Gamma':>19} | {'torch mv':>19} | {'icllib p/s':>9} | {'ratio':>6} | "
              f"{'stat.':>5}")
    print(header)
    print("-" * len(header))
    ratios, stat_ratios = [], []
    if args.sizes:
        sizes = [tuple(int(x) for x in item.split(":")) for item in args.sizes.split(",")]
    else:
        sizes = [(d, N, B) for d in (4, 8, 16) for N in (10, 100) for B in (256, 4096)]
    for d, N, B in sizes:
        runners = {
            "icllib": icllib_runner(d, N, B, eta, seed=0, sampler="actions"),
            "icllib statistics": icllib_runner(d, N, B, eta, seed=0),
            "torch Gamma": torch_runner(d, N, B, eta, seed=0, dtype=dtype, order="gamma"),
            "torch mv": torch_runner(d, N, B, eta, seed=0, dtype=dtype, order="mv"),
        }
        steps = {k: calibrate(r, args.seconds) for k, r in runners.items()}
        rates = {k: [] for k in runners}
        for _ in range(args.repeats):
            for k, r in runners.items():
                t0 = time.perf_counter()
                r(steps[k])
                rates[k].append(steps[k] / (time.perf_counter() - t0))
        best = {k: max(v) for k, v in rates.items()}
        worst = {k: min(v) for k, v in rates.items()}
        torch_best = max(best["torch Gamma"], best["torch mv"])
        ratio = best["icllib"] / torch_best
        ratios.append(ratio)
        stat_ratios.append(best["icllib statistics"] / torch_best)
        cells = " | ".join(f"{best[k]:>8.1f} [{worst[k]:>8.1f}]" for k in runners)
        print(f"{d:>3} {N:>4} {B:>5} | {cells} | {best['icllib'] * B:>9.2e} | {ratio:>6.1f} | "
              f"{stat_ratios[-1]:>5.1f}", flush=True)
    print(f"icllib (sampler='actions') / faster torch: min {min(ratios):.1f}x, "
          f"median {np.median(ratios):.1f}x, max {max(ratios):.1f}x")
    print(f"icllib (sampler='statistics', the default) / faster torch: min "
          f"{min(stat_ratios):.1f}x, median {np.median(stat_ratios):.1f}x, "
          f"max {max(stat_ratios):.1f}x")


if __name__ == "__main__":
    main()
