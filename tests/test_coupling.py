"""icllib.coupling: the exact mean flow's brakes and the frozen growth rate (book chapter 2).

The last two tests check chapter 2's claims about SGD on the stored runs of the running
example, with the chapter's error models, and show that they fail on the bugs they guard
against:

* The end values of modes 1-3 (last 1000 of 6000 steps, every run) follow the exact mean flow
  and not the paper's decoupled equations; uncertainty: the seed-to-seed spread of these window
  means (one run's prediction interval). With the scatter of single SGD states as the
  uncertainty of a 1000-step mean (the chapter's earlier error model) the claim cannot be made:
  it is too wide.
* On mode 4's plateau (steps 1000-2000) SGD's growth rate of ln a_4 is the rate the exact brake
  predicts from SGD's own modes 1-3 (icllib.coupling.frozen_growth_rate), not the paper's free
  rate; a wrong brake (D_a without its 1/s_a) is rejected.
"""

import numpy as np
import pytest

from icllib.compare import check_follows
from icllib.coupling import coupling_decay, frozen_growth_rate, paper_decay
from icllib.examples import RUNNING_EXAMPLE
from icllib.flows import decoupled_flow, exact_mean_flow, exact_mean_velocity, paper_velocity
from icllib.theory import exact_fixed_point_pq, tau
from icllib.train import mode_products
from icllib.train.stored import load_group

S, N, ETA, A0 = RUNNING_EXAMPLE.s, RUNNING_EXAMPLE.N, RUNNING_EXAMPLE.eta, RUNNING_EXAMPLE.a0


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


# ----------------------------------------- chapter 2's claims on the stored SGD runs


@pytest.fixture(scope="module")
def running_example():
    runs = load_group("running-example", "quick")
    t = runs[0].steps.astype(float)
    a = np.array([mode_products(r) for r in runs])
    start = np.full(S.size, np.sqrt(A0))
    return (t, a, runs, exact_mean_flow(t, start, start, S, N, eta=ETA),
            decoupled_flow(t, start, start, S, N, eta=ETA))


def test_end_values_follow_the_exact_flow_at_every_seed(running_example):
    t, a, runs, exact, paper = running_example
    window = t > t[-1] - 1000
    end = a[:, window, :3].mean(1)
    spread = end.std(0, ddof=1) * np.sqrt(1 + 1 / len(runs))
    check_follows(end, spread, follows=("exact", exact.a[window, :3].mean(0)),
                  rejects=("paper", paper.a[window, :3].mean(0)), what="end values")
    with pytest.raises(AssertionError):          # the theories swapped
        check_follows(end, spread, follows=("paper", paper.a[window, :3].mean(0)),
                      rejects=("exact", exact.a[window, :3].mean(0)), what="end values")
    # the old error model, the scatter of single states within the window: only mode 3
    # separates the theories, a minority of the points
    scatter = a[:, window, :3].std(1, ddof=1)
    with pytest.raises(AssertionError, match="cannot tell"):
        check_follows(end, scatter, follows=("exact", exact.a[window, :3].mean(0)),
                      rejects=("paper", paper.a[window, :3].mean(0)), what="end values")


def _wrong_rate(p, q, s, N, eta):
    """The frozen growth rate with a wrong brake: D_a without its 1/s_a."""
    D = (np.sum(s**2 * q**2) - s**2 * q**2) / N
    E = (np.sum(s * p**2) - s * p**2) / N
    return eta * s**2 * (np.sqrt(1 + ((D - E) / 2) ** 2) - (D + E) / 2)


def test_plateau_growth_rate_measures_the_brake(running_example):
    t, a, runs, _, _ = running_example
    plateau = (t >= 1000) & (t <= 2000)
    slope = np.array([np.polyfit(t[plateau], np.log(r[plateau, 3]), 1)[0] for r in a])
    slope *= tau(S[3], ETA) / 2
    unc = slope.std(ddof=1) * np.sqrt(1 + 1 / len(runs))

    def predicted(rate):
        out = []
        for r in runs:
            p, q = r.p[plateau].mean(0), r.q[plateau].mean(0)
            p[3] = q[3] = 0.0
            out.append(rate(p, q, S, N, ETA)[3] * tau(S[3], ETA))
        return np.array(out)

    free = np.ones(len(runs))
    check_follows(slope, unc, follows=("exact brake", predicted(frozen_growth_rate)),
                  rejects=("free rate", free), what="plateau growth rate")
    with pytest.raises(AssertionError):
        check_follows(slope, unc, follows=("wrong brake", predicted(_wrong_rate)),
                      rejects=("free rate", free), what="plateau growth rate")
    with pytest.raises(AssertionError):
        check_follows(slope, unc, follows=("free rate", free),
                      rejects=("exact brake", predicted(frozen_growth_rate)),
                      what="plateau growth rate")
