"""Checkers for the exercises of chapter 5 (book/05-loss.md)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from .core import CheckResult, check_function

__all__ = ["check_paper_loss", "check_exact_floor", "check_zero_product_excess"]


def _sample_paper_loss_inputs(rng):
    """Products ``a`` (T, d) on the scale ``1/s`` (both signs), a spectrum and ``N``."""
    d = int(rng.integers(1, 6))
    s = np.exp(rng.uniform(np.log(0.1), np.log(4.0), size=d))
    T = int(rng.integers(1, 20))
    a = rng.uniform(-0.5, 2.0, size=(T, d)) / s
    return {"a": a, "s": s, "N": int(rng.integers(1, 300))}


def check_paper_loss(candidate: Callable, *, trials: int = 20, seed: int = 0,
                     verbose: bool = True) -> CheckResult:
    """Check ``candidate(a, s, N) -> L`` (shape ``(T,)`` for ``a`` of shape ``(T, d)``).

    Reference: :func:`icllib.theory.paper_loss`, the paper's eq. 14 (book chapter 5, 'The
    loss as a function of the modes'), ``L = 1/2 sum_a s_a (1 - 2 s_a a_a + s_a s_inf_a a_a^2)``,
    on random products ``a`` (both signs, on the scale ``1/s``), ``d`` in ``1..5``, ``s`` in
    ``[0.1, 4]``, ``N`` in ``1..299``.  Tolerance ``rtol = 1e-9``.  ``verbose=False`` prints
    nothing (the verdict is still returned).
    """
    from ..theory import paper_loss

    return check_function(candidate, paper_loss, _sample_paper_loss_inputs, trials=trials,
                          seed=seed, rtol=1e-9, atol=1e-12, name="paper_loss",
                          verbose=verbose)


def _sample_floor_inputs(rng):
    """A spread spectrum (``d`` in 1..5, ``s`` in ``[0.01, 5]``) and a short context ``N``.

    Every other trial uses ``N`` in ``1..4``, where the weakest modes are often switched off
    (book chapter 3, water-filling); the rest use ``N`` in ``1..200``.
    """
    d = int(rng.integers(1, 6))
    s = np.sort(np.exp(rng.uniform(np.log(0.01), np.log(5.0), size=d)))[::-1]
    N = int(rng.integers(1, 5)) if rng.random() < 0.5 else int(rng.integers(1, 201))
    return {"s": s, "N": N}


def check_exact_floor(candidate: Callable, *, trials: int = 40, seed: int = 0,
                      verbose: bool = True) -> CheckResult:
    """Check ``candidate(s, N) -> l*``, the minimum of the exact mean loss, for any spectrum.

    Reference: :func:`icllib.theory.exact_converged_loss` (book chapter 5, 'The floor'), on
    spread spectra and short contexts where the exact minimiser switches modes off, so the
    all-active closed form is not enough.  Tolerance ``rtol = 1e-9``.  ``verbose=False`` prints
    nothing (the verdict is still returned).
    """
    from ..theory import exact_converged_loss

    return check_function(candidate, exact_converged_loss, _sample_floor_inputs, trials=trials,
                          seed=seed, rtol=1e-9, atol=1e-12, name="exact_floor",
                          verbose=verbose)


def check_zero_product_excess(p, q, *, s=(4.0, 2.0, 1.0, 0.5), N: int = 10,
                              excess: float = 0.1, verbose: bool = True) -> CheckResult:
    """Check a point ``(p, q)`` with every product ``p_a q_a = 0`` whose exact loss exceeds
    the paper's by at least ``excess`` (book chapter 5, exercise 'What the products cannot
    see').

    At such a point the paper's loss (its eq. 14, :func:`icllib.theory.paper_loss`) is
    ``Tr S / 2``, the loss of predicting zero; the exact mean loss
    (:func:`icllib.theory.exact_loss`) adds the coupling term
    ``(sum s p^2)(sum s^2 q^2) / (2N)``, the prediction leaked through the off-diagonal
    entries of the context covariance. Passes when every ``|p_a q_a| <= 1e-12`` and
    ``exact >= (1 + excess) paper``; defaults: the running example ``s = (4, 2, 1, 0.5)``,
    ``N = 10``. ``verbose=False`` prints nothing (the verdict is still returned).
    """
    from ..theory import exact_loss, paper_loss

    name = "zero_product_excess"
    s = np.asarray(s, dtype=float)

    def verdict(passed, text):
        msg = ("PASSED " if passed else "FAILED ") + f"{name}: " + text
        if verbose:
            print(msg)
        return CheckResult(passed, name, 1, 0.0 if passed else float("nan"), msg)

    try:
        p, q = np.asarray(p, dtype=float), np.asarray(q, dtype=float)
    except (TypeError, ValueError):
        return verdict(False, "p and q must be lists of numbers")
    if p.shape != s.shape or q.shape != s.shape or not (np.all(np.isfinite(p))
                                                         and np.all(np.isfinite(q))):
        return verdict(False, f"p and q must be {s.size} finite numbers each (one per mode)")
    if np.any(np.abs(p * q) > 1e-12):
        return verdict(False, f"the products p*q = {np.round(p * q, 6).tolist()} are not all 0")
    exact, paper = float(exact_loss(p, q, s, N)), float(paper_loss(p * q, s, N))
    ratio = exact / paper - 1
    return verdict(ratio >= excess, f"exact loss {exact:.4f} against the paper's {paper:.4f}: "
                                    f"{100 * ratio:.1f} % higher (wanted >= {100 * excess:g} %)")
