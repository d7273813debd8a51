"""Chapter 6's claims as functions of the choices a test makes (book chapter 6, 'Factors').

A claim such as "the QK marginal effective rank dips when ICL emerges" is tested on one
curve, and which curve is a choice:

* the **view** of the circuit (:data:`VIEWS`): one head (``"head"``), the layer's heads
  stacked (``"stacked"``) or summed (``"summed"``)
  (:class:`~icllib.nonlinear.induction.runs.InductionRunSummary` stores all three);
* the **layer**: layer 1 or the induction layer (:data:`LAYERS`); per head, the head is the
  run's induction head in the induction layer and, in layer 1, the head with the largest
  final previous-token or duplicate-token score (the helper head);
* the **dip test** (:data:`DIP_TESTS`): ``"global"`` (:func:`~.analysis.find_dip`: the
  minimum after the first 5 % of training lies in the window and the curve fell into it and
  rose out of it by more than ``delta`` by the end of the run) or ``"local"``
  (:func:`find_local_dip`: the curve's minimum over the window lies ``delta`` below its value
  ``margin`` steps before the window and ``margin`` steps after it).

The run's factors (initialisation scale, positional embedding, depth, seed) are in its file.
"""

from __future__ import annotations

import numpy as np

from ...metrics import half_way_time
from ...validation import check_choice, check_int, check_real
from .analysis import Dip, EmergenceWindow, find_dip

__all__ = ["VIEWS", "LAYERS", "DIP_TESTS", "find_local_dip", "helper_head", "circuit_curve",
           "dip_test", "distance_lead"]

VIEWS = ("head", "stacked", "summed")
LAYERS = ("layer 1", "induction layer")
DIP_TESTS = ("global", "local")
_GROUP = {"head": "qk", "stacked": "qk_concat", "summed": "qk_sum"}


def find_local_dip(steps, values, window: EmergenceWindow, *, margin: int,
                   delta: float = 0.1) -> Dip:
    """Does ``values`` dip *locally* at the emergence window?

    ``m`` is the minimum of ``values`` over the checkpoints in ``[window.start,
    window.end]``; ``fall`` is the value at ``window.start - margin`` minus ``m``, ``rise``
    the value at ``window.end + margin`` minus ``m`` (the nearest checkpoints, clipped to
    the run).  It is a dip when both exceed ``delta``.  Unlike :func:`~.analysis.find_dip`
    it does not ask the minimum to be the run's global one, so a curve that dips at the
    window and later falls further still counts.
    """
    steps = np.asarray(steps)
    v = np.asarray(values, dtype=float)
    if v.shape != steps.shape or v.ndim != 1 or v.size < 3:
        raise ValueError(f"steps and values must be 1-D of the same length >= 3, got "
                         f"{steps.shape} and {v.shape}")
    if not window.emerged:
        raise ValueError("window must be an emergence window of a run where ICL emerged")
    margin = check_int("margin", margin, 0)
    delta = check_real("delta", delta, 0.0)
    inside = np.flatnonzero((steps >= window.start) & (steps <= window.end))
    im = int(inside[np.argmin(v[inside])])
    before = int(np.searchsorted(steps, window.start - margin))
    after = min(int(np.searchsorted(steps, window.end + margin)), steps.size - 1)
    fall, rise = float(v[before] - v[im]), float(v[after] - v[im])
    return Dip(int(steps[im]), fall, rise, True, fall > delta and rise > delta)


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
                  k_index: int = 0) -> np.ndarray:
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

    Returns
    -------
    ndarray, shape (C,)
    """
    view = check_choice("view", view, VIEWS)
    l, h = _layer_head(run, layer)
    values = getattr(run, _GROUP[view])[metric]
    v = values[:, l, h] if view == "head" else values[:, l]
    return v[..., k_index] if metric == "marginal_effective_rank" else v


def dip_test(run, view: str, layer: str, test: str, *, margin: int = 250,
             delta: float = 0.1) -> Dip:
    """The dip test ``test`` (:data:`DIP_TESTS`) on the QK marginal effective rank (k = 1)."""
    test = check_choice("test", test, DIP_TESTS)
    v = circuit_curve(run, view, layer)
    if test == "global":
        return find_dip(run.steps, v, run.window, delta=delta)
    return find_local_dip(run.steps, v, run.window, margin=margin, delta=delta)


def distance_lead(run, view: str, layer: str) -> int:
    """Half-time of the QK subspace distance to the final circuit minus the window start.

    Negative: the distance has covered half its way before the ICL loss leaves its plateau
    (:func:`icllib.metrics.half_way_time`; per-layer views are truncated to ``d_head``).
    """
    v = circuit_curve(run, view, layer, "subspace_distance")
    half = half_way_time(run.steps, v)
    if np.isnan(half):
        raise ValueError(f"the {view} QK subspace distance of the {layer} does not change: "
                         "it has no half-time")
    return int(half) - run.window.start
