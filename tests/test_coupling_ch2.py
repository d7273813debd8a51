"""icllib.coupling: the exact mean flow's brakes and the frozen growth rate (book chapter 2)."""

import numpy as np
import pytest

from icllib.coupling import coupling_decay, frozen_growth_rate, paper_decay
from icllib.flows import exact_mean_flow, exact_mean_velocity, paper_velocity
from icllib.theory import exact_fixed_point_pq


def _brakes_from_velocity(velocity, p, q, s, N, eta):
    """D and E read off a velocity: tau dp/dt = q - p (c s q^2 + D), likewise for q."""
    dp, dq = velocity(p, q, s, N, eta=eta)
    tau = 1.0 / (eta * s ** 2)
    c = (N + 1) / N
    return (q - tau * dp) / p - c * s * q * q, (p - tau * dq) / q - c * s * p * p


@pytest.mark.parametrize("seed", range(5))
def test_brakes_are_the_velocity_decomposition(seed):
    rng = np.random.default_rng(seed)
    d = int(rng.integers(1, 7))
    s = rng.uniform(0.1, 4.0, d)
    N = int(rng.integers(1, 50))
    p, q = rng.uniform(0.2, 1.5, (2, 3, d)) * rng.choice([-1, 1], (2, 3, d))
    for velocity, brakes in ((exact_mean_velocity, coupling_decay), (paper_velocity, paper_decay)):
        D, E = brakes(p, q, s, N)
        D_v, E_v = _brakes_from_velocity(velocity, p, q, s, N, 0.03)
        np.testing.assert_allclose(D, D_v, rtol=1e-9, atol=1e-10)
        np.testing.assert_allclose(E, E_v, rtol=1e-9, atol=1e-10)


def test_brakes_agree_when_the_flows_do():
    # isotropic S and a mode-uniform point: the two brakes are equal
    s, p, q = np.full(4, 1.5), np.full(4, 0.4), np.full(4, 0.7)
    for exact, paper in zip(coupling_decay(p, q, s, 10), paper_decay(p, q, s, 10)):
        np.testing.assert_allclose(exact, paper, rtol=1e-12)


def test_frozen_growth_rate_predicts_the_flow():
    # a tiny mode 4 beside modes 1-3 at their (three-mode) optimum grows at the frozen rate
    s, N, eta = np.array([4.0, 2.0, 1.0, 0.5]), 10, 0.01
    p3, q3 = exact_fixed_point_pq(s[:3], N)
    p0, q0 = np.r_[p3, 1e-8], np.r_[q3, 0.0]         # unbalanced: tests the eigenvector too
    t = np.linspace(0, 3000, 301)
    flow = exact_mean_flow(t, p0, q0, s, N, eta=eta)
    lam = frozen_growth_rate(p0, q0, s, N, eta)
    # after the other eigen-direction has died out, d ln a_4 / dt = 2 lambda_4
    slope = np.log(flow.a[-1, 3] / flow.a[-101, 3]) / (t[-1] - t[-101])
    assert abs(slope / (2 * lam[3]) - 1) < 1e-3, (slope, lam)
    assert lam[3] < 0.6 * eta * s[3] ** 2               # the brake roughly halves it


def test_frozen_growth_rate_free_mode():
    s = np.array([2.0, 0.5])
    lam = frozen_growth_rate(np.zeros(2), np.zeros(2), s, 5, 0.02)
    np.testing.assert_allclose(lam, 0.02 * s ** 2)


def test_inputs_are_validated():
    with pytest.raises(ValueError, match="N"):
        coupling_decay([1.0], [1.0], [1.0], 0)
    with pytest.raises(ValueError, match="eta"):
        frozen_growth_rate([1.0], [1.0], [1.0], 3, -1.0)
    with pytest.raises(ValueError, match="p"):
        paper_decay([1.0, 2.0], [1.0], [1.0], 3)
