"""One file format and one loader for the shipped runs of both non-linear experiments.

A *run file* is a compressed ``.npz`` holding named arrays (curves and metrics; a metric of a
matrix is named ``"<matrix>/<metric>"``, e.g. ``"qk/effective_rank"`` or
``"OV/rotation"``) and ``meta``, a JSON string with the same keys for every experiment:

``experiment`` (``"induction"`` or ``"grokking"``), ``chapter`` (``"ch6"``, ``"ch7"``),
``scale`` (``"quick"`` or ``"full"``), ``seed``, ``config`` (the experiment's settings),
``command`` (the command line that regenerates the file), ``seconds`` (wall time of the
training loop), ``steps_per_second``, ``torch_version``, ``device`` and ``analysis`` (the
settings of the metrics: truncation rank, ``ks``, lag, ...).

Files live in one directory scheme, ``book/data/<chapter>/<scale>/`` (:func:`data_dir`); the
quick-scale files are shipped, the full-scale ones are made on a GPU by the chapter's script,
whose command a missing file's error names (:func:`load_runs`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from ..datafiles import chapter_data_dir
from ..scale import SCALES, current_scale
from ..validation import check_choice

__all__ = ["META_KEYS", "RunSummary", "data_dir", "make_command", "save_run", "load_run",
           "load_runs"]

#: the metadata every run file carries
META_KEYS = ("experiment", "chapter", "scale", "seed", "config", "command", "seconds",
             "steps_per_second", "torch_version", "device", "analysis")


def data_dir(chapter: str, scale: str | None = None) -> Path:
    """``book/data/<chapter>/<scale>`` (scale: default the current one): of this checkout, or
    under ``$ICLLIB_DATA`` (:func:`icllib.datafiles.data_root`)."""
    scale = current_scale() if scale is None else check_choice("scale", scale, SCALES)
    return chapter_data_dir(chapter, scale)


def make_command(chapter: str, scale: str, args: str = "", device: str = "cpu") -> str:
    """The command line that makes a run file: ``python scripts/make_<chapter>_runs.py ...``."""
    cmd = f"python scripts/make_{chapter}_runs.py --scale {scale}" + (f" {args}" if args else "")
    return cmd if str(device) == "cpu" else f"{cmd} --device {device}"


class RunSummary(Mapping):
    """One run file in memory: ``meta`` (a dict) and named arrays.

    A read-only mapping from ``"meta"`` and the array names to their values
    (``summary["OV/rotation"]``, ``summary["meta"]["seed"]``); arrays are also attributes
    (``summary.icl_loss``), and ``summary.<matrix>`` is the dict of that matrix's metrics
    (``summary.qk["effective_rank"]`` is ``summary["qk/effective_rank"]``).

    Parameters
    ----------
    meta : dict
        With at least the keys :data:`META_KEYS`.
    arrays : dict of str -> ndarray
    """

    def __init__(self, meta: dict, arrays: dict):
        missing = [k for k in META_KEYS if k not in meta]
        if missing:
            raise ValueError(f"meta must have the keys {META_KEYS}; missing {missing}")
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
        """The run's seed (``meta["seed"]``)."""
        return int(self.meta["seed"])

    def __repr__(self) -> str:
        return (f"{type(self).__name__}({self.meta['experiment']}, seed {self.meta['seed']}, "
                f"{len(self.arrays)} arrays)")


def save_run(summary: RunSummary, path) -> None:
    """Write a :class:`RunSummary` to a compressed ``.npz`` (arrays as they are)."""
    arrays = {"meta": np.array(json.dumps(summary.meta, sort_keys=True))}
    arrays.update(summary.arrays)
    np.savez_compressed(path, **arrays)


def load_run(path, cls=RunSummary) -> RunSummary:
    """Read a file written by :func:`save_run`; arrays come back as float64 or int64.

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
            f"with `{command}` (see --help; full scale: on a GPU, with --device cuda)")
    return {key: load_run(path, cls) for key, path in paths.items()}
