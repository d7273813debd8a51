"""Chapter 4 additions to icllib.theory.timescales: the plateau of any small start, the
discrete-step factor, and the running example's half-rise times."""

import numpy as np
import pytest

from icllib.examples import RUNNING_EXAMPLE
from icllib.flows import decoupled_flow, exact_mean_flow, exact_mean_velocity
from icllib.metrics import first_crossing
from icllib.theory import (
    discrete_step_factor,
    escape_time,
    exact_fixed_point,
    half_rise_time,
    plateau_length,
    s_inf,
    tau,
    unbalanced_a,
)

S, N, ETA = RUNNING_EXAMPLE.s, RUNNING_EXAMPLE.N, RUNNING_EXAMPLE.eta


def test_plateau_length_special_cases():
    # balanced: the escape time of eps = p0^2; q0 = 0: (tau/2) ln(4/(s_inf |C|))
    np.testing.assert_allclose(plateau_length(0.01, 0.01, S, N, ETA),
                               escape_time(1e-4, S, N, ETA), rtol=1e-13)
    C = 4e-4
    np.testing.assert_allclose(plateau_length(np.sqrt(C), 0.0, S, N, ETA),
                               tau(S, ETA) / 2 * np.log(4 / (s_inf(S, N) * C)), rtol=1e-13)
    # only (p0 + q0)^2 matters: swapping p and q, flipping both signs
    t1 = plateau_length(0.03, -0.01, S, N, ETA)
    np.testing.assert_allclose(plateau_length(-0.01, 0.03, S, N, ETA), t1, rtol=1e-14)
    np.testing.assert_allclose(plateau_length(-0.03, 0.01, S, N, ETA), t1, rtol=1e-14)
    np.testing.assert_allclose(plateau_length(0.01, 0.01, S, N, ETA), t1, rtol=1e-14)


@pytest.mark.parametrize("p0, q0", [(0.02, 0.0), (0.1, 0.001), (0.03, -0.01), (1e-3, 0.0)])
def test_plateau_length_is_the_half_rise_of_the_decoupled_flow(p0, q0):
    """Error model: the leading-order t* differs from the exact half-rise by terms of
    relative size s_inf (p0^2 + q0^2) (saturation and the C^2 terms), times tau and a
    logarithm at most; ODE tolerance 1e-9 relative."""
    t = np.linspace(0.0, 4000.0, 400001)
    p = np.full(S.size, p0)
    q = np.full(S.size, q0)
    sol = decoupled_flow(t, p, q, S, N, eta=ETA, rtol=1e-10, atol=1e-14)
    k = s_inf(S, N)
    t_half = first_crossing(t, sol.a, 0.5 / k)
    predicted = plateau_length(p0, q0, S, N, ETA)
    small = k * (p0**2 + q0**2)
    tol = tau(S, ETA) * small * (1.0 + np.log(4.0 / (k * (p0 + q0) ** 2))) + 0.02
    assert np.all(np.abs(t_half - predicted) <= tol), (t_half, predicted, tol)
    # and the closed form agrees with the ODE
    closed = unbalanced_a(t[::1000], p0 * q0, (p0 - q0) * (p0 + q0), S, N, ETA)
    np.testing.assert_allclose(closed, sol.a[::1000], rtol=1e-6, atol=1e-12)


def test_plateau_length_rejects_bad_starts():
    with pytest.raises(ValueError, match="p0 \\+ q0"):
        plateau_length(0.1, -0.1, S, N, ETA)
    with pytest.raises(ValueError, match="p0 \\+ q0"):
        plateau_length(1.0, 1.0, S, N, ETA)
    with pytest.raises(ValueError, match="p0"):
        plateau_length([0.1, 0.1], 0.0, S, N, ETA)


def test_discrete_step_factor_matches_gradient_descent_on_the_plateau():
    # the linear map p + q -> (1 + eta s^2)(p + q) against exp(eta s^2 t)
    s = np.array([4.0, 1.0, 0.25])
    for eta in (0.001, 0.01, 0.05):
        f = discrete_step_factor(s, eta)
        np.testing.assert_allclose(f, eta * s**2 / np.log1p(eta * s**2), rtol=1e-15)
        assert np.all(f > 1) and np.all(np.abs(f - 1 - eta * s**2 / 2) <= (eta * s**2) ** 2 / 8)
    with pytest.raises(ValueError, match="eta"):
        discrete_step_factor(s, 0.0)


def test_discrete_step_factor_predicts_mean_gradient_descent_escape():
    """Deterministic gradient descent on the exact mean loss (the B -> infinity limit of SGD)
    escapes later than the flow by the discrete-step factor, to first order in eta s^2 of the
    saturation phase: the residual is below eta s^2 of the time."""
    p = np.full(S.size, RUNNING_EXAMPLE.p0)
    q = p.copy()
    A = [p * q]
    for _ in range(4000):
        dp, dq = exact_mean_velocity(p, q, S, N, eta=ETA)
        p, q = p + dp, q + dq
        A.append(p * q)
    t = np.arange(4001.0)
    level = exact_fixed_point(S, N) / 2
    gd = first_crossing(t, np.array(A), level)
    flow = first_crossing(t, exact_mean_flow(t, np.sqrt(RUNNING_EXAMPLE.a0) * np.ones(4),
                                             np.sqrt(RUNNING_EXAMPLE.a0) * np.ones(4),
                                             S, N, eta=ETA).a, level)
    corrected = flow * discrete_step_factor(S, ETA)
    assert np.all(np.abs(gd / corrected - 1) <= ETA * S**2), (gd, corrected)


def test_running_example_numbers():
    """The numbers the book carries across chapters: the slowest mode's half-rise."""
    t = np.arange(0.0, 6001.0)
    p0 = np.full(S.size, RUNNING_EXAMPLE.p0)
    a = exact_mean_flow(t, p0, p0, S, N, eta=ETA).a
    exact = first_crossing(t, a, exact_fixed_point(S, N) / 2)
    paper = half_rise_time(RUNNING_EXAMPLE.a0, S, N, ETA)
    assert abs(exact[-1] - 3490) < 5 and abs(paper[-1] - 1790) < 1
