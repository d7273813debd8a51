"""Tests for icllib.metrics: known values and hypothesis property tests."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from icllib.metrics import (
    effective_rank,
    first_crossing,
    half_way_time,
    marginal_effective_rank,
    subspace_distance,
)

# per-test settings (no global profile: other test files keep theirs)
prop = settings(deadline=None, max_examples=60)

seeds = st.integers(0, 2**32 - 1)
dims = st.integers(1, 7)


def _orthogonal(n, rng):
    Q, R = np.linalg.qr(rng.standard_normal((n, n)))
    return Q * np.sign(np.diag(R))


def _with_singular_values(sv, m, n, rng):
    """An m x n matrix with the given singular values (len(sv) <= min(m, n))."""
    U, V = _orthogonal(m, rng), _orthogonal(n, rng)
    r = len(sv)
    return (U[:, :r] * np.asarray(sv, dtype=float)) @ V[:, :r].T


def _entropy_rank(sv):
    p = np.asarray(sv, dtype=float)
    p = p[p > 0] / p.sum()
    return float(np.exp(-np.sum(p * np.log(p))))


# ------------------------------------------------------------------------ effective rank

def test_effective_rank_known_values():
    assert effective_rank(np.diag([1.0, 1.0, 0.0])) == pytest.approx(2.0, rel=1e-14)
    assert effective_rank(np.eye(4)) == pytest.approx(4.0, rel=1e-14)
    assert effective_rank(np.ones((3, 5))) == pytest.approx(1.0, rel=1e-14)    # rank one
    H = -(0.75 * np.log(0.75) + 0.25 * np.log(0.25))
    assert effective_rank(np.diag([3.0, 1.0])) == pytest.approx(np.exp(H), rel=1e-14)
    assert effective_rank(np.diag([-3.0, 1.0])) == pytest.approx(np.exp(H), rel=1e-14)


@prop
@given(seeds, dims, dims, st.integers(1, 7), st.floats(1e-3, 1e3))
def test_effective_rank_of_r_equal_singular_values_is_r(seed, m, n, r, c):
    rng = np.random.default_rng(seed)
    r = min(r, m, n)
    M = _with_singular_values(np.full(r, c), m, n, rng)
    assert effective_rank(M) == pytest.approx(r, rel=1e-9)


@prop
@given(seeds, dims, dims, st.floats(-1e3, 1e3).filter(lambda c: abs(c) > 1e-3))
def test_effective_rank_invariances(seed, m, n, c):
    rng = np.random.default_rng(seed)
    M = rng.standard_normal((m, n)) * rng.uniform(0.1, 3, size=n)
    A, B = _orthogonal(m, rng), _orthogonal(n, rng)
    e = effective_rank(M)
    assert effective_rank(c * A @ M @ B) == pytest.approx(e, rel=1e-9)
    assert effective_rank(M.T) == pytest.approx(e, rel=1e-12)
    assert 1 - 1e-12 <= e <= min(m, n) + 1e-12
    assert e == pytest.approx(_entropy_rank(np.linalg.svd(M, compute_uv=False)), rel=1e-12)


def test_effective_rank_of_a_stack():
    rng = np.random.default_rng(0)
    Ms = rng.standard_normal((5, 3, 4))
    out = effective_rank(Ms)
    assert out.shape == (5,)
    np.testing.assert_allclose(out, [effective_rank(M) for M in Ms], rtol=1e-14)


def test_effective_rank_ignores_numerically_zero_singular_values():
    rng = np.random.default_rng(1)
    M = _with_singular_values([2.0, 2.0, 1e-18], 4, 4, rng)
    assert effective_rank(M) == pytest.approx(2.0, rel=1e-12)
    # an explicit cut-off treats small-but-real values as zero too
    M = _with_singular_values([2.0, 2.0, 1e-6], 4, 4, rng)
    assert effective_rank(M) > 2.0
    assert effective_rank(M, rtol=1e-4) == pytest.approx(2.0, rel=1e-12)


# --------------------------------------------------------------- marginal effective rank

def test_marginal_effective_rank_known_values():
    M = np.diag([4.0, 2.0, 1.0, 1.0])
    assert marginal_effective_rank(M, 0) == pytest.approx(effective_rank(M), rel=1e-15)
    assert marginal_effective_rank(M, 1) == pytest.approx(2**1.5, rel=1e-14)
    assert marginal_effective_rank(M, 2) == pytest.approx(2.0, rel=1e-14)
    assert marginal_effective_rank(M, 3) == pytest.approx(1.0, rel=1e-14)
    assert marginal_effective_rank(np.diag([5.0, 1.0, 1.0, 1.0]), 1) == pytest.approx(3.0)


@prop
@given(seeds, st.integers(2, 7), st.integers(1, 6))
def test_marginal_effective_rank_of_a_spike_plus_flat_spectrum(seed, n, k):
    """Removing k spikes from (spikes, r equal values) leaves exactly r."""
    rng = np.random.default_rng(seed)
    k = min(k, n - 1)
    sv = np.concatenate([np.sort(rng.uniform(5, 50, size=k))[::-1], np.ones(n - k)])
    M = _with_singular_values(sv, n, n, rng)
    assert marginal_effective_rank(M, k) == pytest.approx(n - k, rel=1e-9)
    assert marginal_effective_rank(M, k) >= 1.0


def test_marginal_effective_rank_validates_k_and_handles_stacks():
    M = np.diag([3.0, 1.0, 0.0])
    with pytest.raises(ValueError, match=r"\bk\b"):
        marginal_effective_rank(M, 2)               # numerical rank 2: nothing left
    with pytest.raises(ValueError, match=r"\bk\b"):
        marginal_effective_rank(M, -1)
    with pytest.raises(TypeError, match=r"\bk\b"):
        marginal_effective_rank(M, 1.0)
    stack = np.stack([np.diag([4.0, 2.0, 1.0, 1.0]), np.diag([5.0, 1.0, 1.0, 1.0])])
    np.testing.assert_allclose(marginal_effective_rank(stack, 1), [2**1.5, 3.0], rtol=1e-14)


# ------------------------------------------------------------------- subspace distance

@prop
@given(seeds, st.integers(2, 6), st.integers(2, 7), st.integers(1, 6))
def test_subspace_distance_zero_for_the_same_row_space(seed, m, n, r):
    rng = np.random.default_rng(seed)
    r = min(r, m, n - 1)                               # low rank: the test is not trivial
    M_final = rng.standard_normal((m, r)) @ rng.standard_normal((r, n))
    A = rng.standard_normal((m, m)) + 3 * np.eye(m)    # invertible
    assert subspace_distance(A @ M_final, M_final) < 1e-9
    assert subspace_distance(A @ M_final, M_final, rank=r) < 1e-9
    # one rank too few leaves part of M_final out: a unit vector u of its row space orthogonal
    # to the r - 1 kept directions has ||M_final u|| >= sigma_r(M_final), so the distance is at
    # least sigma_r / ||M_final||_F (up to round-off)
    if r > 1:
        sv = np.linalg.svd(M_final, compute_uv=False)
        bound = sv[r - 1] / np.linalg.norm(M_final)
        assert subspace_distance(A @ M_final, M_final, rank=r - 1) >= bound * (1 - 1e-9)


@prop
@given(seeds, st.integers(1, 5), st.integers(1, 3), st.integers(1, 3))
def test_subspace_distance_one_for_orthogonal_row_spaces(seed, m, r1, r2):
    rng = np.random.default_rng(seed)
    n = r1 + r2 + 1
    V = _orthogonal(n, rng)
    M_final = rng.standard_normal((m, r1)) @ V[:, :r1].T
    M_t = rng.standard_normal((m + 1, r2)) @ V[:, r1:r1 + r2].T
    assert subspace_distance(M_t, M_final) == pytest.approx(1.0, abs=1e-12)


@prop
@given(seeds, dims, dims, dims, st.one_of(st.none(), st.integers(1, 7)))
def test_subspace_distance_is_in_unit_interval_and_invariant(seed, m, m2, n, rank):
    rng = np.random.default_rng(seed)
    M_t = rng.standard_normal((m, n)) * rng.uniform(0, 2, size=n)
    M_final = rng.standard_normal((m2, n))
    if rank is not None:
        rank = min(rank, m, n)
    d = subspace_distance(M_t, M_final, rank)
    assert 0.0 <= d <= 1.0
    # depends on M_final only through its direction, and on M_t only through its
    # (truncated) row space: invariant under M_final -> c M_final and M_t -> c Q M_t
    Q = _orthogonal(m, rng)
    assert subspace_distance(-2.5 * Q @ M_t, 7.0 * M_final, rank) == pytest.approx(
        d, abs=1e-9)


@prop
@given(seeds, st.integers(2, 6), st.integers(2, 6))
def test_subspace_distance_untruncated_is_zero_for_full_column_rank(seed, extra, n):
    rng = np.random.default_rng(seed)
    M_t = rng.standard_normal((n + extra, n))           # full column rank (a.s.)
    M_final = rng.standard_normal((3, n))
    assert subspace_distance(M_t, M_final) < 1e-9
    assert subspace_distance(M_t, M_final, rank=1) > 0.0


def test_subspace_distance_known_values_and_truncation():
    e1 = np.array([[1.0, 0.0]])
    assert subspace_distance(np.diag([1.0, 2.0]), e1, rank=1) == pytest.approx(1.0)
    assert subspace_distance(np.diag([1.0, 2.0]), e1, rank=2) == pytest.approx(0.0)
    assert subspace_distance(np.diag([1.0, 2.0]), e1) == pytest.approx(0.0)
    assert subspace_distance(np.diag([2.0, 1.0]), e1, rank=1) == pytest.approx(0.0)
    for theta in np.linspace(0, np.pi, 7):
        M_t = np.array([[np.cos(theta), np.sin(theta)]])
        assert subspace_distance(M_t, e1) == pytest.approx(abs(np.sin(theta)), abs=1e-12)
    # M_final with two directions of unequal weight; M_t covers only the first
    M_final = np.diag([3.0, 4.0, 0.0])
    M_t = np.diag([1.0, 0.0, 0.0])
    assert subspace_distance(M_t, M_final) == pytest.approx(4 / 5, rel=1e-14)
    # a zero M_t spans nothing
    assert subspace_distance(np.zeros((2, 3)), M_final) == pytest.approx(1.0)
    # numerically-zero directions of M_t are not part of its row space
    assert subspace_distance(np.diag([1.0, 1e-20, 0.0]), M_final) == pytest.approx(0.8)


def test_subspace_distance_over_a_stack_of_matrices():
    rng = np.random.default_rng(2)
    M_final = rng.standard_normal((2, 5)) @ np.diag([1, 1, 1, 0, 0.0])
    stack = rng.standard_normal((6, 3, 5))
    out = subspace_distance(stack, M_final, rank=2)
    assert out.shape == (6,)
    np.testing.assert_allclose(out, [subspace_distance(M, M_final, rank=2) for M in stack],
                               rtol=1e-13)


# -------------------------------------------------------------------------- bad input

@pytest.mark.parametrize("call,name", [
    (lambda: effective_rank(np.zeros((3, 3))), "M"),
    (lambda: effective_rank(np.ones(3)), "M"),
    (lambda: effective_rank(np.array([[1.0, np.nan]])), "M"),
    (lambda: effective_rank(np.eye(2), rtol=-1.0), "rtol"),
    (lambda: marginal_effective_rank(np.zeros((2, 2)), 0), "M"),
    (lambda: subspace_distance(np.eye(3), np.eye(3), rank=0), "rank"),
    (lambda: subspace_distance(np.eye(3), np.eye(3), rank=4), "rank"),
    (lambda: subspace_distance(np.eye(3), np.ones((3, 2))), "M_final"),
    (lambda: subspace_distance(np.eye(3), np.zeros((3, 3))), "M_final"),
    (lambda: subspace_distance(np.ones((2, 2, 3, 3)), np.eye(3)), "M_t"),
    (lambda: subspace_distance(np.array([[np.inf, 0.0]]), np.ones((1, 2))), "M_t"),
])
def test_metrics_reject_bad_input(call, name):
    with pytest.raises(ValueError, match=rf"\b{name}\b"):
        call()


def test_a_rank_of_the_wrong_type_is_a_type_error():
    with pytest.raises(TypeError, match=r"\brank\b"):
        subspace_distance(np.eye(3), np.eye(3), rank=1.5)


def test_numerical_zero_follows_the_input_precision():
    # A rank-2 float32 matrix: its "zero" singular values sit at float32 round-off (~1e-7
    # relative), far above float64 epsilon; judged at float32 precision it has rank 2.
    rng = np.random.default_rng(3)
    A = (rng.standard_normal((16, 2)) @ rng.standard_normal((2, 16))).astype(np.float32)
    assert effective_rank(A) <= 2.0 + 1e-6
    assert marginal_effective_rank(A, 1) == pytest.approx(1.0)
    # Untruncated distance from a low-rank float32 M_t to a matrix outside its row space is > 0.
    B = rng.standard_normal((16, 16))
    assert subspace_distance(A, B) > 0.5
    # The same values in float64 keep the float32 round-off as extra singular values: M_t
    # counts as full rank and the untruncated distance collapses to 0 (the bug this guards).
    assert subspace_distance(A.astype(np.float64), B) < 1e-6


def test_first_crossing_interpolates_and_reports_never_and_start():
    from icllib.metrics import first_crossing

    t = np.array([0.0, 1.0, 2.0, 3.0])
    y = np.array([[0.0, 5.0, 0.0], [1.0, 4.0, 0.0], [3.0, 3.0, 0.1], [4.0, 2.0, 0.2]])
    up = first_crossing(t, y, [2.0, 1.0, 1.0])
    assert up[0] == pytest.approx(1.5)          # between 1 (y=1) and 2 (y=3)
    assert up[1] == 0.0                          # already above at the start
    assert np.isnan(up[2])                       # never reached
    assert first_crossing(t, y[:, 1], 2.5, below=True) == pytest.approx(2.5)
    # A logistic sampled finely crosses half its limit at its known half-rise time.
    tt = np.linspace(0, 10, 2001)
    assert first_crossing(tt, 1 / (1 + np.exp(-(tt - 3.7))), 0.5) == pytest.approx(3.7, abs=1e-5)
    with pytest.raises(ValueError, match="t must be"):
        first_crossing([0.0, 0.0], [1.0, 2.0], 1.5)
    with pytest.raises(ValueError, match="y must"):
        first_crossing(t, np.zeros(3), 1.0)


def test_half_way_time_known_answers():
    steps = np.arange(0, 1000, 100)
    d = np.linspace(0.9, 0.1, steps.size)               # half-way value 0.5 at step 450
    assert half_way_time(steps, d) == 500.0                  # first checkpoint at or below it
    assert np.isnan(half_way_time(steps, np.full(steps.size, 1e-9), min_change=1e-4))
    assert half_way_time(steps, d[::-1]) == 500.0     # rising curves too
    with pytest.raises(ValueError, match="y must have shape"):
        half_way_time(steps, d[:-1])
    # an early overshoot beyond the end value does not count as half-way
    overshoot = np.array([1.0, -0.8, -0.6, 0.6, 0.4, 0.2, 0.1, 0.05, 0.02, 0.0])
    assert half_way_time(steps, overshoot) == 400.0
    with pytest.raises(ValueError, match="min_change"):
        half_way_time(steps, d, min_change=-1.0)


def test_first_crossing_without_interpolation_returns_a_sample_time():
    t = np.array([0.0, 10, 20, 30])
    y = np.array([0.0, 0.4, 0.8, 1.0])
    assert first_crossing(t, y, 0.5) == pytest.approx(12.5)
    assert first_crossing(t, y, 0.5, interpolate=False) == 20
    assert first_crossing(t, 1 - y, 0.5, below=True, interpolate=False) == 20
    assert math.isnan(first_crossing(t, y, 2.0, interpolate=False))


# ======================================================================================
# Found by mutation testing (issue 25, section 4): tests that kill the mutants
# of icllib.metrics that survived the tests above. Each states a property of the
# definitions in the module docstring of :mod:`icllib.metrics` (book chapter 6, 'Three
# metrics'), at the boundaries where the survivors differed from the code.


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
