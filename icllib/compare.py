"""Which theory does a simulation follow?  Checks that can tell two theories apart.

A check that says "SGD follows theory X" is only worth something if it would fail for the
theory the book says is off.  :func:`theory_verdict` measures the distance of an observation
from each candidate theory in units of the observation's uncertainty (a Monte-Carlo standard
error, a seed-to-seed spread, or a stated tolerance); :func:`check_follows` asserts that the
observation is consistent with one theory *and* inconsistent with the other, and says so
plainly when the setting cannot separate them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .validation import check_array, check_positive

__all__ = ["TheoryDistance", "theory_distance", "theory_verdict", "check_follows"]


@dataclass(frozen=True)
class TheoryDistance:
    """How far an observation is from one theory.

    Attributes
    ----------
    name : str
        The theory's name.
    z : float
        Largest ``|observed - theory| / uncertainty`` over all points.
    worst : int
        Flat index of the point where ``z`` is reached.
    """

    name: str
    z: float
    worst: int


def theory_distance(name, observed, uncertainty, theory) -> TheoryDistance:
    """Largest standardised distance of ``observed`` from ``theory``.

    Parameters
    ----------
    name : str
        Name of the theory (used in messages).
    observed, uncertainty, theory : array_like
        Observation, its uncertainty (> 0, broadcastable) and the theory's prediction.
    """
    observed = check_array("observed", observed)
    theory = check_array("theory", np.broadcast_to(theory, observed.shape))
    uncertainty = check_array("uncertainty", np.broadcast_to(uncertainty, observed.shape))
    if np.any(uncertainty <= 0):
        raise ValueError(f"uncertainty must be > 0 everywhere, got min {uncertainty.min():g}")
    z = np.abs(observed - theory) / uncertainty
    worst = int(np.argmax(z))
    return TheoryDistance(str(name), float(z.flat[worst]), worst)


def theory_verdict(observed, uncertainty, theories: dict, *, z_max: float = 4.0) -> dict:
    """Standardised distance of an observation from several theories, and which fit.

    Returns
    -------
    dict
        ``{name: (TheoryDistance, consistent)}`` with ``consistent = z <= z_max``.
    """
    z_max = check_positive("z_max", z_max)
    out = {}
    for name, prediction in theories.items():
        distance = theory_distance(name, observed, uncertainty, prediction)
        out[name] = (distance, distance.z <= z_max)
    return out


def check_follows(observed, uncertainty, follows, rejects, *, z_max: float = 4.0,
                  what: str = "the simulation") -> tuple[TheoryDistance, TheoryDistance]:
    """Assert that ``observed`` follows one theory and not the other.

    Parameters
    ----------
    observed, uncertainty : array_like
        Observation and its uncertainty (> 0).
    follows, rejects : tuple (name, prediction)
        The theory the observation should follow and the one it should *not* follow.
    z_max : float
        Largest standardised distance counted as agreement (default 4).
    what : str
        What was observed, for the error message.

    Raises
    ------
    AssertionError
        If the observation is more than ``z_max`` uncertainties from ``follows``, or within
        ``z_max`` of ``rejects`` (the setting cannot tell the two theories apart).
    """
    (good_name, good), (bad_name, bad) = follows, rejects
    verdict = theory_verdict(observed, uncertainty, {good_name: good, bad_name: bad}, z_max=z_max)
    (good_distance, good_ok), (bad_distance, bad_ok) = verdict[good_name], verdict[bad_name]
    if not good_ok:
        raise AssertionError(
            f"{what} is {good_distance.z:.1f} uncertainties from {good_name} "
            f"(allowed {z_max:g}; worst at flat index {good_distance.worst})")
    if bad_ok:
        raise AssertionError(
            f"{what} cannot tell {good_name} from {bad_name}: it is within "
            f"{bad_distance.z:.1f} <= {z_max:g} uncertainties of {bad_name} too")
    return good_distance, bad_distance
