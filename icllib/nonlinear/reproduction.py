"""Events of a run, stored and compared: do the shipped runs regenerate on another CPU?

A float32 training run on other numeric kernels (another CPU; ``scripts/other-cpu`` imitates
one) is not the shipped run bit for bit, and training amplifies last-bit differences.  What a
chapter must reproduce is what it concludes from each run, so each experiment names those
conclusions as *events*: a flat ``{name: float}`` per run (steps at which something happens,
final losses and scores, 0/1 verdict flags and category indices; NaN where an event never
happens): :func:`icllib.nonlinear.induction.run_events`,
:func:`icllib.nonlinear.grokking.run_events`.

``scripts/regenerated_events.py`` writes the events of a folder of regenerated runs to one
small JSON file per chapter (:func:`save_events`, :data:`EVENTS_FILE`); the chapter recomputes
the shipped runs' events and compares them (:func:`event_differences`).  Only the events ship,
not the regenerated runs: a chapter's data stay small.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from .runs import RunSummary, load_run

__all__ = ["EVENTS_FILE", "folder_events", "save_events", "load_events", "event_differences",
           "largest_change", "count_changed"]

#: name of a chapter's events file of its runs regenerated on other kernels, in its data folder
EVENTS_FILE = "other-cpu-events.json"


def folder_events(directory, run_events, cls=RunSummary) -> dict[str, dict[str, float]]:
    """``{file stem: run_events(run)}`` for every run file (``*.npz``) of ``directory``.

    ``run_events`` is the experiment's (e.g. :func:`icllib.nonlinear.grokking.run_events`),
    ``cls`` its :class:`~.runs.RunSummary` subclass; the events file beside the runs is not a
    run file and is skipped.
    """
    return {p.stem: run_events(load_run(p, cls)) for p in sorted(Path(directory).glob("*.npz"))}


def _check_events(events: Mapping) -> dict[str, dict[str, float]]:
    if not isinstance(events, Mapping) or not events:
        raise ValueError("events must be a non-empty mapping {run name: {event: value}}")
    out = {}
    for run, ev in events.items():
        if not isinstance(ev, Mapping) or not ev:
            raise ValueError(f"events[{run!r}] must be a non-empty mapping {{event: value}}")
        out[str(run)] = {str(k): float(v) for k, v in ev.items()}
    return out


#: a run's value for an event that only other runs have (e.g. ablations of files with weights)
_ABSENT = "-"


def save_events(path, events: Mapping, *, command: str) -> None:
    """Write ``{run name: {event: value}}`` and the command that made the runs to JSON.

    As a table: the event names once, then one row of values per run (``"-"`` where the run
    has no such event).  NaN (an event that never happened) is written as ``null``; values are
    written to 9 significant digits (events come from float32 files).
    """
    events = _check_events(events)
    if not isinstance(command, str) or not command.strip():
        raise ValueError("command must be the non-empty command line that made the runs")
    names = sorted({k for ev in events.values() for k in ev})

    def value(ev, k):
        if k not in ev:
            return _ABSENT
        v = ev[k]
        return _float32_digits(v) if math.isfinite(v) else None

    payload = {"command": command, "events": names,
               "runs": {run: [value(ev, k) for k in names] for run, ev in sorted(events.items())}}
    Path(path).write_text(json.dumps(payload, indent=0, sort_keys=True,
                                     separators=(",", ":")) + "\n")


def _float32_digits(v: float) -> float:
    """``v`` to 9 significant digits: every event is read off float32 run files, and 9 digits
    restore any float32 exactly (the file stays small)."""
    return float(f"{v:.9g}")


def load_events(path) -> tuple[dict[str, dict[str, float]], str]:
    """Read a file of :func:`save_events`: ``(events, command)``, ``null`` back to NaN."""
    payload = json.loads(Path(path).read_text())
    names = payload["events"]
    events = {run: {k: (float("nan") if v is None else float(v))
                    for k, v in zip(names, row) if v != _ABSENT}
              for run, row in payload["runs"].items()}
    return events, payload["command"]


def event_differences(shipped: Mapping, other: Mapping) -> dict[str, dict[str, float]]:
    """``other - shipped`` for every run and event.

    0 where both are NaN (the event happens in neither), ``inf`` where exactly one is NaN (it
    happens in one run only: no tolerance covers that).

    Raises
    ------
    ValueError
        If the two do not hold the same runs with the same events.
    """
    shipped, other = _check_events(shipped), _check_events(other)
    if set(shipped) != set(other):
        raise ValueError(f"shipped and other must hold the same runs; only shipped: "
                         f"{sorted(set(shipped) - set(other))}, only other: "
                         f"{sorted(set(other) - set(shipped))}")
    out = {}
    for run, a in shipped.items():
        b = other[run]
        if set(a) != set(b):
            raise ValueError(f"run {run!r}: shipped and other must have the same events; "
                             f"differing: {sorted(set(a) ^ set(b))}")
        diff = {}
        for k, x in a.items():
            y = b[k]
            if np.isnan(x) and np.isnan(y):
                diff[k] = 0.0
            elif np.isnan(x) or np.isnan(y):
                diff[k] = math.inf
            else:
                diff[k] = y - x
        out[run] = diff
    return out


def _selected(differences: Mapping, runs, prefix: str) -> list[float]:
    runs = list(differences) if runs is None else list(runs)
    unknown = [r for r in runs if r not in differences]
    if unknown:
        raise ValueError(f"runs must be among the compared runs; unknown: {unknown}")
    values = [v for r in runs for k, v in differences[r].items() if k.startswith(prefix)]
    if not values:
        raise ValueError(f"no event of the chosen runs starts with prefix {prefix!r}")
    return values


def largest_change(differences: Mapping, runs=None, prefix: str = "") -> float:
    """Largest ``|other - shipped|`` of :func:`event_differences` over the chosen runs (default
    all) and the events whose names start with ``prefix`` (default all); ``inf`` when an event
    happens in one of the two runs only."""
    return float(max(abs(v) for v in _selected(differences, runs, prefix)))


def count_changed(differences: Mapping, runs=None, prefix: str = "") -> int:
    """How many (run, event) pairs of the selection (see :func:`largest_change`) differ at all:
    for 0/1 flags and category indices, the number of verdicts that changed."""
    return sum(v != 0 for v in _selected(differences, runs, prefix))
