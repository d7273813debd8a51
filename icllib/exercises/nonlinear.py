"""Checkers for the exercises of chapters 6 and 7 (book/06-nonlinear-metrics.md,
book/07-grokking.md)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from .core import CheckResult, check_function

__all__ = ["check_induction_score", "check_embedding_fourier_power"]


def _sample_pattern_inputs(rng):
    """Random causal softmax patterns (batch 1..5, 1..3 heads, T 3..12) and periods."""
    B, H, T = int(rng.integers(1, 6)), int(rng.integers(1, 4)), int(rng.integers(3, 13))
    logits = rng.standard_normal((B, H, T, T)) * 2
    logits = np.where(np.tril(np.ones((T, T), bool)), logits, -np.inf)
    attn = np.exp(logits - logits.max(-1, keepdims=True))
    attn /= attn.sum(-1, keepdims=True)
    return {"attn": attn, "period": rng.integers(1, T, size=B)}


def check_induction_score(candidate: Callable, *, trials: int = 20,
                          seed: int = 0) -> CheckResult:
    """Check ``candidate(attn, period) -> (n_heads,)`` (chapter 6's exercise).

    Reference: :func:`icllib.nonlinear.induction.induction_score` (book chapter 6, 'Head
    scores'), on random causal softmax patterns (batch 1..5, 1..3 heads, ``T`` 3..12) with
    random periods; relative tolerance ``1e-9``.
    """
    from ..nonlinear.induction.analysis import induction_score

    return check_function(candidate, induction_score, _sample_pattern_inputs, trials=trials,
                          seed=seed, rtol=1e-9, atol=1e-12, name="induction_score")


def _sample_embedding_inputs(rng):
    """A random embedding of ``p`` (2..39) numbers, with or without the "=" row, and ``p``."""
    p = int(rng.integers(2, 40))
    W_E = rng.standard_normal((p + int(rng.integers(0, 2)), int(rng.integers(1, 9))))
    return {"W_E": W_E, "p": p}


def check_embedding_fourier_power(candidate: Callable, *, trials: int = 20,
                                  seed: int = 0) -> CheckResult:
    """Check ``candidate(W_E, p) -> (p // 2 + 1,)`` (chapter 7's exercise).

    Reference: :func:`icllib.nonlinear.grokking.embedding_fourier_power` (Nanda et al. 2023;
    book chapter 7), on random embeddings of ``p`` in ``2..39`` numbers (``d`` in ``1..8``,
    sometimes with the "=" row, which must be ignored); relative tolerance ``1e-9``.
    """
    from ..nonlinear.grokking.analysis import embedding_fourier_power

    return check_function(candidate, embedding_fourier_power, _sample_embedding_inputs,
                          trials=trials, seed=seed, rtol=1e-9, atol=1e-12, name="fourier power")
