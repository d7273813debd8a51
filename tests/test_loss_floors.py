"""The floors of chapter 5: closed forms, when the paper's floor is exact, the floor exercise."""

import numpy as np
import pytest

from icllib.exercises import check_exact_floor
from icllib.theory import (
    converged_loss,
    exact_converged_loss,
    exact_fixed_point,
    exact_loss,
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


def test_check_exact_floor_passes_the_reference_and_fails_the_all_active_form():
    assert check_exact_floor(exact_converged_loss)
    assert check_exact_floor(exact_floor_active_set)

    def all_active(s, N):            # the all-modes-active closed form, wrong when modes are off
        s = np.asarray(s, float)
        T, R, d = s.sum(), np.sqrt(s).sum(), s.size
        return 0.5 * (T / (N + 1) + N * R**2 / ((N + 1) * (N + 1 + d)))

    assert not check_exact_floor(all_active)
    assert not check_exact_floor(converged_loss)


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


def test_checkers_of_chapter_5_are_quiet_when_asked(capsys):
    from icllib.exercises import check_exact_floor, check_paper_loss
    from icllib.theory import exact_converged_loss, paper_loss

    assert check_paper_loss(paper_loss, verbose=False)
    assert not check_exact_floor(paper_loss_floor_typo, verbose=False)
    assert check_exact_floor(exact_converged_loss, verbose=False)
    assert capsys.readouterr().out == ""


def paper_loss_floor_typo(s, N):
    return exact_converged_loss(s, N) * 1.01
