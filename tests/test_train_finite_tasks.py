"""Training on a fixed set of P tasks: the theory of icllib.train.finite_tasks."""

import numpy as np
import pytest
from scipy.optimize import minimize

from icllib.data import DataConfig, sample_task_set
from icllib.flows import exact_mean_velocity
from icllib.model import Params
from icllib.theory import exact_converged_loss, exact_fixed_point, exact_loss, tau
from icllib.train.finite_tasks import (
    monte_carlo_loss,
    steps_to_passes,
    task_second_moments,
    task_set_fixed_point,
    task_set_fixed_point_pq,
    task_set_floor,
    task_set_flow,
    task_set_loss,
    task_set_velocity,
    tau_in_passes,
)

S = np.array([4.0, 2.0, 1.0, 0.5])


def test_fresh_tasks_are_the_exact_theory():
    rng = np.random.default_rng(0)
    p, q = rng.normal(size=(2, 5, 4))
    one = np.ones(4)
    np.testing.assert_allclose(task_set_loss(p, q, S, 10, one), exact_loss(p, q, S, 10),
                               rtol=1e-13)
    for got, want in zip(task_set_velocity(p, q, S, 10, one, eta=0.01),
                         exact_mean_velocity(p, q, S, 10, eta=0.01)):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(task_set_fixed_point(S, 10, one), exact_fixed_point(S, 10),
                               rtol=1e-13)
    assert task_set_floor(S, 10, one) == pytest.approx(exact_converged_loss(S, 10), rel=1e-12)


def test_velocity_is_minus_eta_gradient_of_the_task_set_loss():
    rng = np.random.default_rng(1)
    p, q = rng.normal(size=(2, 4))
    m = rng.uniform(0.2, 2.0, 4)
    dp, dq = task_set_velocity(p, q, S, 7, m, eta=0.3)
    h = 1e-6
    for i in range(4):
        e = np.eye(4)[i] * h
        gp = (task_set_loss(p + e, q, S, 7, m) - task_set_loss(p - e, q, S, 7, m)) / (2 * h)
        gq = (task_set_loss(p, q + e, S, 7, m) - task_set_loss(p, q - e, S, 7, m)) / (2 * h)
        assert dp[i] == pytest.approx(-0.3 * gp, rel=1e-6, abs=1e-9)
        assert dq[i] == pytest.approx(-0.3 * gq, rel=1e-6, abs=1e-9)


@pytest.mark.parametrize("seed", range(4))
def test_fixed_point_and_floor_are_the_numerical_minimum(seed):
    rng = np.random.default_rng(seed)
    m = np.mean(rng.standard_normal((4, 4)) ** 2, axis=0)
    N = int(rng.integers(1, 20))
    p, q = task_set_fixed_point_pq(S, N, m)
    np.testing.assert_allclose(task_set_loss(p, q, S, N, m), task_set_floor(S, N, m),
                               rtol=1e-12)
    x0 = np.concatenate([p, q]) + 0.05 * rng.normal(size=8) + 0.1
    res = minimize(lambda x: task_set_loss(x[:4], x[4:], S, N, m), x0, method="BFGS",
                   options={"gtol": 1e-12})
    assert res.fun >= task_set_floor(S, N, m) - 1e-10
    assert res.fun == pytest.approx(task_set_floor(S, N, m), abs=1e-8)
    np.testing.assert_allclose(np.abs(res.x[:4] * res.x[4:]),
                               task_set_fixed_point(S, N, m), atol=1e-4)


def test_flow_converges_to_the_task_set_fixed_point():
    m = np.array([1.3, 0.6, 0.9, 1.5])
    t = np.array([0.0, 1e5, 2e5])
    sol = task_set_flow(t, np.full(4, 0.01), np.full(4, 0.01), S, 10, m, eta=0.01)
    np.testing.assert_allclose(sol.a[-1], task_set_fixed_point(S, 10, m), rtol=1e-5)
    assert sol.train_loss[-1] == pytest.approx(task_set_floor(S, 10, m), rel=1e-8)
    assert sol.test_loss[0] == pytest.approx(S.sum() / 2, rel=1e-3)


def test_task_second_moments_and_time_in_passes():
    cfg = DataConfig(s=S, N=10, P=6)
    tasks = sample_task_set(cfg, np.random.default_rng(3))
    lam = np.diagonal(tasks, axis1=1, axis2=2)
    np.testing.assert_allclose(task_second_moments(tasks), np.mean(lam**2, axis=0))
    assert steps_to_passes(300, 64, 16) == pytest.approx(1200.0)
    # tau in passes times passes per step (B / P) is tau in SGD steps
    np.testing.assert_allclose(tau_in_passes(S, 0.01, 64, 16) * 16 / 64, tau(S, 0.01))


def test_monte_carlo_loss_matches_the_theory_on_the_reduced_manifold():
    cfg = DataConfig(s=S, N=10)
    m_true = np.array([1.3, 0.6, 0.9, 1.5])
    # a task set with exactly these second moments: +-sqrt(m) on each mode
    lam = np.array([[1, 1, 1, 1], [-1, 1, -1, 1], [1, -1, -1, 1], [-1, -1, 1, 1]]) * np.sqrt(m_true)
    tasks = np.stack([np.diag(row) for row in lam])
    p, q = np.array([0.4, 0.5, 0.7, 0.6]), np.array([0.5, 0.6, 0.8, 0.9])
    params = Params.from_blocks(p2=np.diag(p), q1=np.diag(q))
    rng = np.random.default_rng(5)
    for tk, want in ((tasks, task_set_loss(p, q, S, 10, m_true)), (None, exact_loss(p, q, S, 10))):
        mean, se = monte_carlo_loss(params, cfg, 200_000, rng, tasks=tk, batch=50_000)
        assert abs(mean - want) < 4.5 * se, (mean, want, se)
