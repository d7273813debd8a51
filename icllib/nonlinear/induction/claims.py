"""Chapter 6b's verdicts, counted from the runs' events (book chapter 6b and its evidence page).

The paper's three metric claims are tested run by run under every reading of the factors
(:mod:`.factors`), and the runs are grouped by *setting*: positional embedding and
initialisation scale, depths 2-4 pooled, plus the two-layer relative-position runs and the
one-layer **control** (no ICL; tested against its placebo window).  Everything is counted
from the events of :func:`~.reproduction.run_events` (one code path for the shipped runs and
for their regeneration on other kernels):

* :func:`dip_counts`: how many runs of each setting dip in their window, per dip test, view
  and layer;
* :func:`lead_counts`: how many runs' QK subspace distance (per view, layer and truncation
  rank) or induction-head QK norm has its half-time before / with / after the window's
  start, middle or end.

Each count becomes a :class:`icllib.verdicts.Count` (Wilson interval, verdict rule).
"""

from __future__ import annotations

import numpy as np

from ...validation import check_choice
from ...verdicts import Count
from .factors import (
    ANCHORS,
    DIP_TESTS,
    DISTANCE_RANKS,
    LAYERS,
    LEAD_OUTCOMES,
    VIEWS,
    WITH_TOLERANCE,
    outcome_at,
)

__all__ = ["CONTROL", "run_setting", "setting_runs", "dip_counts", "lead_outcomes_of",
           "lead_counts", "CLAIMS"]

#: the setting label of the one-layer negative control
CONTROL = "one layer (control)"

#: the claims, by the events they read: a dip flag, a distance half-time, the norm half-time
CLAIMS = ("dip", "distance lead", "norm lead")


def run_setting(name: str) -> str | None:
    """The setting of a run file stem: ``"learned, init 0.1"``, ..., ``"relative, init 0.1"``
    or :data:`CONTROL` (one layer); None for the live demo."""
    kind, depth, positional, std, _ = name.split("_")
    if kind != "run":
        return None
    if depth == "L1":
        return CONTROL
    return f"{positional}, init {float(std[3:]):g}"


def setting_runs(events: dict) -> dict[str, list[str]]:
    """``{setting: [run names]}`` for every run with a window (own or placebo), in a fixed
    order: the four settings with positions in the stream, relative, the control."""
    groups: dict[str, list[str]] = {}
    for name in sorted(events):
        setting = run_setting(name)
        if setting is not None and np.isfinite(events[name]["window_start"]):
            groups.setdefault(setting, []).append(name)
    order = sorted((s for s in groups if s != CONTROL and not s.startswith("relative")),
                   key=lambda s: (not s.startswith("learned"), s))
    order += [s for s in groups if s.startswith("relative")] + [s for s in groups
                                                                 if s == CONTROL]
    return {s: groups[s] for s in order}


def dip_counts(events: dict) -> dict[tuple[str, str, str, str], Count]:
    """``{(test, view, layer, setting): Count}``: runs whose QK marginal effective rank dips
    in the window by the dip test ``test`` (:data:`~.factors.DIP_TESTS`)."""
    out = {}
    for setting, names in setting_runs(events).items():
        for test in DIP_TESTS:
            for view in VIEWS:
                for layer in LAYERS:
                    k = sum(events[n][f"dip {view} / {layer} / {test}"] == 1.0 for n in names)
                    out[test, view, layer, setting] = Count(int(k), len(names))
    return out


def lead_outcomes_of(ev: dict, half_key: str, anchor: str,
                     tolerance: int = WITH_TOLERANCE) -> str:
    """:func:`~.factors.outcome_at` from a run's events: the half-time ``ev[half_key]``
    against ``ev["window_<anchor>"]``."""
    anchor = check_choice("anchor", anchor, ANCHORS)
    return outcome_at(ev[half_key], ev[f"window_{anchor}"], tolerance=tolerance)


def lead_counts(events: dict, claim: str = "distance lead") -> dict[tuple, dict[str, Count]]:
    """How many runs of each setting have their half-time before / with / after an anchor.

    Parameters
    ----------
    claim : ``"distance lead"`` (the QK subspace distance, per view, layer and truncation
        rank) or ``"norm lead"`` (the induction head's QK norm).

    Returns
    -------
    dict
        ``{(anchor, view, layer, rank, setting): {outcome: Count}}`` for the distance,
        ``{(anchor, setting): {outcome: Count}}`` for the norm; outcomes
        :data:`~.factors.LEAD_OUTCOMES`.
    """
    claim = check_choice("claim", claim, CLAIMS[1:])
    out = {}
    if claim == "norm lead":
        readings = [((anchor,), "norm_half") for anchor in ANCHORS]
    else:
        readings = [((anchor, view, layer, rank), f"half {view} / {layer} / {rank}")
                    for anchor in ANCHORS for view in VIEWS for layer in LAYERS
                    for rank in DISTANCE_RANKS]
    for setting, names in setting_runs(events).items():
        for key, half in readings:
            outcomes = [lead_outcomes_of(events[n], half, key[0]) for n in names]
            out[(*key, setting)] = {o: Count(outcomes.count(o), len(names))
                                    for o in LEAD_OUTCOMES}
    return out
