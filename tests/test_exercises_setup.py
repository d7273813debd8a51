"""icllib.exercises.setup, the checkers of chapter 1: the prediction at convergence, the
context length from which all modes are active, and the spectrum whose paper floor is
wrong by a given large-N excess (with the excess itself)."""

import numpy as np
import pytest

from icllib.examples import RUNNING_EXAMPLE
from icllib.exercises import check_all_modes_active_from, check_prediction_at_convergence
from icllib.exercises.setup import check_floor_excess_spectrum, large_N_floor_excess
from icllib.theory import (
    converged_loss,
    exact_converged_loss,
    exact_fixed_point,
    prediction_at_convergence,
)


def test_prediction_checker_accepts_reference_rejects_unpreconditioned():
    assert check_prediction_at_convergence(prediction_at_convergence, trials=10)

    def no_trace_term(W, Sigma_hat, xq, Sigma_x, N):  # forgets the Tr(Sigma_x)/N term
        v = np.linalg.solve(((N + 1) / N) * Sigma_x, xq[..., None])[..., 0]
        return np.einsum("...ij,...jk,...k->...i", W, Sigma_hat, v)

    assert not check_prediction_at_convergence(no_trace_term, trials=10)


# ------------------------------------------- all modes active from N (check_all_modes_active_from)


def reference_threshold(s):
    s = np.asarray(s, dtype=float)
    x = np.sqrt(s).sum() / np.sqrt(s.min()) - s.size - 1
    return max(1, int(np.floor(x)) + 1)


def test_all_modes_active_threshold_matches_water_filling():
    s = RUNNING_EXAMPLE.s
    assert reference_threshold(s) == 3
    assert exact_fixed_point(s, 2)[-1] == 0 and np.all(exact_fixed_point(s, 3) > 0)


def test_all_modes_active_checker_accepts_reference_and_rejects_wrong_answers():
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


def test_all_modes_active_checker_reports_unimplemented():
    def stub(s):
        raise NotImplementedError

    assert not check_all_modes_active_from(stub)


def _ratio(s):
    s = np.asarray(s, dtype=float)
    return np.sqrt(s).sum() / np.sqrt(s.min()) - s.size - 1


def test_all_modes_active_checker_rejects_a_non_integer_count(capsys):
    """Issue 30: N_min is a context length, an integer; 3.3 for 3 used to pass (atol 0.5).
    An integral float (3.0) is the same count and passes."""
    assert not check_all_modes_active_from(lambda s: reference_threshold(s) + 0.3)
    out = capsys.readouterr().out
    assert "FAILED" in out and "integer" in out and "s = [" in out, out
    assert check_all_modes_active_from(lambda s: float(reference_threshold(s)))
    assert check_all_modes_active_from(lambda s: np.int64(reference_threshold(s)))


def test_all_modes_active_checker_rejects_ceil_at_an_exact_threshold(capsys):
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


def test_all_modes_active_checker_failure_names_the_spectrum(capsys):
    """A wrong answer's verdict prints the spectrum it failed on, not only its shape."""
    def off_by_one(s):
        return reference_threshold(s) + 1

    assert not check_all_modes_active_from(off_by_one)
    out = capsys.readouterr().out
    assert "s = [" in out and "shape" not in out, out


# ----------------------- how wrong can the paper's floor be? (check_floor_excess_spectrum)


def reference_spectrum(d, excess):
    """One variance far above the others: (1, eps, ..., eps), eps shrunk until it is enough."""
    if excess >= (d - 1) / 2:          # the supremum, approached as eps -> 0, never attained
        return None
    eps = 1.0
    while large_N_floor_excess(np.r_[1.0, np.full(d - 1, eps)]) <= excess:
        eps /= 10
    return np.r_[1.0, np.full(d - 1, eps)]


@pytest.mark.parametrize("s", [[4.0, 2.0, 1.0, 0.5], [1.0, 1e-2, 1e-2], [3.0, 0.7]])
def test_large_N_excess_is_the_limit_of_the_floors_ratio(s):
    # the definition, independently of the closed form: L_inf / l* - 1 at large N, which
    # approaches the limit with an O(1/N) remainder (N = 1e7: within 1e-4 here)
    s = np.asarray(s)
    N = 10 ** 7
    ratio = converged_loss(s, N) / exact_converged_loss(s, N) - 1
    assert large_N_floor_excess(s) == pytest.approx(ratio, abs=1e-4)


def test_supremum_is_not_exceeded_by_random_spectra():
    rng = np.random.default_rng(0)
    for _ in range(2000):
        d = int(rng.integers(2, 9))
        s = 10.0 ** rng.uniform(-8, 2, size=d)
        assert large_N_floor_excess(s) < (d - 1) / 2
    assert large_N_floor_excess(np.full(4, 1.875)) == pytest.approx(0.0, abs=1e-12)


def test_floor_excess_checker_accepts_reference_and_rejects_wrong_answers():
    assert check_floor_excess_spectrum(reference_spectrum)

    def isotropic(d, excess):                    # believes isotropic is the worst case
        return np.ones(d)

    def geometric(d, excess):                    # spread out, but not extreme enough
        return None if excess >= (d - 1) / 2 else 10.0 ** -np.arange(d)

    def sup_relative_to_paper(d, excess):        # takes (d - 1) / (d + 1) as the supremum
        return None if excess >= (d - 1) / (d + 1) else reference_spectrum(d, excess)

    def never_none(d, excess):                   # believes the excess is unbounded
        return reference_spectrum(d, min(excess, (d - 1) / 2 * (1 - 1e-4)))

    def zero_variances(d, excess):               # the limit point itself: not a spectrum
        return None if excess >= (d - 1) / 2 else np.r_[1.0, np.zeros(d - 1)]

    for wrong in (isotropic, geometric, sup_relative_to_paper, never_none, zero_variances):
        assert not check_floor_excess_spectrum(wrong), wrong.__name__


def test_floor_excess_checker_reports_unimplemented_and_errors():
    def stub(d, excess):
        raise NotImplementedError

    def broken(d, excess):
        return [1.0]

    assert not check_floor_excess_spectrum(stub)
    assert not check_floor_excess_spectrum(broken)
