"""icllib.exercises.dynamics, the checkers of chapter 2: the exact mean velocity, 'How hard
the brake bites' (the frozen growth rate) and the first separation of the two flows; the
references and a reader's own derivation pass, plausible wrong answers fail."""

import numpy as np

from icllib.coupling import coupling_decay, frozen_growth_rate
from icllib.exercises import check_exact_mean_velocity, check_frozen_growth_rate
from icllib.flows import exact_mean_velocity, paper_velocity


def test_velocity_checker_accepts_reference_rejects_paper_flow():
    assert check_exact_mean_velocity(
        lambda p, q, s, N, eta: exact_mean_velocity(p, q, s, N, eta=eta))
    # the paper's decoupled flow is a different function (it agrees only for d = 1)
    assert not check_exact_mean_velocity(
        lambda p, q, s, N, eta: paper_velocity(p, q, s, N, eta=eta))


def _reader(p, q, s, N, eta):
    p, q, s = (np.asarray(v, dtype=float) for v in (p, q, s))
    D_other = (np.sum(s**2 * q**2) - s**2 * q**2) / (N * s)
    E_other = (np.sum(s * p**2) - s * p**2) / N
    return eta * s**2 * (np.sqrt(1 + ((D_other - E_other) / 2) ** 2) - (D_other + E_other) / 2)


def test_frozen_growth_rate_checker_passes_reference_and_fails_wrong_answers(capsys):
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


def _reader_separation(s, N, eta, a0, delta):
    """A reader's answer: both flows on a grid of one SGD step, the first crossing of the
    relative gap, interpolated; the earliest mode."""
    from icllib.flows import decoupled_flow, exact_mean_flow
    from icllib.metrics import first_crossing
    from icllib.theory import exact_fixed_point

    s = np.asarray(s, dtype=float)
    start = np.full(s.size, np.sqrt(a0))
    t = np.arange(0.0, 4 / (eta * s.min() ** 2) * np.log(np.e / a0))
    gap = np.abs(exact_mean_flow(t, start, start, s, N, eta=eta).a
                 - decoupled_flow(t, start, start, s, N, eta=eta).a)
    times = first_crossing(t, gap / exact_fixed_point(s, N), delta)
    return int(np.nanargmin(times)) + 1, float(np.nanmin(times))


def test_first_separation_checker_accepts_the_reference_and_a_reader(capsys):
    from icllib.exercises import check_first_separation
    from icllib.exercises.dynamics import _first_separation

    assert check_first_separation(_first_separation)
    assert check_first_separation(_reader_separation)


def test_first_separation_checker_rejects_plausible_wrong_answers(capsys):
    """The naive design (watch the slowest mode, wait for the paper's half-rise); the gap in
    absolute rather than relative terms; the gap relative to the paper's end point."""
    from icllib.exercises import check_first_separation
    from icllib.flows import decoupled_flow, exact_mean_flow
    from icllib.metrics import first_crossing
    from icllib.theory import half_rise_time, paper_fixed_point

    def slowest_mode(s, N, eta, a0, delta):
        return len(s), float(half_rise_time(a0, np.asarray(s), N, eta)[-1])

    def gap_scaled_by(scale):
        def answer(s, N, eta, a0, delta):
            s = np.asarray(s, dtype=float)
            start = np.full(s.size, np.sqrt(a0))
            t = np.concatenate([[0.0], np.geomspace(
                1e-2, 4 / (eta * s.min() ** 2) * np.log(np.e / a0), 20_000)])
            gap = np.abs(exact_mean_flow(t, start, start, s, N, eta=eta).a
                         - decoupled_flow(t, start, start, s, N, eta=eta).a)
            times = first_crossing(t, gap / scale(s, N), delta)
            return int(np.nanargmin(times)) + 1, float(np.nanmin(times))
        return answer

    wrong = (slowest_mode, gap_scaled_by(lambda s, N: 1.0),
             gap_scaled_by(paper_fixed_point))
    for answer in wrong:
        assert not check_first_separation(answer)
    assert "FAILED" in capsys.readouterr().out
