"""Chapter 1: the O(1/N) gap between the paper's and the exact loss floor, and its exercise."""

import numpy as np
import pytest

from icllib.examples import RUNNING_EXAMPLE, SPECTRA
from icllib.exercises import check_all_modes_active_from
from icllib.theory import converged_loss, exact_converged_loss, exact_fixed_point, floor_gap_limit


def reference_threshold(s):
    s = np.asarray(s, dtype=float)
    x = np.sqrt(s).sum() / np.sqrt(s.min()) - s.size - 1
    return max(1, int(np.floor(x)) + 1)


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


def test_all_modes_active_threshold_matches_water_filling():
    s = RUNNING_EXAMPLE.s
    assert reference_threshold(s) == 3
    assert exact_fixed_point(s, 2)[-1] == 0 and np.all(exact_fixed_point(s, 3) > 0)


def test_checker_accepts_reference_and_rejects_wrong_answers():
    assert check_all_modes_active_from(reference_threshold)

    def sum_of_variances(s):          # s instead of sqrt(s)
        s = np.asarray(s, dtype=float)
        return max(1, int(np.floor(s.sum() / s.min() - s.size - 1)) + 1)

    def no_clamp(s):                  # forgets that N >= 1
        s = np.asarray(s, dtype=float)
        return int(np.floor(np.sqrt(s).sum() / np.sqrt(s.min()) - s.size - 1)) + 1

    def off_by_one(s):                # N + d instead of N + 1 + d
        s = np.asarray(s, dtype=float)
        return max(1, int(np.floor(np.sqrt(s).sum() / np.sqrt(s.min()) - s.size)) + 1)

    for wrong in (sum_of_variances, no_clamp, off_by_one):
        assert not check_all_modes_active_from(wrong)


def test_checker_reports_unimplemented():
    def stub(s):
        raise NotImplementedError

    assert not check_all_modes_active_from(stub)


def _ratio(s):
    s = np.asarray(s, dtype=float)
    return np.sqrt(s).sum() / np.sqrt(s.min()) - s.size - 1


def test_checker_rejects_a_non_integer_count(capsys):
    """Issue 30: N_min is a context length, an integer; 3.3 for 3 used to pass (atol 0.5).
    An integral float (3.0) is the same count and passes."""
    assert not check_all_modes_active_from(lambda s: reference_threshold(s) + 0.3)
    out = capsys.readouterr().out
    assert "FAILED" in out and "integer" in out and "s = [" in out, out
    assert check_all_modes_active_from(lambda s: float(reference_threshold(s)))
    assert check_all_modes_active_from(lambda s: np.int64(reference_threshold(s)))


def test_checker_rejects_ceil_at_an_exact_threshold(capsys):
    """Issue 30: max(1, ceil(x)) differs from floor(x) + 1 only when the threshold x is an
    integer, where the bracket is exactly 0 and the mode is switched off (the exercise: kept
    iff positive); the old checker drew no such spectrum and passed it."""
    def ceil_threshold(s):
        return max(1, int(np.ceil(_ratio(s))))

    s = [1.0, 4.0, 9.0]                       # R / sqrt(s_min) - d - 1 = 6 - 4 = 2 exactly
    assert _ratio(s) == 2 and ceil_threshold(s) == 2 and reference_threshold(s) == 3
    assert exact_fixed_point(s, 2)[0] == 0 and np.all(exact_fixed_point(s, 3) > 0)
    assert not check_all_modes_active_from(ceil_threshold)
    out = capsys.readouterr().out
    assert "FAILED" in out and "s = [" in out and "bracket is 0" in out, out
    assert check_all_modes_active_from(reference_threshold)


def test_checker_failure_names_the_spectrum(capsys):
    """A wrong answer's verdict prints the spectrum it failed on, not only its shape."""
    def off_by_one(s):
        return reference_threshold(s) + 1

    assert not check_all_modes_active_from(off_by_one)
    out = capsys.readouterr().out
    assert "s = [" in out and "shape" not in out, out
