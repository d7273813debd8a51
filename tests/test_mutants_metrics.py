"""Tests that kill the mutants of icllib.metrics that survived tests/test_metrics.py.

Found by ``bench/mutation_pass.py`` (issue 25, section 4); each test states a property of the
definitions in the module docstring of :mod:`icllib.metrics` (book chapter 6, 'Three
metrics'), at the boundaries where the survivors differed from the code.
"""

import numpy as np
import pytest

from icllib.metrics import (
    effective_rank,
    first_crossing,
    half_way_time,
    marginal_effective_rank,
    subspace_distance,
)


def test_a_singular_value_exactly_at_the_cut_off_counts_as_zero():
    """``sigma_i`` is numerically zero when ``sigma_i <= rtol * sigma_1`` (``<=``, not ``<``)."""
    M = np.diag([2.0, 1.0])                        # singular values exactly 2 and 1
    assert effective_rank(M, rtol=0.5) == 1.0      # 1 <= 0.5 * 2: cut
    p = np.array([2.0, 1.0]) / 3.0
    assert effective_rank(M, rtol=0.49) == pytest.approx(np.exp(-np.sum(p * np.log(p))))


def test_rtol_must_lie_below_one():
    """``rtol`` is a number in ``[0, 1)``: at 1 even ``sigma_1`` would count as zero."""
    M = np.diag([2.0, 1.0])
    with pytest.raises(ValueError, match=r"rtol must be a finite number in \[0, 1\)"):
        effective_rank(M, rtol=1.0)
    assert effective_rank(M, rtol=0.0) > 1.0


def test_first_crossing_counts_a_sample_exactly_at_the_level():
    """'first time ``y >= level``' (or ``<=`` with ``below``): reaching the level counts."""
    t = np.array([0.0, 10.0, 20.0, 30.0])
    acc = np.array([0.2, 0.6, 1.0, 1.0])           # an accuracy that reaches exactly 1
    assert first_crossing(t, acc, 1.0, interpolate=False) == 20.0
    assert first_crossing(t, acc, 0.2, interpolate=False) == 0.0      # already at the start
    loss = np.array([1.0, 0.5, 0.25, 0.25])
    assert first_crossing(t, loss, 0.5, below=True, interpolate=False) == 10.0
    assert first_crossing(t, loss, 1.0, below=True) == 0.0


def test_half_way_time_halves_the_first_gap():
    """The first ``t_i`` with ``|y_i - y_T| <= |y_0 - y_T| / 2``: a distance to the last
    checkpoint halving at every step is half-way after exactly one step."""
    t = np.array([0.0, 100.0, 200.0, 300.0, 400.0, 500.0])
    dist = np.array([16.0, 8.0, 4.0, 2.0, 1.0, 0.0])
    assert half_way_time(t, dist) == 100.0
    assert half_way_time(t, 5.0 - dist) == 100.0  # a rising curve: the same gaps
    assert half_way_time(t, dist + 3.0) == 100.0  # only the gap to the last value counts


def test_half_way_time_of_two_samples():
    """``T >= 2`` samples suffice: with two, the end is reached at the second."""
    assert half_way_time([0.0, 1.0], [1.0, 0.0]) == 1.0
    with pytest.raises(ValueError, match="at least 2 samples"):
        half_way_time([0.0], [1.0])


def test_integer_and_list_input_are_judged_at_float64_precision():
    """Input that is not a floating array (a list, an integer matrix) is computed in float64."""
    assert effective_rank(np.eye(3, dtype=np.int64)) == pytest.approx(3.0, rel=1e-14)
    assert effective_rank([[1, 0], [0, 1]]) == pytest.approx(2.0, rel=1e-14)
    assert marginal_effective_rank(np.diag([3, 1, 1]), 1) == pytest.approx(2.0, rel=1e-14)


@pytest.mark.parametrize("shape", [(3, 0), (0, 3), (2, 3, 0), (2, 0, 3)])
def test_matrices_need_at_least_one_row_and_one_column(shape):
    with pytest.raises(ValueError, match=r"^M must have shape \(\.\.\., m, n\) with m, n >= 1"):
        effective_rank(np.zeros(shape))


def test_a_stack_judges_each_matrix_as_if_alone():
    """The cut-off is ``max(m, n) * eps`` of each matrix, however many a stack holds."""
    M = np.diag([1.0, 1e-14])                  # 1e-14 > 2 eps: a non-zero singular value
    assert marginal_effective_rank(M, 1) == 1.0
    stack = np.repeat(M[None], 200, axis=0)
    np.testing.assert_array_equal(marginal_effective_rank(stack, 1), np.ones(200))
    rng = np.random.default_rng(5)
    A, B = rng.standard_normal((3, 3)), rng.standard_normal((2, 3))
    one = subspace_distance(A, B, rank=2)
    assert subspace_distance(A[None], B, rank=2) == pytest.approx(np.array([one]), abs=1e-15)


def test_half_way_time_is_nan_without_a_change_above_min_change():
    """``nan`` when ``|y_T - y_0| <= min_change``: a flat curve has no half-way time."""
    t = np.array([0.0, 1.0, 2.0])
    assert np.isnan(half_way_time(t, [2.0, 2.0, 2.0]))
    assert np.isnan(half_way_time(t, [2.0, 1.5, 1.5], min_change=0.5))   # change exactly 0.5
    assert half_way_time(t, [2.0, 1.5, 1.5], min_change=0.25) == 1.0
