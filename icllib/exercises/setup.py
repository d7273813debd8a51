"""Checkers for the exercises of chapter 1 (book/01-setup.md)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..validation import check_int, check_spectrum
from .core import CheckResult, check_function, format_vector

__all__ = ["check_prediction_at_convergence", "check_all_modes_active_from",
           "check_floor_excess_spectrum", "large_N_floor_excess"]


def _sample_prediction_inputs(rng):
    """Random prompts' statistics with a random rotated covariance (any d, N, batch)."""
    from ..data import DataConfig, random_rotation, sample_prompts

    d = int(rng.integers(1, 6))
    N = int(rng.integers(1, 40))
    B = int(rng.integers(1, 5))
    s = rng.uniform(0.2, 3.0, size=d)
    cfg = DataConfig(s=s, N=N, U=random_rotation(d, rng))
    batch = sample_prompts(cfg, B, rng)
    return {"W": batch.W, "Sigma_hat": batch.Sigma_hat, "xq": batch.xq,
            "Sigma_x": cfg.Sigma_x, "N": N}


def check_prediction_at_convergence(candidate: Callable, *, trials: int = 20,
                                    seed: int = 0) -> CheckResult:
    """Check ``candidate(W, Sigma_hat, xq, Sigma_x, N)`` against the preconditioned estimator.

    Reference: :func:`icllib.theory.prediction_at_convergence`,
    ``y_hat = W Sigma_hat [((N+1)/N) Sigma_x + (Tr Sigma_x / N) I]^{-1} x_q`` (book
    chapter 3, 'What the converged model computes'), on batches of ``1..4`` prompts with ``d``
    in ``1..5``, ``N`` in ``1..39`` and a
    random rotated ``Sigma_x``.  Tolerance ``rtol = 1e-7``.
    """
    from ..theory import prediction_at_convergence

    return check_function(candidate, prediction_at_convergence, _sample_prediction_inputs,
                          trials=trials, seed=seed, rtol=1e-7, atol=1e-10,
                          name="prediction_at_convergence")


def _all_modes_active_from(s):
    """Smallest ``N >= 1`` at which every mode of the exact minimiser is active (by search)."""
    from ..theory import exact_fixed_point

    N = 1
    while not np.all(exact_fixed_point(s, N) > 0):
        N += 1
    return N


def _sample_spread_spectrum(rng):
    """A spectrum of ``d`` in ``1..6`` modes, log-uniform over one to three decades.

    Spreads this wide switch modes off up to ``N`` of several hundred; the sampler redraws
    spectra whose threshold lies within ``1e-6`` of an integer (those are drawn exactly, by
    :func:`_sample_tied_spectrum`, where rounding cannot blur them).
    """
    while True:
        d = int(rng.integers(1, 7))
        decades = rng.uniform(1.0, 3.0)
        s = 10.0 ** rng.uniform(-decades, 0.0, size=d)
        x = np.sqrt(s).sum() / np.sqrt(s.min()) - d - 1
        if abs(x - np.round(x)) > 1e-6:
            return {"s": s}


def _sample_tied_spectrum(rng):
    """A spectrum whose threshold ``R / sqrt(s_min) - d - 1`` is an integer ``>= 1``, exactly.

    ``s = 4^j m^2`` with integers ``m >= 1``, one of them 1 (the smallest): every square root
    and the ratio are exact in floating point.  At ``N`` equal to the threshold the smallest
    mode's bracket is exactly 0 (switched off: a mode is kept iff its bracket is *positive*),
    so ``N_min`` is the threshold plus one, where ``ceil`` of it is one short.
    """
    while True:
        d = int(rng.integers(2, 7))
        m = np.concatenate([[1], rng.integers(1, 7, size=d - 1)])
        if m.sum() - d - 1 >= 1:
            s = 4.0 ** int(rng.integers(-3, 3)) * rng.permutation(m).astype(float) ** 2
            return {"s": s}


def check_all_modes_active_from(candidate: Callable, *, trials: int = 30,
                                seed: int = 0) -> CheckResult:
    """Check ``candidate(s) -> N_min``, the shortest context at which no mode is switched off.

    Reference: the smallest ``N >= 1`` for which every product of
    :func:`icllib.theory.exact_fixed_point` is positive (book chapter 1, exercise 'When is
    every mode learned?'; the exact minimiser of book chapter 3), found by search.  Trials
    draw random spectra with ``d`` in ``1..6`` spread over one to three decades, and every
    third trial (the second, fifth, ...) a spectrum whose threshold is exactly an integer
    (:func:`_sample_tied_spectrum`: there the bracket is 0 and the mode is off, which an
    off-by-one ``ceil`` gets wrong).  The answer is a count: it must be an integer (an
    ``int``, a NumPy integer or an integral float such as ``3.0``) equal to the reference;
    ``3.3`` fails.  A failure names the spectrum.
    """
    trials = check_int("trials", trials, 1)
    seed = check_int("seed", seed, 0)
    if not callable(candidate):
        raise TypeError(f"candidate must be a function, got {type(candidate).__name__}")
    name = "all_modes_active_from"
    rng = np.random.default_rng(seed)

    def verdict(passed, n, text):
        msg = ("PASSED " if passed else "FAILED ") + f"{name}: " + text
        print(msg)
        return CheckResult(passed, name, n, 0.0 if passed else float("nan"), msg)

    for trial in range(1, trials + 1):
        tied = trial % 3 == 2
        s = (_sample_tied_spectrum if tied else _sample_spread_spectrum)(rng)["s"]
        expected = _all_modes_active_from(s)
        asked = f"s = {format_vector(s)} (trial {trial})"
        try:
            got = candidate(s.copy())
        except NotImplementedError:
            return verdict(False, trial, "not implemented yet (it raised NotImplementedError).")
        except Exception as exc:  # the reader's bug, reported rather than raised
            return verdict(False, trial, f"raised {type(exc).__name__}: {exc} for {asked}.")
        value = np.asarray(got) if isinstance(got, (np.ndarray, np.generic)) else got
        if isinstance(value, np.ndarray) and value.shape == ():
            value = value.item()
        if isinstance(value, bool) or not isinstance(value, (int, float)) \
                or not np.isfinite(value) or value != int(value):
            return verdict(False, trial, f"returned {got!r} for {asked}: N_min is a context "
                           f"length, an integer (expected {expected}).")
        if int(value) != expected:
            why = (" The threshold is exactly an integer here: at N equal to it the smallest "
                   "mode's bracket is 0, so it is switched off (kept only when positive)."
                   if tied and int(value) == expected - 1 else "")
            return verdict(False, trial, f"returned {int(value)} for {asked}, expected "
                           f"{expected}.{why}")
    return verdict(True, trials, f"right on all {trials} spectra.")


def large_N_floor_excess(s) -> float:
    """Large-``N`` limit of ``L_inf / l* - 1``: ``(d Tr S - R^2) / (Tr S + R^2)``,
    ``R = sum sqrt s``.

    The ratio of the limits ``N L_inf -> (d + 1) Tr S / 2`` and ``N l* -> (Tr S + R^2) / 2``
    (book chapter 1, proposition 'The exact floor and its gap to the paper's'), minus one.
    """
    from ..theory import floor_gap_limit

    s = check_spectrum("s", s)
    return float(floor_gap_limit(s) / ((s.sum() + np.sqrt(s).sum() ** 2) / 2))


def check_floor_excess_spectrum(candidate: Callable, *, trials: int = 30,
                                seed: int = 0) -> CheckResult:
    """Check ``candidate(d, excess)``: a spectrum whose large-``N`` floor excess beats ``excess``.

    The candidate returns ``d`` positive variances whose :func:`large_N_floor_excess` is
    larger than ``excess``, or ``None`` when no spectrum with ``d`` positive variances has one
    (book chapter 1, exercise 'How wrong can the paper's floor be?').  The supremum over
    spectra is ``(d - 1) / 2``, approached by one variance far above the others and never
    attained; trials draw ``d`` in ``2..8`` and ask, three times in four, for an excess
    between a half and ``1 - 1e-3`` of the supremum (possible), otherwise for the supremum
    itself or more (impossible: the answer is ``None``).
    """
    trials = check_int("trials", trials, 1)
    seed = check_int("seed", seed, 0)
    name = "floor_excess_spectrum"
    rng = np.random.default_rng(seed)

    def verdict(passed, n, text):
        msg = ("PASSED " if passed else "FAILED ") + f"{name}: " + text
        print(msg)
        return CheckResult(passed, name, n, 0.0 if passed else float("nan"), msg)

    for trial in range(1, trials + 1):
        d = int(rng.integers(2, 9))
        sup = (d - 1) / 2
        possible = rng.random() < 0.75
        excess = sup * (rng.uniform(0.5, 1 - 1e-3) if possible else rng.choice([1.0, 1.2]))
        asked = f"d = {d}, excess = {excess:.6g} (trial {trial})"
        try:
            got = candidate(d, excess)
        except NotImplementedError:
            return verdict(False, trial, "not implemented yet (it raised NotImplementedError).")
        except Exception as exc:  # the reader's bug, reported rather than raised
            return verdict(False, trial, f"raised {type(exc).__name__}: {exc} for {asked}.")
        if not possible:
            if got is not None:
                return verdict(False, trial, f"returned a spectrum for {asked}, but no "
                               f"spectrum with {d} positive variances reaches that excess.")
            continue
        if got is None:
            return verdict(False, trial, f"returned None for {asked}, but some spectrum "
                           "reaches that excess.")
        try:
            s = np.asarray(got, dtype=float)
        except (TypeError, ValueError):
            return verdict(False, trial, f"returned {type(got).__name__}, not a spectrum, "
                           f"for {asked}.")
        if s.shape != (d,) or not np.all(np.isfinite(s)) or not np.all(s > 0):
            return verdict(False, trial, f"returned {np.round(s, 6)} for {asked}: a spectrum "
                           f"is {d} finite, positive variances.")
        reached = large_N_floor_excess(s)
        if not reached > excess:
            return verdict(False, trial, f"the spectrum {s} for {asked} has a large-N excess "
                           f"of only {reached:.6g}.")
    return verdict(True, trials, f"all {trials} trials right.")
