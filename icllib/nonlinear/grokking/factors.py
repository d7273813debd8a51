r"""The metric choices of chapter 7 as experimental factors: truncation rank and aggregation.

The subspace distance of a checkpointed matrix to its final value (book chapter 7, 'The
metrics') needs a truncation rank ``r`` for ``M(t)``.  Chapter 7 varies it over three levels
(:data:`RANKS`):

* ``"final"``: ``r`` = the numerical rank of the reference ``M(T)`` at the relative cut
  :data:`FINAL_RANK_RTOL` (singular values below 1 % of the largest do not count), one ``r``
  per head;
* ``"d_head"``: ``r = d_head`` for every matrix (the first edition's single choice);
* ``"none"``: no truncation beyond the precision of the stored float32 numbers (singular
  values ``<= max(m, n) * eps_float32 * sigma_1`` are rounding noise, :func:`float32_rtol`).
  For a matrix whose rank equals its number of columns (``W_in``, ``W_U``) the row space is
  then the whole space and the distance is identically 0.

and the OV and QK circuits are taken per head (then averaged over heads) or summed over heads
(``"OV_sum"``, ``"QK_sum"``, :data:`FACTOR_MATRICES`).  The events read off a distance curve
(:func:`icllib.metrics.half_way_time`, :func:`distance_events`) are compared with the
test-accuracy steps ``t50`` and ``t95`` as signed leads, not only against a threshold.
"""

from __future__ import annotations

import numpy as np

from ...metrics import first_crossing, half_way_time
from ...validation import check_choice, check_int
from ..circuits import circuit_metrics
from .analysis import settle_step
from .model import CIRCUIT_NAMES

__all__ = ["RANKS", "FINAL_RANK_RTOL", "NO_SIGNAL", "FACTOR_MATRICES", "float32_rtol", "final_rank",
           "distance_key", "rotation_key", "truncated_metrics", "distance_events",
           "PLACES", "classify_half", "factor_table"]

#: the truncation-rank levels (see the module docstring)
RANKS = ("final", "d_head", "none")
#: relative cut of the "final" numerical rank: singular values below 1 % of the largest
FINAL_RANK_RTOL = 1e-2
#: a fall of a distance curve smaller than this is no signal (rounding of float32 data)
NO_SIGNAL = 1e-4
#: the matrices whose distances the chapter stores at every rank: the checkpointed ones and
#: the OV and QK circuits summed over heads
FACTOR_MATRICES = CIRCUIT_NAMES + ("OV_sum", "QK_sum")


def float32_rtol(shape) -> float:
    """``max(m, n) * eps(float32)``: below this relative size a singular value of a stored
    float32 ``m x n`` matrix is rounding noise (numpy's ``matrix_rank`` convention)."""
    return float(max(shape[-2:]) * np.finfo(np.float32).eps)


def final_rank(M, rtol: float = FINAL_RANK_RTOL) -> int:
    """Number of singular values of ``M`` above ``rtol`` times the largest (at least 1)."""
    sv = np.linalg.svd(np.asarray(M, dtype=np.float64), compute_uv=False)
    return max(1, int(np.count_nonzero(sv > rtol * sv[0])))


def distance_key(name: str, rank: str, reference_step: int) -> str:
    """Array name of a stored distance curve: ``"<name>/distance_to_<S>"`` for ``"d_head"``
    (the first edition's name), ``"<name>/distance_<rank>_to_<S>"`` otherwise."""
    rank = check_choice("rank", rank, RANKS)
    S = int(reference_step)
    return f"{name}/distance_to_{S}" if rank == "d_head" else f"{name}/distance_{rank}_to_{S}"


def rotation_key(name: str, rank: str) -> str:
    """Array name of a stored rotation curve (``"<name>/rotation"`` for ``"d_head"``)."""
    rank = check_choice("rank", rank, RANKS)
    return f"{name}/rotation" if rank == "d_head" else f"{name}/rotation_{rank}"


def truncated_metrics(stack, rank: str, d_head: int, *, reference: int = -1,
                      lag: int | None = None) -> dict[str, np.ndarray]:
    """Distance to a reference checkpoint and rotation at one truncation-rank level.

    The level only chooses each matrix's truncation rank ``r`` and singular-value cut-off;
    the distances and rotations are those of
    :func:`icllib.nonlinear.circuits.circuit_metrics` with that ``rank`` and ``rtol`` (one
    call per distinct ``r``).

    Parameters
    ----------
    stack : array_like, shape (T, K, m, n)
        ``T`` checkpoints of ``K`` matrices (heads; ``K = 1`` for a weight matrix).
    rank : {"final", "d_head", "none"}
        The level (module docstring).  ``"d_head"`` truncates to ``min(d_head, m, n)``
        directions with float64's cut-off, exactly
        :func:`~icllib.nonlinear.circuits.circuit_metrics` with ``rank = d_head``;
        ``"final"`` and ``"none"`` use the float32 cut-off :func:`float32_rtol`.
    d_head : int
    reference : int
        Checkpoint index of ``M(S)``.
    lag : int, optional
        Checkpoint lag of the rotation ``dist(M(t), M(t + lag))``.

    Returns
    -------
    dict
        ``"distance"`` and (with ``lag``) ``"rotation"``, shape ``(T, K)`` (rotation NaN for
        the last ``lag`` checkpoints); ``"rank"``, shape ``(K,)``: the ``r`` used (for
        ``"none"``: the float32 numerical rank of ``M(S)``, for information).
    """
    M = np.asarray(stack, dtype=np.float64)
    if M.ndim != 4:
        raise ValueError(f"stack must have shape (T, K, m, n), got {M.shape}")
    rank = check_choice("rank", rank, RANKS)
    d_head = check_int("d_head", d_head, 1)
    T, K = M.shape[:2]
    reference = check_int("reference", reference, -T, T - 1)
    if lag is not None:
        lag = check_int("lag", lag, 1, T - 1)
    tol32 = float32_rtol(M.shape)
    refs = M[reference]
    if rank == "final":
        ranks, rtol = [final_rank(ref) for ref in refs], tol32
    elif rank == "d_head":
        ranks, rtol = [min(d_head, *M.shape[-2:])] * K, None
    else:
        ranks, rtol = [None] * K, tol32
    out = {"distance": np.empty((T, K)),
           "rank": np.array([final_rank(ref, tol32) if r is None else r
                             for r, ref in zip(ranks, refs)], dtype=np.int64)}
    if lag is not None:
        out["rotation"] = np.full((T, K), np.nan)
    for r in dict.fromkeys(ranks):                 # the heads that share one r, in one call
        heads = [k for k in range(K) if ranks[k] == r]
        m = circuit_metrics(M[:, heads], rank=r, reference=reference, lag=lag, rtol=rtol)
        out["distance"][:, heads] = m["subspace_distance"]
        if lag is not None:
            out["rotation"][:, heads] = m["rotation"]
    return out


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
        ``{(matrix, rank): {key: events}}``, each ``events`` with its ``"place"``
        (:func:`classify_half`).
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
