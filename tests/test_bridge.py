"""Tests for icllib.bridge (book chapter 6, 'A linear bridge') on known answers."""

from __future__ import annotations

import numpy as np
import pytest

from icllib.bridge import (
    dip_bracket,
    half_rise_times,
    settle_time,
    spectrum_effective_rank,
    top_subspace_sine,
    wedin_bound,
)
from icllib.metrics import effective_rank, marginal_effective_rank


def logistic(t, a0, a_star, t_half, width):
    """A logistic rise from about a0 to a_star, half-way at t_half."""
    return a0 + (a_star - a0) / (1 + np.exp(-(t - t_half) / width))


def test_spectrum_effective_rank_matches_the_matrix_metric():
    rng = np.random.default_rng(0)
    a = rng.uniform(0.01, 2.0, size=(6, 5)) * rng.choice([-1, 1], size=(6, 5))
    for k in range(4):
        expected = (effective_rank(a[:, :, None] * np.eye(5)) if k == 0 else
                    marginal_effective_rank(a[:, :, None] * np.eye(5), k))
        np.testing.assert_allclose(spectrum_effective_rank(a, k), expected, rtol=1e-12)
    np.testing.assert_allclose(spectrum_effective_rank(np.ones(4), 1), 3.0)
    np.testing.assert_allclose(spectrum_effective_rank([1.0, 0.0, 0.0]), 1.0)
    with pytest.raises(ValueError, match="k"):
        spectrum_effective_rank(np.ones(3), 3)
    with pytest.raises(ValueError, match="non-zero"):
        spectrum_effective_rank([1.0, 0.0], 1)


def test_half_rise_times_of_logistics():
    t = np.linspace(0, 1000, 4001)
    a = np.stack([logistic(t, 1e-4, 1.0, th, 10.0) for th in (100, 300, 600)], axis=1)
    np.testing.assert_allclose(half_rise_times(t, a), [100, 300, 600], atol=0.05)
    assert np.isnan(half_rise_times(t, np.ones((t.size, 1)))[0])


def test_the_marginal_rank_dips_between_the_next_two_rises():
    """Sequential logistic modes: EffRank_k is smallest between the (k+1)-th and (k+2)-th
    half-rises; modes rising together give no dip (the value stays at d - k)."""
    t = np.linspace(0, 3000, 6001)
    halves = (200, 700, 1400, 2300)
    a = np.stack([logistic(t, 1e-4, 1.0, th, 15.0) for th in halves], axis=1)
    for k in (0, 1, 2):
        lo, hi = dip_bracket(t, a, k)
        np.testing.assert_allclose((lo, hi), halves[k:k + 2], atol=0.5)
        t_min = t[np.argmin(spectrum_effective_rank(a, k))]
        assert lo < t_min < hi, (k, t_min)
        # a wrong bracket (one mode earlier) misses it
        if k >= 1:
            assert not halves[k - 1] < t_min < halves[k]
    together = np.stack([logistic(t, 1e-4, 1.0, 700, 15.0)] * 4, axis=1)
    np.testing.assert_allclose(spectrum_effective_rank(together, 1), 3.0)


def test_wedin_bound_holds_for_random_perturbations():
    rng = np.random.default_rng(1)
    d, r = 6, 2
    worst = 0.0
    for _ in range(300):
        D = np.diag(np.sort(rng.uniform(0, 1, d))[::-1])
        E = rng.normal(size=(d, d))
        E *= rng.uniform(0.001, 0.3) / np.linalg.norm(E, 2)
        gap = D[r - 1, r - 1] - D[r, r]
        sine = top_subspace_sine(D + E, np.eye(d)[:, :r], r)
        bound = wedin_bound(gap, np.linalg.norm(E, 2))
        assert sine <= bound + 1e-12, (sine, bound)
        worst = max(worst, sine / bound if bound < 1 else 0)
    assert worst > 0.2                                  # the bound is not vacuous
    assert wedin_bound(0.5, 0.5) == 1.0 and wedin_bound(3.0, 1.0) == 0.5
    with pytest.raises(ValueError, match="noise"):
        wedin_bound(1.0, -1.0)


def test_top_subspace_sine_known_angle():
    th = 0.3
    M = np.outer([1.0, 0.0], [np.cos(th), np.sin(th)])
    np.testing.assert_allclose(top_subspace_sine(M, np.array([[1.0], [0.0]]), 1), np.sin(th))


def test_settle_time_on_a_known_rise():
    """D = diag(s * a(t)) with a logistic leading mode: the top-1 subspace is fixed once the
    gap is 3 ||E|| (sine <= 1/2), long before the magnitude's half-rise; measured sines obey
    the bound from then on."""
    t = np.linspace(0, 2000, 2001)
    vals = np.stack([logistic(t, 1e-3, 1.0, 1000, 50.0), np.full(t.size, 1e-3)], axis=1)
    noise = 0.01
    ts = settle_time(t, vals, 1, noise)
    # gap = noise (1 + 1/0.5) = 0.03 => logistic value 0.031
    expected = 1000 + 50 * np.log((0.031 - 1e-3) / (1.0 - 0.031))
    assert abs(ts - expected) <= 1.0, (ts, expected)
    assert ts < 1000 - 150                               # well before the half-rise
    rng = np.random.default_rng(2)
    E = rng.normal(size=(2, 2))
    E *= noise / np.linalg.norm(E, 2)
    after = t >= ts
    M = vals[after][:, :, None] * np.eye(2) + E
    assert np.all(top_subspace_sine(M, np.eye(2)[:, :1], 1) <= 0.5 + 1e-12)
    # the order must be the final one: a mode overtaken later never settles early
    swap = vals[:, ::-1].copy()
    swap[:, 0] = 0.5
    assert settle_time(t, swap, 1, noise) > 1000
    assert np.isnan(settle_time(t, np.ones((t.size, 2)), 1, noise))
