"""icllib.compare: a check that X is followed must also reject Y."""

import numpy as np
import pytest

from icllib.compare import check_follows, theory_distance, theory_verdict


def test_distance_is_largest_standardised_gap():
    d = theory_distance("t", [1.0, 2.0, 3.0], [0.1, 0.5, 1.0], [1.0, 1.0, 1.0])
    assert d.z == pytest.approx(2.0) and d.worst in (1, 2)


def test_follows_exact_rejects_paper():
    observed = np.array([1.00, 2.02])
    good, bad = check_follows(observed, 0.01, ("exact", [1.0, 2.0]), ("paper", [1.1, 2.2]))
    assert good.z == pytest.approx(2.0) and bad.z == pytest.approx(18.0)


def test_fails_when_theory_is_off():
    with pytest.raises(AssertionError, match="uncertainties from exact"):
        check_follows([1.5], 0.01, ("exact", [1.0]), ("paper", [1.5]))


def test_fails_when_theories_cannot_be_told_apart():
    with pytest.raises(AssertionError, match="cannot tell exact from paper"):
        check_follows([1.0], 0.1, ("exact", [1.0]), ("paper", [1.01]))


def test_bad_uncertainty_named():
    with pytest.raises(ValueError, match="uncertainty must be > 0"):
        theory_verdict([1.0], 0.0, {"a": [1.0]})


def test_one_far_point_does_not_reject_a_theory():
    """The theories differ at one point of three: the observation rejects 'paper' there only,
    which is not a rejection of the curve (it was, when any single point sufficed)."""
    observed = [1.0, 2.0, 3.0]
    follows, rejects = ("exact", [1.0, 2.0, 3.0]), ("paper", [1.0, 2.0, 3.5])
    with pytest.raises(AssertionError, match="only 1 of 3 points"):
        check_follows(observed, 0.01, follows, rejects)
    # the claim made about the point that separates them holds
    check_follows(observed[2:], 0.01, ("exact", follows[1][2:]), ("paper", rejects[1][2:]))
    # and a caller that states its count explicitly gets exactly that count checked
    check_follows(observed, 0.01, follows, rejects, min_rejected=1)
    with pytest.raises(ValueError, match="min_rejected must be an integer"):
        check_follows(observed, 0.01, follows, rejects, min_rejected=4)


def test_majority_rejection_passes():
    good, bad = check_follows([1.0, 2.0, 3.0], 0.01, ("exact", [1.0, 2.0, 3.0]),
                              ("paper", [1.0, 2.5, 3.5]))
    assert (bad.beyond, bad.points) == (2, 3)
