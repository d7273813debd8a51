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
