"""icllib.exercises.fixed_points, the checkers of chapter 3: the all-active fixed point and
water filling; each passes icllib's reference and fails plausible wrong formulas, and the
samplers draw the inputs each needs (all modes active; some switched off)."""

import numpy as np

from icllib.exercises import check_exact_fixed_point, check_water_filling
from icllib.exercises.fixed_points import _sample_all_active_spectrum, _sample_any_spectrum
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


def test_water_filling_sampler_includes_switched_off_modes():
    rng = np.random.default_rng(3)
    off = 0
    for _ in range(200):
        inp = _sample_any_spectrum(rng)
        a = exact_fixed_point(inp["s"], inp["N"])
        off += np.any(a == 0.0)
        assert 2 <= inp["s"].size <= 6 and 1 <= inp["N"] <= 300
    assert 60 < off < 140                                   # about half the trials


def test_water_filling_reference_passes():
    assert check_water_filling(exact_fixed_point)

    def unsorted_loop(s, N):       # an independent implementation over the unsorted spectrum
        s = np.asarray(s, float)
        active = np.ones(s.size, bool)
        while True:
            level = np.sqrt(s[active]).sum() / (N + 1 + active.sum())
            new = np.sqrt(s) > level
            if np.array_equal(new, active):
                break
            active = new & active
        return np.where(active, N / ((N + 1) * s) * (1 - level / np.sqrt(s)), 0.0)

    assert check_water_filling(unsorted_loop)


def test_water_filling_rejects_wrong_answers(capsys):
    def clipped_closed_form(s, N):   # all-active formula, negative products set to zero
        s = np.asarray(s, float)
        a = N / ((N + 1) * s) * (1 - np.sqrt(s).sum() / ((N + 1 + s.size) * np.sqrt(s)))
        return np.maximum(a, 0.0)

    def level_without_drop(s, N):    # active set right, but K from all d modes
        s = np.asarray(s, float)
        a = exact_fixed_point(s, N)
        level = np.sqrt(s).sum() / (N + 1 + s.size)
        return np.where(a > 0, N / ((N + 1) * s) * (1 - level / np.sqrt(s)), 0.0)

    for wrong in (clipped_closed_form, level_without_drop, paper_fixed_point):
        res = check_water_filling(wrong)
        assert not res and "differs" in res.message
    assert "FAILED" in capsys.readouterr().out
