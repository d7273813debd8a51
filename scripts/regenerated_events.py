#!/usr/bin/env python
"""Store the events of a chapter's runs regenerated on other numeric kernels.

Regenerate every shipped run of a chapter into a scratch folder under other kernels, then
store what the chapter concludes from each (``run_events``) in
``book/data/<chapter>/<scale>/other-cpu-events.json``; the chapter compares those events with
its shipped runs' (section "Do the runs reproduce on another CPU?" of chapter 6, "Runs that
reproduce anywhere" of chapter 7).  Only the events ship, not the runs::

    python scripts/regenerated_events.py ch6 /tmp/regen/ch6 --regenerate --jobs 2
    python scripts/regenerated_events.py ch7 /tmp/regen/ch7 --regenerate --jobs 2

``--regenerate`` first runs, for every shipped file, the command recorded in its ``meta``
under ``scripts/other-cpu`` with ``--out DIR`` (``--jobs`` of them side by side, one core
each; measured 2026-12-03 on the 2-core machine, one job each beside other work: about 25
minutes for chapter 6's 40 runs, about 60 CPU-minutes for chapter 7's 12, whose grokking runs
train at 15-35 steps/s on the baseline kernels); without it the folder must
already hold them.  Every shipped run file of the chapter must have a regenerated file of the
same name (the script refuses otherwise), so the events cover every run the chapter loads.

At the medium scale a full regeneration would cost as much as the runs themselves (hours), so
``--runs NAME ...`` regenerates a named subset instead (one run per setting), and the events
file then covers exactly those runs::

    python scripts/regenerated_events.py ch6 /tmp/regen/ch6m --scale medium --regenerate \
        --jobs 2 --runs run_L2_learned_std0.1_seed0 run_L2_sinusoidal_std0.1_seed0 \
        run_L2_relative_std0.1_seed0

``--merge`` keeps the events already stored for the other runs (runs added to a chapter after
its regeneration: chapter 7's quick controls with seeds 3 and 4)::

    python scripts/regenerated_events.py ch7 /tmp/regen/ch7c --regenerate --jobs 2 --merge \
        --runs control_wd1_seed3 control_wd1_seed4
"""

from __future__ import annotations

import argparse
import shlex
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

CHAPTERS = ("ch6", "ch7")


def regeneration_command(chapter: str) -> str:
    """What made the regenerated folder: each shipped file's own command, other kernels."""
    return (f"scripts/other-cpu <the command in each shipped file's meta> --out DIR "
            f"(python scripts/regenerated_events.py {chapter} DIR --regenerate)")


def regenerate(files, directory: Path, jobs: int) -> None:
    """Run each file's recorded command under scripts/other-cpu, writing into ``directory``."""
    from icllib.nonlinear.runs import load_run

    directory.mkdir(parents=True, exist_ok=True)
    commands = []
    for f in files:
        argv = shlex.split(load_run(f)["meta"]["command"])
        if argv[:1] != ["python"] or not argv[1].startswith("scripts/make_"):
            raise ValueError(f"{f.name}: unexpected command {argv}")
        commands.append([str(ROOT / "scripts" / "other-cpu"), sys.executable, *argv[1:],
                         "--out", str(directory)])

    def run(cmd):
        done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
        if done.returncode:
            raise RuntimeError(f"{shlex.join(cmd)} failed:\n{done.stdout}{done.stderr}")
        print("done:", shlex.join(cmd[2:]), flush=True)

    with ThreadPoolExecutor(jobs) as pool:
        list(pool.map(run, commands))


def main(argv=None) -> int:
    from icllib.nonlinear.reproduction import EVENTS_FILE, save_events
    from icllib.nonlinear.runs import data_dir

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("chapter", choices=CHAPTERS)
    ap.add_argument("directory", type=Path, help="the folder of regenerated runs")
    ap.add_argument("--scale", default="quick")
    ap.add_argument("--regenerate", action="store_true",
                    help="first regenerate every shipped run into the folder, other kernels")
    ap.add_argument("--jobs", type=int, default=1, help="with --regenerate: runs side by side")
    ap.add_argument("--runs", nargs="+", default=None,
                    help="only these shipped runs (file stems), e.g. one per setting")
    ap.add_argument("--merge", action="store_true",
                    help="with --runs: keep the other runs' events already in the events file "
                         "(runs added to a chapter after its regeneration)")
    args = ap.parse_args(argv)
    if args.chapter == "ch6":           # the one-layer controls need their partners' windows
        from icllib.nonlinear.induction.reproduction import chapter_events
    else:
        from icllib.nonlinear.grokking.reproduction import run_events
        from icllib.nonlinear.reproduction import folder_events

        def chapter_events(directory):
            return folder_events(directory, run_events)
    shipped = data_dir(args.chapter, args.scale)
    names = sorted(p.name for p in shipped.glob("*.npz"))
    if args.runs is not None:
        unknown = sorted(set(args.runs) - {Path(n).stem for n in names})
        if unknown:
            print(f"--runs names runs that are not shipped in {shipped}: {unknown}",
                  file=sys.stderr)
            return 2
        names = sorted(f"{r}.npz" for r in set(args.runs))
    if args.regenerate:
        regenerate([shipped / n for n in names], args.directory, args.jobs)
    missing = [n for n in names if not (args.directory / n).exists()]
    if missing:
        print(f"{args.directory} lacks the regenerated {missing}", file=sys.stderr)
        return 2
    events = chapter_events(args.directory)
    if args.runs is not None:
        events = {k: v for k, v in events.items() if k in set(args.runs)}
    if sorted(events) != sorted(Path(n).stem for n in names):
        print(f"{args.directory} holds runs that are not shipped: "
              f"{sorted(set(events) - {Path(n).stem for n in names})}", file=sys.stderr)
        return 2
    out = shipped / EVENTS_FILE
    if args.merge:
        from icllib.nonlinear.reproduction import load_events

        if args.runs is None:
            print("--merge needs --runs", file=sys.stderr)
            return 2
        kept, _ = load_events(out)
        events = {**kept, **events}
    save_events(out, events, command=regeneration_command(args.chapter))
    print(f"{out.relative_to(ROOT)}: events of {len(events)} runs, "
          f"{out.stat().st_size / 1024:.0f} KiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
