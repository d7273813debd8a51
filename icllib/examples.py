"""The book's running example and the few other spectra a chapter needs to make a point.

Every chapter of the linear part (introduction, chapters 1-5, departures) works with one
setting, so a number met in one chapter is the same number in the next:

    s = (4, 2, 1, 0.5)   (d = 4, Tr S = 7.5),  N = 10,  eta = 0.01,  a0 = 1e-4

``eta`` is the SGD step size on the batch-*mean* loss (time in SGD steps, ``tau = 1/(eta s^2)``)
and ``a0`` the product ``p q`` of each mode at a balanced start.  Other spectra appear only
where a point needs them, and the chapter says why; they are collected in :data:`SPECTRA`
with the running example's trace, so losses stay comparable.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .validation import check_int, check_positive, check_spectrum

__all__ = ["RunningExample", "RUNNING_EXAMPLE", "SPECTRA"]


@dataclass(frozen=True)
class RunningExample:
    """One setting of the linear model: spectrum, context length, step size, start.

    Parameters
    ----------
    s : array_like, shape (d,)
        Eigenvalues of the input covariance, largest first.
    N : int
        Context length (number of labelled examples in a prompt).
    eta : float
        SGD step size on the batch-mean loss.
    a0 : float
        Starting product ``p_a q_a`` of every mode (balanced start ``p_a = q_a``).
    """

    s: np.ndarray = field(default_factory=lambda: np.array([4.0, 2.0, 1.0, 0.5]))
    N: int = 10
    eta: float = 0.01
    a0: float = 1e-4

    def __post_init__(self):
        s = check_spectrum("s", self.s)
        s.setflags(write=False)
        object.__setattr__(self, "s", s)
        object.__setattr__(self, "N", check_int("N", self.N, minimum=1))
        object.__setattr__(self, "eta", check_positive("eta", self.eta))
        object.__setattr__(self, "a0", check_positive("a0", self.a0))

    @property
    def d(self) -> int:
        """Task dimension (number of modes)."""
        return int(self.s.size)

    @property
    def p0(self) -> float:
        """Balanced starting amplitude ``p_a = q_a = sqrt(a0)``."""
        return float(np.sqrt(self.a0))


#: the book's running example
RUNNING_EXAMPLE = RunningExample()


def _same_trace(values) -> np.ndarray:
    values = np.asarray(values, dtype=float)
    return values * RUNNING_EXAMPLE.s.sum() / values.sum()


#: spectra with the running example's trace (7.5), each used where the text says why
SPECTRA = {
    "running example": RUNNING_EXAMPLE.s,
    "isotropic": _same_trace([1.0, 1.0, 1.0, 1.0]),
    "steep": _same_trace([16.0, 4.0, 1.0, 0.25]),
}
for _spectrum in SPECTRA.values():
    _spectrum.setflags(write=False)
del _spectrum
