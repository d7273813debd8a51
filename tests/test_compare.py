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
