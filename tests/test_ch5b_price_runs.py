"""Chapter 5b's stored "task-set-price" runs are the runs train_sgd makes (error model: see
tests/test_stored_runs.py; a tolerance of 1e-6 of the compared quantity's scale is 300 times
what another CPU changes, and fails at the first step of another random stream)."""

import numpy as np
import pytest

from icllib.train import stored
from icllib.train.task_fitting import PATHWAYS

PREFIX = 1000         # steps retrained per sampled run: two stored points (0, 500, 1000)
TOL = 1e-6
NAME = "task-set-price"


@pytest.fixture(scope="module")
def runs():
    return stored.load_group(NAME, "quick")


def test_every_run_of_the_spec_is_stored(runs):
    g = stored.group(NAME, "quick")
    assert list(runs) == g.keys()
    for (P, _, _, _), run in runs.items():
        assert run.steps[0] == 0 and np.all(np.diff(run.steps) == g.store_every)
        if run.diverged_at is None:
            assert run.steps[-1] == g.steps
            assert run.test is not None and (run.train is None) == (P is None)
            assert run.test.ablated.shape == (len(PATHWAYS),)
        else:                      # kept up to the step before SGD diverged, without losses
            assert run.steps[-1] < run.diverged_at <= g.steps
            assert run.test is None and run.train is None


def test_a_diverged_run_is_kept_with_the_step_it_diverged_at(runs):
    g = stored.group(NAME, "quick")
    diverged = [key for key, run in runs.items() if run.diverged_at is not None]
    if not diverged:
        pytest.skip("no stored run diverged")
    key = diverged[0]
    live = g.train(*key)
    assert live.diverged_at == runs[key].diverged_at
    np.testing.assert_allclose(runs[key].diagonals, live.diagonals, rtol=1e-5, atol=1e-7)


def test_a_sample_of_runs_regenerates(runs):
    g = stored.group(NAME, "quick")
    keys = [(None, 0, "balanced", 0), (None, 0, "random", 3), (1, 2, "random", 1),
            (16, 0, "balanced", 1), (256, 3, "random", 0)]
    for key in keys:
        live = g.train(*key, steps=PREFIX)
        run = runs[key]
        keep = run.steps <= PREFIX
        np.testing.assert_array_equal(live.steps, run.steps[keep])
        scale = np.max(np.abs(live.diagonals))
        np.testing.assert_allclose(run.diagonals[keep], live.diagonals, rtol=TOL,
                                   atol=TOL * scale, err_msg=str(key))


def test_the_two_starts_differ_and_the_random_one_has_the_balanced_norm():
    g = stored.group(NAME, "quick")
    bal, rnd = g.init("balanced", 0), g.init("random", 0)

    def norm(prm):
        return np.sqrt(np.sum(prm.WP_y ** 2) + np.sum(prm.WQ_x ** 2))

    # 4 d^2 = 64 entries of N(0, r^2): the norm is within 30 % of the balanced one
    assert norm(rnd) == pytest.approx(norm(bal), rel=0.3)
    assert np.abs(rnd.p1).max() > 0 and np.abs(bal.p1).max() == 0


def test_a_whole_run_regenerates_with_its_losses(runs):
    g = stored.group(NAME, "quick")
    key = (2, 1, "random", 0)
    live, run = g.train(*key), runs[key]
    for which in ("test", "train"):
        a, b = getattr(live, which), getattr(run, which)
        np.testing.assert_allclose([a.loss, *a.ablated, *a.rms], [b.loss, *b.ablated, *b.rms],
                                   rtol=1e-5, err_msg=which)
    np.testing.assert_allclose(run.late_blocks, live.late_blocks, rtol=1e-5, atol=1e-7)
