"""Chapter 1, exercise 3 ('How wrong can the paper's floor be?'): the large-N excess of the
paper's floor over the exact one, and the checker of a spectrum that reaches a given excess."""

import numpy as np
import pytest

from icllib.exercises.setup import check_floor_excess_spectrum, large_N_floor_excess
from icllib.theory import converged_loss, exact_converged_loss


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


def test_checker_accepts_reference_and_rejects_wrong_answers():
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


def test_checker_reports_unimplemented_and_errors():
    def stub(d, excess):
        raise NotImplementedError

    def broken(d, excess):
        return [1.0]

    assert not check_floor_excess_spectrum(stub)
    assert not check_floor_excess_spectrum(broken)
