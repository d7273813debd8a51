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
"""

from __future__ import annotations

from dataclasses import dataclass

from .validation import check_int, check_real

__all__ = ["CONFIDENCE", "VERDICTS", "wilson_interval", "verdict", "Count"]

#: confidence level of every interval in the book's verdict tables
CONFIDENCE = 0.95
#: the three verdicts of :func:`verdict`
VERDICTS = ("holds", "mixed", "fails")


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
