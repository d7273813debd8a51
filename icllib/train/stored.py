r"""The book's long SGD runs of the linear model: trained once, stored, reloaded (ch. 1-5b).

Chapters 1-5b compare long full-model SGD runs with the theory.  Training them every time a
chapter runs would take several minutes, so ``scripts/make_linear_runs.py`` trains each
*group* of runs once (:func:`train_group`) and stores it (:func:`save_group`) in the book's
run store (:mod:`icllib.runstore`), as one run file ``book/data/linear/<scale>/<group>.npz``:
a :class:`~icllib.runstore.RunSummary` whose arrays are the group's runs, keyed by run
(:meth:`~icllib.train.run_groups.RunGroup.to_arrays`), and whose meta holds the group's name,
scale and specification, the command that remakes the file, the seconds of training, the
numpy version and the date.  A chapter loads it with :func:`load_group`; a unit test retrains
a prefix of every run of every shipped group and compares.

Which groups there are is :mod:`icllib.train.registry` (:func:`group`, :func:`groups`, also
importable from here); what a group is, how it trains and what is kept of a run,
:mod:`icllib.train.run_groups` (its classes are importable from here too).

A stored file carries its group's specification; :func:`load_group` refuses a file whose
specification is not the one the registry now names, and names the command that remakes it.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from ..runstore import RunSummary, data_dir, load_runs, make_command, save_run
from ..scale import SCALES, current_scale
from ..validation import check_choice
from .registry import group, groups
from .run_groups import (
    FloorGroup,
    FloorRun,
    PriceGroup,
    PriceRun,
    RunGroup,
    SGDGroup,
    StoredRun,
    TaskSetGroup,
    TaskSetRun,
)

__all__ = ["StoredRun", "RunGroup", "SGDGroup", "TaskSetGroup", "TaskSetRun", "PriceGroup",
           "PriceRun", "FloorGroup", "FloorRun", "groups", "group", "train_group", "save_group",
           "load_group"]

#: the run store's chapter of the linear runs: ``book/data/linear/<scale>/``
CHAPTER = "linear"


def _scale(scale: str | None) -> str:
    return current_scale() if scale is None else check_choice("scale", scale, SCALES)


def _command(name: str, scale: str) -> str:
    """The command that (re)makes one group's file."""
    return make_command(CHAPTER, scale, f"--group {name}")


def train_group(name: str, scale: str | None = None) -> dict:
    """Train every run of a group: ``{key: run}``
    (:meth:`~icllib.train.run_groups.RunGroup.train_all`)."""
    return group(name, scale).train_all()


def save_group(name: str, runs: dict, scale: str | None = None, *, seconds: float = 0.0,
               path: Path | None = None) -> Path:
    """Store a group's runs (as made by :func:`train_group`) with its specification, in
    ``book/data/linear/<scale>/<name>.npz`` (or ``path``), atomically
    (:func:`icllib.runstore.save_run`)."""
    scale = _scale(scale)
    g = group(name, scale)
    meta = dict(group=name, scale=scale, spec=g.spec(), command=_command(name, scale),
                seconds=round(float(seconds), 1), numpy_version=np.__version__,
                made=time.strftime("%Y-%m-%d"))
    path = data_dir(CHAPTER, scale) / f"{name}.npz" if path is None else Path(path)
    return save_run(RunSummary(meta, g.to_arrays(runs)), path)


def load_group(name: str, scale: str | None = None, *, path: Path | None = None):
    """Load a stored group (:meth:`~icllib.train.run_groups.RunGroup.from_arrays`): a list of
    :class:`StoredRun` (seed order), for ``"task-sets"`` a dict ``{P: [TaskSetRun, ...]}``,
    for ``"task-set-price"`` a dict ``{(P, task_set, start, seed): PriceRun}``, for
    ``"trained-floor"`` a dict ``{(N, seed): FloorRun}``.

    Raises
    ------
    FileNotFoundError
        If the file is missing; the message names the command that makes it.
    ValueError
        If the file was made with another specification than the registry's now.
    """
    scale = _scale(scale)
    g = group(name, scale)
    path = data_dir(CHAPTER, scale) / f"{name}.npz" if path is None else Path(path)
    command = _command(name, scale)
    summary = load_runs(path.parent, {name: path.name}, command=command)[name]
    if summary.meta.get("spec") != g.spec():
        raise ValueError(f"{path} was made with {summary.meta.get('spec')}, but the group "
                         f"{name!r} is now {g.spec()}; remake it with `{command}`")
    return g.from_arrays(summary.arrays)
