"""What chapter 6 concludes from one run, as numbers (its evidence page, 'Do the runs
reproduce on another CPU?').

:func:`run_events` names everything the chapter reads off a run file: its emergence window,
final ICL loss and head scores, the kind of circuit it built, and the outcome of each test of
the factor section (dip flags and leads for every view, layer and dip test; the lead of the
induction head's QK norm).  A run regenerated on other numeric kernels reproduces when these
events agree with the shipped run's (:func:`icllib.nonlinear.reproduction.event_differences`).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..runs import load_run
from .ablation import head_ablations
from .analysis import CIRCUIT_KINDS, EmergenceWindow, circuit_kind
from .factors import DIP_TESTS, DISTANCE_RANKS, LAYERS, VIEWS, curve_half, dip_test

__all__ = ["WINDOW_EVENTS", "HALF_EVENTS", "run_events", "placebo_partner", "chapter_events"]

#: the events that exist only for runs with a window (NaN otherwise): one in which ICL
#: emerged, or a one-layer control tested against its placebo window
WINDOW_EVENTS = (("window_start", "window_mid", "window_end")
                 + tuple(f"dip {v} / {l} / {t}" for v in VIEWS for l in LAYERS
                         for t in DIP_TESTS))
#: half-times (steps) of the QK curves, for every run (NaN when a curve does not change)
HALF_EVENTS = (("norm_half",) + tuple(f"half {v} / {l} / {r}" for v in VIEWS for l in LAYERS
                                      for r in DISTANCE_RANKS))


def run_events(run, window: EmergenceWindow | None = None) -> dict[str, float]:
    """The events of one chapter-6 run (:class:`~.runs.InductionRunSummary`).

    Parameters
    ----------
    run : InductionRunSummary
    window : EmergenceWindow, optional
        For a one-layer control: the placebo window to test it against
        (:func:`placebo_partner`); runs in which ICL emerged use their own.

    Returns
    -------
    dict of str -> float
        ``emerged`` (1 or 0), ``control`` (1 for a one-layer run), ``final_icl_loss``
        (nats); the final scores the mechanism section reads: ``prev_token_score`` and
        ``duplicate_token_score`` (largest in layer 1), ``induction_score`` (largest
        anywhere); ``circuit_kind`` (index into :data:`CIRCUIT_KINDS` of
        :func:`circuit_kind`; NaN for one layer); :data:`HALF_EVENTS`, the half-times of the
        induction head's QK norm and of every QK distance (view x layer x truncation rank;
        leads against any anchor follow from them and the window); and, for a run with a
        window (its own, or the placebo one), :data:`WINDOW_EVENTS`: the window's start,
        middle and end and ``"dip <view> / <layer> / <test>"`` (1 if :func:`dip_test` finds a
        dip).  Files with the final weights add ``"ablated <what>"``, the ICL loss with
        :data:`HEAD_ABLATIONS` removed (:func:`head_ablations`).
    """
    prev, dup, ind = (np.asarray(run[n][-1]) for n in
                      ("prev_token_score", "duplicate_token_score", "induction_score"))
    deep = prev.shape[0] >= 2
    w = run.window if window is None else window
    ev = {"emerged": float(run.window.emerged), "control": float(not deep),
          "final_icl_loss": float(run.icl_loss[-1]),
          "prev_token_score": float(prev[0].max()),
          "duplicate_token_score": float(dup[0].max()),
          "induction_score": float(ind.max()),
          "circuit_kind": float(CIRCUIT_KINDS.index(circuit_kind(prev, dup, ind)))
          if deep else float("nan")}
    ev["norm_half"] = curve_half(run, "head", "induction layer", "norm")
    for view in VIEWS:
        for layer in LAYERS:
            for rank in DISTANCE_RANKS:
                ev[f"half {view} / {layer} / {rank}"] = curve_half(run, view, layer, rank=rank)
    ev.update(dict.fromkeys(WINDOW_EVENTS, float("nan")))
    if deep and any(k.startswith("weights/") for k in run):
        ev.update({f"ablated {k}": v for k, v in head_ablations(run).items()})
    if not w.emerged:
        return ev
    ev.update(window_start=float(w.start), window_mid=float(w.mid), window_end=float(w.end))
    for view in VIEWS:
        for layer in LAYERS:
            for test in DIP_TESTS:
                ev[f"dip {view} / {layer} / {test}"] = float(
                    dip_test(run, view, layer, test, window=w).is_dip)
    return ev


def placebo_partner(name: str) -> str | None:
    """The run whose window a one-layer control is tested against: the two-layer run of the
    same setting and seed (``run_L1_...`` -> ``run_L2_...``); None for other runs."""
    return name.replace("run_L1_", "run_L2_", 1) if name.startswith("run_L1_") else None


def chapter_events(directory) -> dict[str, dict[str, float]]:
    """:func:`run_events` of every run file of a folder, the one-layer controls against the
    window of their :func:`placebo_partner` in the same folder."""
    from .runs import InductionRunSummary

    runs = {p.stem: load_run(p, InductionRunSummary)
            for p in sorted(Path(directory).glob("*.npz"))}
    out = {}
    for name, run in runs.items():
        partner = placebo_partner(name)
        if partner is not None and partner not in runs:
            raise ValueError(f"{directory}: the control {name} needs its partner {partner}")
        out[name] = run_events(run, None if partner is None else runs[partner].window)
    return out
