"""The book's run store: where the stored runs live, their one file format, their one loader.

Every part of the book that stores runs (the linear model's SGD runs of chapters 1-5b,
:mod:`icllib.train.stored`; the non-linear runs of chapters 6 and 7,
:mod:`icllib.nonlinear.runs`) stores them here, one way:

* **where**: ``book/data/<chapter>/<scale>/`` (:func:`data_dir`; ``chapter`` is ``"linear"``,
  ``"ch6"``, ``"ch7"``; the folder ``book/data`` itself is found by
  :func:`icllib.datafiles.data_root`: a checkout's, ``$ICLLIB_DATA`` or the wheel's copy),
  made by ``scripts/make_<chapter>_runs.py --scale <scale> ...`` (:func:`make_command`), the
  command a missing file's error names (:func:`load_runs`);
* **what**: a *run file*, a compressed ``.npz`` holding named arrays and ``meta``, a JSON
  string; in memory a :class:`RunSummary`.  Every file's meta records at least its ``scale``,
  the ``command`` that remakes it and the ``seconds`` of training
  (:attr:`RunSummary.required_meta`); each part adds its own keys (a linear group's
  specification, a non-linear run's seed and configuration, ...);
* **how**: :func:`save_run` writes a file atomically (an interrupted write leaves no partial
  file, and an existing file unchanged), :func:`load_run` reads one, :func:`load_runs` several.
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from .datafiles import chapter_data_dir
from .scale import SCALES, current_scale
from .validation import check_choice

__all__ = ["data_dir", "make_command", "RunSummary", "save_run", "load_run", "load_runs"]


def data_dir(chapter: str, scale: str | None = None) -> Path:
    """``book/data/<chapter>/<scale>`` (scale: default the current one): of this checkout, or
    under ``$ICLLIB_DATA`` (:func:`icllib.datafiles.data_root`)."""
    scale = current_scale() if scale is None else check_choice("scale", scale, SCALES)
    return chapter_data_dir(chapter, scale)


def make_command(chapter: str, scale: str, args: str = "", device: str = "cpu") -> str:
    """The command line that makes run files: ``python scripts/make_<chapter>_runs.py --scale
    <scale> [args] [--device <device>]`` (e.g. ``make_command("linear", "quick", "--group
    task-sets")``)."""
    cmd = f"python scripts/make_{chapter}_runs.py --scale {scale}" + (f" {args}" if args else "")
    return cmd if str(device) == "cpu" else f"{cmd} --device {device}"


class RunSummary(Mapping):
    """One run file in memory: ``meta`` (a dict) and named arrays.

    A read-only mapping from ``"meta"`` and the array names to their values
    (``summary["OV/rotation"]``, ``summary["meta"]["command"]``); arrays are also attributes
    (``summary.icl_loss``), and ``summary.<prefix>`` is the dict of the arrays named
    ``"<prefix>/<name>"`` (``summary.qk["effective_rank"]`` is ``summary["qk/effective_rank"]``).
    A part of the book subclasses it for methods of its own
    (:class:`icllib.nonlinear.induction.InductionRunSummary`).

    Parameters
    ----------
    meta : dict
        JSON-serialisable, with at least the keys :attr:`required_meta`.
    arrays : dict of str -> ndarray
    """

    #: the keys every run file's meta has (a subclass may ask for more)
    required_meta: tuple = ("scale", "command", "seconds")

    def __init__(self, meta: dict, arrays: dict):
        missing = [k for k in self.required_meta if k not in meta]
        if missing:
            raise ValueError(f"meta must have the keys {self.required_meta}; missing {missing}")
        if "meta" in arrays:
            raise ValueError("arrays must not be named 'meta'")
        self.meta = dict(meta)
        self.arrays = {str(k): np.asarray(v) for k, v in arrays.items()}

    def __getitem__(self, key):
        return self.meta if key == "meta" else self.arrays[key]

    def __iter__(self):
        yield "meta"
        yield from self.arrays

    def __len__(self) -> int:
        return 1 + len(self.arrays)

    def __getattr__(self, name):
        if name.startswith("_") or name in ("meta", "arrays"):
            raise AttributeError(name)
        arrays = self.__dict__.get("arrays", {})
        if name in arrays:
            return arrays[name]
        group = {k[len(name) + 1:]: v for k, v in arrays.items() if k.startswith(name + "/")}
        if group:
            return group
        raise AttributeError(f"{type(self).__name__} has no array or matrix {name!r}")

    @property
    def seed(self) -> int:
        """The run's seed (``meta["seed"]``; an AttributeError for a file of several runs)."""
        if "seed" not in self.meta:
            raise AttributeError("seed")
        return int(self.meta["seed"])

    def __repr__(self) -> str:
        what = [str(self.meta[k]) for k in ("experiment", "group") if k in self.meta]
        what += [f"seed {self.meta['seed']}"] if "seed" in self.meta else []
        return f"{type(self).__name__}({', '.join(what + [f'{len(self.arrays)} arrays'])})"


def save_run(summary: RunSummary, path) -> Path:
    """Write a :class:`RunSummary` to the compressed ``.npz`` file ``path`` (arrays as they
    are, ``meta`` as JSON), atomically: into a temporary file beside it, then renamed over
    ``path``, so an interrupted write leaves no partial file at ``path`` and an existing file
    there unchanged.  Makes the folder if needed; returns ``path``.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    arrays = {"meta": np.array(json.dumps(summary.meta, sort_keys=True))}
    arrays.update(summary.arrays)
    # a hidden name outside the "*.npz" patterns, so no loader and no wheel picks it up
    partial = path.with_name(f".{path.name}.{uuid.uuid4().hex[:12]}.partial")
    try:
        with open(partial, "xb") as f:
            np.savez_compressed(f, **arrays)
            f.flush()
            os.fsync(f.fileno())
        os.replace(partial, path)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    return path


def load_run(path, cls=RunSummary) -> RunSummary:
    """Read a file written by :func:`save_run`; arrays come back as float64 or int64 (exact:
    a float32 array is stored as float32 and widened on reading).

    ``cls`` is the :class:`RunSummary` subclass to return (an experiment's own).
    """
    with np.load(path, allow_pickle=False) as f:
        meta = json.loads(str(f["meta"]))
        arrays = {k: np.asarray(f[k], dtype=np.int64 if np.issubdtype(f[k].dtype, np.integer)
                                else np.float64)
                  for k in f.files if k != "meta"}
    return cls(meta, arrays)


def load_runs(directory, names: Mapping, *, command: str, cls=RunSummary) -> dict:
    """Load ``{key: RunSummary}`` from ``directory / names[key]`` for every key.

    Raises
    ------
    FileNotFoundError
        Naming the missing files and ``command``, the command that makes them.
    """
    directory = Path(directory)
    paths = {key: directory / name for key, name in names.items()}
    missing = [p.name for p in paths.values() if not p.exists()]
    if missing:
        raise FileNotFoundError(
            f"{len(missing)} run file(s) missing in {directory} (e.g. {missing[0]}); make them "
            f"with `{command}` (see its --help)")
    return {key: load_run(path, cls) for key, path in paths.items()}
