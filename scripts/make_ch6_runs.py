#!/usr/bin/env python
"""Regenerate the data files of chapter 6 (attention-only transformers, ICL emergence).

Each file ``book/data/ch6/run_L{depth}_seed{seed}.npz`` holds one run's evaluation
curves and per-head circuit metrics (see ``icllib.nonlinear.attention_only.RunSummary``),
and records the command that regenerates it.  Examples::

    python scripts/make_ch6_runs.py                      # all quick-scale runs (CPU, ~10 min)
    python scripts/make_ch6_runs.py --depths 2 --seeds 0 # one run
    python scripts/make_ch6_runs.py --demo               # the chapter's short live run
    python scripts/make_ch6_runs.py --scale full --device cuda   # paper scale, on a GPU

Quick-scale runs are made on CPU with one thread and deterministic algorithms, so the
same machine reproduces them bit for bit (tests/test_attention_only.py checks the demo
file).  Existing files are overwritten.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from icllib.nonlinear.attention_only import (  # noqa: E402
    MAX_LAYERS,
    experiment_seeds,
    make_run,
    run_file_name,
    save_run_summary,
)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", choices=("quick", "full"), default="quick")
    ap.add_argument("--depths", type=int, nargs="+", default=list(range(1, MAX_LAYERS + 1)))
    ap.add_argument("--seeds", type=int, nargs="+", default=None,
                    help="default: the scale's seeds (quick: 0..4)")
    ap.add_argument("--demo", action="store_true",
                    help="make the short live-demo run(s) instead (default depth 2, seed 0)")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--out", type=Path, default=None,
                    help="default: book/data/ch6 (quick), book/data/ch6/full (full)")
    ap.add_argument("--no-progress", action="store_true")
    args = ap.parse_args(argv)

    if args.demo:
        args.scale = "quick"
        if args.depths == list(range(1, MAX_LAYERS + 1)):
            args.depths = [2]
        if args.seeds is None:
            args.seeds = [0]
    seeds = args.seeds if args.seeds is not None else list(experiment_seeds(args.scale))
    out = args.out or (ROOT / "book" / "data" / "ch6" / ("full" if args.scale == "full" else ""))
    out.mkdir(parents=True, exist_ok=True)
    if args.device == "cpu":
        torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)

    t_all = time.perf_counter()
    for L in args.depths:
        for s in seeds:
            summary = make_run(L, s, args.scale, demo=args.demo, device=args.device,
                               progress=not args.no_progress)
            path = out / run_file_name(L, s, "demo" if args.demo else "run")
            save_run_summary(summary, path)
            w = summary.window
            print(f"{path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}: "
                  f"{summary.meta['seconds']:.1f} s, "
                  f"{summary.meta['steps_per_second']:.0f} steps/s, "
                  f"final ICL loss {summary.icl_loss[-1]:.3f}, window "
                  f"{(w.start, w.mid, w.end) if w.emerged else 'none'}", flush=True)
    print(f"total {time.perf_counter() - t_all:.1f} s")


if __name__ == "__main__":
    main()
