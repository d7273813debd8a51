"""Generate the grokking runs that chapter 7 loads (book/data/ch7/<scale>/*.npz).

Each run trains the one-layer modular-arithmetic transformer of icllib.nonlinear.grokking at
the scale chosen by ``--scale`` (default: ICLLIB_SCALE; quick: the book's CPU setting; full:
Nanda et al.'s reference setting, for a GPU), then stores, in the one run-file format of
icllib.nonlinear.runs, only what the chapter plots: the curves (every eval_every steps),
checkpoint metrics (effective rank, norm, subspace distances, rotation) and the final number
embeddings. Each file records, in its ``meta``, the command that regenerates it.

    python scripts/make_ch7_runs.py                       # the whole plan (experiment_plan)
    python scripts/make_ch7_runs.py --seeds 0 --weight-decays 1.0
    python scripts/make_ch7_runs.py --controls            # only the random-label controls
    python scripts/make_ch7_runs.py --scale medium --jobs 2 --skip-existing   # CPU-hours
    python scripts/make_ch7_runs.py --scale full --device cuda --batched

A file is written atomically once its run is complete, so an interrupted command loses only
the runs in progress; ``--skip-existing`` then trains only the runs whose files are missing.

Runs are deterministic on the CPU (one torch thread, one BLAS thread each); on a GPU the
cuBLAS workspace is fixed (``CUBLAS_WORKSPACE_CONFIG``) before deterministic algorithms are
switched on.
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
sys.path.insert(0, str(ROOT))


def one_run(seed: int, weight_decay: float, scale: str, out: str, progress: bool,
            device: str, random_labels: bool = False, n_steps: int | None = None) -> str:
    from threadpoolctl import threadpool_limits

    from icllib.nonlinear.grokking import make_run, run_file_name
    from icllib.nonlinear.runs import save_run

    t0 = time.perf_counter()
    path = Path(out) / run_file_name(weight_decay, seed, random_labels)
    print(f"start {path.name}", flush=True)
    with threadpool_limits(1):
        summary = make_run(weight_decay, seed, scale, device=device, progress=progress,
                           random_labels=random_labels, n_steps=n_steps)
    # atomically (save_run): a file that exists is a complete run (--skip-existing relies on it)
    save_run(summary, path)
    m = summary.meta
    return (f"{path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}: "
            f"{m['seconds']:.1f} s training ({m['steps_per_second']:.1f} steps/s), "
            f"{time.perf_counter() - t0 - m['seconds']:.1f} s metrics, final train/test acc "
            f"{summary.train_acc[-1]:.3f}/{summary.test_acc[-1]:.3f}, "
            f"{path.stat().st_size / 1024:.0f} KiB")


def main(argv=None) -> int:
    from icllib.nonlinear.grokking import CHAPTER, experiment_plan
    from icllib.nonlinear.runs import data_dir
    from icllib.scale import SCALES, current_scale

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", choices=SCALES, default=None,
                    help="default: ICLLIB_SCALE (quick when unset)")
    ap.add_argument("--seeds", type=int, nargs="+", default=None,
                    help="default: the seeds of the plan (experiment_plan)")
    ap.add_argument("--weight-decays", type=float, nargs="+", default=None,
                    help="default: those of the plan")
    ap.add_argument("--controls", action="store_true",
                    help="only the random-label controls (default: the whole plan)")
    ap.add_argument("--steps", type=int, default=None,
                    help="run length (default: the scale's; 15000 for the long weight decay "
                         "0.3 run: --seeds 0 --weight-decays 0.3 --steps 15000)")
    ap.add_argument("--out", default=None, help="default: book/data/ch7/<scale>")
    ap.add_argument("--jobs", type=int, default=2, help="runs in parallel (one core each)")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--no-progress", action="store_true")
    ap.add_argument("--skip-existing", action="store_true",
                    help="train only the runs whose files do not exist yet (resume)")
    ap.add_argument("--batched", action="store_true",
                    help="train the seeds of each setting as one vmapped model (for a GPU; "
                         "bench/bench_ch7_full_scale.py: the full plan then fits one H200)")
    args = ap.parse_args(argv)
    scale = args.scale or current_scale()
    args.out = args.out or str(data_dir(CHAPTER, scale))
    os.makedirs(args.out, exist_ok=True)
    if args.device != "cpu":
        from icllib.nonlinear.device import CUBLAS_WORKSPACE

        # before any worker starts: the spawned processes inherit it
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", CUBLAS_WORKSPACE)
    jobs = [(s, wd, control) for wd, s, control in experiment_plan(scale)
            if (args.seeds is None or s in args.seeds)
            and (args.weight_decays is None or wd in args.weight_decays)
            and (control or not args.controls)]
    if args.seeds is not None and args.weight_decays is not None:     # explicit runs
        jobs = [(s, wd, args.controls) for wd in args.weight_decays for s in args.seeds]
    if args.skip_existing:
        from icllib.nonlinear.grokking import run_file_name

        todo = [job for job in jobs
                if not (Path(args.out) / run_file_name(job[1], job[0], job[2])).exists()]
        print(f"{len(jobs) - len(todo)} of {len(jobs)} runs exist; training {len(todo)}",
              flush=True)
        jobs = todo
    # seed by seed, each run beside its control: a partial set is balanced
    jobs.sort(key=lambda job: (job[0], job[2], job[1]))
    t0 = time.perf_counter()
    progress = not args.no_progress and args.jobs == 1
    if args.batched:
        from icllib.nonlinear.grokking import make_runs_batched, run_file_name
        from icllib.nonlinear.runs import save_run

        groups = {}
        for s, wd, control in jobs:
            groups.setdefault((wd, control), []).append(s)
        for (wd, control), seeds in groups.items():
            t1 = time.perf_counter()
            for summary in make_runs_batched(wd, seeds, scale, device=args.device,
                                             random_labels=control, n_steps=args.steps):
                save_run(summary, Path(args.out) / run_file_name(wd, summary.seed, control))
            print(f"weight decay {wd:g}{' random labels' if control else ''}, seeds {seeds}: "
                  f"{time.perf_counter() - t1:.0f} s (batched)", flush=True)
    elif args.jobs == 1:
        for s, wd, control in jobs:
            print(one_run(s, wd, scale, args.out, progress, args.device, control, args.steps),
                  flush=True)
    else:
        with ProcessPoolExecutor(args.jobs, mp_context=get_context("spawn")) as pool:
            futures = [pool.submit(one_run, s, wd, scale, args.out, False, args.device, control,
                                   args.steps) for s, wd, control in jobs]
            for f in futures:
                print(f.result(), flush=True)
    print(f"total {time.perf_counter() - t0:.0f} s for {len(jobs)} runs", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
