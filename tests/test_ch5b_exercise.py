"""Chapter 5b's exercise 1: a task set that cannot push the model off the reduced manifold."""

import numpy as np

from icllib.exercises.finite_tasks import check_manifold_preserving_set


def symmetric_set(P, d, rng):
    half = rng.standard_normal((P // 2, d))
    return np.concatenate([half, -half])          # lambda and -lambda: every odd moment is 0


def test_the_symmetrised_set_passes():
    assert check_manifold_preserving_set(symmetric_set)


def test_plausible_wrong_answers_fail(capsys):
    # a plain draw (the drives are O(1/sqrt P), not 0)
    assert not check_manifold_preserving_set(lambda P, d, rng: rng.standard_normal((P, d)))
    # centred tasks: the mean task vanishes but the third moments do not
    assert not check_manifold_preserving_set(
        lambda P, d, rng: (lambda x: x - x.mean(0))(rng.standard_normal((P, d))))
    # no tasks at all (every drive is zero, trivially)
    assert not check_manifold_preserving_set(lambda P, d, rng: np.zeros((P, d)))
    # the same fixed set whatever the generator
    assert not check_manifold_preserving_set(
        lambda P, d, rng: np.concatenate([np.ones((P // 2, d)), -np.ones((P // 2, d))]))
    # wrong shape
    assert not check_manifold_preserving_set(lambda P, d, rng: np.zeros((d, P)))
    out = capsys.readouterr().out
    assert "still drives" in out and "second moment" in out and "same set" in out
