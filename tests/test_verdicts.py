"""Tests for icllib.verdicts: counts with Wilson intervals and the one verdict rule."""

from __future__ import annotations

import math

import numpy as np
import pytest

from icllib.verdicts import Count, verdict, wilson_interval


def _wilson_by_hand(k, n, z=1.959963984540054):
    """The Wilson score interval from its formula (Wilson 1927)."""
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return centre - half, centre + half


@pytest.mark.parametrize("k, n", [(0, 6), (3, 3), (0, 3), (5, 5), (3, 5), (7, 8), (1, 11),
                                  (11, 11), (4, 11)])
def test_interval_is_wilsons_formula(k, n):
    low, high = wilson_interval(k, n)
    ref = _wilson_by_hand(k, n)
    assert low == pytest.approx(max(ref[0], 0.0), abs=1e-12)
    assert high == pytest.approx(min(ref[1], 1.0), abs=1e-12)
    assert low <= k / n <= high


def test_the_counts_the_issue_names_get_the_stated_verdicts():
    # 0 of 6 is compatible with a rate near 0.39, 3 of 3 with one near 0.44: not enough
    assert wilson_interval(0, 6)[1] == pytest.approx(0.390, abs=1e-3)
    assert verdict(0, 6) == "fails" and verdict(3, 3) == "mixed" and verdict(0, 3) == "mixed"
    assert verdict(3, 5) == "mixed" and verdict(5, 5) == "holds" and verdict(7, 8) == "holds"
    assert verdict(1, 11) == "fails" and verdict(11, 11) == "holds"


def test_verdict_is_monotone_in_the_count():
    order = {"fails": 0, "mixed": 1, "holds": 2}
    for n in range(1, 30):
        ranks = [order[verdict(k, n)] for k in range(n + 1)]
        assert ranks == sorted(ranks), n
        # symmetric: k of n holds exactly when n - k of n fails
        assert all((verdict(k, n) == "holds") == (verdict(n - k, n) == "fails")
                   for k in range(n + 1))


def test_count_prints_its_interval_and_rejects_bad_input():
    assert str(Count(3, 5)) == "3/5 [0.23, 0.88]"
    assert Count(6, 6).verdict == "holds"
    with pytest.raises(ValueError, match="k must be"):
        Count(6, 5)
    with pytest.raises(ValueError, match="n must be"):
        wilson_interval(0, 0)
    with pytest.raises(ValueError, match="confidence"):
        wilson_interval(1, 2, confidence=1.0)
    assert np.isclose(wilson_interval(2, 4, confidence=0.5)[0], _wilson_by_hand(
        2, 4, z=0.6744897501960817)[0])


def test_plain_shows_the_formatted_number_without_quotes():
    """{eval} shows an object's text/plain repr: a str would show quotes, plain() must not."""
    from icllib.tables import plain

    x = plain(3.14159, ".2f")
    assert repr(x) == str(x) == f"{x}" == "3.14" and float(x) == 3.14159
    assert repr(plain(7, "d")) == "7" and int(plain(7.9, ".0f")) == 7
    assert repr(plain("learned, init 0.1", "")) == "learned, init 0.1"
    assert repr("learned") == "'learned'"            # what a plain str would have shown


# --- control_test, base_rate_test, holm -----------------------------------------------------

def test_control_test_is_one_sided_and_exact():
    from scipy.stats import boschloo_exact

    from icllib.verdicts import control_test

    # 5/5 against 0/5: the smallest p Boschloo's test can give for 5 vs 5 runs (1/2^10)
    assert control_test(Count(5, 5), Count(0, 5)) == pytest.approx(2.0**-10)
    # one-sided: a control that does better is no evidence for the setting
    assert control_test(Count(0, 5), Count(5, 5)) > 0.5
    # the same table as scipy's, setting in the first column
    want = boschloo_exact([[4, 1], [1, 4]], alternative="greater").pvalue
    assert control_test(Count(4, 5), Count(1, 5)) == pytest.approx(want)
    # equal rates carry no evidence, also when the table has an empty row (scipy gives NaN)
    assert control_test(Count(5, 5), Count(5, 5)) == 1.0
    assert control_test(Count(0, 5), Count(0, 5)) == 1.0
    with pytest.raises(TypeError, match="Count"):
        control_test((5, 5), Count(0, 5))


def test_base_rate_test_is_the_poisson_binomial_tail():
    from scipy.stats import binom

    from icllib.verdicts import base_rate_test

    # equal rates: the binomial tail
    assert base_rate_test(np.array([True] * 3 + [False] * 5), [0.2] * 8) == pytest.approx(
        binom.sf(2, 8, 0.2))
    # unequal rates, by enumeration of all 2^4 outcomes
    rates = np.array([0.1, 0.5, 0.3, 0.9])
    outcomes = np.array(np.meshgrid(*[[0, 1]] * 4, indexing="ij")).reshape(4, -1).T
    probs = np.prod(np.where(outcomes, rates, 1 - rates), axis=1)
    for k in range(5):
        hits = np.arange(4) < k
        assert base_rate_test(hits, rates) == pytest.approx(probs[outcomes.sum(1) >= k].sum())
    # against one half the same count would look far weaker: the base rate matters
    hits = np.array([True] * 4 + [False] * 7)
    assert base_rate_test(hits, [0.125] * 11) < 0.1 < base_rate_test(hits, [0.5] * 11)
    with pytest.raises(ValueError, match="base_rates must lie in"):
        base_rate_test(np.array([True]), [1.5])
    with pytest.raises(ValueError, match="boolean"):
        base_rate_test([1, 0], [0.5, 0.5])


def test_holm_adjusts_step_down_and_keeps_order():
    from icllib.verdicts import holm

    # Holm (1979)'s rule by hand: sorted 0.01, 0.03, 0.04 -> 3*0.01, 2*0.03, max(0.06, 0.04)
    assert holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])
    # the best of 12 readings at p = 0.03 is not significant once corrected
    p = np.full(12, 0.5)
    p[3] = 0.03
    assert holm(p)[3] == pytest.approx(0.36)
    # capped at 1, monotone in the sorted order
    adj = holm([0.9, 0.2, 0.5])
    assert adj.max() <= 1 and adj[1] <= adj[2] <= adj[0]
    with pytest.raises(ValueError, match="pvalues must lie in"):
        holm([0.1, 1.2])
