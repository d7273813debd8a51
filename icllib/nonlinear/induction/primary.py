"""Chapter 6b's verdicts at one stated reading per claim, each against its own control.

The paper (Mainali & Teixeira 2025) makes four claims about the moment in-context learning
(ICL) appears in a softmax transformer, and tracks a fifth measure.  Each claim can be read
in many ways (:mod:`.factors`: view, layer, truncation rank, dip test, anchor); counting the
most favourable of many readings inflates a count.  So each claim gets **one primary
reading** (:data:`PRIMARY_READINGS`), fixed from the paper's wording and the linear theory of
book chapter 6 before the medium-scale runs were made, and its verdict is that reading's:

* a **setting** is a positional embedding, an initialisation scale and a depth; its runs are
  its seeds (never pooled across depths or settings);
* its **control** is the one-layer runs of the same positional embedding and initialisation
  (where ICL cannot emerge), tested against the *placebo* window of the two-layer run of the
  same seed (:func:`~.reproduction.placebo_partner`);
* the count gets its Wilson interval and verdict (:class:`icllib.verdicts.Count`), and the
  comparison with the control an exact one-sided test at the same reading
  (:func:`icllib.verdicts.control_test`); a claim is **specific** in a setting when it holds
  there and the test gives ``p <`` :data:`~icllib.verdicts.SPECIFIC_LEVEL`;
* an "event falls in the window" claim is also tested against the chance that a random
  event lands there (:func:`icllib.verdicts.base_rate_test`), run by run.

The other readings are the sensitivity analysis of the evidence page, where a statement over
the best of them is Holm-corrected (:func:`icllib.verdicts.holm`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ...validation import check_choice
from ...verdicts import (
    ControlledCount,
    Count,
    Reading,
    base_rate_test,
    control_test,
)
from ..curvature import autocorrelation_curvature
from ..runs import load_run
from .factors import WITH_TOLERANCE, outcome_at
from .reproduction import chapter_events, placebo_partner
from .runs import TRAIN_LOSS_BIN, InductionRunSummary, parse_run_name

__all__ = ["Reading", "PRIMARY_READINGS", "ACF_WINDOW", "ACF_LAGS", "acf_peak_event",
           "primary_events", "claim_holds", "PrimaryCount", "PrimaryResult", "primary_counts",
           "primary_results", "Sensitivity", "sensitivity"]


#: the primary reading of each claim, keyed by a short name; fixed before the medium runs
PRIMARY_READINGS = {
    "only deep": Reading(
        "ICL emerges only with two or more layers",
        "the run has an emergence window (its in-context loss falls below the success level "
        "and the fall is found by the window rule)",
        "the paper's wording; the window rule is the book's definition of emergence"),
    "dip": Reading(
        "the marginal effective rank of the QK circuit dips in the window where ICL emerges",
        "the induction head's QK circuit in the induction layer, marginal effective rank with "
        "the leading direction removed (k = 1): its minimum after the first 5 % of training "
        "lies in the window, with a fall into it and a rise out of it of more than 0.1",
        "'dips in the window' is a minimum in the window; the induction head is the circuit "
        "whose formation is ICL; in the linear model the rank is lowest while one learned "
        "direction dominates, which begins with the loss drop (chapter 6)"),
    "distance lead": Reading(
        "the subspace distance to the final weights falls before the loss drops",
        "the induction head's QK subspace distance to its final circuit (untruncated: the "
        "head has rank d_head < d_model) is half-way down more than 50 steps (two "
        "checkpoints) before the window starts",
        "'before the loss drops' is before the drop begins, the window's start; half-way "
        "down is the book's one measure of when a curve has fallen (chapter 6)"),
    "subspace first": Reading(
        "the subspace settles before the magnitude grows",
        "the induction head's QK subspace distance is half-way down more than 50 steps "
        "before its QK norm is half-way to its final value",
        "the linear model's pathway aligns while its product is still small (chapter 6, "
        "Wedin bound): the same half-way measure for both curves"),
    "acf peak": Reading(
        "the curvature of the loss autocorrelation marks the transition",
        "the 200-step stretch of training loss at which the curvature of its autocorrelation "
        "at zero lag peaks (the largest, least negative kappa: the flattest autocorrelation, "
        "where the loss moves smoothly above its batch noise) overlaps the window",
        "the paper tracks this measure at the transition; the estimator is the book's "
        "(evidence page), and the chance that a random stretch overlaps is the base rate",
        in_window=True),
}

#: the loss-autocorrelation estimator: windows of 20 stored losses (200 steps), lags 1..4
ACF_WINDOW, ACF_LAGS = 20, 4


#: which extreme of the curvature an autocorrelation event takes (:func:`acf_peak_event`)
ACF_EXTREMES = ("peak", "trough")


def acf_peak_event(run: InductionRunSummary, window, *,
                   extreme: str = "peak") -> tuple[bool, float]:
    """Does the stretch at which the loss autocorrelation's curvature peaks overlap ``window``?

    The zero-lag curvature ``kappa`` of a detrended autocorrelation is negative: near 0 where
    the residual loss varies smoothly (a flat autocorrelation), at the white-noise level
    ``-2 sum x^2 / sum x^4`` where it is step-to-step noise (:mod:`icllib.nonlinear.curvature`).
    Its *peak* is its largest (least negative) value, the flattest autocorrelation: the
    chapter's primary reading.  ``extreme="trough"`` takes the smallest (most negative) value
    instead, the most noise-like stretch (a sensitivity reading).

    Parameters
    ----------
    run : InductionRunSummary
    window : EmergenceWindow
        The run's own window, or a control's placebo window.
    extreme : {"peak", "trough"}

    Returns
    -------
    (hit, base_rate) : (bool, float)
        ``hit``: the stretch (:data:`ACF_WINDOW` stored losses) at the chosen extreme of the
        zero-lag curvature (:func:`icllib.nonlinear.curvature.autocorrelation_curvature`)
        overlaps the window; ``base_rate``: the share of all stretches that overlap it (the
        chance of a hit if the extreme fell on a random stretch).
    """
    extreme = check_choice("extreme", extreme, ACF_EXTREMES)
    centres, kappa = autocorrelation_curvature(run.train_loss_steps, run.train_loss,
                                               window=ACF_WINDOW, max_lag=ACF_LAGS)
    half = ACF_WINDOW * TRAIN_LOSS_BIN / 2
    overlaps = (centres + half >= window.start) & (centres - half <= window.end)
    i = int(np.argmax(kappa)) if extreme == "peak" else int(np.argmin(kappa))
    return bool(overlaps[i]), float(overlaps.mean())


def primary_events(directory) -> dict[str, dict[str, float]]:
    """:func:`~.reproduction.chapter_events` of a folder of runs, plus each run's
    ``acf_hit`` and ``acf_base_rate`` (:func:`acf_peak_event`; one-layer controls against
    their placebo window, NaN for a run without a window)."""
    events = chapter_events(directory)
    runs = {p.stem: load_run(p, InductionRunSummary)
            for p in sorted(Path(directory).glob("run_*.npz"))}
    for name, ev in events.items():
        ev["acf_hit"] = ev["acf_base_rate"] = float("nan")
        if name not in runs:
            continue
        partner = placebo_partner(name)
        window = runs[partner].window if partner is not None else runs[name].window
        if window.emerged:
            hit, rate = acf_peak_event(runs[name], window)
            ev["acf_hit"], ev["acf_base_rate"] = float(hit), rate
    return events


def claim_holds(claim: str, ev: dict) -> bool | None:
    """Does one run satisfy ``claim`` (a key of :data:`PRIMARY_READINGS`) at its primary
    reading?

    Parameters
    ----------
    claim : str
    ev : dict
        The run's events (:func:`primary_events`).

    Returns
    -------
    bool or None
        None when the claim cannot be read in the run (no window, own or placebo).
    """
    if claim == "only deep":
        return ev["emerged"] == 1.0
    if not np.isfinite(ev["window_start"]):
        return None
    half = ev["half head / induction layer / d_head"]
    if claim == "dip":
        return ev["dip head / induction layer / global"] == 1.0
    if claim == "distance lead":
        return outcome_at(half, ev["window_start"]) == "before"
    if claim == "subspace first":
        return bool(np.isfinite(half) and np.isfinite(ev["norm_half"])
                    and half < ev["norm_half"] - WITH_TOLERANCE)
    if claim == "acf peak":
        return ev["acf_hit"] == 1.0
    raise ValueError(f"claim must be one of {tuple(PRIMARY_READINGS)}, got {claim!r}")


@dataclass(frozen=True)
class PrimaryCount:
    """One row of the long table of :func:`primary_counts`: of the runs of one group
    (``positional``, ``init_std``, ``depth``; one-layer groups included) in which ``claim``
    (a key of :data:`PRIMARY_READINGS`) can be read, the ``count`` that satisfy it at its
    primary reading (no control, no test)."""

    claim: str
    positional: str
    init_std: float
    depth: int
    count: Count

    @property
    def setting(self) -> str:
        """``"learned, init 0.1, 2 layers"`` (``"1 layer"`` for depth 1)."""
        return (f"{self.positional}, init {self.init_std:g}, {self.depth} "
                f"layer{'s' * (self.depth > 1)}")


@dataclass(frozen=True)
class PrimaryResult(ControlledCount):
    """One claim in one setting at its primary reading, with its control.

    The fields of :class:`PrimaryCount`, and ``control`` (the setting's one-layer runs that
    satisfy the claim), ``p_control`` (:func:`icllib.verdicts.control_test` of ``count``
    against ``control``) and ``p_base_rate`` (for an in-window claim,
    :func:`icllib.verdicts.base_rate_test` of the setting's runs; None otherwise).
    """

    claim: str
    positional: str
    init_std: float
    depth: int
    count: Count
    control: Count
    p_control: float
    p_base_rate: float | None = None

    @property
    def setting(self) -> str:
        """``"learned, init 0.1, 2 layers"``."""
        return f"{self.positional}, init {self.init_std:g}, {self.depth} layers"


def _groups(events: dict) -> dict[tuple, list[str]]:
    groups: dict[tuple, list[str]] = {}
    for name in sorted(events):
        meta = parse_run_name(name)
        if meta["prefix"] == "run":
            key = (meta["positional"], meta["init_std"], meta["n_layers"])
            groups.setdefault(key, []).append(name)
    return groups


def _count(claim: str, events: dict, names: list[str]) -> tuple[Count | None, list[bool]]:
    seen = [v for v in (claim_holds(claim, events[n]) for n in names) if v is not None]
    return (Count(sum(seen), len(seen)) if seen else None), seen


def primary_counts(events: dict) -> list[PrimaryCount]:
    """Every claim at its primary reading in every group of runs where it can be read
    (one-layer groups included, without their controls): the counts a comparison between
    scales needs, where not every setting has a control.

    Returns
    -------
    list of PrimaryCount
        One row per claim (in the order of :data:`PRIMARY_READINGS`) and group (in the order
        of the run names); a group in which the claim cannot be read (no window, own or
        placebo) has no row.  :func:`~.claims.paired` matches the rows of two sets of runs.
    """
    out = []
    for claim in PRIMARY_READINGS:
        for (positional, std, depth), names in _groups(events).items():
            count, _ = _count(claim, events, names)
            if count is not None:
                out.append(PrimaryCount(claim, positional, std, depth, count))
    return out


def primary_results(events: dict) -> list[PrimaryResult]:
    """Every claim of :data:`PRIMARY_READINGS` in every setting of ``events``.

    Parameters
    ----------
    events : dict
        ``{run stem: events}`` from :func:`primary_events` (runs named as
        :func:`~.runs.run_file_name` names them; demo runs are ignored).

    Returns
    -------
    list of PrimaryResult
        Ordered by claim, then setting (positional, init) and depth; settings whose control
        has no runs are left out (no verdict without a control).

    Raises
    ------
    ValueError
        If a setting's control has fewer runs than the setting: the control must have at
        least the setting's ``n``.
    """
    groups = _groups(events)
    out = []
    for claim, reading in PRIMARY_READINGS.items():
        for (positional, std, depth), names in sorted(groups.items()):
            control_names = groups.get((positional, std, 1))
            if depth == 1 or not control_names:
                continue
            (count, seen), (control, _) = (_count(claim, events, names),
                                           _count(claim, events, control_names))
            if count is None or control is None:
                continue
            if control.n < count.n:
                raise ValueError(f"{claim}, {positional} init {std:g}: the control has "
                                 f"{control.n} runs, fewer than the setting's {count.n}")
            p_base = None
            if reading.in_window:
                readable = [n for n in names if claim_holds(claim, events[n]) is not None]
                p_base = base_rate_test(np.array(seen, dtype=bool),
                                        [events[n]["acf_base_rate"] for n in readable])
            out.append(PrimaryResult(claim, positional, std, depth, count, control,
                                     control_test(count, control), p_base))
    return out


@dataclass(frozen=True)
class Sensitivity:
    """The best of every reading of one claim in one setting, corrected for their number.

    ``claim`` is ``"dip"`` or ``"distance lead"``; ``n_readings`` how many readings were tried
    (:mod:`.factors`: views x layers x dip tests, or views x layers x ranks x anchors);
    ``best`` the one with the largest count (the first in the factors' order on ties), with
    its ``count`` in the setting and ``control`` at the same reading; ``p_half`` its
    one-sided binomial p-value against one half and ``p_control`` its
    :func:`icllib.verdicts.control_test`, each also Holm-adjusted over the readings
    (``p_half_holm``, ``p_control_holm``).
    """

    claim: str
    setting: str
    n_readings: int
    best: str
    count: Count
    control: Count
    p_half: float
    p_half_holm: float
    p_control: float
    p_control_holm: float


def _readings(claim: str) -> list[tuple[str, object]]:
    from .factors import ANCHORS, DIP_TESTS, DISTANCE_RANKS, LAYERS, VIEWS

    if claim == "dip":
        return [(f"{view} / {layer} / {test}",
                 lambda ev, k=f"dip {view} / {layer} / {test}": (
                     None if not np.isfinite(ev["window_start"]) else ev[k] == 1.0))
                for view in VIEWS for layer in LAYERS for test in DIP_TESTS]
    if claim == "distance lead":
        return [(f"{view} / {layer} / {rank} / before the window {anchor}",
                 lambda ev, k=f"half {view} / {layer} / {rank}", a=anchor: (
                     None if not np.isfinite(ev["window_start"])
                     else outcome_at(ev[k], ev[f"window_{a}"]) == "before"))
                for view in VIEWS for layer in LAYERS for rank in DISTANCE_RANKS
                for anchor in ANCHORS]
    raise ValueError(f"claim must be 'dip' or 'distance lead', got {claim!r}")


def sensitivity(events: dict, claim: str) -> list[Sensitivity]:
    """The best reading of ``claim`` in every setting with a control, Holm-corrected.

    Every reading of the claim is counted in the setting and in its control; the best
    reading's p-values against one half and against the control are adjusted by
    :func:`icllib.verdicts.holm` over all the readings (the family of the maximum).

    Parameters
    ----------
    events : dict
        As for :func:`primary_results`.
    claim : {"dip", "distance lead"}

    Returns
    -------
    list of Sensitivity
        One per (positional, init, depth) setting with a one-layer control.
    """
    from scipy.stats import binomtest

    from ...verdicts import holm

    readings = _readings(claim)
    groups = _groups(events)
    out = []
    for (positional, std, depth), names in sorted(groups.items()):
        control_names = groups.get((positional, std, 1))
        if depth == 1 or not control_names:
            continue
        counts, p_half, p_ctrl = [], [], []
        for _, test in readings:
            seen = [v for v in (test(events[n]) for n in names) if v is not None]
            seen_c = [v for v in (test(events[n]) for n in control_names) if v is not None]
            c, cc = Count(sum(seen), len(seen)), Count(sum(seen_c), len(seen_c))
            counts.append((c, cc))
            p_half.append(binomtest(c.k, c.n, 0.5, alternative="greater").pvalue)
            p_ctrl.append(control_test(c, cc))
        i = max(range(len(readings)), key=lambda j: (counts[j][0].k, -p_ctrl[j], -j))
        out.append(Sensitivity(claim, f"{positional}, init {std:g}, {depth} layers",
                               len(readings), readings[i][0], *counts[i], float(p_half[i]),
                               float(holm(p_half)[i]), float(p_ctrl[i]),
                               float(holm(p_ctrl)[i])))
    return out
