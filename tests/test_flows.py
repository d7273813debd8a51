"""Tests for icllib.flows: the paper's decoupled flow and the exact mean flow."""

import dataclasses
import inspect

import numpy as np
import pytest
from scipy.integrate import solve_ivp

from icllib import flows as fl
from icllib import theory as th
from icllib.train.finite_tasks import task_set_flow, task_set_velocity

S4 = np.array([4.0, 2.0, 1.0, 0.5])


def _fd_grad(loss, p, q, h=1e-6):
    d = len(p)
    E = np.eye(d) * h
    gp = np.array([(loss(p + e, q) - loss(p - e, q)) / (2 * h) for e in E])
    gq = np.array([(loss(p, q + e) - loss(p, q - e)) / (2 * h) for e in E])
    return gp, gq


# ------------------------------------------------------------------ right-hand sides

@pytest.mark.parametrize("eta", [1.0, 0.05])
def test_velocities_are_minus_eta_times_the_loss_gradient(eta):
    rng = np.random.default_rng(0)
    s, N = S4, 3
    for _ in range(4):
        p, q = rng.normal(size=4), rng.normal(size=4)
        gp, gq = _fd_grad(lambda p, q: th.exact_loss(p, q, s, N), p, q)
        dp, dq = fl.exact_mean_velocity(p, q, s, N, eta=eta)
        np.testing.assert_allclose(dp, -eta * gp, rtol=1e-7, atol=1e-9)
        np.testing.assert_allclose(dq, -eta * gq, rtol=1e-7, atol=1e-9)
        gp, gq = _fd_grad(lambda p, q: th.paper_loss(p * q, s, N), p, q)
        dp, dq = fl.paper_velocity(p, q, s, N, eta=eta)
        np.testing.assert_allclose(dp, -eta * gp, rtol=1e-7, atol=1e-9)
        np.testing.assert_allclose(dq, -eta * gq, rtol=1e-7, atol=1e-9)


def test_velocities_vectorise_over_leading_axes():
    rng = np.random.default_rng(1)
    p, q = rng.normal(size=(6, 2, 4)), rng.normal(size=(6, 2, 4))
    for f in (fl.paper_velocity, fl.exact_mean_velocity):
        dp, dq = f(p, q, S4, 5, eta=1.0)
        assert dp.shape == dq.shape == (6, 2, 4)
        one = f(p[3, 1], q[3, 1], S4, 5, eta=1.0)
        np.testing.assert_allclose(dp[3, 1], one[0], rtol=1e-15)
        np.testing.assert_allclose(dq[3, 1], one[1], rtol=1e-15)


def _fd_jacobian(vel, y, h=1e-7):
    d = len(y) // 2
    J = np.empty((2 * d, 2 * d))
    for j in range(2 * d):
        e = np.zeros(2 * d)
        e[j] = h
        up = np.concatenate(vel(y[:d] + e[:d], y[d:] + e[d:]))
        dn = np.concatenate(vel(y[:d] - e[:d], y[d:] - e[d:]))
        J[:, j] = (up - dn) / (2 * h)
    return J


def test_analytic_jacobians_used_by_the_integrator():
    rng = np.random.default_rng(2)
    s, N, eta = S4, 3, 0.7
    for _ in range(3):
        y = rng.normal(size=8)
        J = fl._paper_jacobian(y[:4], y[4:], eta * s**2, th.s_inf(s, N))
        fd = _fd_jacobian(lambda p, q: fl.paper_velocity(p, q, s, N, eta=eta), y)
        np.testing.assert_allclose(J, fd, rtol=1e-6, atol=1e-7)
        J = fl._exact_jacobian(y[:4], y[4:], s, N, eta)
        fd = _fd_jacobian(lambda p, q: fl.exact_mean_velocity(p, q, s, N, eta=eta), y)
        np.testing.assert_allclose(J, fd, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("vel", [fl.paper_velocity, fl.exact_mean_velocity])
def test_saddle_eigenvalues_match_the_numerical_jacobian_at_zero(vel):
    s, N, eta = S4, 6, 0.3
    J = _fd_jacobian(lambda p, q: vel(p, q, s, N, eta=eta), np.zeros(8), h=1e-6)
    w, V = np.linalg.eig(J)
    w = w.real
    expected = th.saddle_eigenvalues(s, eta)             # (d, 2): +1/tau, -1/tau
    np.testing.assert_allclose(np.sort(w), np.sort(expected.ravel()), rtol=1e-8)
    for a in range(4):
        for col, sign in [(0, 1.0), (1, -1.0)]:
            i = np.argmin(np.abs(w - expected[a, col]))
            v = V[:, i].real
            v = v / np.linalg.norm(v)
            target = np.zeros(8)
            target[a], target[4 + a] = 1.0, sign                # along p = +-q in mode a
            target /= np.sqrt(2)
            assert abs(abs(v @ target) - 1) < 1e-10


# ----------------------------------------------------------------------- solutions

@pytest.mark.parametrize("flow,vel", [(fl.decoupled_flow, fl.paper_velocity),
                                      (fl.exact_mean_flow, fl.exact_mean_velocity)])
def test_flows_integrate_their_velocity_fields(flow, vel):
    """The integrators' fast right-hand sides against a plain DOP853 run of the velocity."""
    s, N, eta = S4, 7, 0.8
    p0, q0 = np.array([0.3, 0.01, 0.2, 1.0]), np.array([0.05, 0.4, -0.2, 0.1])
    t = np.linspace(0, 4, 21)

    def rhs(_, y):
        return np.concatenate(vel(y[:4], y[4:], s, N, eta=eta))

    ref = solve_ivp(rhs, (0, 4), np.concatenate([p0, q0]), t_eval=t, method="DOP853",
                    rtol=1e-13, atol=1e-15).y.T
    sol = flow(t, p0, q0, s, N, eta=eta)
    np.testing.assert_allclose(sol.p, ref[:, :4], rtol=1e-8, atol=1e-12)
    np.testing.assert_allclose(sol.q, ref[:, 4:], rtol=1e-8, atol=1e-12)


def test_flow_solution_fields_and_losses():
    s, N = S4, 10
    t = np.linspace(0, 20, 41)
    p0, q0 = np.array([0.1, 0.2, 0.05, 0.3]), np.array([0.2, 0.1, 0.05, -0.1])
    for flow, loss in [(fl.decoupled_flow, lambda sol: th.paper_loss(sol.a, s, N)),
                       (fl.exact_mean_flow, lambda sol: th.exact_loss(sol.p, sol.q, s, N))]:
        sol = flow(t, p0, q0, s, N, eta=1.0)
        assert isinstance(sol, fl.FlowSolution)
        assert sol.t.shape == (41,) and sol.p.shape == sol.q.shape == sol.a.shape == (41, 4)
        assert sol.loss.shape == (41,)
        np.testing.assert_array_equal(sol.p[0], p0)
        np.testing.assert_array_equal(sol.q[0], q0)
        np.testing.assert_allclose(sol.a, sol.p * sol.q, rtol=1e-15)
        np.testing.assert_allclose(sol.loss, loss(sol), rtol=1e-14)
        # gradient flows: the loss never increases
        assert np.all(np.diff(sol.loss) <= 1e-12)
        with pytest.raises(dataclasses.FrozenInstanceError):
            sol.t = t


def test_output_times_need_not_start_at_zero():
    s, N = S4, 10
    p0 = q0 = np.full(4, 0.05)
    full = fl.exact_mean_flow(np.array([0.0, 3.0, 7.0]), p0, q0, s, N, eta=1.0)
    part = fl.exact_mean_flow(np.array([3.0, 7.0]), p0, q0, s, N, eta=1.0)
    np.testing.assert_allclose(part.p, full.p[1:], rtol=1e-9)
    still = fl.decoupled_flow(np.zeros(3), p0, q0, s, N, eta=1.0)
    np.testing.assert_array_equal(still.p, np.broadcast_to(p0, (3, 4)))


def test_time_is_measured_in_sgd_steps_of_size_eta():
    """Doubling eta halves the time to reach a given state (tau = 1/(eta s^2))."""
    s, N = S4, 10
    p0, q0 = np.array([0.1, 0.02, 0.3, 0.05]), np.array([0.1, 0.2, 0.01, 0.05])
    t = np.linspace(0, 10, 11)
    for flow in (fl.decoupled_flow, fl.exact_mean_flow):
        a1 = flow(2 * t, p0, q0, s, N, eta=0.5).a
        a2 = flow(t, p0, q0, s, N, eta=1.0).a
        np.testing.assert_allclose(a1, a2, rtol=1e-8, atol=1e-14)


# -------------------------------------------------------------------- conservation

def test_decoupled_flow_conserves_every_mode():
    s, N = S4, 10
    p0, q0 = np.array([0.3, 0.01, 0.2, 1.0]), np.array([0.05, 0.4, -0.2, 0.1])
    sol = fl.decoupled_flow(np.linspace(0, 200, 101), p0, q0, s, N, eta=1.0)
    C = th.conserved_per_mode(sol.p, sol.q)
    scale = np.max(sol.p**2 + sol.q**2)
    assert np.max(np.abs(C - C[0])) < 1e-8 * scale
    assert np.max(np.abs(sol.a[-1] - th.paper_fixed_point(s, N))) < 1e-8   # it did move


def test_exact_flow_conserves_the_sum_but_not_each_mode():
    s, N = S4, 10
    p0, q0 = np.array([0.3, 0.01, 0.2, 1.0]), np.array([0.05, 0.4, -0.2, 0.1])
    sol = fl.exact_mean_flow(np.linspace(0, 200, 101), p0, q0, s, N, eta=1.0)
    C = th.conserved_quantity(sol.p, sol.q)
    scale = np.max(np.sum(sol.p**2 + sol.q**2, axis=-1))
    assert np.max(np.abs(C - C[0])) < 1e-8 * scale
    Cm = th.conserved_per_mode(sol.p, sol.q)
    assert np.max(np.abs(Cm - Cm[0])) > 0.05 * scale       # visibly not conserved


# ------------------------------------------------------ paper vs exact flow (book ch. 2)

def test_flows_agree_for_isotropic_S_and_uniform_modes():
    s, N = np.full(4, 1.3), 5
    t = np.linspace(0, 40, 81)
    p0, q0 = np.full(4, 0.02), np.full(4, 0.05)
    e = fl.exact_mean_flow(t, p0, q0, s, N, eta=1.0)
    d = fl.decoupled_flow(t, p0, q0, s, N, eta=1.0)
    np.testing.assert_allclose(e.a, d.a, rtol=1e-8, atol=1e-14)
    np.testing.assert_allclose(e.loss, d.loss, rtol=1e-10)
    # isotropic S but non-uniform modes: they differ
    p0 = np.array([0.02, 0.2, 0.05, 0.1])
    e = fl.exact_mean_flow(t, p0, q0, s, N, eta=1.0)
    d = fl.decoupled_flow(t, p0, q0, s, N, eta=1.0)
    assert np.max(np.abs(e.a - d.a)) > 1e-2


def test_p2_multiple_of_identity_gives_equal_losses_and_q_velocities_only():
    """With p mode-uniform, the losses and the q-velocities agree, the p-velocities do not.

    So 'the systems agree when p2 is a multiple of I' holds for the loss and for the flow
    of q1 with p2 held fixed (the setting of the prediction at convergence), not for the
    joint flow: p2 does not stay a multiple of I under either flow.
    """
    rng = np.random.default_rng(3)
    s, N = S4, 4
    for _ in range(3):
        p, q = np.full(4, rng.uniform(0.2, 1.0)), rng.uniform(0.1, 1.0, size=4)
        assert th.exact_loss(p, q, s, N) == pytest.approx(th.paper_loss(p * q, s, N),
                                                          rel=1e-13)
        dp_e, dq_e = fl.exact_mean_velocity(p, q, s, N, eta=1.0)
        dp_p, dq_p = fl.paper_velocity(p, q, s, N, eta=1.0)
        np.testing.assert_allclose(dq_e, dq_p, rtol=1e-12, atol=1e-14)
        assert np.max(np.abs(dp_e - dp_p)) > 1e-3


def _gap(N, s=S4):
    p0 = q0 = np.full(len(s), 0.03)
    t = np.linspace(0, 200, 401)
    e = fl.exact_mean_flow(t, p0, q0, s, N, eta=1.0)
    d = fl.decoupled_flow(t, p0, q0, s, N, eta=1.0)
    return np.max(np.abs(e.a - d.a) / th.paper_fixed_point(s, N))


def test_exact_and_paper_flows_differ_for_anisotropic_S_and_the_gap_shrinks_with_N():
    gaps = [_gap(N) for N in (10, 30, 100, 300)]
    assert gaps[0] > 0.1                                   # s = (4, 2, 1, 0.5), N = 10
    assert all(b < a for a, b in zip(gaps, gaps[1:]))
    assert gaps[-1] < gaps[0] / 10


# ------------------------------------------------------------------------ convergence

def test_exact_flow_converges_to_the_exact_minimiser():
    s, N = S4, 10
    p0, q0 = np.array([0.03, 0.05, 0.02, 0.04]), np.array([0.02, 0.01, 0.06, 0.04])
    sol = fl.exact_mean_flow(np.array([0.0, 3000.0, 6000.0]), p0, q0, s, N, eta=1.0)
    C = th.conserved_quantity(p0, q0)
    p_star, q_star = th.exact_fixed_point_pq(s, N, C)
    np.testing.assert_allclose(sol.a[-1], th.exact_fixed_point(s, N), rtol=1e-6)
    np.testing.assert_allclose(sol.p[-1], p_star, rtol=1e-6)
    np.testing.assert_allclose(sol.q[-1], q_star, rtol=1e-6)
    assert sol.loss[-1] == pytest.approx(th.exact_converged_loss(s, N), rel=1e-10)
    # ... and not to the paper's fixed point (a 20 % difference for the smallest mode)
    assert abs(sol.a[-1, 3] * th.s_inf(s, N)[3] - 1) > 0.1


def test_paper_flow_converges_to_the_hyperbola_point_fixed_by_each_C():
    s, N = S4, 10
    p0, q0 = np.array([0.03, 0.05, 0.02, 0.04]), np.array([0.02, 0.01, 0.06, 0.04])
    sol = fl.decoupled_flow(np.array([0.0, 400.0]), p0, q0, s, N, eta=1.0)
    a_inf = th.paper_fixed_point(s, N)
    np.testing.assert_allclose(sol.a[-1], a_inf, rtol=1e-8)
    C = th.conserved_per_mode(p0, q0)
    p_inf = np.sqrt((C + np.sqrt(C**2 + 4 * a_inf**2)) / 2)
    np.testing.assert_allclose(sol.p[-1], p_inf, rtol=1e-8)
    assert sol.loss[-1] == pytest.approx(th.converged_loss(s, N), rel=1e-10)


# -------------------------------------------------------------------------- bad input

@pytest.mark.parametrize("flow", [fl.decoupled_flow, fl.exact_mean_flow])
@pytest.mark.parametrize("kwargs,name", [
    (dict(p0=np.ones(3)), "p0"),
    (dict(q0=np.ones(5)), "q0"),
    (dict(p0=np.array([1.0, np.nan, 1.0, 1.0])), "p0"),
    (dict(s=np.array([1.0, 0.0, 1.0, 1.0])), "s"),
    (dict(N=0), "N"),
    (dict(t=np.array([0.0, 2.0, 1.0])), "t"),
    (dict(t=np.array([-1.0, 2.0])), "t"),
    (dict(t=np.array([[0.0, 1.0]])), "t"),
    (dict(eta=0.0), "eta"),
    (dict(eta=-0.1), "eta"),
])
def test_flows_reject_bad_input(flow, kwargs, name):
    args = dict(p0=np.full(4, 0.1), q0=np.full(4, 0.1), s=S4, N=5, t=np.linspace(0, 1, 3))
    kwargs = dict(kwargs)
    eta = kwargs.pop("eta", 1.0)
    args.update(kwargs)
    with pytest.raises(ValueError, match=rf"\b{name}\b"):
        flow(args["t"], args["p0"], args["q0"], args["s"], args["N"], eta=eta)


def test_velocities_reject_bad_input():
    with pytest.raises(ValueError, match=r"\bq\b"):
        fl.exact_mean_velocity(np.ones(4), np.ones(3), S4, 5, eta=1.0)
    with pytest.raises(ValueError, match=r"\beta\b"):
        fl.paper_velocity(np.ones(4), np.ones(4), S4, 5, eta=np.inf)


# ------------------------------------------------------------- signatures (issue 32)

_T3, _P4 = np.linspace(0.0, 1.0, 3), np.full(4, 0.1)


@pytest.mark.parametrize("call", [
    lambda: fl.decoupled_flow(_T3, _P4, _P4, S4, 5),
    lambda: fl.exact_mean_flow(_T3, _P4, _P4, S4, 5),
    lambda: fl.paper_velocity(_P4, _P4, S4, 5),
    lambda: fl.exact_mean_velocity(_P4, _P4, S4, 5),
    lambda: task_set_flow(_T3, _P4, _P4, S4, 5, np.ones(4)),
    lambda: task_set_velocity(_P4, _P4, S4, 5, np.ones(4)),
], ids=["decoupled_flow", "exact_mean_flow", "paper_velocity", "exact_mean_velocity",
        "task_set_flow", "task_set_velocity"])
def test_eta_has_no_default(call):
    """eta sets the time scale: forgetting it must fail, not silently use eta = 1."""
    with pytest.raises(TypeError, match=r"missing 1 required keyword-only argument: 'eta'"):
        call()


def test_every_flow_takes_the_times_first_and_eta_by_keyword():
    for f in (fl.decoupled_flow, fl.exact_mean_flow, task_set_flow, th.logistic_a,
              th.unbalanced_a):
        assert next(iter(inspect.signature(f).parameters)) == "t", f.__name__
    for f in (fl.decoupled_flow, fl.exact_mean_flow, task_set_flow, fl.paper_velocity,
              fl.exact_mean_velocity, task_set_velocity):
        eta = inspect.signature(f).parameters["eta"]
        assert eta.kind is inspect.Parameter.KEYWORD_ONLY, f.__name__
        assert eta.default is inspect.Parameter.empty, f.__name__
