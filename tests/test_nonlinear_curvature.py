"""Tests of icllib.nonlinear.curvature on curves whose answer is known in closed form."""

import numpy as np
import pytest

from icllib.nonlinear.curvature import (
    autocorrelation_curvature,
    norm_curvature,
    window_autocorrelation,
)


def _fit_of_cos(omega, delta, K):
    """What the zero-lag parabola fit gives for an exact A(k) = cos(omega k delta)."""
    x = np.arange(1, K + 1) * delta
    return 2.0 * ((np.cos(omega * x) - 1.0) * x**2).sum() / (x**4).sum()


@pytest.mark.parametrize("omega", [0.02, 0.05])
def test_sinusoid_on_a_falling_trend_gives_minus_omega_squared(omega):
    # In a window of T = W delta the sample moments of a sinusoid differ from their averages by
    # ~ 1/(omega T) = 1/(2 pi periods) (edge of the window); with 100 periods that is 0.16 %,
    # a few times that in kappa: 2 % is a bound, not a fit.  The trend must be detrended away.
    delta, K = 2.0, 6
    W = int(np.ceil(100 * 2 * np.pi / omega / delta))
    t = np.arange(0, (W + 40) * delta, delta)          # 41 windows, each at another phase
    loss = 5.0 - 1e-4 * t + 0.3 * np.sin(omega * t + 0.4)
    _, kappa = autocorrelation_curvature(t, loss, window=W, max_lag=K)
    expected = _fit_of_cos(omega, delta, K)
    np.testing.assert_allclose(kappa, expected, rtol=0.02)
    # the fit's own Taylor error: |kappa + omega^2| <= omega^4 sum x^6 / (12 sum x^4)
    x = np.arange(1, K + 1) * delta
    assert abs(expected + omega**2) <= omega**4 * (x**6).sum() / (12 * (x**4).sum())
    # and it resolves a factor 2 in frequency (about a factor 4 in kappa)
    _, kappa_double = autocorrelation_curvature(t, 5.0 + 0.3 * np.sin(2 * omega * t),
                                                window=W, max_lag=K)
    np.testing.assert_allclose(kappa_double, _fit_of_cos(2 * omega, delta, K), rtol=0.02)
    assert np.all(kappa_double / kappa > 3.0)


def test_white_noise_decorrelates_at_the_first_lag():
    # A(k >= 1) = 0 up to a standard error 1/sqrt(W), so kappa = -2 sum x^2 / sum x^4.
    rng = np.random.default_rng(3)
    W, K = 4000, 5
    loss = 1.0 + 0.01 * rng.standard_normal(W)
    _, kappa = autocorrelation_curvature(np.arange(W), loss, window=W, max_lag=K)
    x = np.arange(1, K + 1.0)
    expected = -2 * (x**2).sum() / (x**4).sum()
    standard_error = 2 * np.sqrt((x**4).sum()) / (x**4).sum() / np.sqrt(W)
    assert abs(kappa[0] - expected) < 5 * standard_error


def test_autocorrelation_is_one_at_lag_zero_and_nan_for_a_straight_line():
    A = window_autocorrelation(np.sin(np.arange(100) * 0.3), window=20, max_lag=5)
    assert A.shape == (81, 6)
    np.testing.assert_allclose(A[:, 0], 1.0)
    assert np.all(np.isnan(window_autocorrelation(np.arange(50.0), window=10, max_lag=3)))


def test_norm_curvature_is_exact_for_polynomials_of_its_degree():
    t = np.arange(0, 500, 5.0)
    np.testing.assert_allclose(norm_curvature(t, 3.0 + 0.2 * t + 0.01 * t**2, window=11),
                               0.02, rtol=1e-9)
    cubic = 1e-5 * (t - 250) ** 3
    np.testing.assert_allclose(norm_curvature(t, cubic, window=11, polyorder=3),
                               6e-5 * (t - 250), atol=1e-10)
    # a degree-2 fit cannot follow a cubic near the edges: the test above would fail there
    assert not np.allclose(norm_curvature(t, cubic, window=11, polyorder=2), 6e-5 * (t - 250),
                           atol=1e-6)


def test_bad_arguments_name_themselves():
    t = np.arange(100.0)
    with pytest.raises(ValueError, match="uniformly spaced"):
        autocorrelation_curvature(t**2, t, window=10, max_lag=2)
    with pytest.raises(ValueError, match="max_lag"):
        autocorrelation_curvature(t, t, window=10, max_lag=9)
    with pytest.raises(ValueError, match="window must be odd"):
        norm_curvature(t, t, window=10)
    with pytest.raises(ValueError, match="window"):
        window_autocorrelation(t, window=3, max_lag=1)
