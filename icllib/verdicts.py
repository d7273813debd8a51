r"""Counts of runs with their uncertainty, and the one rule that names a verdict.

Chapters 6 and 7 test claims run by run ("the metric dips in the emergence window", "the
distance halves before the accuracy jump") and report how many of ``n`` runs satisfy them.
With a handful of seeds a count is weak evidence: 0 of 6 is compatible with a true rate of
0.39, 3 of 3 with one of 0.44.  So every count is given with a 95 % Wilson score interval
(:func:`wilson_interval`, scipy's ``binomtest(...).proportion_ci(method="wilson")``), and a
verdict is named by one rule applied the same way in both chapters (:func:`verdict`):

* **holds** when the whole interval lies above one half: with 95 % confidence, most runs of
  the setting satisfy the claim;
* **fails** when the whole interval lies below one half: most runs do not;
* **mixed** otherwise, including every count too small to tell (e.g. 3 of 3, 0 of 3).

The rule speaks about a *setting* (its seeds are the sample); a claim that holds in one
setting and fails in another depends on the factor that separates them.

A verdict alone does not say that a claim is about the phenomenon: a control (runs in which
the phenomenon cannot happen) may satisfy the claim as often.  Three tests make that
comparison and the other guards of the book's verdict tables:

* :func:`control_test`: Boschloo's exact test that the setting's rate exceeds its control's,
  at the same reading (a claim is *specific* when ``p < 0.05`` and it holds);
* :func:`base_rate_test`: an "event falls in the window" count against the chance that a
  random event lands there, run by run (exact, Poisson-binomial), not against one half;
* :func:`holm`: Holm's step-down adjustment of the p-values of several readings of one claim,
  for any statement about the best of them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .validation import check_array, check_int, check_real

__all__ = ["CONFIDENCE", "VERDICTS", "SPECIFIC_LEVEL", "wilson_interval", "verdict", "Count",
           "Reading", "ControlledCount", "control_test", "base_rate_test", "holm"]

#: confidence level of every interval in the book's verdict tables
CONFIDENCE = 0.95
#: the three verdicts of :func:`verdict`
VERDICTS = ("holds", "mixed", "fails")
#: a claim is specific to its setting when :func:`control_test` gives a p-value below this
SPECIFIC_LEVEL = 0.05


@dataclass(frozen=True)
class Reading:
    """One claim of the paper at its primary reading (chapters 6b and 7).

    Attributes
    ----------
    claim : str
        The claim in the paper's words (as we read them).
    reading : str
        What is measured and what counts as the claim holding in one run.
    why : str
        Why this reading: the paper's wording and the book's theory.
    in_window : bool
        Whether the claim is an "event falls in the window" claim with a base rate.
    """

    claim: str
    reading: str
    why: str
    in_window: bool = False


class ControlledCount:
    """The verdict of a claim's count beside its control (chapters 6b and 7).

    A subclass has the fields ``count`` (:class:`Count`) and ``p_control``
    (:func:`control_test` against the control at the same reading; None without a control).
    """

    @property
    def verdict(self) -> str:
        """The count's verdict (:func:`verdict`)."""
        return self.count.verdict

    @property
    def specific(self) -> bool:
        """Holds and separates from its control (``p_control <`` :data:`SPECIFIC_LEVEL`);
        False without a control."""
        return (self.verdict == "holds" and self.p_control is not None
                and self.p_control < SPECIFIC_LEVEL)


def _check_count(k, n):
    n = check_int("n", n, 1)
    k = check_int("k", k, 0, n)
    return k, n


def wilson_interval(k: int, n: int, confidence: float = CONFIDENCE) -> tuple[float, float]:
    """Wilson score interval for a rate from ``k`` successes in ``n`` trials.

    Parameters
    ----------
    k : int, 0 <= k <= n
    n : int, n >= 1
    confidence : float in (0, 1)

    Returns
    -------
    (low, high) : floats in [0, 1]
    """
    from scipy.stats import binomtest

    k, n = _check_count(k, n)
    confidence = check_real("confidence", confidence, 0.0, 1.0, exclusive_minimum=True,
                            exclusive_maximum=True)
    ci = binomtest(k, n).proportion_ci(confidence_level=confidence, method="wilson")
    return float(ci.low), float(ci.high)


def verdict(k: int, n: int, confidence: float = CONFIDENCE) -> str:
    """``"holds"``, ``"fails"`` or ``"mixed"`` for ``k`` of ``n`` runs (module docstring)."""
    low, high = wilson_interval(k, n, confidence)
    if low > 0.5:
        return "holds"
    if high < 0.5:
        return "fails"
    return "mixed"


@dataclass(frozen=True)
class Count:
    """``k`` of ``n`` runs satisfy a claim: its interval and verdict, and how to print it."""

    k: int
    n: int

    def __post_init__(self):
        _check_count(self.k, self.n)

    @property
    def interval(self) -> tuple[float, float]:
        """95 % Wilson interval of the rate (:func:`wilson_interval`)."""
        return wilson_interval(self.k, self.n)

    @property
    def verdict(self) -> str:
        """:func:`verdict` of the count."""
        return verdict(self.k, self.n)

    def __str__(self) -> str:
        low, high = self.interval
        return f"{self.k}/{self.n} [{low:.2f}, {high:.2f}]"


def control_test(setting: Count, control: Count) -> float:
    """One-sided exact p-value that the setting's rate exceeds its control's.

    Boschloo's exact test (``scipy.stats.boschloo_exact``, uniformly more powerful than
    Fisher's) of the 2x2 table (satisfied, not satisfied) x (setting, control), with the
    alternative that the setting's rate is the larger.  Both counts must be taken at the same
    reading of the claim.

    Parameters
    ----------
    setting, control : Count

    Returns
    -------
    float
        The p-value in (0, 1]; 1.0 when the table carries no evidence either way (every run
        of both groups satisfies the claim, or none does).

    Examples
    --------
    >>> round(control_test(Count(5, 5), Count(0, 5)), 6)
    0.000977
    """
    from scipy.stats import boschloo_exact

    if not (isinstance(setting, Count) and isinstance(control, Count)):
        raise TypeError(f"setting and control must be Count, got {type(setting).__name__} "
                        f"and {type(control).__name__}")
    if setting.k + control.k in (0, setting.n + control.n):
        return 1.0
    table = [[setting.k, control.k], [setting.n - setting.k, control.n - control.k]]
    return float(boschloo_exact(table, alternative="greater").pvalue)


def base_rate_test(hits, base_rates) -> float:
    """One-sided exact p-value of ``sum(hits)`` events in their windows, given base rates.

    Run ``i`` has its event in the window (``hits[i]``) with chance ``base_rates[i]`` under
    the null (a random event); the number of hits is then Poisson-binomial, and the p-value
    is the chance of at least as many hits as seen.

    Parameters
    ----------
    hits : array_like of bool, shape (n,)
    base_rates : array_like of float in [0, 1], shape (n,)

    Returns
    -------
    float
        ``P(K >= sum(hits))`` under the null.

    Examples
    --------
    Ten of eleven runs with a base rate of 1/8 each:

    >>> f"{base_rate_test([True] * 10 + [False], [0.125] * 11):.1e}"
    '9.1e-09'
    """
    hits = np.asarray(hits)
    rates = check_array("base_rates", base_rates, shape=(None,))
    if hits.ndim != 1 or hits.shape != rates.shape or hits.dtype != bool:
        raise ValueError(f"hits must be a 1-D boolean array of the shape of base_rates "
                         f"{rates.shape}, got dtype {hits.dtype} and shape {hits.shape}")
    if rates.size and (rates.min() < 0 or rates.max() > 1):
        raise ValueError(f"base_rates must lie in [0, 1], got {rates.min()} to {rates.max()}")
    pmf = np.array([1.0])
    for p in rates:    # the distribution of the number of hits, one run at a time
        pmf = np.convolve(pmf, [1.0 - p, p])
    return float(min(1.0, pmf[int(hits.sum()):].sum()))


def holm(pvalues) -> np.ndarray:
    """Holm's (1979) step-down adjusted p-values of several tests of one claim.

    The family-wise error rate of calling every test with adjusted ``p < alpha`` significant
    is at most ``alpha``, whatever the dependence between the tests; a statement about the
    best of ``m`` readings is made with its adjusted p-value.

    Parameters
    ----------
    pvalues : array_like of float in [0, 1], shape (m,)

    Returns
    -------
    ndarray, shape (m,)
        ``max_{j <= i} min(1, (m - j) p_(j))`` in the sorted order, returned in the input
        order.

    Examples
    --------
    >>> holm([0.01, 0.04, 0.03]).round(3).tolist()
    [0.03, 0.06, 0.06]
    """
    p = check_array("pvalues", pvalues, shape=(None,))
    if p.size and (p.min() < 0 or p.max() > 1):
        raise ValueError(f"pvalues must lie in [0, 1], got {p.min()} to {p.max()}")
    order = np.argsort(p, kind="stable")
    scaled = (p.size - np.arange(p.size)) * p[order]
    adjusted = np.empty_like(p)
    adjusted[order] = np.minimum(1.0, np.maximum.accumulate(scaled))
    return adjusted
