"""The chapter 2 checker 'How hard the brake bites': the reference and a reader's own
derivation pass, wrong answers (no coupling, the mode's own brake kept, one brake only) fail."""

import numpy as np

from icllib.coupling import coupling_decay, frozen_growth_rate
from icllib.exercises import check_frozen_growth_rate


def _reader(p, q, s, N, eta):
    p, q, s = (np.asarray(v, dtype=float) for v in (p, q, s))
    D_other = (np.sum(s**2 * q**2) - s**2 * q**2) / (N * s)
    E_other = (np.sum(s * p**2) - s * p**2) / N
    return eta * s**2 * (np.sqrt(1 + ((D_other - E_other) / 2) ** 2) - (D_other + E_other) / 2)


def test_checker_passes_reference_and_fails_wrong_answers(capsys):
    assert check_frozen_growth_rate(frozen_growth_rate)
    assert check_frozen_growth_rate(_reader)

    def own_term_kept(p, q, s, N, eta):
        D, E = coupling_decay(p, q, s, N)
        return eta * s ** 2 * (np.sqrt(1 + ((D - E) / 2) ** 2) - (D + E) / 2)

    def no_coupling(p, q, s, N, eta):
        return eta * np.asarray(s) ** 2

    def only_D(p, q, s, N, eta):
        D, E = coupling_decay(p, q, s, N)
        D = D - np.asarray(s) * np.asarray(q) ** 2 / N
        return eta * np.asarray(s) ** 2 * (1 - D)

    for wrong in (own_term_kept, no_coupling, only_D):
        assert not check_frozen_growth_rate(wrong)
    assert "FAILED" in capsys.readouterr().out


