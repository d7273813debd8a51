"""The run files of both non-linear experiments (chapters 6 and 7) in the book's run store.

The files are those of :mod:`icllib.runstore`, the one store of the book's runs (one
directory scheme ``book/data/<chapter>/<scale>/``, one format, one loader); this module
re-exports its names (:func:`data_dir`, :func:`make_command`, :class:`RunSummary`,
:func:`save_run`, :func:`load_run`, :func:`load_runs`: the same functions) and adds what the
non-linear files share: the metadata every one of them carries, :data:`META_KEYS`.

A run file holds named arrays (curves and metrics; a metric of a matrix is named
``"<matrix>/<metric>"``, e.g. ``"qk/effective_rank"`` or ``"OV/rotation"``) and ``meta`` with
the keys :data:`META_KEYS`: ``experiment`` (``"induction"`` or ``"grokking"``), ``chapter``
(``"ch6"``, ``"ch7"``), ``scale`` (``"quick"``, ``"medium"`` or ``"full"``), ``seed``,
``config`` (the experiment's settings), ``command`` (the command line that regenerates the
file), ``seconds`` (wall time of the training loop), ``steps_per_second``, ``torch_version``,
``device`` and ``analysis`` (the settings of the metrics: truncation rank, ``ks``, lag, ...).

The quick-scale files are shipped, the full-scale ones are made on a GPU by the chapter's
script, whose command (with ``--device cuda``, :func:`missing_runs_command`) a missing file's
error names.
"""

from __future__ import annotations

from ..runstore import RunSummary, data_dir, load_run, load_runs, make_command, save_run

__all__ = ["META_KEYS", "RunSummary", "data_dir", "make_command", "missing_runs_command",
           "save_run", "load_run", "load_runs"]

#: the metadata every non-linear run file carries
META_KEYS = ("experiment", "chapter", "scale", "seed", "config", "command", "seconds",
             "steps_per_second", "torch_version", "device", "analysis")


def missing_runs_command(chapter: str, scale: str, args: str = "") -> str:
    """The command a missing run file's error names (:func:`make_command`): the full-scale
    runs are made on a GPU, so at that scale with ``--device cuda``."""
    return make_command(chapter, scale, args, "cuda" if scale == "full" else "cpu")
