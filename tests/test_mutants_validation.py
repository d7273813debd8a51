"""Tests that kill the mutants of icllib.validation that survived tests/test_validation.py.

Found by ``bench/mutation_pass.py`` (issue 25, section 4).  Every public function of the
library validates its arguments through these helpers, so each test states one rule of the
module docstring of :mod:`icllib.validation` at its boundary: the value returned, the bound
itself (inclusive or exclusive) and the message that names the argument.
"""

import numpy as np
import pytest

from icllib.validation import (
    check_array,
    check_instance,
    check_int,
    check_modes,
    check_orthogonal,
    check_positive_array,
    check_real,
    check_time_grid,
    check_times,
)


def test_real_bounds_are_inclusive_unless_exclusive():
    assert check_real("x", 1.0, 0, 1) == 1.0                     # maximum itself allowed
    assert check_real("x", 0.0, 0, 1) == 0.0                     # minimum itself allowed
    assert check_real("x", -5.0, maximum=1) == -5.0
    with pytest.raises(ValueError, match=r"^x must be a finite number <= 1, got 1\.5$"):
        check_real("x", 1.5, maximum=1)
    with pytest.raises(ValueError, match=r"^x must be a finite number < 1, got 1\.0$"):
        check_real("x", 1.0, maximum=1, exclusive_maximum=True)


def test_instance_message_names_the_type():
    assert check_instance("cfg", "abc", str) == "abc"
    with pytest.raises(TypeError, match=r"^cfg must be a str, got int$"):
        check_instance("cfg", 3, str)
    with pytest.raises(TypeError, match=r"^cfg must be a DataConfig, got int$"):
        check_instance("cfg", 3, str, what="a DataConfig")


def test_positive_array_rejects_zero_and_returns_the_array():
    out = check_positive_array("s", [[1, 2], [3, 4]])
    assert out.dtype == np.float64 and out.shape == (2, 2)
    np.testing.assert_array_equal(out, [[1.0, 2.0], [3.0, 4.0]])
    for bad in ([1.0, 0.0], [1.0, -1.0], [1.0, np.inf], [1.0, np.nan], []):
        with pytest.raises(ValueError, match="^s must hold positive finite numbers"):
            check_positive_array("s", bad)


def test_modes_axis_is_the_last_axis():
    out = check_modes("p", np.ones((5, 3)), 3)                   # leading axes free
    assert out.shape == (5, 3) and out.dtype == np.float64
    assert check_modes("p", [1.0, 2.0], 2).shape == (2,)        # one state, no leading axis
    assert check_modes("p", np.ones((2, 7, 3)), 3).shape == (2, 7, 3)
    for bad in (np.ones((3, 5)), np.ones((3, 3, 5)), np.ones(4), 1.0):
        with pytest.raises(ValueError, match="^p must have the mode axis last with length d=3"):
            check_modes("p", bad, 3)


def test_times_are_non_negative():
    np.testing.assert_array_equal(check_times("t", [0.0, 2.5]), [0.0, 2.5])
    with pytest.raises(ValueError, match=r"^t must be >= 0"):
        check_times("t", [-1e-9, 1.0])


def test_time_grid_rules():
    np.testing.assert_array_equal(check_time_grid("t", [0.0]), [0.0])          # one time
    np.testing.assert_array_equal(check_time_grid("t", [0.0, 0.5, 0.5]), [0.0, 0.5, 0.5])
    np.testing.assert_array_equal(check_time_grid("t", [0.0, 0.25, 0.5], strict=True),
                                  [0.0, 0.25, 0.5])                             # small steps
    assert check_time_grid("t", [0.0, 1.0], start=0).shape == (2,)             # start itself
    assert check_time_grid("t", [2.0, 3.0], start=0)[0] == 2.0
    with pytest.raises(ValueError, match="^t must be non-decreasing$"):
        check_time_grid("t", [0.0, -0.5])
    for bad in ([], [[0.0, 1.0]], np.zeros((2, 2))):
        with pytest.raises(ValueError, match="^t must be a non-empty 1-D"):
            check_time_grid("t", bad)


def test_orthogonal_matrices_are_accepted_and_returned():
    c, s = np.cos(0.3), np.sin(0.3)
    R = np.array([[c, -s], [s, c]])
    np.testing.assert_array_equal(check_orthogonal("U", R, 2), R)
    np.testing.assert_array_equal(check_orthogonal("U", np.eye(3), 3), np.eye(3))
    # off by much more than the tolerance (1e-8): rejected
    with pytest.raises(ValueError, match="^U must be orthogonal"):
        check_orthogonal("U", R * (1 + 1e-6), 2)
    with pytest.raises(ValueError, match=r"^U must be an orthogonal 2 x 2 matrix, got shape"):
        check_orthogonal("U", np.eye(3), 2)


def test_integer_bounds_are_inclusive():
    """``minimum <= value <= maximum``: ``N = 1`` is a valid context length."""
    assert check_int("N", 1, 1) == 1
    assert check_int("k", np.int64(0), 0) == 0
    assert check_int("x", 5, 1, 5) == 5
    with pytest.raises(ValueError, match=r"^N must be an integer >= 1, got 0$"):
        check_int("N", 0, 1)
    with pytest.raises(ValueError, match=r"^x must be an integer in 1\.\.5, got 6$"):
        check_int("x", 6, 1, 5)


def test_array_shape_needs_the_same_number_of_axes():
    with pytest.raises(ValueError, match=r"^x must have shape \(2,\), got \(2, 2\)$"):
        check_array("x", np.zeros((2, 2)), (2,))
    with pytest.raises(ValueError, match=r"^x must have shape \(4, \*\), got \(4,\)$"):
        check_array("x", np.zeros(4), (4, None))
    assert check_array("x", np.zeros((4, 1)), (4, None)).shape == (4, 1)
