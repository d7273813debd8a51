"""Checkers for the book's coding exercises.

A checker calls the reader's function and icllib's reference implementation on the same
random inputs, compares the outputs, prints a one-line verdict and returns a
:class:`CheckResult` (truthy when the reader's function passed).  The book's figures always
come from the reference code, never from the reader's answer.

Layout: :func:`check_function` is the generic engine; every exercise has a small
``check_<thing>`` wrapper below it that names the reference and draws the inputs.  Chapter
writers add new wrappers at the end of this file (append only).

Example
-------
>>> from icllib.exercises import check_exact_mean_velocity
>>> from icllib.flows import exact_mean_velocity
>>> result = check_exact_mean_velocity(lambda p, q, s, N, eta: exact_mean_velocity(p, q, s, N, eta=eta))
PASSED exact_mean_velocity: ...
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any, Callable, Mapping

import numpy as np

from .validation import check_int, check_nonnegative

__all__ = [
    "CheckResult",
    "check_function",
    "check_prediction_at_convergence",
    "check_exact_mean_velocity",
    "check_exact_fixed_point",
    "check_logistic_a",
    "check_paper_loss",
]


@dataclass(frozen=True)
class CheckResult:
    """Outcome of a checker.

    Attributes
    ----------
    passed : bool
        True when the candidate agreed with the reference on every trial.
    name : str
        What was checked.
    trials : int
        Number of trials run (the failing trial included).
    max_error : float
        Largest ``|candidate - reference| / (atol + rtol |reference|)`` seen (``<= 1`` passes);
        ``nan`` when the candidate raised or returned the wrong shape.
    message : str
        The verdict that was printed.
    """

    passed: bool
    name: str
    trials: int
    max_error: float
    message: str

    def __bool__(self) -> bool:
        return self.passed


def _as_outputs(value) -> list[np.ndarray]:
    """A function's return value as a list of float arrays (a tuple/list gives several)."""
    if isinstance(value, (tuple, list)):
        return [np.asarray(v, dtype=float) for v in value]
    return [np.asarray(value, dtype=float)]


def _describe(inputs: Mapping[str, Any]) -> str:
    parts = []
    for k, v in inputs.items():
        if isinstance(v, np.ndarray):
            parts.append(f"{k}: array of shape {v.shape}")
        elif hasattr(v, "WP") and hasattr(v, "WQ"):
            parts.append(f"{k}: Params with d = {v.WP.shape[0] // 2}")
        else:
            parts.append(f"{k} = {v!r}")
    return ", ".join(parts)


def check_function(candidate: Callable, reference: Callable, sample_inputs: Callable,
                   *, trials: int = 20, rtol: float = 1e-7, atol: float = 1e-10,
                   seed: int = 0, name: str | None = None, verbose: bool = True) -> CheckResult:
    """Compare ``candidate(**inputs)`` with ``reference(**inputs)`` on random inputs.

    Parameters
    ----------
    candidate : callable
        The reader's function.
    reference : callable
        icllib's implementation, called with the same keyword arguments.
    sample_inputs : callable
        ``sample_inputs(rng) -> dict`` of keyword arguments for one trial, drawn from the
        ``numpy.random.Generator`` it is given.
    trials : int
        Number of random input sets, ``>= 1``.
    rtol, atol : float
        An output element passes when ``|c - r| <= atol + rtol |r|``.
    seed : int
        Seed of the generator that draws the inputs (the check is reproducible).
    name : str, optional
        Name used in the verdict (default: the candidate's ``__name__``).
    verbose : bool
        Print the verdict.

    Returns
    -------
    CheckResult
        Truthy when every output of every trial agreed.  The candidate receives its own copy
        of the inputs, so a function that modifies its arguments cannot corrupt the reference.
    """
    if not callable(candidate):
        raise ValueError(f"candidate must be a function, got {type(candidate).__name__}")
    if not callable(reference) or not callable(sample_inputs):
        raise ValueError("reference and sample_inputs must be callables")
    trials = check_int("trials", trials, 1)
    rtol = check_nonnegative("rtol", rtol)
    atol = check_nonnegative("atol", atol)
    if rtol == 0 and atol == 0:
        raise ValueError("rtol and atol cannot both be 0")
    name = name or getattr(candidate, "__name__", "your function")
    rng = np.random.default_rng(seed)
    worst = 0.0

    def verdict(passed, n, err, text):
        msg = ("PASSED " if passed else "FAILED ") + f"{name}: " + text
        if verbose:
            print(msg)
        return CheckResult(passed, name, n, err, msg)

    for trial in range(1, trials + 1):
        inputs = sample_inputs(rng)
        expected = _as_outputs(reference(**copy.deepcopy(inputs)))
        try:
            got_raw = candidate(**copy.deepcopy(inputs))
        except NotImplementedError:
            return verdict(False, trial, float("nan"),
                           "not implemented yet (it raised NotImplementedError).")
        except Exception as exc:  # the reader's bug, reported rather than raised
            return verdict(False, trial, float("nan"),
                           f"raised {type(exc).__name__}: {exc} on trial {trial} "
                           f"({_describe(inputs)}).")
        try:
            got = _as_outputs(got_raw)
        except (TypeError, ValueError):
            return verdict(False, trial, float("nan"),
                           f"returned {type(got_raw).__name__}, which is not an array "
                           f"(trial {trial}).")
        if len(got) != len(expected):
            return verdict(False, trial, float("nan"),
                           f"returned {len(got)} output(s), expected {len(expected)} "
                           f"(trial {trial}).")
        for k, (g, e) in enumerate(zip(got, expected)):
            which = f"output {k}" if len(expected) > 1 else "the output"
            if g.shape != e.shape:
                return verdict(False, trial, float("nan"),
                               f"{which} has shape {g.shape}, expected {e.shape} on trial "
                               f"{trial} ({_describe(inputs)}).")
            if not np.all(np.isfinite(g)):
                return verdict(False, trial, float("nan"),
                               f"{which} contains non-finite values on trial {trial}.")
            err = float(np.max(np.abs(g - e) / (atol + rtol * np.abs(e)))) if e.size else 0.0
            worst = max(worst, err)
            if err > 1.0:
                i = np.unravel_index(np.argmax(np.abs(g - e) / (atol + rtol * np.abs(e))), e.shape)
                return verdict(False, trial, err,
                               f"{which} differs on trial {trial} ({_describe(inputs)}): at "
                               f"index {tuple(int(j) for j in i)} expected {e[i]:.6g}, got "
                               f"{g[i]:.6g}.")
    return verdict(True, trials, worst,
                   f"agrees with the reference on {trials} random inputs "
                   f"(largest error {worst:.2g} of the tolerance rtol={rtol:g}, atol={atol:g}).")


# ---------------------------------------------------------------------------------------
# chapter 1 (book/01-setup.md)
# ---------------------------------------------------------------------------------------

def _sample_prediction_inputs(rng):
    """Random prompts' statistics with a random rotated covariance (any d, N, batch)."""
    from .data import DataConfig, random_rotation, sample_prompts

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
    from .theory import prediction_at_convergence

    return check_function(candidate, prediction_at_convergence, _sample_prediction_inputs,
                          trials=trials, seed=seed, rtol=1e-7, atol=1e-10,
                          name="prediction_at_convergence")


# ---------------------------------------------------------------------------------------
# chapter 2 (book/02-dynamics.md)
# ---------------------------------------------------------------------------------------

def _sample_mode_inputs(rng):
    d = int(rng.integers(1, 7))
    return {"p": rng.standard_normal(d), "q": rng.standard_normal(d),
            "s": rng.uniform(0.1, 3.0, size=d), "N": int(rng.integers(1, 60)),
            "eta": float(rng.uniform(0.01, 0.2))}


def check_exact_mean_velocity(candidate: Callable, *, trials: int = 20,
                              seed: int = 0) -> CheckResult:
    """Check ``candidate(p, q, s, N, eta) -> (dp, dq)`` against the exact mean flow.

    Reference: :func:`icllib.flows.exact_mean_velocity` (book chapter 2, 'The exact mean
    loss and its gradient flow'), the gradient flow ``-eta grad l(p, q)`` of the exact mean
    loss, on random ``p, q`` (both signs),
    spectra ``s`` in ``[0.1, 3]`` with ``d`` in ``1..6``, ``N`` in ``1..59``.  Tolerance
    ``rtol = 1e-7``.
    """
    from .flows import exact_mean_velocity

    def reference(p, q, s, N, eta):
        return exact_mean_velocity(p, q, s, N, eta=eta)

    return check_function(candidate, reference, _sample_mode_inputs, trials=trials, seed=seed,
                          rtol=1e-7, atol=1e-12, name="exact_mean_velocity")


# ---------------------------------------------------------------------------------------
# chapter 3 (book/03-fixed-points.md)
# ---------------------------------------------------------------------------------------

def _sample_all_active_spectrum(rng):
    """A spectrum and context length for which every mode of the exact minimiser is active.

    Draws ``d`` in ``1..6``, ``s`` log-uniform in ``[0.1, 5]`` and ``N`` in ``1..300``, and
    redraws until ``sqrt(s_min) (N + 1 + d) > sum_b sqrt(s_b)`` (book chapter 3, 'Where
    training really stops: the exact fixed point': every bracket of ``a*`` positive, so the
    closed form needs no water-filling).
    """
    while True:
        d = int(rng.integers(1, 7))
        s = np.exp(rng.uniform(np.log(0.1), np.log(5.0), size=d))
        N = int(rng.integers(1, 301))
        if np.sqrt(s.min()) * (N + 1 + d) > np.sqrt(s).sum() * (1 + 1e-6):
            return {"s": s, "N": N}


def check_exact_fixed_point(candidate: Callable, *, trials: int = 20,
                            seed: int = 0) -> CheckResult:
    """Check ``candidate(s, N) -> a*`` against the minimiser of the exact mean loss.

    Reference: :func:`icllib.theory.exact_fixed_point` (book chapter 3, 'Where training
    really stops: the exact fixed point'),
    ``a*_a = (N / ((N+1) s_a)) [1 - (sum_b sqrt(s_b)) / ((N+1+d) sqrt(s_a))]``, on random
    spectra (``d`` in ``1..6``, ``s`` in ``[0.1, 5]``) and ``N`` in ``1..300`` for which every
    mode is active.  Tolerance ``rtol = 1e-9``.
    """
    from .theory import exact_fixed_point

    return check_function(candidate, exact_fixed_point, _sample_all_active_spectrum,
                          trials=trials, seed=seed, rtol=1e-9, atol=1e-12,
                          name="exact_fixed_point")


# ---------------------------------------------------------------------------------------
# chapter 4 (book/04-timescales.md)
# ---------------------------------------------------------------------------------------

def _sample_logistic_inputs(rng):
    """Times, a balanced initial product (below or above a_inf), spectrum, N and eta."""
    d = int(rng.integers(1, 6))
    s = np.exp(rng.uniform(np.log(0.1), np.log(4.0), size=d))
    N = int(rng.integers(1, 200))
    eta = float(np.exp(rng.uniform(np.log(1e-3), np.log(0.1))))
    tau_max = 1.0 / (eta * s.min() ** 2)
    t = np.sort(rng.uniform(0.0, 12.0 * tau_max, size=int(rng.integers(1, 30))))
    a0 = float(np.exp(rng.uniform(np.log(1e-8), np.log(3.0))))
    return {"t": t, "a0": a0, "s": s, "N": N, "eta": eta}


def check_logistic_a(candidate: Callable, *, trials: int = 20, seed: int = 0) -> CheckResult:
    """Check ``candidate(t, a0, s, N, eta) -> a`` (shape ``(len(t), len(s))``).

    Reference: :func:`icllib.theory.logistic_a` (paper eq. 12; book chapter 4, 'The logistic
    solution'),
    ``a(t) = a_inf a0 / (a0 + (a_inf - a0) exp(-2 t / tau))``, ``a_inf = 1/s_inf``,
    ``tau = 1/(eta s^2)`` (SGD steps), on random times up to 12 of the slowest ``tau``,
    ``a0`` log-uniform in ``[1e-8, 3]`` (so also above ``a_inf``), ``d`` in ``1..5``,
    ``s`` in ``[0.1, 4]``, ``N`` in ``1..199``, ``eta`` in ``[1e-3, 0.1]``.
    Tolerance ``rtol = 1e-8``.
    """
    from .theory import logistic_a

    return check_function(candidate, logistic_a, _sample_logistic_inputs, trials=trials,
                          seed=seed, rtol=1e-8, atol=1e-14, name="logistic_a")


# ---------------------------------------------------------------------------------------
# chapter 5 (book/05-loss.md)
# ---------------------------------------------------------------------------------------

def _sample_paper_loss_inputs(rng):
    """Products ``a`` (T, d) on the scale ``1/s`` (both signs), a spectrum and ``N``."""
    d = int(rng.integers(1, 6))
    s = np.exp(rng.uniform(np.log(0.1), np.log(4.0), size=d))
    T = int(rng.integers(1, 20))
    a = rng.uniform(-0.5, 2.0, size=(T, d)) / s
    return {"a": a, "s": s, "N": int(rng.integers(1, 300))}


def check_paper_loss(candidate: Callable, *, trials: int = 20, seed: int = 0) -> CheckResult:
    """Check ``candidate(a, s, N) -> L`` (shape ``(T,)`` for ``a`` of shape ``(T, d)``).

    Reference: :func:`icllib.theory.paper_loss`, the paper's eq. 14 as corrected in the book
    (chapter 5, 'The loss as a function of the modes'),
    ``L = 1/2 sum_a s_a (1 - 2 s_a a_a + s_a s_inf_a a_a^2)``, on random
    products ``a`` (both signs, on the scale ``1/s``), ``d`` in ``1..5``, ``s`` in
    ``[0.1, 4]``, ``N`` in ``1..299``.  Tolerance ``rtol = 1e-9``.
    """
    from .theory import paper_loss

    return check_function(candidate, paper_loss, _sample_paper_loss_inputs, trials=trials,
                          seed=seed, rtol=1e-9, atol=1e-12, name="paper_loss")
