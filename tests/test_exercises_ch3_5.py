"""Tests of the chapter 3-5 checkers in icllib.exercises: each passes icllib's reference and
fails plausible wrong formulas (so a reader's mistake is caught)."""

import numpy as np

from icllib.exercises import check_exact_fixed_point
from icllib.exercises.fixed_points import _sample_all_active_spectrum
from icllib.theory import exact_fixed_point, paper_fixed_point


def test_all_active_sampler_draws_only_all_active_inputs():
    rng = np.random.default_rng(1)
    for _ in range(200):
        inp = _sample_all_active_spectrum(rng)
        s, N = inp["s"], inp["N"]
        assert np.all(exact_fixed_point(s, N) > 0)
        assert 1 <= s.size <= 6 and 1 <= N <= 300


def test_check_exact_fixed_point_passes_reference_and_closed_form():
    assert check_exact_fixed_point(exact_fixed_point)

    def closed_form(s, N):
        s = np.asarray(s, float)
        return N / ((N + 1) * s) * (1 - np.sqrt(s).sum() / ((N + 1 + s.size) * np.sqrt(s)))

    assert check_exact_fixed_point(closed_form)


def test_check_exact_fixed_point_fails_wrong_formulas(capsys):
    assert not check_exact_fixed_point(paper_fixed_point)

    def off_by_one(s, N):  # N + d instead of N + 1 + d
        s = np.asarray(s, float)
        return N / ((N + 1) * s) * (1 - np.sqrt(s).sum() / ((N + s.size) * np.sqrt(s)))

    res = check_exact_fixed_point(off_by_one)
    assert not res and "differs" in res.message
    assert "FAILED" in capsys.readouterr().out


def test_check_logistic_a_passes_reference_and_fails_wrong_rates_and_limits():
    from icllib.exercises import check_logistic_a
    from icllib.theory import logistic_a

    assert check_logistic_a(logistic_a)

    def closed_form(t, a0, s, N, eta, rate=2.0, a_inf=None):
        t, s = np.asarray(t, float), np.asarray(s, float)
        ai = N / ((N + 1) * s + s.sum()) if a_inf is None else a_inf(s)
        return ai * a0 / (a0 + (ai - a0) * np.exp(-rate * eta * s**2 * t[:, None]))

    assert check_logistic_a(closed_form)
    assert not check_logistic_a(lambda *args: closed_form(*args, rate=1.0))
    assert not check_logistic_a(lambda *args: closed_form(*args, a_inf=lambda s: 1 / s))


def test_check_paper_loss_passes_reference_and_fails_the_wrong_units_formula():
    from icllib.exercises import check_paper_loss
    from icllib.theory import paper_loss, s_inf

    assert check_paper_loss(paper_loss)

    def corrected(a, s, N):
        s = np.asarray(s, float)
        return 0.5 * np.sum(s * (1 - 2 * s * a + s * s_inf(s, N) * a**2), axis=-1)

    def wrong_units(a, s, N):  # s a_inf a^2 instead of s s_inf a^2: wrong units
        s = np.asarray(s, float)
        return 0.5 * np.sum(s * (1 - 2 * s * a + s * a**2 / s_inf(s, N)), axis=-1)

    assert check_paper_loss(corrected)
    assert not check_paper_loss(wrong_units)
