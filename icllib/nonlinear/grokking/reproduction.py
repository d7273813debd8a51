"""What chapter 7 concludes from one run, as numbers (book chapter 7, 'Runs that reproduce
anywhere').

:func:`run_events` names everything the chapter reads off a run file: when the train
accuracy reaches 100 % and the test accuracy 50 % and 95 %, the final accuracies, and for each
factor level (matrix x truncation rank) the half-time and settle step of the distance to the
final checkpoint, where the half-time falls relative to the test-accuracy jump, and the peak
of the rotation: what the chapter's factor and verdict tables count.  A run regenerated on
other numeric kernels reproduces when these events agree with the shipped run's
(:func:`icllib.nonlinear.reproduction.event_differences`).
"""

from __future__ import annotations

from .analysis import grokking_timing
from .factors import FACTOR_MATRICES, PLACES, RANKS, classify_half, distance_events
from .progress import progress_events

__all__ = ["run_events"]


def run_events(summary) -> dict[str, float]:
    """The events of one chapter-7 run (a run file of :func:`~.runs.load_runs`).

    Returns
    -------
    dict of str -> float
        ``train_100``, ``test_50``, ``test_95`` (steps, :func:`grokking_timing`; NaN when
        never reached), ``final_train_acc``, ``final_test_acc``; the progress-measure events
        of :func:`~.progress.progress_events`; for every matrix of
        :data:`FACTOR_MATRICES` and rank of :data:`RANKS`, ``"half <matrix> / <rank>"`` (the
        half-time of :func:`distance_events`, NaN without a fall) and ``"place <matrix> /
        <rank>"`` (index into :data:`PLACES` of :func:`classify_half`), ``"settle <matrix> /
        <rank>"`` and ``"rotation_peak <matrix> / <rank>"`` (the settle step and rotation
        peak of :func:`distance_events`).
    """
    t = grokking_timing(summary)
    ev = {k: float(t[k]) for k in ("train_100", "test_50", "test_95")}
    ev.update(final_train_acc=float(summary["train_acc"][-1]),
              final_test_acc=float(summary["test_acc"][-1]), **progress_events(summary))
    for matrix in FACTOR_MATRICES:
        for rank in RANKS:
            e = distance_events(summary, matrix, rank)
            ev[f"half {matrix} / {rank}"] = float(e["half"])
            ev[f"place {matrix} / {rank}"] = float(PLACES.index(classify_half(e)))
            ev[f"settle {matrix} / {rank}"] = float(e["settle"])
            ev[f"rotation_peak {matrix} / {rank}"] = float(e["rotation_peak"])
    return ev
