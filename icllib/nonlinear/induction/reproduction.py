"""What chapter 6 concludes from one run, as numbers (book chapter 6, 'Do the runs reproduce
on another CPU?').

:func:`run_events` names everything the chapter reads off a run file: its emergence window,
final ICL loss and head scores, the kind of circuit it built, and the outcome of each test of
the factor section (dip flags and leads for every view, layer and dip test; the lead of the
induction head's QK norm).  A run regenerated on other numeric kernels reproduces when these
events agree with the shipped run's (:func:`icllib.nonlinear.reproduction.event_differences`).
"""

from __future__ import annotations

import numpy as np

from ...metrics import half_way_time
from .ablation import head_ablations
from .analysis import CIRCUIT_KINDS, circuit_kind
from .factors import DIP_TESTS, LAYERS, VIEWS, circuit_curve, dip_test, distance_lead

__all__ = ["WINDOW_EVENTS", "run_events"]

#: the events that exist only for runs in which ICL emerged (NaN otherwise)
WINDOW_EVENTS = (("window_start", "window_mid", "window_end", "norm_lead")
                 + tuple(f"dip {v} / {l} / {t}" for v in VIEWS for l in LAYERS
                         for t in DIP_TESTS)
                 + tuple(f"lead {v} / {l}" for v in VIEWS for l in LAYERS))


def run_events(run) -> dict[str, float]:
    """The events of one chapter-6 run (:class:`~.runs.InductionRunSummary`).

    Returns
    -------
    dict of str -> float
        ``emerged`` (1 or 0), ``final_icl_loss`` (nats); the final scores the mechanism
        section reads: ``prev_token_score`` and ``duplicate_token_score`` (largest in layer
        1), ``induction_score`` (largest anywhere); ``circuit_kind`` (index into
        :data:`CIRCUIT_KINDS` of :func:`circuit_kind`; NaN for one layer); and, for runs of
        two or more layers in which ICL emerged (NaN otherwise), :data:`WINDOW_EVENTS`:
        the window's start, middle and end (steps), ``norm_lead`` (half-time of the
        induction head's QK norm minus the window start), ``"dip <view> / <layer> /
        <test>"`` (1 if :func:`dip_test` finds a dip) and ``"lead <view> / <layer>"``
        (:func:`distance_lead`, steps).  Files with the final weights add
        ``"ablated <what>"``, the ICL loss with :data:`HEAD_ABLATIONS` removed
        (:func:`head_ablations`).
    """
    prev, dup, ind = (np.asarray(run[n][-1]) for n in
                      ("prev_token_score", "duplicate_token_score", "induction_score"))
    deep = prev.shape[0] >= 2
    w = run.window
    ev = {"emerged": float(w.emerged), "final_icl_loss": float(run.icl_loss[-1]),
          "prev_token_score": float(prev[0].max()),
          "duplicate_token_score": float(dup[0].max()),
          "induction_score": float(ind.max()),
          "circuit_kind": float(CIRCUIT_KINDS.index(circuit_kind(prev, dup, ind)))
          if deep else float("nan")}
    ev.update(dict.fromkeys(WINDOW_EVENTS, float("nan")))
    if deep and any(k.startswith("weights/") for k in run):
        ev.update({f"ablated {k}": v for k, v in head_ablations(run).items()})
    if not (deep and w.emerged):
        return ev
    norm = circuit_curve(run, "head", "induction layer", "norm")
    ev.update(window_start=float(w.start), window_mid=float(w.mid), window_end=float(w.end),
              norm_lead=float(half_way_time(run.steps, norm) - w.start))
    for view in VIEWS:
        for layer in LAYERS:
            for test in DIP_TESTS:
                ev[f"dip {view} / {layer} / {test}"] = float(
                    dip_test(run, view, layer, test).is_dip)
            ev[f"lead {view} / {layer}"] = float(distance_lead(run, view, layer))
    return ev
