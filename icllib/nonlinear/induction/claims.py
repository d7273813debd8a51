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
  start, middle or end;
* :func:`claim_counts`: both, for every claim.

Each count becomes a :class:`icllib.verdicts.Count` (Wilson interval, verdict rule), and each
function returns a **long table**: a list of :class:`ClaimCount` rows, one per count, whose
named fields say which claim, setting and reading it counts (a field the claim does not vary
is None).  :func:`select` and :func:`only` pick rows by field, :func:`outcome_counts` a lead's
three outcomes, :func:`paired` the rows of two tables that count the same cell (the same
claim and reading in two sets of runs; also for :class:`~.primary.PrimaryCount` rows).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

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

__all__ = ["CONTROL", "run_setting", "setting_runs", "ClaimCount", "dip_counts",
           "lead_outcomes_of", "lead_counts", "claim_counts", "CLAIMS", "select", "only",
           "outcome_counts", "paired"]

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


@dataclass(frozen=True, kw_only=True)
class ClaimCount:
    """One row of the long table of chapter 6b's counts: the runs of one setting that satisfy
    one claim at one reading.

    Attributes
    ----------
    claim : str
        One of :data:`CLAIMS`.
    setting : str
        :func:`run_setting`'s label: ``"learned, init 0.1"`` (depths 2-4 pooled), ...,
        :data:`CONTROL`.
    test, view, layer, rank, anchor : str or None
        The reading: dip test (:data:`~.factors.DIP_TESTS`), view, layer, truncation rank
        and anchor; None for a factor the claim does not vary (a dip has no rank or anchor,
        the norm lead only an anchor).
    outcome : str or None
        For a lead, which of :data:`~.factors.LEAD_OUTCOMES` the row counts; None for a dip.
    count : Count
        The runs of the setting with that outcome (for a dip: that dip) out of all of them.
    """

    claim: str
    setting: str
    test: str | None = None
    view: str | None = None
    layer: str | None = None
    rank: str | None = None
    anchor: str | None = None
    outcome: str | None = None
    count: Count

    @property
    def label(self) -> str:
        """The row's claim, outcome, reading and setting, joined by " / " (None left out):
        ``"dip / global / head / layer 1 / learned, init 0.1"``."""
        parts = (self.claim, self.outcome, self.anchor, self.test, self.view, self.layer,
                 self.rank, self.setting)
        return " / ".join(p for p in parts if p is not None)


def _check_fields(rows: list, fields: dict):
    if not rows:
        return
    names = {f.name for f in dataclasses.fields(rows[0])}
    unknown = sorted(set(fields) - names)
    if unknown:
        raise TypeError(f"{type(rows[0]).__name__} has no field {unknown[0]!r}; its fields "
                        f"are {sorted(names)}")


def select(rows, **fields) -> list:
    """The rows of a long table whose named fields equal the given values, in table order:
    ``select(dip_counts(events), view="head", test="global")``.

    Raises
    ------
    TypeError
        If a name is not a field of the rows (a misspelt field would match nothing).
    """
    rows = list(rows)
    _check_fields(rows, fields)
    return [r for r in rows if all(getattr(r, k) == v for k, v in fields.items())]


def only(rows, **fields):
    """The one row of a long table that :func:`select` finds for ``fields``.

    Raises
    ------
    LookupError
        If no row or more than one matches (the fields do not name one cell).
    """
    found = select(rows, **fields)
    if len(found) != 1:
        raise LookupError(f"{len(found)} rows match {fields}, expected exactly one")
    return found[0]


def outcome_counts(rows, **fields) -> dict[str, Count]:
    """``{outcome: Count}`` of one lead reading in one setting: the rows :func:`select` finds
    for ``fields``, which must name one cell per outcome of :data:`~.factors.LEAD_OUTCOMES`."""
    return {o: only(rows, outcome=o, **fields).count for o in LEAD_OUTCOMES}


def paired(rows_a, rows_b) -> list[tuple]:
    """``[(a, b)]``: the rows of two long tables of one kind that count the same cell (every
    field but ``count`` equal), in the order of ``rows_a``; a cell missing from either table
    is left out.  Compares one set of runs with another (two scales, two numeric kernels)."""
    def cell(row):
        return dataclasses.replace(row, count=None)

    by_cell = {cell(b): b for b in rows_b}
    return [(a, by_cell[cell(a)]) for a in rows_a if cell(a) in by_cell]


def dip_counts(events: dict) -> list[ClaimCount]:
    """Runs whose QK marginal effective rank dips in the window by each dip test
    (:data:`~.factors.DIP_TESTS`), view and layer: one :class:`ClaimCount` (claim ``"dip"``,
    fields ``setting``, ``test``, ``view``, ``layer``) per cell, settings in the order of
    :func:`setting_runs`."""
    out = []
    for setting, names in setting_runs(events).items():
        for test in DIP_TESTS:
            for view in VIEWS:
                for layer in LAYERS:
                    k = sum(events[n][f"dip {view} / {layer} / {test}"] == 1.0 for n in names)
                    out.append(ClaimCount(claim="dip", setting=setting, test=test, view=view,
                                          layer=layer, count=Count(int(k), len(names))))
    return out


def lead_outcomes_of(ev: dict, half_key: str, anchor: str,
                     tolerance: int = WITH_TOLERANCE) -> str:
    """:func:`~.factors.outcome_at` from a run's events: the half-time ``ev[half_key]``
    against ``ev["window_<anchor>"]``."""
    anchor = check_choice("anchor", anchor, ANCHORS)
    return outcome_at(ev[half_key], ev[f"window_{anchor}"], tolerance=tolerance)


def lead_counts(events: dict, claim: str = "distance lead") -> list[ClaimCount]:
    """How many runs of each setting have their half-time before / with / after an anchor.

    Parameters
    ----------
    claim : ``"distance lead"`` (the QK subspace distance, per view, layer and truncation
        rank) or ``"norm lead"`` (the induction head's QK norm).

    Returns
    -------
    list of ClaimCount
        One row per setting, reading and outcome (:data:`~.factors.LEAD_OUTCOMES`): fields
        ``anchor``, ``view``, ``layer``, ``rank`` and ``outcome`` for the distance, ``anchor``
        and ``outcome`` for the norm (its ``view``, ``layer`` and ``rank`` are None).
        :func:`outcome_counts` gathers one reading's three outcomes.
    """
    claim = check_choice("claim", claim, CLAIMS[1:])
    if claim == "norm lead":
        readings = [({"anchor": anchor}, "norm_half") for anchor in ANCHORS]
    else:
        readings = [({"anchor": anchor, "view": view, "layer": layer, "rank": rank},
                     f"half {view} / {layer} / {rank}")
                    for anchor in ANCHORS for view in VIEWS for layer in LAYERS
                    for rank in DISTANCE_RANKS]
    out = []
    for setting, names in setting_runs(events).items():
        for reading, half in readings:
            outcomes = [lead_outcomes_of(events[n], half, reading["anchor"]) for n in names]
            out += [ClaimCount(claim=claim, setting=setting, outcome=o, **reading,
                               count=Count(outcomes.count(o), len(names)))
                    for o in LEAD_OUTCOMES]
    return out


def claim_counts(events: dict) -> list[ClaimCount]:
    """Every count of every claim: :func:`dip_counts`, then :func:`lead_counts` of the
    distance and of the norm, as one long table."""
    return dip_counts(events) + lead_counts(events) + lead_counts(events, "norm lead")
