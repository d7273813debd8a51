"""icllib.exercises.loss, the checkers of chapter 5: the paper's loss, the exact floor and
'What the products cannot see' (a point whose products are all zero and whose exact loss
is well above the paper's: the leak through the off-diagonal context covariance)."""

import numpy as np
import pytest

from icllib.data import DataConfig, sample_statistics
from icllib.exercises import check_exact_floor
from icllib.exercises.loss import check_zero_product_excess
from icllib.model import Params
from icllib.theory import converged_loss, exact_converged_loss, exact_loss, paper_loss, s_inf
from icllib.theory.losses import exact_floor_active_set
from icllib.train import loss_and_grads

S, N = np.array([4.0, 2.0, 1.0, 0.5]), 10


def test_check_paper_loss_passes_reference_and_fails_the_wrong_units_formula():
    from icllib.exercises import check_paper_loss
    from icllib.theory import paper_loss

    assert check_paper_loss(paper_loss)

    def corrected(a, s, N):
        s = np.asarray(s, float)
        return 0.5 * np.sum(s * (1 - 2 * s * a + s * s_inf(s, N) * a**2), axis=-1)

    def wrong_units(a, s, N):  # s a_inf a^2 instead of s s_inf a^2: wrong units
        s = np.asarray(s, float)
        return 0.5 * np.sum(s * (1 - 2 * s * a + s * a**2 / s_inf(s, N)), axis=-1)

    assert check_paper_loss(corrected)
    assert not check_paper_loss(wrong_units)


def test_check_exact_floor_passes_the_reference_and_fails_the_all_active_form():
    assert check_exact_floor(exact_converged_loss)
    assert check_exact_floor(exact_floor_active_set)

    def all_active(s, N):            # the all-modes-active closed form, wrong when modes are off
        s = np.asarray(s, float)
        T, R, d = s.sum(), np.sqrt(s).sum(), s.size
        return 0.5 * (T / (N + 1) + N * R**2 / ((N + 1) * (N + 1 + d)))

    assert not check_exact_floor(all_active)
    assert not check_exact_floor(converged_loss)


def test_checkers_of_chapter_5_are_quiet_when_asked(capsys):
    from icllib.exercises import check_exact_floor, check_paper_loss
    from icllib.theory import exact_converged_loss, paper_loss

    assert check_paper_loss(paper_loss, verbose=False)
    assert not check_exact_floor(paper_loss_floor_typo, verbose=False)
    assert check_exact_floor(exact_converged_loss, verbose=False)
    assert capsys.readouterr().out == ""


def paper_loss_floor_typo(s, N):
    return exact_converged_loss(s, N) * 1.01


# ------------------------------------- what the products cannot see (check_zero_product_excess)


@pytest.mark.parametrize("p, q", [([1.0, 0, 0, 0], [0, 1.0, 0, 0]),
                                  ([0, 0, 0, 1.0], [1.0, 0, 0, 0]),
                                  ([0, 2.0, 0, 0], [0, 0, 0, 3.0])])
def test_zero_product_points_with_a_large_leak_pass(p, q):
    assert check_zero_product_excess(p, q, verbose=False).passed


@pytest.mark.parametrize("p, q, why", [
    ([0.0] * 4, [0.0] * 4, "higher"),                     # silent model: no excess at all
    ([1.0, 0, 0, 0], [1.0, 0, 0, 0], "not all 0"),        # a nonzero product
    ([0, 0, 0, 0.5], [0.5, 0, 0, 0], "higher"),           # right idea, too small a leak (0.7 %)
    ([1.0, 0, 0], [0, 1.0, 0], "four numbers"),           # wrong number of modes
])
def test_wrong_points_fail(p, q, why, capsys):
    assert not check_zero_product_excess(p, q).passed
    out = capsys.readouterr().out
    assert "FAILED" in out
    if why == "four numbers":
        assert "4 finite numbers" in out
    else:
        assert why in out


def test_the_excess_is_the_off_diagonal_leak_and_the_full_model_shows_it():
    """exact - paper = s_a p_a^2 s_b^2 q_b^2 / (2N) for p on mode a and q on mode b (a != b),
    and the full model's Monte Carlo loss at the reference point is the exact value (error
    model: SE of the mean of 20 batch losses, 4 SE), not Tr S / 2."""
    for a, b in [(0, 1), (3, 0), (2, 3)]:
        p, q = np.zeros(4), np.zeros(4)
        p[a], q[b] = 1.3, 0.7
        leak = S[a] * p[a] ** 2 * S[b] ** 2 * q[b] ** 2 / (2 * N)
        assert exact_loss(p, q, S, N) - paper_loss(p * q, S, N) == pytest.approx(leak, rel=1e-12)
    p, q = np.array([1.0, 0, 0, 0]), np.array([0, 1.0, 0, 0])
    rng = np.random.default_rng(5)
    params = Params.from_blocks(p2=np.diag(p), q1=np.diag(q))
    losses = [loss_and_grads(params, sample_statistics(DataConfig(s=S, N=N), 5000, rng))[0]
              for _ in range(20)]
    se = np.std(losses, ddof=1) / np.sqrt(20)
    assert abs(np.mean(losses) - exact_loss(p, q, S, N)) < 4 * se
    assert abs(np.mean(losses) - paper_loss(p * q, S, N)) > 4 * se
