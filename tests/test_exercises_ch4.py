"""The chapter 4 'plateau of any start' checker passes icllib's reference and a reader's
closed form, and fails the plausible wrong answers (product only, |C| only, a missing 4)."""

import numpy as np

from icllib.exercises import check_plateau_length
from icllib.exercises.timescales import _sample_small_starts
from icllib.theory import escape_time, plateau_length


def _reader(p0, q0, s, N, eta, *, combine=lambda p, q: (p + q) ** 2, four=4.0):
    s = np.asarray(s, float)
    k = ((N + 1) * s + s.sum()) / N
    return np.log(four / (k * combine(np.asarray(p0), np.asarray(q0)))) / (2 * eta * s**2)


def test_sampler_draws_small_starts_away_from_p_equals_minus_q():
    rng = np.random.default_rng(3)
    for _ in range(200):
        inp = _sample_small_starts(rng)
        p0, q0, s, N = inp["p0"], inp["q0"], inp["s"], inp["N"]
        a_inf = N / ((N + 1) * s + s.sum())
        assert np.all(p0**2 + q0**2 <= 1e-3 * a_inf * (1 + 1e-12))
        assert np.all(np.abs(p0 + q0) >= 0.05 * np.maximum(np.abs(p0), np.abs(q0)))


def test_check_plateau_length_passes_reference_and_closed_form():
    assert check_plateau_length(plateau_length)
    assert check_plateau_length(_reader)


def test_check_plateau_length_fails_wrong_answers(capsys):
    # the balanced formula with the product a0 = p0 q0 (raises for p0 q0 <= 0: reported)
    assert not check_plateau_length(lambda p0, q0, s, N, eta: escape_time(p0 * q0, s, N, eta))
    # |C| = |p0^2 - q0^2| in place of (p0 + q0)^2 (the q0 = 0 result generalised wrongly)
    assert not check_plateau_length(
        lambda *a: _reader(*a, combine=lambda p, q: np.abs(p * p - q * q)))
    # p0^2 + q0^2 (the size of the start, not its p = q component)
    assert not check_plateau_length(lambda *a: _reader(*a, combine=lambda p, q: p * p + q * q))
    # the 4 dropped
    assert not check_plateau_length(lambda *a: _reader(*a, four=1.0))
    assert "FAILED" in capsys.readouterr().out
