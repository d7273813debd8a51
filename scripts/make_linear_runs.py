"""Train and store the linear model's long SGD runs that chapters 1-5b load.

Each group of icllib.train.registry, the book's linear experiments (chapter 1's trained models
at N = 10 and 32, the running example's seeds, chapter 3's runs from the paper's fixed point,
chapter 5's floor at N = 40, chapter 5b's task sets and its price of a finite set over
P = 1..256 from two starts), is trained with
icllib.train.train_sgd, exactly as the chapters did before the runs were stored, and written
(icllib.train.stored.save_group, atomically) to book/data/linear/<scale>/<group>.npz with its
specification and this command:

    python scripts/make_linear_runs.py                    # every group, ICLLIB_SCALE
    python scripts/make_linear_runs.py --group task-sets  # one group
    python scripts/make_linear_runs.py --scale full --jobs 16

Runs are deterministic: one BLAS thread each (train_sgd limits BLAS to one thread itself).
About 4 minutes of CPU for the quick scale (half a minute of it chapter 1's "trained-floor"),
split over --jobs processes, plus about 6.5 minutes for chapter 5b's "task-set-price" (160
runs; measured with --jobs 1, which runs in this process).
"""

from __future__ import annotations

import argparse
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def one_run(name: str, scale: str, key):
    from threadpoolctl import threadpool_limits

    from icllib.train.registry import group

    g = group(name, scale)
    t0 = time.perf_counter()
    with threadpool_limits(1):
        run = g.train_run(key)
    return key, run, time.perf_counter() - t0


def main(argv=None) -> int:
    from icllib.scale import SCALES, current_scale
    from icllib.train.registry import groups
    from icllib.train.stored import save_group

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", choices=SCALES, default=None,
                    help="default: ICLLIB_SCALE (quick when unset)")
    ap.add_argument("--group", nargs="+", default=None, help="default: every group")
    ap.add_argument("--jobs", type=int, default=2, help="runs in parallel (one core each)")
    args = ap.parse_args(argv)
    scale = args.scale or current_scale()
    plan = groups(scale)
    names = args.group or list(plan)
    unknown = [n for n in names if n not in plan]
    if unknown:
        ap.error(f"unknown group(s) {unknown}; the groups are {list(plan)}")
    tasks = [(name, key) for name in names for key in plan[name].keys()]
    t0 = time.perf_counter()
    results = {name: {} for name in names}
    seconds = dict.fromkeys(names, 0.0)
    def collect(name, key, run, sec):
        results[name][key] = run
        seconds[name] += sec
        print(f"{name} {key}: {sec:.1f} s", flush=True)

    if args.jobs == 1:               # in this process: nothing to lose to a dead worker
        for name, key in tasks:
            collect(name, *one_run(name, scale, key))
    else:
        with ProcessPoolExecutor(args.jobs, mp_context=get_context("spawn")) as pool:
            futures = [(name, pool.submit(one_run, name, scale, key)) for name, key in tasks]
            for name, f in futures:
                collect(name, *f.result())
    for name in names:
        path = save_group(name, results[name], scale, seconds=seconds[name])
        shown = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
        print(f"{shown}: {len(results[name])} runs, {seconds[name]:.0f} s of "
              f"training, {path.stat().st_size / 1024:.0f} KiB", flush=True)
    print(f"total {time.perf_counter() - t0:.0f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
