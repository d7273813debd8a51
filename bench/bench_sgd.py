"""SGD throughput of icllib against an equivalent PyTorch-autograd implementation.

Run:  python bench/bench_sgd.py [--quick] [--dtype float64|float32] [--repeats R]

Both sides do the same training: online SGD on the full linear transformer
``f(Z) = Z + W^P (Z Z^T / N) W^Q Z`` with a fresh task ``W = diag(lambda)``,
``lambda ~ N(0, 1)``, per prompt, inputs ``x ~ N(0, diag(s))``, the batch-mean loss
``1/2 ||W x_q - y_hat||^2`` and step size ``eta``.

* icllib: :func:`icllib.train.train_sgd` with the exact Wishart sampler
  (:func:`icllib.data.sample_statistics`) and analytic gradients, numpy only, float64
  arithmetic.  Its step is bound by drawing random numbers at small ``N``: normals come from a
  vectorised Box-Muller transform of raw 64-bit words (float32-accurate draws,
  :mod:`icllib.data.draws`; numpy's scalar ziggurat is ~2.5x slower), the Bartlett
  diagonal's chi-squares with few degrees of freedom from sums of exponentials
  (:mod:`icllib.data.wishart`), and the gradients run with the batch axis last in reused work
  arrays (:class:`icllib.train.gradients.WhitenedGradients`).
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

Measured once on the shared 2-core machine (load average ~1, 2026-12-01) with
``--dtype float32 --torch-threads 1 --repeats 3``: steps/s, best of 3 (icllib, and the faster
of the two PyTorch variants), and their ratio:

     d    N     B   icllib   torch   ratio
     4   10   256   3881.7  1588.9     2.4
     4   10  4096    852.8   245.5     3.5
     4  100   256   5523.8   598.4     9.2
     4  100  4096    734.6    37.2    19.8
     8   10   256   3612.2  1272.1     2.8
     8   10  4096    337.5   139.4     2.4
     8  100   256   3519.3   375.7     9.4
     8  100  4096    277.8    16.7    16.7
    16   10   256   2255.2   967.0     2.3
    16   10  4096    148.9    81.0     1.8
    16  100   256   1757.5   234.3     7.5
    16  100  4096    106.9     5.5    19.5

icllib / faster PyTorch variant: min 1.8x (d = 16, N = 10, B = 4096), median 5.5x, max
19.8x (the measurement this replaces, before the vectorised draws: 1.0-12x, median 4.6x, a
tie at d = 16, N = 10, B = 4096).  At d = 16, N = 10, B = 4096 icllib draws 137 normals and 10 chi-squares per prompt
(the exact statistic of rank 10 in 16 dimensions, the task and the query) at ~4.6 ns per
normal, PyTorch 192 float32 normals at ~3.4 ns; the float64 products of the step
(``10 d^2 B`` multiply-adds) take about a third of icllib's time there.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np


def icllib_runner(d, N, B, eta, seed):
    from icllib.data import DataConfig
    from icllib.train import balanced_init, train_sgd

    config = DataConfig(s=np.linspace(0.5, 2.0, d), N=N)
    params0 = balanced_init(d, 0.1)
    rng = np.random.default_rng(seed)

    def run(steps):
        train_sgd(config, params0, eta=eta, B=B, steps=steps, rng=rng, record_every=steps)

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
    header = (f"{'d':>3} {'N':>4} {'B':>5} | {'icllib steps/s':>19} | {'torch Gamma':>19} | "
              f"{'torch mv':>19} | {'icllib p/s':>9} | {'ratio':>6}")
    print(header)
    print("-" * len(header))
    ratios = []
    if args.sizes:
        sizes = [tuple(int(x) for x in item.split(":")) for item in args.sizes.split(",")]
    else:
        sizes = [(d, N, B) for d in (4, 8, 16) for N in (10, 100) for B in (256, 4096)]
    for d, N, B in sizes:
        runners = {
            "icllib": icllib_runner(d, N, B, eta, seed=0),
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
        ratio = best["icllib"] / max(best["torch Gamma"], best["torch mv"])
        ratios.append(ratio)
        cells = " | ".join(f"{best[k]:>8.1f} [{worst[k]:>8.1f}]" for k in runners)
        print(f"{d:>3} {N:>4} {B:>5} | {cells} | {best['icllib'] * B:>9.2e} | {ratio:>6.1f}",
              flush=True)
    print(f"icllib / faster torch: min {min(ratios):.1f}x, median {np.median(ratios):.1f}x, "
          f"max {max(ratios):.1f}x")


if __name__ == "__main__":
    main()
