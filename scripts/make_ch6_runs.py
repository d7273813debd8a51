#!/usr/bin/env python
"""Regenerate the data files of chapter 6 (attention-only transformers, ICL emergence).

Each file ``book/data/ch6/<scale>/run_L{depth}_{positional}_std{init_std}_seed{seed}.npz``
holds one run's evaluation curves, head scores and per-head and per-layer circuit metrics in
the one run-file format of ``icllib.nonlinear.runs`` (see ``icllib.nonlinear.induction.runs``),
and records the command that regenerates it.  The runs cover the chapter's factors: depth,
seed, attention initialisation (``--init-stds``) and positional embedding
(``--positionals``).  Examples::

    python scripts/make_ch6_runs.py                      # the chapter's runs (shipped_grid)
    python scripts/make_ch6_runs.py --depths 2 --seeds 0 --init-stds 0.1 --positionals learned
    python scripts/make_ch6_runs.py --demo               # the chapter's short live run
    python scripts/make_ch6_runs.py --relative           # the relative-position runs (weights)
    python scripts/make_ch6_runs.py --scale medium --jobs 2 --skip-existing   # CPU-hours
    python scripts/make_ch6_runs.py --scale medium --relative --jobs 2 --skip-existing
    python scripts/make_ch6_runs.py --scale full --device cuda   # larger scale, on a GPU
    python scripts/make_ch6_runs.py --scale full --device cuda --batched

``--batched`` trains the seeds of each (depth, positional, init_std) group as one vmapped
model (``icllib.nonlinear.induction.train_attention_only_seeds``; for a GPU: with it the full
plan fits a few minutes of one H200, ``bench/bench_ch6_full_scale.py``), deepest group first,
and summarises each group's runs in worker processes while the next group trains; the files
are the same (their command ends in ``--batched``).

``--scale`` defaults to ``ICLLIB_SCALE`` (quick when unset), as for every experiment of the
book.  Quick-scale runs are made on CPU with one thread and deterministic algorithms, so the
same machine reproduces them bit for bit (tests/test_nonlinear_induction.py checks the demo file);
on a GPU the cuBLAS workspace is fixed first (``CUBLAS_WORKSPACE_CONFIG``).  Existing files
are overwritten, unless ``--skip-existing``: then a run whose file exists is not trained
again, so an interrupted plan resumes where it stopped (a file is written only once its run
is complete).  ``--jobs N`` trains N runs at a time in worker processes, one thread each.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from icllib.nonlinear.device import enable_determinism  # noqa: E402
from icllib.nonlinear.induction import (  # noqa: E402
    CHAPTER,
    DEFAULT_INIT_STD,
    DEFAULT_POSITIONAL,
    INIT_STDS,
    MAX_LAYERS,
    POSITIONAL_KINDS,
    experiment_seeds,
    experiment_settings,
    make_run,
    relative_grid,
    run_command,
    run_file_name,
    shipped_grid,
    summarize_run,
    train_attention_only_seeds,
)
from icllib.nonlinear.runs import data_dir, save_run  # noqa: E402
from icllib.scale import SCALES, current_scale  # noqa: E402


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", choices=SCALES, default=None,
                    help="default: ICLLIB_SCALE (quick when unset)")
    ap.add_argument("--depths", type=int, nargs="+", default=None,
                    help="with --seeds, --init-stds, --positionals: a grid of runs; all four "
                         "unset: the chapter's runs, shipped_grid(scale)")
    ap.add_argument("--seeds", type=int, nargs="+", default=None,
                    help="default: the scale's seeds (quick: 0..4)")
    ap.add_argument("--init-stds", type=float, nargs="+", default=None)
    ap.add_argument("--positionals", nargs="+", choices=POSITIONAL_KINDS, default=None)
    ap.add_argument("--demo", action="store_true",
                    help="make the short live-demo run(s) instead (default depth 2, seed 0)")
    ap.add_argument("--relative", action="store_true",
                    help="make the chapter's relative-position runs (relative_grid), with "
                         "their weights")
    ap.add_argument("--weights", action="store_true",
                    help="also store each trained model's weights (for ablations)")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--out", type=Path, default=None, help="default: book/data/ch6/<scale>")
    ap.add_argument("--no-progress", action="store_true")
    ap.add_argument("--jobs", type=int, default=1,
                    help="runs trained at a time, each in its own process with one thread")
    ap.add_argument("--skip-existing", action="store_true",
                    help="do not retrain a run whose file exists (resume an interrupted plan)")
    ap.add_argument("--batched", action="store_true",
                    help="train the seeds of each setting and depth as one vmapped model "
                         "(for a GPU; bench/bench_ch6_full_scale.py)")
    args = ap.parse_args(argv)
    if args.jobs < 1:
        ap.error(f"--jobs must be at least 1, got {args.jobs}")
    if args.batched and (args.demo or args.weights or args.relative):
        ap.error("--batched makes the chapter's runs, without weights; not the demo")
    if args.relative and args.demo:
        ap.error("--relative and --demo are two different sets of runs")
    args.scale = args.scale or current_scale()

    grid_args = (args.depths, args.seeds, args.init_stds, args.positionals)
    if args.demo:
        args.scale = "quick"
        args.depths = args.depths or [2]
        args.seeds = args.seeds if args.seeds is not None else [0]
    if args.relative:
        args.weights = True
        jobs = [(p, std, L, s) for (p, std), depths in relative_grid(args.scale).items()
                for L, seeds in depths.items() for s in seeds]
    elif not args.demo and all(a is None for a in grid_args):
        jobs = [(p, std, L, s) for (p, std), depths in shipped_grid(args.scale).items()
                for L, seeds in depths.items() for s in seeds]
    else:
        jobs = [(p, std, L, s)
                for p in (args.positionals or list(POSITIONAL_KINDS))
                for std in (args.init_stds or list(INIT_STDS))
                for L in (args.depths or list(range(1, MAX_LAYERS + 1)))
                for s in (args.seeds if args.seeds is not None
                          else experiment_seeds(args.scale))]
    out = args.out or data_dir(CHAPTER, args.scale)
    out.mkdir(parents=True, exist_ok=True)
    if args.device == "cpu":
        torch.set_num_threads(1)
    enable_determinism(args.device)

    if args.demo:
        jobs = [(DEFAULT_POSITIONAL, DEFAULT_INIT_STD, L, s)
                for L in args.depths for s in args.seeds]
    t_all = time.perf_counter()
    if args.batched:
        batched(jobs, args, out)
        print(f"total {time.perf_counter() - t_all:.1f} s")
        return
    prefix = "demo" if args.demo else "run"
    paths = [out / run_file_name(L, s, prefix, init_std=std, positional=p)
             for p, std, L, s in jobs]
    if args.skip_existing:
        todo = [(job, path) for job, path in zip(jobs, paths) if not path.exists()]
        print(f"{len(jobs) - len(todo)} of {len(jobs)} runs exist; training {len(todo)}",
              flush=True)
    else:
        todo = list(zip(jobs, paths))
    # the longest runs first, so that the workers end together
    todo.sort(key=lambda item: -item[0][2])
    options = dict(scale=args.scale, demo=args.demo, device=args.device,
                   progress=not args.no_progress and args.jobs == 1, weights=args.weights)
    if args.jobs == 1:
        for job, path in todo:
            report(_train_and_save(job, path, **options), path)
    else:
        with ProcessPoolExecutor(args.jobs, mp_context=get_context("spawn")) as pool:
            futures = [(pool.submit(_train_and_save, job, path, **options), path)
                       for job, path in todo]
            for future, path in futures:
                report(future.result(), path)
    print(f"total {time.perf_counter() - t_all:.1f} s")


def _train_and_save(job, path, *, scale, demo, device, progress, weights):
    """Train one run and write its file (atomically: a partial file never exists)."""
    positional, init_std, L, s = job
    print(f"start {path.name}", flush=True)
    if device == "cpu":
        torch.set_num_threads(1)
    enable_determinism(device)
    summary = make_run(L, s, scale, demo=demo, device=device, progress=progress,
                       weights=weights, init_std=init_std, positional=positional)
    save_run(summary, path)        # atomic: a file that exists is a complete run
    return summary


def report(summary, path):
    w = summary.window
    print(f"{path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}: "
          f"{summary.meta['seconds']:.1f} s, "
          f"{summary.meta['steps_per_second']:.0f} steps/s, "
          f"final ICL loss {summary.icl_loss[-1]:.3f}, window "
          f"{(w.start, w.mid, w.end) if w.emerged else 'none'}", flush=True)


def _summarize_and_save(run, command, scale, path):
    torch.set_num_threads(1)
    summary = summarize_run(run, command=command, scale=scale)
    save_run(summary, path)
    return summary


def batched(jobs, args, out):
    """Each (positional, init_std, depth) group's seeds as one batched model, deepest first;
    the runs are summarised in worker processes while the next group trains."""
    groups = {}
    for positional, init_std, L, s in jobs:
        groups.setdefault((L, positional, init_std), []).append(s)
    order = sorted(groups, key=lambda g: -g[0])
    pending = []
    workers = max(1, (os.cpu_count() or 2) - 1)
    with ProcessPoolExecutor(workers, mp_context=get_context("spawn")) as pool:
        for L, positional, init_std in order:
            seeds = groups[(L, positional, init_std)]
            factors = dict(init_std=init_std, positional=positional)
            task, model, train = experiment_settings(L, args.scale, **factors)
            t1 = time.perf_counter()
            runs = train_attention_only_seeds(
                model, task, train, seeds, device=args.device, progress=not args.no_progress,
                num_threads=1 if args.device == "cpu" else None)
            print(f"{L} layer(s), {positional}, init {init_std:g}, seeds {seeds}: "
                  f"{time.perf_counter() - t1:.1f} s (batched)", flush=True)
            for run in runs:
                command = run_command(L, run.seed, args.scale, device=args.device,
                                      **factors) + " --batched"
                path = out / run_file_name(L, run.seed, **factors)
                pending.append((pool.submit(_summarize_and_save, run, command, args.scale,
                                            path), path))
            del runs
        for future, path in pending:
            report(future.result(), path)


if __name__ == "__main__":
    main()
