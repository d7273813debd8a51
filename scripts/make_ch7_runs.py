"""Generate the grokking runs that chapter 7 loads (book/data/ch7/*.npz).

Each run trains the one-layer modular-arithmetic transformer of icllib.nonlinear.grokking at
the scale chosen by ICLLIB_SCALE (quick: the book's CPU setting; full: Nanda et al.'s
reference setting, for a GPU), then stores only what the chapter plots: downsampled-free
curves (every eval_every steps), checkpoint metrics (effective rank, norm, subspace distances,
rotation) and the final number embeddings. Each file records, in its ``meta``, the command
that regenerates it.

    python scripts/make_ch7_runs.py                       # all seeds and weight decays
    python scripts/make_ch7_runs.py --seeds 0 --weight-decays 1.0

Runs are deterministic on the CPU (one torch thread, one BLAS thread each).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def default_out() -> Path:
    """book/data/ch7 at the quick scale, book/data/ch7-full at the full scale."""
    from icllib.scale import pick

    return ROOT / "book" / "data" / pick(quick="ch7", full="ch7-full")

SEEDS = (0, 1, 2)
WEIGHT_DECAYS = (0.3, 1.0, 3.0)


def run_file(out: Path, weight_decay: float, seed: int) -> Path:
    """Where the run with this weight decay and seed is stored."""
    return Path(out) / f"wd{weight_decay:g}_seed{seed}.npz"


def one_run(seed: int, weight_decay: float, out: str, progress: bool, device: str) -> str:
    from threadpoolctl import threadpool_limits

    from icllib.nonlinear.grokking import (full_config, quick_config, save_summary,
                                           summarize_run, train_grokking)
    from icllib.scale import current_scale, pick

    scale = current_scale()
    config = pick(quick=quick_config, full=full_config)(seed=seed, weight_decay=weight_decay)
    T = config.n_steps
    every = config.checkpoint_every
    reference_steps = sorted({int(round(0.8 * T / every)) * every, T})
    command = (f"ICLLIB_SCALE={scale} python scripts/make_ch7_runs.py --seeds {seed} "
               f"--weight-decays {weight_decay:g}" + ("" if device == "cpu" else f" --device {device}"))
    with threadpool_limits(1):
        run = train_grokking(config, progress=progress, num_threads=1 if device == "cpu" else None,
                             device=device, keep_model=False)
        t0 = time.perf_counter()
        summary = summarize_run(run, reference_steps=reference_steps, command=command)
    path = run_file(Path(out), weight_decay, seed)
    save_summary(path, summary)
    return (f"{path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}: "
            f"{run.wall_time_s:.1f} s training ({run.steps_per_s:.1f} steps/s), "
            f"{time.perf_counter() - t0:.1f} s metrics, final train/test acc "
            f"{run.train_acc[-1]:.3f}/{run.test_acc[-1]:.3f}, {path.stat().st_size / 1024:.0f} KiB")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, nargs="+", default=list(SEEDS))
    ap.add_argument("--weight-decays", type=float, nargs="+", default=list(WEIGHT_DECAYS))
    ap.add_argument("--out", default=None, help="default: book/data/ch7 (quick) or ch7-full (full)")
    ap.add_argument("--jobs", type=int, default=2, help="runs in parallel (one core each)")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--no-progress", action="store_true")
    args = ap.parse_args(argv)
    args.out = args.out or str(default_out())
    os.makedirs(args.out, exist_ok=True)
    jobs = [(s, wd) for wd in args.weight_decays for s in args.seeds]
    t0 = time.perf_counter()
    progress = not args.no_progress and args.jobs == 1
    if args.jobs == 1:
        for s, wd in jobs:
            print(one_run(s, wd, args.out, progress, args.device), flush=True)
    else:
        with ProcessPoolExecutor(args.jobs, mp_context=get_context("spawn")) as pool:
            futures = [pool.submit(one_run, s, wd, args.out, False, args.device) for s, wd in jobs]
            for f in futures:
                print(f.result(), flush=True)
    print(f"total {time.perf_counter() - t0:.0f} s for {len(jobs)} runs", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
