r"""The metric choices of chapter 7 as experimental factors: truncation rank and aggregation.

The subspace distance of a checkpointed matrix to its final value (book chapter 7, 'The
metrics') needs a truncation rank ``r`` for ``M(t)``.  Chapter 7's evidence page (its factor
grid) varies it over three levels
(:data:`RANKS`):

* ``"final"``: ``r`` = the numerical rank of the reference ``M(T)`` at the relative cut
  :data:`FINAL_RANK_RTOL` (singular values below 1 % of the largest do not count), one ``r``
  per head;
* ``"d_head"``: ``r = d_head`` for every matrix (the chapter's default reading);
* ``"none"``: no truncation beyond the precision of the stored float32 numbers (singular
  values ``<= max(m, n) * eps_float32 * sigma_1`` are rounding noise, :func:`float32_rtol`).
  For a matrix whose rank equals its number of columns (``W_in``, ``W_U``) the row space is
  then the whole space and the distance is identically 0.

(the levels themselves live in :mod:`icllib.nonlinear.circuits`, shared with chapter 6), and
the OV and QK circuits are taken per head (then averaged over heads), summed over heads
(``"OV_sum"``, ``"QK_sum"``) or, for OV, concatenated (``"OV_cat"``: the heads' circuits
stacked, whose row space is the sum of what the heads read); each OV view also on its *write*
side (``"OV_write"``, ``"OV_sum_write"``, ``"OV_cat_write"``: the same metrics of the
transposed matrices, i.e. of the column spaces: what the heads write into the residual
stream).  :data:`FACTOR_MATRICES` lists them all.  The events read off a distance curve
(:func:`icllib.metrics.half_way_time`, :func:`distance_events`) are compared with the
test-accuracy steps ``t50`` and ``t95`` as signed leads, not only against a threshold.
"""

from __future__ import annotations

import numpy as np

from ...metrics import first_crossing, half_way_time
from ...validation import check_choice
from ..circuits import FINAL_RANK_RTOL, RANKS, final_rank, float32_rtol, truncated_metrics
from .analysis import settle_step
from .model import CIRCUIT_NAMES

__all__ = ["RANKS", "FINAL_RANK_RTOL", "NO_SIGNAL", "FACTOR_MATRICES", "float32_rtol", "final_rank",
           "distance_key", "rotation_key", "truncated_metrics", "distance_events",
           "PLACES", "classify_half", "factor_table", "circuit_views"]

#: a fall of a distance curve smaller than this is no signal (rounding of float32 data)
NO_SIGNAL = 1e-4
#: the matrices whose distances the chapter stores at every rank: the checkpointed ones, the
#: OV and QK circuits summed over heads, and the other views of OV (read side: row space;
#: write side: column space; per head, summed, concatenated)
FACTOR_MATRICES = CIRCUIT_NAMES + ("OV_sum", "QK_sum", "OV_write", "OV_sum_write", "OV_cat",
                                   "OV_cat_write")


def circuit_views(stacks: dict) -> dict:
    """The derived views of the OV and QK circuits, from per-head checkpoint stacks.

    Parameters
    ----------
    stacks : dict
        ``"OV"`` and ``"QK"``: arrays of shape ``(T, H, d, d)``.

    Returns
    -------
    dict
        ``"OV_sum"``, ``"QK_sum"`` (``(T, 1, d, d)``: summed over heads); ``"OV_write"``
        (``(T, H, d, d)``: each head's OV transposed, so that its row space is the head's
        column space, what it writes); ``"OV_sum_write"``; ``"OV_cat"`` (``(T, 1, H d, d)``:
        the heads stacked, row space = the sum of what the heads read) and ``"OV_cat_write"``
        (``(T, 1, H d, d)``: the transposes stacked, row space = the sum of what they write).
    """
    ov, qk = np.asarray(stacks["OV"]), np.asarray(stacks["QK"])
    if ov.ndim != 4 or qk.shape != ov.shape:
        raise ValueError(f"stacks['OV'] and stacks['QK'] must have one shape (T, H, d, d), got "
                         f"{ov.shape} and {qk.shape}")
    T, H, d, _ = ov.shape
    ov_t = ov.transpose(0, 1, 3, 2)
    return {"OV_sum": ov.sum(axis=1, keepdims=True), "QK_sum": qk.sum(axis=1, keepdims=True),
            "OV_write": ov_t, "OV_sum_write": ov_t.sum(axis=1, keepdims=True),
            "OV_cat": ov.reshape(T, 1, H * d, d), "OV_cat_write": ov_t.reshape(T, 1, H * d, d)}


def distance_key(name: str, rank: str, reference_step: int) -> str:
    """Array name of a stored distance curve: ``"<name>/distance_to_<S>"`` for ``"d_head"``
    (the default level keeps the short name), ``"<name>/distance_<rank>_to_<S>"`` otherwise."""
    rank = check_choice("rank", rank, RANKS)
    S = int(reference_step)
    return f"{name}/distance_to_{S}" if rank == "d_head" else f"{name}/distance_{rank}_to_{S}"


def rotation_key(name: str, rank: str) -> str:
    """Array name of a stored rotation curve (``"<name>/rotation"`` for ``"d_head"``)."""
    rank = check_choice("rank", rank, RANKS)
    return f"{name}/rotation" if rank == "d_head" else f"{name}/rotation_{rank}"


def distance_events(summary, matrix: str, rank: str = "d_head", *,
                    threshold: float = 0.1) -> dict[str, float]:
    """Events of one matrix's head-averaged distance to the last checkpoint, and its leads.

    Returns ``t50``, ``t95`` (first evaluations with test accuracy >= 50 %, >= 95 %),
    ``half`` (:func:`icllib.metrics.half_way_time` of a falling distance, NaN without a fall
    above :data:`NO_SIGNAL`), ``settle`` (:func:`settle_step` at ``threshold``),
    ``lead_50 = t50 - half`` and ``lead_95 = t95 - half`` (positive: the distance halves
    before the accuracy event), ``rotation_peak`` (step of the most prominent bump of the
    rotation at this rank) and ``floor`` (the distance at the last checkpoint).
    """
    from .analysis import rotation_peak

    if matrix not in FACTOR_MATRICES:
        raise ValueError(f"matrix must be one of {FACTOR_MATRICES}, got {matrix!r}")
    ck = np.asarray(summary["checkpoint_steps"])
    d = np.asarray(summary[distance_key(matrix, rank, int(ck[-1]))]).mean(axis=1)
    ev, te = summary["eval_steps"], summary["test_acc"]
    t50 = first_crossing(ev, te, 0.5, interpolate=False)
    t95 = first_crossing(ev, te, 0.95, interpolate=False)
    # a distance that does not fall (by more than rounding) has no half-time
    half = half_way_time(ck, d, min_change=NO_SIGNAL) if d[0] > d[-1] else float("nan")
    peak, _ = rotation_peak(ck, np.asarray(summary[rotation_key(matrix, rank)]).mean(axis=1))
    return {"t50": t50, "t95": t95, "half": half, "settle": settle_step(ck, d, threshold),
            "lead_50": t50 - half, "lead_95": t95 - half, "rotation_peak": peak,
            "floor": float(d[-1])}


#: where a half-time falls relative to the test-accuracy jump (:func:`classify_half`)
PLACES = ("before t50", "t50 to t95", "after t95", "never")


def classify_half(events: dict) -> str:
    """One of :data:`PLACES` for a :func:`distance_events` result."""
    half, t50, t95 = events["half"], events["t50"], events["t95"]
    if not np.isfinite(half):
        return "never"
    if half < t50:
        return "before t50"
    return "t50 to t95" if half <= t95 else "after t95"


def factor_table(runs, matrices=FACTOR_MATRICES, ranks=RANKS) -> dict:
    """:func:`distance_events` of every run at every (matrix, rank) level.

    Parameters
    ----------
    runs : mapping
        ``{key: summary}`` of grokking runs.

    Returns
    -------
    dict
        ``{(matrix, rank): {key: events}}``, ``key`` a run's ``(weight decay, seed)``, each
        ``events`` the dict of :func:`distance_events` plus its ``"place"``
        (:func:`classify_half`).  The fields: ``"half"`` (first checkpoint at which the
        head-averaged distance has halved; NaN when it does not fall), ``"t50"``, ``"t95"`` (first
        evaluations with test accuracy >= 50 %, >= 95 %; the ``"test_50"``, ``"test_95"`` of
        :func:`~icllib.nonlinear.grokking.analysis.grokking_timing`), ``"settle"``,
        ``"lead_50"``, ``"lead_95"``, ``"rotation_peak"``, ``"floor"`` and ``"place"`` (one
        of :data:`PLACES`).  Book chapter 7's exercise 'Flip a verdict' counts runs with
        ``"half"``, ``"t50"`` and ``"t95"`` of ``table["OV", "final"]``.
    """
    table = {}
    for matrix in matrices:
        for rank in ranks:
            cell = {}
            for key, s in runs.items():
                e = distance_events(s, matrix, rank)
                e["place"] = classify_half(e)
                cell[key] = e
            table[matrix, rank] = cell
    return table
