"""Chapter 6's claims as functions of the choices a test makes (book chapter 6b, 'Factors').

A claim such as "the QK marginal effective rank dips when ICL emerges" is tested on one
curve against one reference time, and both are choices:

* the **view** of the circuit (:data:`VIEWS`): one head (``"head"``), the layer's heads
  stacked (``"stacked"``) or summed (``"summed"``)
  (:class:`~icllib.nonlinear.induction.runs.InductionRunSummary` stores all three);
* the **layer**: layer 1 or the induction layer (:data:`LAYERS`); per head, the head is the
  run's induction head in the induction layer and, in layer 1, the head with the largest
  final previous-token or duplicate-token score (the helper head);
* the **truncation rank** of a subspace distance (:data:`DISTANCE_RANKS`, the levels of
  :data:`icllib.nonlinear.circuits.RANKS` that carry a signal here): ``"d_head"`` (a head's
  untruncated distance, which is also its ``"none"`` level; a layer's view truncated to
  ``d_head``) or ``"final"`` (truncated to the final matrix's numerical rank);
* the **dip test** (:data:`DIP_TESTS`), four readings of "dips in the window", from the
  strictest to the loosest:

  - ``"global"`` (:func:`~.analysis.find_dip`): the run's minimum after the first 5 % of
    training lies *in* the window, and the curve fell into it and rose out of it by more than
    ``delta`` by the end of the run;
  - ``"local"`` (:func:`find_local_dip`): the minimum over the window lies ``delta`` below the
    values ``margin`` steps before and after it;
  - ``"near"`` (:func:`find_near_dip`): the global minimum (after 5 %) lies within ``margin``
    steps of the window, with the same fall and rise;
  - ``"climb"`` (:func:`find_climb`): the climb out of the global minimum (the first step at
    which the curve has recovered half of its rise from the minimum to the end) lies within
    ``tolerance`` steps of the window: the shape the linear bridge predicts (the marginal
    effective rank is lowest while one new direction dominates and climbs when the next ones
    rise; book chapter 6, 'Where the marginal effective rank dips');

* the **anchor** of a lead (:data:`ANCHORS`): the window's start, middle or end; the lead is
  the half-time of a curve (:func:`icllib.metrics.half_way_time`) minus the anchor, and its
  outcome (:func:`lead_outcome`, :data:`LEAD_OUTCOMES`) is "before" the anchor, "with" it
  (within ``tolerance`` steps: the curve falls *with* the loss) or "after" it.

The one-layer runs, in which ICL never emerges, are the negative control: every test is
applied to them with a *placebo* window, that of the two-layer run of the same setting and
seed (the ``window`` argument of :func:`dip_test` and :func:`curve_half`).  The run's other
factors (initialisation scale, positional embedding, depth, seed) are in its file.
"""

from __future__ import annotations

import numpy as np

from ...metrics import half_way_time
from ...validation import check_choice, check_int, check_real
from .analysis import Dip, EmergenceWindow, find_dip

__all__ = ["VIEWS", "LAYERS", "DIP_TESTS", "ANCHORS", "LEAD_OUTCOMES", "DISTANCE_RANKS",
           "DIP_MARGIN", "WITH_TOLERANCE", "find_local_dip", "find_near_dip", "find_climb",
           "helper_head", "circuit_curve", "dip_test", "curve_half", "outcome_at",
           "lead_outcome", "anchor_step", "dip_shape"]

VIEWS = ("head", "stacked", "summed")
LAYERS = ("layer 1", "induction layer")
DIP_TESTS = ("global", "local", "near", "climb")
ANCHORS = ("start", "mid", "end")
LEAD_OUTCOMES = ("before", "with", "after")
#: the truncation-rank levels of the QK distance with a signal here ("none" is "d_head" for a
#: head and identically 0 for a layer's full-rank views)
DISTANCE_RANKS = ("d_head", "final")
#: steps around the window within which the "local" and "near" tests look (10 checkpoints)
DIP_MARGIN = 250
#: a half-time within this many steps of the anchor is "with" it (two checkpoints of 25 steps)
WITH_TOLERANCE = 50
_GROUP = {"head": "qk", "stacked": "qk_concat", "summed": "qk_sum"}


def _after_transient(steps, v, after_fraction):
    i0 = int(np.argmax(steps >= after_fraction * steps[-1]))
    return i0, i0 + int(np.argmin(v[i0:]))


def find_local_dip(steps, values, window: EmergenceWindow, *, margin: int = DIP_MARGIN,
                   delta: float = 0.1) -> Dip:
    """Does ``values`` dip *locally* at the emergence window?

    ``m`` is the minimum of ``values`` over the checkpoints in ``[window.start,
    window.end]``; ``fall`` is the value at ``window.start - margin`` minus ``m``, ``rise``
    the value at ``window.end + margin`` minus ``m`` (the nearest checkpoints, clipped to
    the run).  It is a dip when both exceed ``delta``.  Unlike :func:`~.analysis.find_dip`
    it does not ask the minimum to be the run's global one, so a curve that dips at the
    window and later falls further still counts.
    """
    steps, v = _check_curve(steps, values, window)
    margin = check_int("margin", margin, 0)
    delta = check_real("delta", delta, 0.0)
    inside = np.flatnonzero((steps >= window.start) & (steps <= window.end))
    im = int(inside[np.argmin(v[inside])])
    before = int(np.searchsorted(steps, window.start - margin))
    after = min(int(np.searchsorted(steps, window.end + margin)), steps.size - 1)
    fall, rise = float(v[before] - v[im]), float(v[after] - v[im])
    return Dip(int(steps[im]), fall, rise, True, fall > delta and rise > delta)


def _check_curve(steps, values, window):
    steps = np.asarray(steps)
    v = np.asarray(values, dtype=float)
    if v.shape != steps.shape or v.ndim != 1 or v.size < 3:
        raise ValueError(f"steps and values must be 1-D of the same length >= 3, got "
                         f"{steps.shape} and {v.shape}")
    if not window.emerged:
        raise ValueError("window must be an emergence window of a run where ICL emerged")
    return steps, v


def find_near_dip(steps, values, window: EmergenceWindow, *, margin: int = DIP_MARGIN,
                  after_fraction: float = 0.05, delta: float = 0.1) -> Dip:
    """Does ``values`` reach its minimum *near* the window?

    As :func:`~.analysis.find_dip` (minimum after ``after_fraction`` of training, fall and rise
    by more than ``delta``), but the minimum may lie up to ``margin`` steps before the window
    start or after its end.
    """
    steps, v = _check_curve(steps, values, window)
    margin = check_int("margin", margin, 0)
    delta = check_real("delta", delta, 0.0)
    i0, im = _after_transient(steps, v, after_fraction)
    fall, rise = float(v[i0] - v[im]), float(v[-1] - v[im])
    near = bool(window.start - margin <= steps[im] <= window.end + margin)
    return Dip(int(steps[im]), fall, rise, near, near and fall > delta and rise > delta)


def find_climb(steps, values, window: EmergenceWindow, *, tolerance: int = WITH_TOLERANCE,
               after_fraction: float = 0.05, delta: float = 0.1) -> Dip:
    """Does the climb out of the curve's minimum coincide with the window?

    With ``m`` the minimum after ``after_fraction`` of training, the climb step is the first
    checkpoint after it at which the curve has recovered half of its rise ``v_T - v_m``.  It
    is a dip of this kind when the curve fell into the minimum and rose out of it by more
    than ``delta`` and the climb step lies in ``[start - tolerance, end + tolerance]``.  The
    returned :class:`Dip` has ``step`` = the climb step (NaN-free: the minimum's step when the
    curve does not rise).
    """
    steps, v = _check_curve(steps, values, window)
    tolerance = check_int("tolerance", tolerance, 0)
    delta = check_real("delta", delta, 0.0)
    i0, im = _after_transient(steps, v, after_fraction)
    fall, rise = float(v[i0] - v[im]), float(v[-1] - v[im])
    if rise <= 0:
        return Dip(int(steps[im]), fall, rise, False, False)
    ic = im + int(np.argmax(v[im:] >= v[im] + rise / 2))
    inside = bool(window.start - tolerance <= steps[ic] <= window.end + tolerance)
    return Dip(int(steps[ic]), fall, rise, inside, inside and fall > delta and rise > delta)


def helper_head(run) -> int:
    """Layer-1 head with the largest final previous-token or duplicate-token score."""
    score = np.maximum(run.prev_token_score[-1, 0], run.duplicate_token_score[-1, 0])
    return int(np.argmax(score))


def _layer_head(run, layer: str) -> tuple[int, int]:
    layer = check_choice("layer", layer, LAYERS)
    if layer == "layer 1":
        return 0, helper_head(run)
    return run.induction_head()


def circuit_curve(run, view: str, layer: str, metric: str = "marginal_effective_rank",
                  k_index: int = 0, rank: str = "d_head") -> np.ndarray:
    """One QK curve of a run: the given metric of the chosen view and layer.

    Parameters
    ----------
    run : InductionRunSummary
    view : one of :data:`VIEWS`
    layer : one of :data:`LAYERS`
    metric : "marginal_effective_rank", "effective_rank", "subspace_distance" or "norm"
    k_index : int
        Index into the stored ``ks`` for the marginal effective rank (per-layer views store
        only the first).
    rank : one of :data:`DISTANCE_RANKS`
        Truncation-rank level of the subspace distance (other metrics ignore it).

    Returns
    -------
    ndarray, shape (C,)
    """
    view = check_choice("view", view, VIEWS)
    rank = check_choice("rank", rank, DISTANCE_RANKS)
    l, h = _layer_head(run, layer)
    name = metric + ("_final" if metric == "subspace_distance" and rank == "final" else "")
    values = getattr(run, _GROUP[view])[name]
    v = values[:, l, h] if view == "head" else values[:, l]
    return v[..., k_index] if metric == "marginal_effective_rank" else v


def _window(run, window):
    return run.window if window is None else window


def dip_test(run, view: str, layer: str, test: str, *, window: EmergenceWindow | None = None,
             margin: int = DIP_MARGIN, delta: float = 0.1) -> Dip:
    """The dip test ``test`` (:data:`DIP_TESTS`) on the QK marginal effective rank (k = 1).

    ``window``: the window to test against (default: the run's own; a one-layer control gets
    the placebo window of its two-layer partner).
    """
    test = check_choice("test", test, DIP_TESTS)
    v = circuit_curve(run, view, layer)
    w = _window(run, window)
    if test == "global":
        return find_dip(run.steps, v, w, delta=delta)
    if test == "local":
        return find_local_dip(run.steps, v, w, margin=margin, delta=delta)
    if test == "near":
        return find_near_dip(run.steps, v, w, margin=margin, delta=delta)
    return find_climb(run.steps, v, w, delta=delta)


def curve_half(run, view: str, layer: str, metric: str = "subspace_distance",
               rank: str = "d_head") -> float:
    """Half-time (steps) of a QK curve (:func:`icllib.metrics.half_way_time`): where the
    subspace distance has come half-way down, or the norm half-way to its final value; NaN
    when the curve does not change."""
    return float(half_way_time(run.steps, circuit_curve(run, view, layer, metric, rank=rank)))


def anchor_step(window: EmergenceWindow, anchor: str) -> int:
    """The window's ``start``, ``mid`` or ``end`` (:data:`ANCHORS`)."""
    anchor = check_choice("anchor", anchor, ANCHORS)
    if not window.emerged:
        raise ValueError("window must be an emergence window of a run where ICL emerged")
    return int(getattr(window, anchor))


def outcome_at(half: float, anchor: float, *, tolerance: int = WITH_TOLERANCE) -> str:
    """One of :data:`LEAD_OUTCOMES` for a half-time against an anchor step: ``"before"`` if
    ``half < anchor - tolerance``, ``"with"`` if within ``tolerance`` steps of it, ``"after"``
    otherwise (also for NaN: a curve that never falls never leads).  The one rule behind
    :func:`lead_outcome` and the verdict counts of :mod:`.claims`."""
    tolerance = check_int("tolerance", tolerance, 0)
    if not np.isfinite(half) or half > anchor + tolerance:
        return "after"
    return "before" if half < anchor - tolerance else "with"


def lead_outcome(half: float, window: EmergenceWindow, anchor: str = "start", *,
                 tolerance: int = WITH_TOLERANCE) -> str:
    """Where a half-time falls against the window's anchor (:func:`outcome_at`)."""
    return outcome_at(half, anchor_step(window, anchor), tolerance=tolerance)


def dip_shape(run, view: str, layer: str, *, window: EmergenceWindow | None = None,
              after_fraction: float = 0.05) -> dict[str, float]:
    """What a QK marginal-effective-rank curve does around the window, in numbers.

    Returns ``minimum`` (step of the minimum after ``after_fraction`` of training, minus the
    window start), ``climb`` (the climb step of :func:`find_climb` minus the window start),
    ``rise_in_window`` (the share of the rise from the minimum to the end that happens
    between the window's start and end; 0 when the minimum comes after the window) and
    ``depth`` (the fall into the minimum).
    """
    w = _window(run, window)
    steps = np.asarray(run.steps)
    v = np.asarray(circuit_curve(run, view, layer), dtype=float)
    i0, im = _after_transient(steps, v, after_fraction)
    climb = find_climb(steps, v, w)
    rise = v[-1] - v[im]
    lo, hi = np.interp([max(w.start, steps[im]), max(w.end, steps[im])], steps, v)
    share = float((hi - lo) / rise) if rise > 0 else 0.0
    return {"minimum": float(steps[im] - w.start), "climb": float(climb.step - w.start),
            "rise_in_window": share, "depth": float(v[i0] - v[im])}
