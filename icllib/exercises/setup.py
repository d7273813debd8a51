"""Checkers for the exercises of chapter 1 (book/01-setup.md)."""

from __future__ import annotations

from collections.abc import Callable

from .core import CheckResult, check_function

__all__ = ["check_prediction_at_convergence"]


def _sample_prediction_inputs(rng):
    """Random prompts' statistics with a random rotated covariance (any d, N, batch)."""
    from ..data import DataConfig, random_rotation, sample_prompts

    d = int(rng.integers(1, 6))
    N = int(rng.integers(1, 40))
    B = int(rng.integers(1, 5))
    s = rng.uniform(0.2, 3.0, size=d)
    cfg = DataConfig(s=s, N=N, U=random_rotation(d, rng))
    batch = sample_prompts(cfg, B, rng)
    return {"W": batch.W, "Sigma_hat": batch.Sigma_hat, "xq": batch.xq,
            "Sigma_x": cfg.Sigma_x, "N": N}


def check_prediction_at_convergence(candidate: Callable, *, trials: int = 20,
                                    seed: int = 0) -> CheckResult:
    """Check ``candidate(W, Sigma_hat, xq, Sigma_x, N)`` against the preconditioned estimator.

    Reference: :func:`icllib.theory.prediction_at_convergence`,
    ``y_hat = W Sigma_hat [((N+1)/N) Sigma_x + (Tr Sigma_x / N) I]^{-1} x_q`` (book
    chapter 3, 'What the converged model computes'), on batches of ``1..4`` prompts with ``d``
    in ``1..5``, ``N`` in ``1..39`` and a
    random rotated ``Sigma_x``.  Tolerance ``rtol = 1e-7``.
    """
    from ..theory import prediction_at_convergence

    return check_function(candidate, prediction_at_convergence, _sample_prediction_inputs,
                          trials=trials, seed=seed, rtol=1e-7, atol=1e-10,
                          name="prediction_at_convergence")
