"""Tests for icllib.theory: every closed form against an independent computation.

Independent references used here: Monte Carlo over prompts (moment identity, exact loss),
scipy ODE integration (closed-form trajectories), scipy.optimize (fixed points), finite
differences (gradients), explicit matrix products (prediction at convergence).
"""

import numpy as np
import pytest
from scipy.integrate import solve_ivp
from scipy.optimize import brentq, minimize

from icllib import theory as th
from icllib.flows import decoupled_flow

S4 = np.array([4.0, 2.0, 1.0, 0.5])


# -------------------------------------------------------------- s_inf and tau (book ch. 2, 4)

def test_s_inf_values_and_limit():
    s = S4
    np.testing.assert_allclose(th.s_inf(s, 10), (11 * s + 7.5) / 10, rtol=1e-15)
    np.testing.assert_allclose(th.s_inf(s, 1), 2 * s + 7.5, rtol=1e-15)
    # -> s as N -> infinity, with error (s + Tr S)/N
    N = 10**6
    np.testing.assert_allclose(th.s_inf(s, N) - s, (s + s.sum()) / N, rtol=1e-6)


def test_s_inf_is_the_second_moment_of_the_context_covariance():
    """E[Sigma_hat^2] = S s_inf(S) (book ch. 2), by Monte Carlo over contexts."""
    rng = np.random.default_rng(0)
    s = np.array([3.0, 1.0, 0.25])
    N, M = 4, 40_000
    X = rng.standard_normal((M, N, 3)) * np.sqrt(s)
    Sh = np.einsum("mni,mnj->mij", X, X) / N
    Sh2 = Sh @ Sh
    mean = Sh2.mean(0)
    se = Sh2.std(0) / np.sqrt(M)
    expected = np.diag(s * th.s_inf(s, N))
    assert np.all(np.abs(mean - expected) < 5 * se + 1e-12)
    # the same check rejects the large-N value s^2 (off by (s + Tr S)/N ~ 30 %)
    assert np.any(np.abs(np.diag(mean) - s**2) > 20 * np.diag(se))


def test_tau_conventions():
    s = S4
    np.testing.assert_allclose(th.tau(s, 0.1), 1 / (0.1 * s**2), rtol=1e-15)
    np.testing.assert_allclose(th.tau(s, 0.1, P=7, convention="passes"),
                               1 / (0.1 * 7 * s**2), rtol=1e-15)
    with pytest.raises(ValueError, match="P"):
        th.tau(s, 0.1, P=7)                      # P given with the steps convention
    with pytest.raises(ValueError, match="P"):
        th.tau(s, 0.1, convention="passes")      # P missing
    with pytest.raises(ValueError, match="convention"):
        th.tau(s, 0.1, convention="epochs")


# ----------------------------------------------------------- closed forms (book ch. 4)

def test_logistic_matches_decoupled_flow_from_balanced_start():
    s, N, eta = S4, 10, 0.5
    a0 = np.array([1e-3, 1e-5, 2e-2, 1.0])          # the last starts above a_inf
    t = np.linspace(0, 120, 241)
    sol = decoupled_flow(t, np.sqrt(a0), np.sqrt(a0), s, N, eta=eta)
    a = th.logistic_a(t, a0, s, N, eta)
    assert a.shape == (241, 4)
    np.testing.assert_allclose(sol.a, a, rtol=1e-8, atol=0)
    # it really moves: from a0 to a_inf
    np.testing.assert_allclose(a[-1], th.paper_fixed_point(s, N), rtol=1e-10)


def test_logistic_is_not_the_large_N_logistic():
    """A formula with s instead of s_inf would miss the ODE by the O(1/N) shift."""
    s, N = S4, 10
    t = np.array([0.0, 120.0])
    sol = decoupled_flow(t, np.full(4, 0.1), np.full(4, 0.1), s, N, eta=1.0)
    assert np.all(np.abs(sol.a[-1] * s - 1) > 0.05)
    np.testing.assert_allclose(sol.a[-1] * th.s_inf(s, N), 1, rtol=1e-9)


def test_half_rise_time_is_the_crossing_of_half_the_final_value():
    """half_rise_time = time at which a(t) = a_inf / 2, found on the ODE by root-finding."""
    s, N, eta = S4, 10, 1.0
    a0 = 1e-4
    ainf = th.paper_fixed_point(s, N)
    predicted = th.half_rise_time(a0, s, N, eta)
    for mode in range(4):
        def excess(T, mode=mode):
            sol = decoupled_flow(np.array([0.0, T]), np.full(4, np.sqrt(a0)),
                                 np.full(4, np.sqrt(a0)), s, N, eta=eta)
            return sol.a[-1, mode] - ainf[mode] / 2
        crossing = brentq(excess, 0.5 * predicted[mode], 2 * predicted[mode], xtol=1e-13,
                          rtol=1e-13)
        assert crossing == pytest.approx(predicted[mode], rel=1e-8)
    # and it is the inflection point of the logistic: da/dt is largest there
    t = np.linspace(0, 3 * predicted.max(), 200_001)
    a = th.logistic_a(t, a0, s, N, eta)
    t_maxslope = t[np.argmax(np.diff(a, axis=0), axis=0)]
    np.testing.assert_allclose(t_maxslope, predicted, atol=2 * (t[1] - t[0]))


def test_escape_time_approaches_half_rise_for_small_a0():
    s, N, eta = S4, 10, 1.0
    k = th.s_inf(s, N)
    rel = []
    for a0 in [1e-2, 1e-3, 1e-4, 1e-6, 1e-8]:
        esc = th.escape_time(a0, s, N, eta)
        half = th.half_rise_time(a0, s, N, eta)
        r = np.abs(esc - half) / half
        # leading difference: -(tau/2) ln(1 - s_inf a0)
        np.testing.assert_allclose(esc - half, -0.5 * th.tau(s, eta) * np.log1p(-k * a0),
                                   rtol=1e-6)
        rel.append(r.max())
    assert all(b < a for a, b in zip(rel, rel[1:]))
    assert rel[-1] < 1e-8


def test_escape_time_units():
    """tau/2 ln(...) scales as 1/eta and 1/P (the circulating form eta P s^2/2 ln(...) grows)."""
    s, N = S4, 10
    t1 = th.escape_time(1e-6, s, N, 0.1)
    np.testing.assert_allclose(th.escape_time(1e-6, s, N, 0.2), t1 / 2, rtol=1e-14)
    np.testing.assert_allclose(th.escape_time(1e-6, s, N, 0.1, P=8, convention="passes"),
                               t1 / 8, rtol=1e-14)
    np.testing.assert_allclose(t1, np.log(1 / (th.s_inf(s, N) * 1e-6)) / (2 * 0.1 * s**2),
                               rtol=1e-14)
    # large-variance modes are learned first
    assert np.all(np.diff(t1) > 0)


def _ode_a(p0, q0, s, N, eta, t):
    """Independent integration of eqs. 9-10 (DOP853 on a short window; not icllib.flows)."""
    k, tt = th.s_inf(s, N), th.tau(s, eta)

    def rhs(_, y):
        p, q = y[: len(s)], y[len(s):]
        f = (1 - p * q * k) / tt
        return np.concatenate([q * f, p * f])

    sol = solve_ivp(rhs, (0, t[-1]), np.concatenate([p0, q0]), t_eval=t, method="DOP853",
                    rtol=1e-13, atol=1e-16)
    return (sol.y[: len(s)] * sol.y[len(s):]).T


@pytest.mark.parametrize("p0,q0", [
    ([0.1, 0.01, 0.3, 1.5], [0.02, 0.2, -0.3, 0.1]),      # mixed, a0 < 0 in mode 3
    ([0.1, 0.2, 0.3, 0.4], [-0.1, -0.2, -0.3, -0.4]),     # p = -q: decays to 0
    ([1e-6, 2.0, 1e-3, 0.5], [2.0, 1e-6, -1e-3, 0.5 + 1e-9]),  # tiny a0, large |C|; near-balanced
    ([3.0, -2.0, 0.05, 0.0], [1.0, -2.5, 0.0, 0.7]),      # above a_inf; both negative; a0 = 0
    ([0.2, 0.1, 0.3, 0.05], [-0.2 + 1e-9, -0.1 + 1e-7, -0.3 + 1e-5, -0.05 + 1e-8]),  # ~ p = -q
])
def test_unbalanced_matches_decoupled_flow(p0, q0):
    s, N, eta = np.array([4.0, 2.0, 1.0, 0.5]), 10, 1.0
    p0, q0 = np.array(p0), np.array(q0)
    # C = p0^2 - q0^2 as (p0 - q0)(p0 + q0): near p = -q the naive form loses ~1e-8 to
    # cancellation, which the escape then amplifies in relative terms
    C = (p0 - q0) * (p0 + q0)
    t = np.linspace(0, 6, 61)      # short: the fast modes are still moving, no stiffness
    a = th.unbalanced_a(t, p0 * q0, C, s, N, eta)
    ref = _ode_a(p0, q0, s, N, eta, t)
    # Error model, per mode. The DOP853 reference (rtol 1e-13) loses accuracy in an escape: its
    # relative error grows with a(t)/a0, up to ~1e5 here, hence 2e-8. Near p = -q the escaping
    # direction is p + q, known only to u (|p0| + |q0|) after rounding the inputs: relative
    # error u * kappa with kappa = (|p0| + |q0|) / |p0 + q0| (up to 4e8 in the last case),
    # amplified by a few round-offs per step: 100 u kappa (measured: 2-3 u kappa over three
    # OpenBLAS/numpy kernel settings). A wrong formula misses by > 1e-3.
    # (p0 + q0 = 0 exactly stays exactly 0 in both solutions: nothing to amplify, kappa = 1)
    total = np.abs(p0 + q0)
    kappa = np.where(total > 0, (np.abs(p0) + np.abs(q0)) / np.where(total > 0, total, 1.0), 1.0)
    rtol = 2e-8 + 100 * (np.finfo(float).eps / 2) * kappa
    np.testing.assert_array_less(np.abs(a - ref), rtol * np.abs(ref) + 1e-14)
    # Over a long window, compare with icllib.flows except on (near-)p = -q modes: that is
    # the stable manifold of the saddle; LSODA's implicit steps break the p <-> -q symmetry
    # at round-off level, and its absolute tolerance (1e-14 on p and q) is not small next
    # to p + q there; either error then grows like exp(2 t / tau) (a true instability of
    # the ODE, not an error of either solution; the DOP853 check above covers these modes).
    t_long = np.linspace(0, 200, 201)
    on_stable_manifold = np.abs(p0 + q0) < 1e-4 * np.abs(p0)
    ref_long = decoupled_flow(t_long, p0, q0, s, N, eta=eta).a
    a_long = th.unbalanced_a(t_long, p0 * q0, C, s, N, eta)
    keep = ~on_stable_manifold
    np.testing.assert_allclose(a_long[:, keep], ref_long[:, keep], rtol=1e-8, atol=1e-13)


def test_unbalanced_special_cases():
    s, N, eta = S4, 10, 1.0
    t = np.linspace(0, 30, 31)
    a0 = np.array([1e-3, 0.2, 1e-6, 0.9])
    # C = 0 reduces to the logistic
    np.testing.assert_allclose(th.unbalanced_a(t, a0, 0.0, s, N, eta),
                               th.logistic_a(t, a0, s, N, eta), rtol=1e-12)
    # the sign of C does not matter
    np.testing.assert_allclose(th.unbalanced_a(t, a0, 0.3, s, N, eta),
                               th.unbalanced_a(t, a0, -0.3, s, N, eta), rtol=1e-14)
    # the saddle stays put
    assert np.all(th.unbalanced_a(t, 0.0, 0.0, s, N, eta) == 0)
    # p = -q (C = 0, a0 < 0): tau da/dt = -2a(1 - a s_inf), an exact decay
    a = th.unbalanced_a(t, -0.05, 0.0, s, N, eta)
    E = np.exp(-2 * t[:, None] / th.tau(s, eta))
    k = th.s_inf(s, N)
    np.testing.assert_allclose(a, -0.05 * E / (1 + 0.05 * k * (1 - E)), rtol=1e-12)
    # linear start from a0 = 0 with C != 0: da/dt(0) = |C| / tau
    dt = 1e-7
    slope = th.unbalanced_a(np.array([dt]), 0.0, 0.4, s, N, eta)[0] / dt
    np.testing.assert_allclose(slope, 0.4 / th.tau(s, eta), rtol=1e-5)
    # every start with C != 0 converges to a_inf
    np.testing.assert_allclose(th.unbalanced_a(1e4, -3.0, 0.5, s, N, eta),
                               th.paper_fixed_point(s, N), rtol=1e-12)
    # ... even from just off the stable manifold p = -q (tiny C: r - 1 ~ C^2 must not
    # cancel to 0, or Y would decay to 0 instead of to its tiny attractor)
    np.testing.assert_allclose(th.unbalanced_a(1e4, -3.0, 1e-9, s, N, eta),
                               th.paper_fixed_point(s, N), rtol=1e-12)


def test_closed_forms_vectorise_over_time():
    s, N = S4, 10
    assert th.logistic_a(3.0, 0.01, s, N, 1.0).shape == (4,)
    assert th.logistic_a(np.zeros((5, 3)), 0.01, s, N, 1.0).shape == (5, 3, 4)
    assert th.unbalanced_a(np.arange(7.0), 0.01, 0.1, s, N, 1.0).shape == (7, 4)
    np.testing.assert_allclose(th.logistic_a(0.0, [0.1, 0.2, 0.3, 0.4], s, N, 1.0),
                               [0.1, 0.2, 0.3, 0.4], rtol=1e-15)


# ----------------------------------------------------------------- fixed points (book ch. 3)

@pytest.mark.parametrize("s,N", [
    (S4, 10),
    (S4, 1),
    (np.array([5.0, 5.0, 5.0]), 3),
    (np.array([100.0, 1.0, 0.01]), 1),           # water-filling: two modes inactive
    (np.array([9.0, 1.0, 1.0, 1.0]), 2),
])
def test_exact_fixed_point_minimises_exact_loss(s, N):
    d = len(s)

    def f(x):
        return th.exact_loss(x[:d], x[d:], s, N)

    def g(x):
        return np.concatenate(th.exact_loss_grad(x[:d], x[d:], s, N))

    results = [minimize(f, np.random.default_rng(i).uniform(0.1, 1.5, 2 * d), jac=g,
                        method="BFGS", options={"gtol": 1e-12, "maxiter": 10_000})
               for i in range(4)]
    a_star = th.exact_fixed_point(s, N)
    for r in results:
        np.testing.assert_allclose(r.x[:d] * r.x[d:], a_star, atol=1e-6)
        assert r.fun == pytest.approx(th.exact_converged_loss(s, N), rel=1e-10)


def test_exact_fixed_point_closed_form_when_all_modes_active():
    s, N = S4, 10
    d = len(s)
    expected = (N / ((N + 1) * s)) * (1 - np.sqrt(s).sum() / ((N + 1 + d) * np.sqrt(s)))
    np.testing.assert_allclose(th.exact_fixed_point(s, N), expected, rtol=1e-14)
    # isotropic: the two fixed points coincide
    iso = np.full(3, 2.0)
    np.testing.assert_allclose(th.exact_fixed_point(iso, 5), th.paper_fixed_point(iso, 5),
                               rtol=1e-14)


@pytest.mark.parametrize("C", [0.0, 0.7, -1.3])
def test_exact_fixed_point_pq_is_a_stationary_point_on_the_manifold(C):
    s, N = S4, 10
    p, q = th.exact_fixed_point_pq(s, N, C)
    assert np.sum(p**2 - q**2) == pytest.approx(C, abs=1e-12)
    np.testing.assert_allclose(p * q, th.exact_fixed_point(s, N), rtol=1e-12)
    gp, gq = th.exact_loss_grad(p, q, s, N)
    assert np.max(np.abs(np.concatenate([gp, gq]))) < 1e-13
    # ratio p_a^2 / (s_a q_a^2) is mode-independent (only a global rescaling is free)
    ratio = p**2 / (s * q**2)
    np.testing.assert_allclose(ratio, ratio[0], rtol=1e-12)
    assert th.exact_loss(p, q, s, N) == pytest.approx(th.exact_converged_loss(s, N),
                                                      rel=1e-13)


def test_paper_fixed_point_is_stationary_for_the_paper_loss():
    s, N = S4, 10
    a = th.paper_fixed_point(s, N)
    np.testing.assert_allclose(a, 1 / th.s_inf(s, N), rtol=1e-15)
    for ratio in [0.3, 1.0, 4.0]:                    # anywhere on the hyperbola
        p = np.sqrt(a * ratio)
        q = a / p
        gp, gq = th.paper_loss_grad(p, q, s, N)
        assert np.max(np.abs(np.concatenate([gp, gq]))) < 1e-14


def test_saddle_eigenvalues_shape_and_values():
    s = S4
    ev = th.saddle_eigenvalues(s, 0.3)
    assert ev.shape == (4, 2)
    np.testing.assert_allclose(ev[:, 0], 0.3 * s**2, rtol=1e-15)
    np.testing.assert_allclose(ev[:, 1], -0.3 * s**2, rtol=1e-15)


def _rotation(d, rng):
    Q, R = np.linalg.qr(rng.standard_normal((d, d)))
    return Q * np.sign(np.diag(R))


def test_prediction_at_convergence_equals_the_model_at_the_fixed_point():
    rng = np.random.default_rng(1)
    s, N, d = S4, 6, 4
    U = _rotation(d, rng)
    Sx = U @ np.diag(s) @ U.T
    lam = rng.standard_normal((5, d))
    W = np.einsum("ij,tj,kj->tik", U, lam, U)
    X = rng.standard_normal((5, N, d)) * np.sqrt(s) @ U.T
    Sh = np.einsum("tni,tnj->tij", X, X) / N
    xq = rng.standard_normal((5, d))
    pred = th.prediction_at_convergence(W, Sh, xq, Sx, N)
    assert pred.shape == (5, d)
    a = th.paper_fixed_point(s, N)
    # p2 = c I, q1 = U diag(a / c) U^T: the model's y_hat = p2 W Sigma_hat q1 x_q
    c = 1.7
    p2 = c * np.eye(d)
    q1 = U @ np.diag(a / c) @ U.T
    model = np.einsum("ij,tjk,tkl,lm,tm->ti", p2, W, Sh, q1, xq)
    np.testing.assert_allclose(pred, model, rtol=1e-12, atol=1e-12)
    # on the same hyperbola but with p2 not a multiple of I the model differs
    p = np.sqrt(a) * np.array([2.0, 1.0, 0.5, 1.5])
    p2 = U @ np.diag(p) @ U.T
    q1 = U @ np.diag(a / p) @ U.T
    other = np.einsum("ij,tjk,tkl,lm,tm->ti", p2, W, Sh, q1, xq)
    assert np.max(np.abs(other - pred)) > 1e-2


def test_prediction_at_convergence_tends_to_Wx_and_is_the_optimal_preconditioner():
    rng = np.random.default_rng(2)
    s = S4
    Sx = np.diag(s)
    W = np.diag(rng.standard_normal(4))
    xq = rng.standard_normal(4)
    errs = [np.linalg.norm(th.prediction_at_convergence(W, Sx, xq, Sx, N) - W @ xq)
            for N in [10, 100, 1000, 10_000]]
    assert all(b < a / 4 for a, b in zip(errs, errs[1:]))
    assert 9 < errs[-2] / errs[-1] < 11                 # O(1/N)
    # with p2 = I, q1 = diag(1/s_inf) zeroes the q-gradient of the exact loss: the
    # preconditioner is optimal among q1 for p2 = I
    gp, gq = th.exact_loss_grad(np.ones(4), 1 / th.s_inf(s, 10), s, 10)
    assert np.max(np.abs(gq)) < 1e-14
    gp, gq = th.exact_loss_grad(np.ones(4), 1 / s, s, 10)
    assert np.max(np.abs(gq)) > 0.1


# --------------------------------------------------------------------- losses (book ch. 2, 5)

def test_exact_loss_matches_monte_carlo_over_prompts():
    """The reduced model's loss averaged over tasks, contexts and queries (book ch. 2)."""
    rng = np.random.default_rng(3)
    s, N, M = S4, 5, 200_000
    p = np.array([0.3, 0.5, 0.2, 0.9])
    q = np.array([0.4, 0.1, 0.7, 0.3])
    X = rng.standard_normal((M, N, 4)) * np.sqrt(s)
    xq = rng.standard_normal((M, 4)) * np.sqrt(s)
    lam = rng.standard_normal((M, 4))
    Sh = np.einsum("mni,mnj->mij", X, X) / N
    yhat = p * lam * np.einsum("mij,mj->mi", Sh, q * xq)
    losses = 0.5 * np.sum((lam * xq - yhat) ** 2, axis=1)
    mc, se = losses.mean(), losses.std() / np.sqrt(M)
    exact = th.exact_loss(p, q, s, N)
    assert abs(mc - exact) < 4 * se
    # the paper's decoupled loss misses it by far more than the Monte Carlo error
    assert abs(mc - th.paper_loss(p * q, s, N)) > 20 * se


def test_losses_at_start_and_fixed_point():
    s, N = S4, 10
    zero = np.zeros(4)
    assert th.paper_loss(zero, s, N) == pytest.approx(s.sum() / 2, rel=1e-15)
    assert th.exact_loss(zero, zero, s, N) == pytest.approx(s.sum() / 2, rel=1e-15)
    assert th.initial_loss(s) == pytest.approx(3.75, rel=1e-15)
    assert th.paper_loss(th.paper_fixed_point(s, N), s, N) == pytest.approx(
        th.converged_loss(s, N), rel=1e-13)
    assert th.converged_loss(s, N) == pytest.approx(
        0.5 * np.sum(s * (1 - s / th.s_inf(s, N))), rel=1e-15)
    # the fixed point is the minimum of the paper loss over a
    a = th.paper_fixed_point(s, N)
    for da in np.eye(4) * 1e-3:
        assert th.paper_loss(a + da, s, N) > th.converged_loss(s, N)
        assert th.paper_loss(a - da, s, N) > th.converged_loss(s, N)


def test_converged_losses_vanish_as_N_grows():
    s = S4
    Ns = [1, 10, 100, 1000, 10_000]
    paper = np.array([th.converged_loss(s, N) for N in Ns])
    exact = np.array([th.exact_converged_loss(s, N) for N in Ns])
    assert np.all(paper > 0) and np.all(exact > 0)
    assert np.all(np.diff(paper) < 0) and np.all(np.diff(exact) < 0)
    # L_inf ~ (1/2N) sum_a (s_a + Tr S) for large N
    N = 10**6
    np.testing.assert_allclose(th.converged_loss(s, N) * N, 0.5 * np.sum(s + s.sum()),
                               rtol=1e-5)
    assert exact[-1] < exact[1] / 500


def test_exact_converged_loss_closed_form_and_large_N_law():
    s, d = S4, 4
    sig = np.sqrt(s).sum()
    for N in [1, 3, 10, 100]:
        a = th.exact_fixed_point(s, N)
        l_star = th.exact_converged_loss(s, N)
        assert l_star == pytest.approx(0.5 * np.sum(s * (1 - s * a)), rel=1e-12)
        if N == 1:                      # s = 0.5 is inactive at N = 1 (a* = 0)
            assert a[3] == 0 and np.all(a[:3] > 0)
            continue
        assert l_star == pytest.approx(
            0.5 * (s.sum() / (N + 1) + N * sig**2 / ((N + 1) * (N + 1 + d))), rel=1e-12)
    N = 10**7
    assert N * th.exact_converged_loss(s, N) == pytest.approx(0.5 * (s.sum() + sig**2),
                                                              rel=1e-5)
    assert N * th.converged_loss(s, N) == pytest.approx(0.5 * (d + 1) * s.sum(), rel=1e-5)
    # with inactive modes, l* = 1/2 sum s (1 - s a*) still holds
    s2 = np.array([100.0, 1.0, 0.01])
    a = th.exact_fixed_point(s2, 1)
    assert np.sum(a == 0) == 2
    assert th.exact_converged_loss(s2, 1) == pytest.approx(0.5 * np.sum(s2 * (1 - s2 * a)),
                                                           rel=1e-12)


def test_exact_loss_equals_paper_loss_where_the_systems_agree():
    rng = np.random.default_rng(4)
    # isotropic S, mode-uniform p, q
    s_iso = np.full(5, 1.7)
    for _ in range(5):
        p, q = np.full(5, rng.normal()), np.full(5, rng.normal())
        assert th.exact_loss(p, q, s_iso, 7) == pytest.approx(
            th.paper_loss(p * q, s_iso, 7), rel=1e-13)
    # p2 a multiple of I (mode-uniform p), any q, anisotropic S
    for _ in range(5):
        p, q = np.full(4, rng.normal()), rng.normal(size=4)
        assert th.exact_loss(p, q, S4, 3) == pytest.approx(th.paper_loss(p * q, S4, 3),
                                                           rel=1e-13)
    # otherwise they differ
    p, q = np.array([1.0, 0.2, 0.5, 0.1]), np.array([0.1, 0.4, 0.5, 0.9])
    assert abs(th.exact_loss(p, q, S4, 3) - th.paper_loss(p * q, S4, 3)) > 1e-2


def test_losses_vectorise_over_time():
    rng = np.random.default_rng(5)
    p, q = rng.normal(size=(7, 3, 4)), rng.normal(size=(7, 3, 4))
    ex = th.exact_loss(p, q, S4, 10)
    pa = th.paper_loss(p * q, S4, 10)
    assert ex.shape == pa.shape == (7, 3)
    assert ex[4, 1] == pytest.approx(th.exact_loss(p[4, 1], q[4, 1], S4, 10), rel=1e-15)
    assert pa[6, 2] == pytest.approx(th.paper_loss(p[6, 2] * q[6, 2], S4, 10), rel=1e-15)


@pytest.mark.parametrize("which", ["paper", "exact"])
def test_loss_gradients_match_finite_differences(which):
    rng = np.random.default_rng(6)
    s, N, h = S4, 4, 1e-6
    if which == "paper":
        def loss(p, q):
            return th.paper_loss(p * q, s, N)
        grad = th.paper_loss_grad
    else:
        def loss(p, q):
            return th.exact_loss(p, q, s, N)
        grad = th.exact_loss_grad
    for _ in range(3):
        p, q = rng.normal(size=4), rng.normal(size=4)
        gp, gq = grad(p, q, s, N)
        E = np.eye(4) * h
        fd_p = np.array([(loss(p + e, q) - loss(p - e, q)) / (2 * h) for e in E])
        fd_q = np.array([(loss(p, q + e) - loss(p, q - e)) / (2 * h) for e in E])
        np.testing.assert_allclose(gp, fd_p, rtol=1e-7, atol=1e-8)
        np.testing.assert_allclose(gq, fd_q, rtol=1e-7, atol=1e-8)


# ------------------------------------------------------------------- conservation (book ch. 3)

def test_conserved_quantities_basic():
    p = np.array([[1.0, 2.0], [3.0, 0.5]])
    q = np.array([[0.5, 1.0], [1.0, 2.0]])
    np.testing.assert_allclose(th.conserved_per_mode(p, q), p**2 - q**2)
    np.testing.assert_allclose(th.conserved_quantity(p, q), [3.75, 4.25])
    assert th.conserved_quantity(p, q, axis=(-2, -1)) == pytest.approx(8.0)
    with pytest.raises(ValueError, match="same shape"):
        th.conserved_quantity(p, q[0])


def _prompt_batch_loss_and_grad(p, q, lam, Sh, xq):
    """Mean loss of the reduced model over a minibatch and its gradient (by hand)."""
    v = np.einsum("bij,bj->bi", Sh, q * xq)              # Sigma_hat q x_q
    r = p * lam * v - lam * xq                           # residual y_hat - y
    B = len(lam)
    loss = 0.5 * np.sum(r**2) / B
    gp = np.sum(r * lam * v, axis=0) / B
    gq = np.einsum("na,nab,nb->b", r * p * lam, Sh, xq) / B
    return loss, gp, gq


def test_sgd_drift_of_the_conserved_quantity_is_exact_for_any_minibatch():
    rng = np.random.default_rng(7)
    s, N, B, eta = S4, 5, 3, 0.05
    p, q = rng.normal(size=4), rng.normal(size=4)
    X = rng.standard_normal((B, N, 4)) * np.sqrt(s)
    Sh = np.einsum("bni,bnj->bij", X, X) / N
    lam = rng.standard_normal((B, 4))
    xq = rng.standard_normal((B, 4)) * np.sqrt(s)
    loss, gp, gq = _prompt_batch_loss_and_grad(p, q, lam, Sh, xq)
    # the hand gradient is right
    h = 1e-6
    for i in range(4):
        e = np.eye(4)[i] * h
        fd = (_prompt_batch_loss_and_grad(p + e, q, lam, Sh, xq)[0]
              - _prompt_batch_loss_and_grad(p - e, q, lam, Sh, xq)[0]) / (2 * h)
        assert gp[i] == pytest.approx(fd, rel=1e-6, abs=1e-9)
        fd = (_prompt_batch_loss_and_grad(p, q + e, lam, Sh, xq)[0]
              - _prompt_batch_loss_and_grad(p, q - e, lam, Sh, xq)[0]) / (2 * h)
        assert gq[i] == pytest.approx(fd, rel=1e-6, abs=1e-9)
    change = (th.conserved_quantity(p - eta * gp, q - eta * gq)
              - th.conserved_quantity(p, q))
    drift = th.sgd_conservation_drift(gp, gq, eta)
    assert change == pytest.approx(drift, rel=1e-10)
    assert abs(drift) > 1e-6                         # second order, but not zero
    # and for the exact mean gradient
    gp, gq = th.exact_loss_grad(p, q, s, N)
    change = (th.conserved_quantity(p - eta * gp, q - eta * gq)
              - th.conserved_quantity(p, q))
    assert change == pytest.approx(th.sgd_conservation_drift(gp, gq, eta), rel=1e-10)
    # matrices: sums over every axis by default; axis= keeps a leading one
    G = rng.normal(size=(3, 2, 2))
    assert th.sgd_conservation_drift(G, 2 * G, 0.1).shape == ()
    assert th.sgd_conservation_drift(G, 2 * G, 0.1, axis=(1, 2)).shape == (3,)


# ---------------------------------------------------------------------------- bad input

@pytest.mark.parametrize("call,name", [
    (lambda: th.s_inf(S4, 0), "N"),
    (lambda: th.s_inf([1.0, -1.0], 3), "s"),
    (lambda: th.s_inf([1.0, np.nan], 3), "s"),
    (lambda: th.s_inf([1.0, np.inf], 3), "s"),
    (lambda: th.s_inf(2.0, 3), "s"),
    (lambda: th.s_inf([], 3), "s"),
    (lambda: th.tau(S4, 0.0), "eta"),
    (lambda: th.tau(S4, -1.0), "eta"),
    (lambda: th.tau(S4, np.nan), "eta"),
    (lambda: th.tau(S4, 0.1, P=0, convention="passes"), "P"),
    (lambda: th.logistic_a([0.0, 1.0], 0.0, S4, 10, 1.0), "a0"),
    (lambda: th.logistic_a([0.0, 1.0], -0.1, S4, 10, 1.0), "a0"),
    (lambda: th.logistic_a([0.0, 1.0], [0.1, 0.2], S4, 10, 1.0), "a0"),
    (lambda: th.logistic_a([0.0, -1.0], 0.1, S4, 10, 1.0), "t"),
    (lambda: th.logistic_a([0.0, np.nan], 0.1, S4, 10, 1.0), "t"),
    (lambda: th.unbalanced_a([0.0, 1.0], 0.1, [1.0, 2.0], S4, 10, 1.0), "C"),
    (lambda: th.unbalanced_a([0.0, 1.0], np.inf, 0.0, S4, 10, 1.0), "a0"),
    (lambda: th.escape_time(0.0, S4, 10, 1.0), "a0"),
    (lambda: th.escape_time(1.0, S4, 10, 1.0), "a0"),
    (lambda: th.half_rise_time(1.0, S4, 10, 1.0), "a0"),
    (lambda: th.paper_loss(np.zeros(3), S4, 10), "a"),
    (lambda: th.paper_loss(np.full(4, np.nan), S4, 10), "a"),
    (lambda: th.exact_loss(np.zeros(4), np.zeros(5), S4, 10), "q"),
    (lambda: th.exact_loss(np.zeros(3), np.zeros(4), S4, 10), "p"),
    (lambda: th.exact_loss(np.zeros(4), np.zeros(4), S4, 0), "N"),
    (lambda: th.converged_loss(S4, -3), "N"),
    (lambda: th.sgd_conservation_drift(np.ones(2), np.ones(2), 0.0), "eta"),
    (lambda: th.sgd_conservation_drift([np.inf], np.ones(2), 0.1), "grad_p"),
    (lambda: th.prediction_at_convergence(np.eye(3), np.eye(3), np.ones(3), np.eye(4), 5),
     "W"),
    (lambda: th.prediction_at_convergence(np.eye(4), np.eye(4), np.ones(3), np.eye(4), 5),
     "xq"),
    (lambda: th.prediction_at_convergence(np.eye(4), np.eye(4), np.ones(4), np.ones((4, 3)),
                                          5), "Sigma_x"),
])
def test_bad_input_raises_value_error_naming_the_argument(call, name):
    with pytest.raises(ValueError, match=rf"\b{name}\b"):
        call()


@pytest.mark.parametrize("N", [2.5, True, "10"])
def test_a_count_of_the_wrong_type_is_a_type_error(N):
    with pytest.raises(TypeError, match=r"\bN must be an integer >= 1, got "):
        th.s_inf(S4, N)


def test_running_example_switches_mode_4_off_at_short_contexts():
    for N in (1, 2):
        a = th.exact_fixed_point(S4, N)
        assert a[-1] == 0.0 and np.all(a[:-1] > 0)
    assert np.all(th.exact_fixed_point(S4, 3) > 0)


# ======================================================================================
# Found by mutation testing (issue 25, section 4): tests that kill the mutants
# of icllib.theory that survived the tests above. Each states a property of the book's
# formulas (closed forms, exact values, limits, the conservation law, the domain of
# each formula) at the place where a surviving mutant differed from the code; none
# compares with a stored output.


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
