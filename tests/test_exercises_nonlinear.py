"""icllib.exercises.nonlinear, the checkers of chapters 6 and 7: the induction score and the
embedding's Fourier power; each accepts its reference and rejects a plausible wrong answer."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from icllib.exercises import check_induction_score  # noqa: E402
from icllib.nonlinear.induction import induction_score  # noqa: E402


def test_induction_score_checker_accepts_the_reference_and_rejects_an_off_by_one():
    assert check_induction_score(induction_score, trials=5).passed

    def off_by_one(attn, period):                              # attends to j - L (wrong)
        B, H, T, _ = attn.shape
        return np.array([np.mean([attn[b, h, j, j - period[b]] for b in range(B)
                                  for j in range(period[b], T)]) for h in range(H)])

    assert not check_induction_score(off_by_one, trials=5).passed


def test_embedding_fourier_power_checker_accepts_the_reference_and_rejects_a_wrong_answer():
    from icllib.exercises import check_embedding_fourier_power
    from icllib.nonlinear.grokking import embedding_fourier_power

    assert check_embedding_fourier_power(embedding_fourier_power, trials=5).passed

    def unfolded(W_E, p):                       # forgets to add the power of p - k
        power = (np.abs(np.fft.fft(np.asarray(W_E, float)[:p], axis=0)) ** 2).sum(axis=1)
        return power[: p // 2 + 1] / power[: p // 2 + 1].sum()

    assert not check_embedding_fourier_power(unfolded, trials=5).passed
