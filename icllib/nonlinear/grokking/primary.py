"""Chapter 7's verdicts at one stated reading per claim, each setting against its control.

The paper (Mainali & Teixeira 2025) watches one grokking run and makes two claims: the
training loss falls early, and the subspace distance of the OV circuit to its final value
falls late, together with the jump in test accuracy.  Chapter 7 adds one finding of its own,
that the OV subspaces turn fastest during the jump.  Each claim can be read in many ways
(:mod:`.factors`: truncation rank, one head or all heads, read or write side); counting the
most favourable reading inflates a count.  So each claim gets **one primary reading**
(:data:`PRIMARY_READINGS`), fixed from the paper's wording and from the reading chapter 6b
chose for the same metric (the circuit per head, untruncated: ``r = d_head``), before the
medium-scale runs were made; its verdict is that reading's:

* a **setting** is a weight decay; its runs are its seeds (never pooled across settings);
* its **control** is the random-label runs at the same weight decay (a network that cannot
  generalise), each read at the *placebo* window of the grokking run with the same seed;
* the count gets its Wilson interval and verdict (:class:`icllib.verdicts.Count`), and the
  comparison with the control an exact one-sided test at the same reading
  (:func:`icllib.verdicts.control_test`); a claim is **specific** when it holds and
  ``p <`` :data:`~icllib.verdicts.SPECIFIC_LEVEL`;
* an "event falls in the window" claim is also tested against the chance that an event at a
  random checkpoint lands there (:func:`icllib.verdicts.base_rate_test`), run by run.

The other readings (:func:`.factors.factor_table`) are the evidence page's sensitivity
analysis.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...metrics import first_crossing, half_way_time
from ...verdicts import (
    ControlledCount,
    Count,
    Reading,
    base_rate_test,
    control_test,
)
from .analysis import rotation_peak
from .factors import NO_SIGNAL, distance_key, rotation_key

__all__ = ["PRIMARY_READINGS", "distance_half", "primary_events", "claim_holds",
           "GrokkingResult", "primary_counts", "primary_results", "OV_VIEWS", "Sensitivity",
           "sensitivity"]

#: the primary reading of each claim; fixed before the medium runs
PRIMARY_READINGS = {
    "train loss early": Reading(
        "the training loss falls early, long before the test accuracy jumps",
        "the training loss is half-way from its first to its last value more than two "
        "evaluations before the test accuracy first reaches 50 %",
        "'early' is before the jump begins (t50); half-way is the book's one measure of when "
        "a curve has fallen (chapter 6)"),
    "OV with the jump": Reading(
        "the OV circuit's subspace distance to its final value falls together with the "
        "test-accuracy jump",
        "the OV circuit per head with all of its directions (r = d_head, its largest "
        "possible rank), its distance to the last "
        "checkpoint averaged over heads: half-way down at a checkpoint between t50 and t95, "
        "widened by one checkpoint interval on each side",
        "'together with the jump' is within the jump, t50 to t95; a half-time read off "
        "checkpoints is placed only to within one checkpoint interval; r = d_head is chapter "
        "6b's reading of the same metric (a head's circuit has rank at most d_head, so the "
        "truncation keeps all of it)",
        in_window=True),
    "rotation peak": Reading(
        "(the book's finding) the OV subspaces turn fastest during the jump",
        "the most prominent interior peak of the OV rotation (per head, r = d_head, averaged "
        "over heads) lies between t50 and t95, widened by the rotation lag plus one "
        "checkpoint interval on each side",
        "the rotation compares checkpoints a lag apart, so a peak is placed only to within "
        "the lag and one interval",
        in_window=True),
}

#: evaluations a "before" must lead by (two evaluation intervals)
EARLY_MARGIN_EVALS = 2


def _window_share(steps: np.ndarray, lo: float, hi: float) -> float:
    """Share of ``steps`` in ``[lo, hi]``: the chance a random one of them lands there."""
    return float(np.mean((steps >= lo) & (steps <= hi)))


def distance_half(summary, matrix: str, rank: str) -> float:
    """Half-time of one view's head-averaged distance to the last checkpoint (NaN when it
    does not fall by more than :data:`~.factors.NO_SIGNAL`)."""
    ck = np.asarray(summary["checkpoint_steps"], dtype=float)
    distance = np.asarray(summary[distance_key(matrix, rank, int(ck[-1]))]).mean(axis=1)
    return (half_way_time(ck, distance, min_change=NO_SIGNAL) if distance[0] > distance[-1]
            else float("nan"))


def primary_events(summary, window: tuple[float, float] | None = None) -> dict[str, float]:
    """The events of one run that the primary readings use.

    Parameters
    ----------
    summary : RunSummary or dict
        A chapter-7 run file (:func:`~icllib.nonlinear.grokking.runs.load_runs`).
    window : (t50, t95), optional
        The jump window to read the run at; default: the run's own first evaluations with
        test accuracy >= 50 % and >= 95 %.  A control is read at the window of the grokking
        run with the same seed (its *placebo* window).

    Returns
    -------
    dict
        ``t50``, ``t95`` (the window used; NaN when the run has none), ``train_half``
        (half-way time of the training loss), ``ov_half`` (half-time of the OV distance,
        NaN when it does not fall), ``rotation_peak`` (NaN without a bump), ``early_margin``
        (two evaluation intervals), ``with_tolerance`` (one checkpoint interval),
        ``rotation_tolerance`` (the rotation lag plus one interval) and the base rates
        ``ov_base_rate``, ``rotation_base_rate`` (the share of checkpoints after the first,
        or of interior checkpoints, that lie in the widened window).
    """
    ev_steps = np.asarray(summary["eval_steps"], dtype=float)
    ck = np.asarray(summary["checkpoint_steps"], dtype=float)
    if window is None:
        te = summary["test_acc"]
        window = (first_crossing(ev_steps, te, 0.5, interpolate=False),
                  first_crossing(ev_steps, te, 0.95, interpolate=False))
    t50, t95 = (float(x) for x in window)
    every = float(ck[1] - ck[0])
    lag = int(summary["meta"]["analysis"]["lag"])
    ov_half = distance_half(summary, "OV", "d_head")
    peak, _ = rotation_peak(ck, np.asarray(summary[rotation_key("OV", "d_head")]).mean(axis=1))
    with_tol, rot_tol = every, (lag + 1) * every
    out = {"t50": t50, "t95": t95,
           "train_half": half_way_time(ev_steps, summary["train_loss"]),
           "ov_half": ov_half, "rotation_peak": peak,
           "early_margin": EARLY_MARGIN_EVALS * float(ev_steps[1] - ev_steps[0]),
           "with_tolerance": with_tol, "rotation_tolerance": rot_tol,
           "ov_base_rate": float("nan"), "rotation_base_rate": float("nan")}
    if np.isfinite(t50) and np.isfinite(t95):
        out["ov_base_rate"] = _window_share(ck[1:], t50 - with_tol, t95 + with_tol)
        out["rotation_base_rate"] = _window_share(ck[1:-1], t50 - rot_tol, t95 + rot_tol)
    return out


def claim_holds(claim: str, ev: dict) -> bool | None:
    """Does one run satisfy ``claim`` (a key of :data:`PRIMARY_READINGS`)?

    Returns None when the run has no window to read it at.
    """
    if claim not in PRIMARY_READINGS:
        raise ValueError(f"claim must be one of {tuple(PRIMARY_READINGS)}, got {claim!r}")
    t50, t95 = ev["t50"], ev["t95"]
    if not (np.isfinite(t50) and np.isfinite(t95)):
        return None
    if claim == "train loss early":
        return bool(ev["train_half"] < t50 - ev["early_margin"])
    if claim == "OV with the jump":
        tol = ev["with_tolerance"]
        return bool(t50 - tol <= ev["ov_half"] <= t95 + tol)
    tol = ev["rotation_tolerance"]
    return bool(t50 - tol <= ev["rotation_peak"] <= t95 + tol)


@dataclass(frozen=True)
class GrokkingResult(ControlledCount):
    """One claim at one weight decay at its primary reading, with its control.

    Attributes
    ----------
    claim : str
        A key of :data:`PRIMARY_READINGS`.
    weight_decay : float
    count : Count
        Grokking runs of the setting that satisfy the claim.
    control : Count or None
        Random-label runs at the same weight decay, each at its placebo window; None when
        the setting has no control (then no test).
    p_control : float or None
        :func:`icllib.verdicts.control_test` of ``count`` against ``control``.
    p_base_rate : float or None
        For an in-window claim, :func:`icllib.verdicts.base_rate_test` of the setting's runs.
    """

    claim: str
    weight_decay: float
    count: Count
    control: Count | None
    p_control: float | None
    p_base_rate: float | None = None



def _count(claim: str, events: list[dict]) -> tuple[Count | None, list[dict]]:
    readable = [ev for ev in events if claim_holds(claim, ev) is not None]
    if not readable:
        return None, []
    return Count(sum(claim_holds(claim, ev) for ev in readable), len(readable)), readable


def primary_counts(runs: dict) -> dict[tuple[str, float], Count]:
    """``{(claim, weight decay): Count}`` at the primary readings, without controls (the
    counts a comparison between scales needs).  ``runs``: ``{(weight decay, seed): run}``."""
    out = {}
    for claim in PRIMARY_READINGS:
        for wd in sorted({wd for wd, _ in runs}):
            count, _ = _count(claim, [primary_events(s) for (w, _), s in sorted(runs.items())
                                      if w == wd])
            if count is not None:
                out[claim, wd] = count
    return out


def primary_results(runs: dict, controls: dict) -> list[GrokkingResult]:
    """Every claim at every weight decay of ``runs``, each against its own control.

    Parameters
    ----------
    runs : dict
        ``{(weight decay, seed): run}`` of grokking runs.
    controls : dict
        ``{(weight decay, seed): run}`` of random-label runs; a control is read at the
        window of the grokking run with the same weight decay and seed, and only controls
        with such a partner count.

    Returns
    -------
    list of GrokkingResult
        Ordered by claim, then weight decay.  A weight decay without controls gets its count
        and no test.

    Raises
    ------
    ValueError
        If a setting's control has fewer readable runs than the setting: the control must
        have at least the setting's ``n``.
    """
    out = []
    for claim, reading in PRIMARY_READINGS.items():
        for wd in sorted({wd for wd, _ in runs}):
            own = {seed: primary_events(s) for (w, seed), s in runs.items() if w == wd}
            count, readable = _count(claim, [own[s] for s in sorted(own)])
            if count is None:
                continue
            placebo = [primary_events(s, (own[seed]["t50"], own[seed]["t95"]))
                       for (w, seed), s in sorted(controls.items()) if w == wd and seed in own]
            control, _ = _count(claim, placebo)
            p_control = None
            if control is not None:
                if control.n < count.n:
                    raise ValueError(f"{claim}, weight decay {wd:g}: the control has "
                                     f"{control.n} readable runs, fewer than the setting's "
                                     f"{count.n}")
                p_control = control_test(count, control)
            p_base = None
            if reading.in_window:
                rate = "ov_base_rate" if claim == "OV with the jump" else "rotation_base_rate"
                p_base = base_rate_test([claim_holds(claim, ev) for ev in readable],
                                        [ev[rate] for ev in readable])
            out.append(GrokkingResult(claim, wd, count, control, p_control, p_base))
    return out


#: the views of the OV circuit that the sensitivity analysis reads (:mod:`.factors`)
OV_VIEWS = ("OV", "OV_sum", "OV_cat", "OV_write", "OV_sum_write", "OV_cat_write")


@dataclass(frozen=True)
class Sensitivity:
    """One reading of "the OV distance falls with the jump", with its family's correction.

    Attributes
    ----------
    reading : str
        ``"<view> / <rank>"``.
    count, control : Count
        Grokking runs / random-label controls (at their placebo windows) whose distance is
        half-way within the jump widened by one checkpoint interval.
    p_half, p_half_holm : float
        One-sided binomial p-value of ``count`` against a rate of one half, raw and
        Holm-adjusted over every reading of the family.
    p_control, p_control_holm : float
        :func:`icllib.verdicts.control_test`, raw and Holm-adjusted.
    """

    reading: str
    count: Count
    control: Count
    p_half: float
    p_half_holm: float
    p_control: float
    p_control_holm: float


def sensitivity(runs: dict, controls: dict, weight_decay: float) -> list[Sensitivity]:
    """Every reading (:data:`OV_VIEWS` x ranks) of "the OV distance is half-way with the
    jump" at one weight decay, each against the controls at the same reading, with p-values
    Holm-adjusted over all the readings (the family any "best reading" is chosen from).

    Parameters
    ----------
    runs, controls : dict
        As for :func:`primary_results`.
    weight_decay : float

    Returns
    -------
    list of Sensitivity
        In the order of :data:`OV_VIEWS`, then :data:`~.factors.RANKS`.
    """
    from scipy.stats import binomtest

    from ...verdicts import holm
    from .factors import RANKS

    own = {seed: s for (w, seed), s in runs.items() if w == weight_decay}
    if not own:
        raise ValueError(f"weight_decay: no runs at {weight_decay:g}")
    windows = {seed: primary_events(s) for seed, s in own.items()}
    placebo = {seed: s for (w, seed), s in controls.items() if w == weight_decay and seed in own}
    def hits(group, view, rank):
        out = []
        for seed, s in group.items():
            ev, half = windows[seed], distance_half(s, view, rank)
            tol = ev["with_tolerance"]
            out.append(bool(ev["t50"] - tol <= half <= ev["t95"] + tol))
        return Count(sum(out), len(out))

    rows, p_half, p_ctrl = [], [], []
    for view in OV_VIEWS:
        for rank in RANKS:
            c, cc = hits(own, view, rank), hits(placebo, view, rank)
            rows.append((f"{view} / {rank}", c, cc))
            p_half.append(binomtest(c.k, c.n, 0.5, alternative="greater").pvalue)
            p_ctrl.append(control_test(c, cc) if cc.n else 1.0)
    ph, pc = holm(p_half), holm(p_ctrl)
    return [Sensitivity(name, c, cc, float(p_half[i]), float(ph[i]), float(p_ctrl[i]),
                        float(pc[i])) for i, (name, c, cc) in enumerate(rows)]

