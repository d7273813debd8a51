"""The floors of icllib.theory.losses (chapters 1 and 5): closed forms, when the paper's
floor is exact, the O(1/N) gap between the two floors, the plateau levels of a staged run."""

import numpy as np
import pytest

from icllib.examples import RUNNING_EXAMPLE, SPECTRA
from icllib.theory import (
    converged_loss,
    exact_converged_loss,
    exact_fixed_point,
    exact_loss,
    floor_gap_limit,
    paper_fixed_point,
    s_inf,
)
from icllib.theory.losses import coinciding_floors_ratio, exact_floor_active_set


def test_active_set_closed_form_equals_the_minimum_for_any_spectrum():
    rng = np.random.default_rng(3)
    switched_off = 0
    for _ in range(500):
        d = int(rng.integers(1, 6))
        s = np.exp(rng.uniform(np.log(0.01), np.log(5.0), size=d))
        N = int(rng.integers(1, 60))
        switched_off += int(np.any(exact_fixed_point(s, N) == 0))
        np.testing.assert_allclose(exact_floor_active_set(s, N), exact_converged_loss(s, N),
                                   rtol=1e-12)
    assert switched_off > 50          # the draw does exercise the water-filling


def test_the_paper_floor_is_an_upper_bound_reached_only_on_the_coinciding_spectra():
    rng = np.random.default_rng(4)
    for _ in range(300):
        s = np.exp(rng.uniform(np.log(0.05), np.log(5.0), size=int(rng.integers(2, 6))))
        N = int(rng.integers(1, 100))
        assert exact_converged_loss(s, N) <= converged_loss(s, N) * (1 + 1e-12)
    # the example of chapter 5: s = (6.854, 1), N = 2, both floors 2.18169
    s = np.array([coinciding_floors_ratio(2, 1, 1), 1.0])
    np.testing.assert_allclose(s[0], (3 + np.sqrt(5)) ** 2 / 4, rtol=1e-14)
    np.testing.assert_allclose(converged_loss(s, 2), 2.181695, atol=1e-6)
    np.testing.assert_allclose(exact_converged_loss(s, 2), converged_loss(s, 2), rtol=1e-12)
    np.testing.assert_allclose(exact_fixed_point(s, 2), paper_fixed_point(s, 2), rtol=1e-12)
    # other multiplicities and N; moving the ratio by 10 % opens a (second-order) gap
    for N, m1, m2 in [(10, 1, 3), (10, 2, 2), (10, 3, 1), (40, 2, 1)]:
        ratio = coinciding_floors_ratio(N, m1, m2)
        s = np.array([ratio] * m1 + [1.0] * m2)
        np.testing.assert_allclose(exact_converged_loss(s, N), converged_loss(s, N), rtol=1e-12)
        s[:m1] *= 1.1
        assert converged_loss(s, N) - exact_converged_loss(s, N) > 1e-7 * s.sum()
    with pytest.raises(ValueError, match="N"):
        coinciding_floors_ratio(2, 2, 1)


def test_paper_floor_is_the_exact_loss_of_its_fixed_point_with_p2_proportional_to_I():
    s, N = np.array([4.0, 2.0, 1.0, 0.5]), 10
    q = 1 / s_inf(s, N)                      # p = 1 in every mode, p q = 1/s_inf
    np.testing.assert_allclose(exact_loss(np.ones(4), q, s, N), converged_loss(s, N), rtol=1e-13)


def test_plateau_levels_start_at_half_trace_end_on_the_floors_and_match_the_exact_flow():
    from icllib.flows import exact_mean_flow
    from icllib.theory.losses import plateau_levels

    s, N, eta, a0 = np.array([4.0, 2.0, 1.0, 0.5]), 10, 0.01, 1e-4
    exact, paper = plateau_levels(s, N), plateau_levels(s, N, theory="paper")
    np.testing.assert_allclose([exact[0], paper[0]], s.sum() / 2)
    np.testing.assert_allclose([exact[-1], paper[-1]],
                               [exact_converged_loss(s, N), converged_loss(s, N)], rtol=1e-12)
    assert np.all(np.diff(exact) < 0) and np.all(exact <= paper + 1e-12)
    # the exact flow sits on the level after mode 2 is learned, well before mode 3 escapes
    t = np.array([0.0, 250.0])
    p0 = np.full(4, np.sqrt(a0))
    loss = exact_mean_flow(t, p0, p0, s, N, eta=eta).loss[-1]
    # mode 3 has grown to about a0 exp(2 t / tau_3) = a0 e^5 there, lowering the loss by at
    # most s_3^2 a_3 (the linear term of the exact loss)
    bound = s[2] ** 2 * a0 * np.exp(2 * t[-1] * eta * s[2] ** 2)
    assert 0 <= exact[2] - loss < bound, (loss, exact[2], bound)
    with pytest.raises(ValueError, match="sorted"):
        plateau_levels(s[::-1], N)
    with pytest.raises(ValueError, match="theory"):
        plateau_levels(s, N, theory="decoupled")


def test_floor_gap_limit_running_example():
    s = RUNNING_EXAMPLE.s
    # the definition, independently of the closed form: the limit of N (L_inf - l*), which
    # approaches it with an O(1/N) remainder (about 60/N here, test below): within 1e-4
    # relative at N = 1e6 (the floors' float64 cancellation is ~1e-10 relative there)
    N = 10 ** 6
    assert floor_gap_limit(s) == pytest.approx(
        N * (converged_loss(s, N) - exact_converged_loss(s, N)), rel=1e-4)
    # and the value the closed form gives for s = (4, 2, 1, 0.5): (d Tr S - (sum sqrt s)^2) / 2
    root_sum = 2 + 2 ** 0.5 + 1 + 0.5 ** 0.5
    assert floor_gap_limit(s) == pytest.approx(0.5 * (4 * 7.5 - root_sum ** 2), rel=1e-12)
    assert floor_gap_limit(SPECTRA["isotropic"]) == pytest.approx(0.0, abs=1e-12)


@pytest.mark.parametrize("name", list(SPECTRA))
def test_gap_is_order_one_over_N(name):
    """N (L_inf - l*) -> floor_gap_limit with an O(1/N) remainder (not a 1/N^2 gap)."""
    s = SPECTRA[name]
    c = floor_gap_limit(s)
    err = {N: N * (converged_loss(s, N) - exact_converged_loss(s, N)) - c
           for N in (10 ** 4, 10 ** 5, 10 ** 6)}
    if c == pytest.approx(0.0, abs=1e-12):
        assert all(abs(e) < 1e-9 for e in err.values())
        return
    # the remainder shrinks tenfold per decade of N (O(1/N)); float error of the floors
    # (~1e-16 relative, times N^2 / c) stays far below it
    assert err[10 ** 5] / err[10 ** 4] == pytest.approx(0.1, rel=0.02)
    assert err[10 ** 6] / err[10 ** 5] == pytest.approx(0.1, rel=0.05)
    # a 1/N^2 gap would make N^2 (L_inf - l*) converge; it grows tenfold per decade instead
    n2 = [N * (N * (converged_loss(s, N) - exact_converged_loss(s, N))) for N in (10 ** 4, 10 ** 5)]
    assert n2[1] / n2[0] == pytest.approx(10.0, rel=0.01)
