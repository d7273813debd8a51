"""Tests that kill the mutants of icllib.theory that survived its other tests.

Found by ``bench/mutation_pass.py`` (issue 25, section 4).  Each test states a property of the
book's formulas (closed forms, exact values, limits, the conservation law, the domain of each
formula) at the place where a surviving mutant differed from the code; none compares with a
stored output.
"""

import numpy as np
import pytest

from icllib import theory as th

S4 = np.array([4.0, 2.0, 1.0, 0.5])


# ------------------------------------------------------------ fixed points (book chapter 3)

@pytest.mark.parametrize("N", [1, 5])
def test_exact_fixed_point_pq_lies_on_its_manifold_for_any_C(N):
    """``sum p^2 - q^2 = C`` and ``p q = a*`` to rounding for every ``C`` of a fine grid and for
    starts far from balanced (the root bracket must widen both ways), and the minima's curve
    ``p_a^2 = c s_a q_a^2`` with one ``c``; the default is the balanced manifold ``C = 0``."""
    a = th.exact_fixed_point(S4, N)
    active = a > 0
    for C in np.concatenate([np.linspace(-20.0, 20.0, 161), [-300.0, 300.0]]):
        p, q = th.exact_fixed_point_pq(S4, N, C)
        assert np.sum(p * p - q * q) == pytest.approx(C, rel=1e-11, abs=1e-11)
        np.testing.assert_allclose(p * q, a, rtol=1e-11)
        c = p[active] ** 2 / (S4[active] * q[active] ** 2)
        np.testing.assert_allclose(c, c[0], rtol=1e-11)
        assert np.all(p[active] > 0) and np.all(q[active] > 0)
        assert np.all(p[~active] == 0) and np.all(q[~active] == 0)
    p, q = th.exact_fixed_point_pq(S4, N)
    assert np.sum(p * p - q * q) == pytest.approx(0.0, abs=1e-13)


# ------------------------------------------------------------------ floors (book chapter 5)

def test_exact_floor_with_an_inactive_mode_at_N_1():
    """``s = (4, 2, 1, 0.5)`` at ``N = 1`` switches the weakest mode off (book chapter 3): the
    closed form over the active set, the minimum computed from ``a*`` and the exact loss at the
    minimiser ``(p*, q*)`` are one number, and below the paper's floor."""
    N = 1
    a = th.exact_fixed_point(S4, N)
    assert a[3] == 0 and np.all(a[:3] > 0)
    floor = th.exact_converged_loss(S4, N)
    assert th.exact_floor_active_set(S4, N) == pytest.approx(floor, rel=1e-13)
    p, q = th.exact_fixed_point_pq(S4, N)
    assert float(th.exact_loss(p, q, S4, N)) == pytest.approx(floor, rel=1e-13)
    # closed form with A = the three largest modes, T_A = 7, R_A = 2 + sqrt 2 + 1, |A| = 3
    R = 3.0 + np.sqrt(2.0)
    assert floor == pytest.approx(0.5 * (7.5 - 0.5 * (7.0 - R ** 2 / 5.0)), rel=1e-14)
    assert floor < th.converged_loss(S4, N)


def test_exact_floor_active_set_agrees_at_every_N():
    for N in (1, 2, 3, 10, 100):
        assert th.exact_floor_active_set(S4, N) == pytest.approx(
            th.exact_converged_loss(S4, N), rel=1e-12)


def test_floor_gap_limit_is_the_large_N_limit_of_N_times_the_gap():
    """``N (L_inf - l*) -> 1/2 (d Tr S - (sum sqrt s)^2)`` (book chapter 1), zero iff isotropic."""
    N = 10**6
    gap = N * (th.converged_loss(S4, N) - th.exact_converged_loss(S4, N))
    assert th.floor_gap_limit(S4) == pytest.approx(gap, rel=1e-4)
    R = 3.0 + 1.5 * np.sqrt(2.0)                   # 2 + sqrt 2 + 1 + sqrt(1/2)
    assert th.floor_gap_limit(S4) == pytest.approx(0.5 * (4 * 7.5 - R ** 2), rel=1e-14)
    assert th.floor_gap_limit(np.full(3, 2.5)) == pytest.approx(0.0, abs=1e-14)


@pytest.mark.parametrize("N, m_large, m_small", [(2, 1, 1), (5, 2, 1), (5, 1, 3), (9, 4, 4)])
def test_on_the_coinciding_ratio_the_two_floors_are_equal(N, m_large, m_small):
    """On ``m_large`` modes ``r^2 s`` and ``m_small`` modes ``s`` the paper's floor is exact
    (book chapter 5); ``r^2 = ((3 + sqrt 5)/2)^2 = 6.854`` for ``N = 2``, one mode each."""
    ratio = th.coinciding_floors_ratio(N, m_large, m_small)
    assert ratio > 1
    s = np.array([ratio] * m_large + [1.0] * m_small)
    assert th.converged_loss(s, N) == pytest.approx(th.exact_converged_loss(s, N), rel=1e-12)
    np.testing.assert_allclose(th.exact_fixed_point(s, N), th.paper_fixed_point(s, N),
                               rtol=1e-12)
    if (N, m_large, m_small) == (2, 1, 1):
        assert ratio == pytest.approx(((3 + np.sqrt(5.0)) / 2) ** 2, rel=1e-14)


# -------------------------------------------------------- prediction (book chapters 1 and 3)

def test_prediction_at_convergence_isotropic_closed_form():
    """For ``Sigma_x = I`` the preconditioner is ``((N+1+d)/N) I``: the prediction is
    ``N/(N+1+d) W Sigma_hat x_q``."""
    rng = np.random.default_rng(3)
    d, N = 3, 4
    W = rng.standard_normal((d, d))
    X = rng.standard_normal((N, d))
    Sh = X.T @ X / N
    xq = rng.standard_normal(d)
    expected = N / (N + 1 + d) * W @ Sh @ xq
    np.testing.assert_allclose(th.prediction_at_convergence(W, Sh, xq, np.eye(d), N), expected,
                               rtol=1e-13)


def test_prediction_at_convergence_rejects_a_non_square_or_asymmetric_covariance():
    with pytest.raises(ValueError, match="Sigma_x must be a square"):
        th.prediction_at_convergence(np.eye(2), np.eye(2), np.ones(2), np.ones((2, 3)), 5)
    asym = np.array([[2.0, 0.5], [0.4, 2.0]])
    with pytest.raises(ValueError, match="Sigma_x must be symmetric"):
        th.prediction_at_convergence(np.eye(2), np.eye(2), np.ones(2), asym, 5)


# ------------------------------------------------------------- time scales (book chapter 4)

def test_saddle_eigenvalues_are_plus_and_minus_one_over_tau_for_any_shape():
    """Shape ``s.shape + (2,)``: ``+1/tau`` (unstable) then ``-1/tau`` (stable)."""
    s = np.array([[4.0, 2.0, 1.0], [0.5, 3.0, 1.5]])
    ev = th.saddle_eigenvalues(s, 0.1)
    assert ev.shape == (2, 3, 2)
    np.testing.assert_allclose(ev[..., 0], 1 / th.tau(s, 0.1), rtol=1e-15)
    np.testing.assert_allclose(ev[..., 1], -1 / th.tau(s, 0.1), rtol=1e-15)


def test_tau_in_passes_is_tau_in_steps_over_P():
    eta = 0.05
    np.testing.assert_allclose(th.tau(S4, eta, P=1, convention="passes"), th.tau(S4, eta),
                               rtol=1e-15)
    np.testing.assert_allclose(th.tau(S4, eta, P=7, convention="passes"),
                               th.tau(S4, eta) / 7, rtol=1e-15)


def test_escape_and_half_rise_times_known_values():
    """``t* = (tau/2) ln(a_inf/a0)`` and ``t_half = (tau/2) ln((a_inf - a0)/a0)``."""
    N, eta = 10, 0.02
    ainf = 1.0 / th.s_inf(S4, N)
    tau = th.tau(S4, eta)
    np.testing.assert_allclose(th.escape_time(ainf * np.exp(-2.0), S4, N, eta), tau, rtol=1e-13)
    np.testing.assert_allclose(th.half_rise_time(ainf / 2, S4, N, eta), 0.0, atol=1e-12)
    np.testing.assert_allclose(th.half_rise_time(ainf / (1 + np.exp(2.0)), S4, N, eta), tau,
                               rtol=1e-13)


@pytest.mark.parametrize("fraction", [0.0, 1.5, 3.0])
def test_times_outside_zero_to_a_inf_are_rejected(fraction):
    """The escape and half-rise times are defined for ``0 < a0 < a_inf`` only."""
    N, eta = 10, 0.02
    a0 = fraction / th.s_inf(S4, N)
    with pytest.raises(ValueError, match="a0 must satisfy 0 < a0 < a_inf"):
        th.escape_time(a0, S4, N, eta)
    with pytest.raises(ValueError, match="a0 must satisfy 0 < a0 < a_inf"):
        th.half_rise_time(a0, S4, N, eta)


@pytest.mark.parametrize("fraction", [1.1, 1.5, 3.0])
def test_plateau_length_needs_a_start_below_a_inf(fraction):
    """``t* = (tau/2) ln(4 / (s_inf (p0+q0)^2))`` needs ``(p0+q0)^2/4 < a_inf``."""
    N, eta = 10, 0.02
    k = th.s_inf(S4, N)
    x0 = np.sqrt(4 * fraction / k)                 # (p0 + q0)^2 / 4 = fraction * a_inf
    with pytest.raises(ValueError, match="p0 \\+ q0 must be non-zero"):
        th.plateau_length(x0 / 2, x0 / 2, S4, N, eta)
    ok = np.sqrt(4 * 0.9 / k)
    np.testing.assert_allclose(th.plateau_length(ok / 2, ok / 2, S4, N, eta),
                               0.5 * th.tau(S4, eta) * np.log(1 / 0.9), rtol=1e-13)


def test_unbalanced_a_from_p_equal_minus_q_is_the_time_reversed_logistic():
    """With ``C = 0`` and ``a0 < 0`` the mode obeys ``tau da/dt = -2 a (1 - s_inf a)``, solved by
    ``a(t) = a_inf a0 / (a0 + (a_inf - a0) exp(2 t / tau))``: it decays to the saddle."""
    N, eta = 10, 0.05
    t = np.linspace(0.0, 40.0, 9)
    a0 = -0.3 * np.array([1.0, 0.5, 2.0, 0.1])
    ainf = 1.0 / th.s_inf(S4, N)
    E = np.exp(2.0 * t[:, None] / th.tau(S4, eta))
    np.testing.assert_allclose(th.unbalanced_a(t, a0, 0.0, S4, N, eta),
                               ainf * a0 / (a0 + (ainf - a0) * E), rtol=1e-12)


def test_unbalanced_a_starts_at_a0_and_ends_at_a_inf():
    N, eta = 3, 0.1
    ainf = 1.0 / th.s_inf(S4, N)
    for a0, C in ((0.0, 0.5), (0.02, -0.7), (-0.4, 0.2), (0.9, 2.0), (0.5, 0.0)):
        a = th.unbalanced_a(np.array([0.0, 1e6]), a0, C, S4, N, eta)
        np.testing.assert_allclose(a[0], a0, rtol=1e-12, atol=1e-15)
        np.testing.assert_allclose(a[1], ainf, rtol=1e-12)
