"""Chapter 5, exercise 'What the products cannot see': the checker accepts points whose
products are all zero and whose exact loss is well above the paper's, and rejects the
plausible wrong answers; the excess is the leak through the off-diagonal context covariance."""

import numpy as np
import pytest

from icllib.data import DataConfig, sample_statistics
from icllib.exercises.loss import check_zero_product_excess
from icllib.model import Params
from icllib.theory import exact_loss, paper_loss
from icllib.train import loss_and_grads

S, N = np.array([4.0, 2.0, 1.0, 0.5]), 10


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
