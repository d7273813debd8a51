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

from .validation import check_array, check_int, check_positive

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
    beyond : int
        Number of points farther than ``z_max`` uncertainties from the theory (0 when no
        ``z_max`` was given).
    points : int
        Number of points compared.
    """

    name: str
    z: float
    worst: int
    beyond: int = 0
    points: int = 1


def theory_distance(name, observed, uncertainty, theory, *, z_max=None) -> TheoryDistance:
    """Largest standardised distance of ``observed`` from ``theory``.

    Parameters
    ----------
    name : str
        Name of the theory (used in messages).
    observed, uncertainty, theory : array_like
        Observation, its uncertainty (> 0, broadcastable) and the theory's prediction.
    z_max : float, optional
        When given, ``beyond`` counts the points farther than ``z_max`` uncertainties.
    """
    observed = check_array("observed", observed)
    theory = check_array("theory", np.broadcast_to(theory, observed.shape))
    uncertainty = check_array("uncertainty", np.broadcast_to(uncertainty, observed.shape))
    if np.any(uncertainty <= 0):
        raise ValueError(f"uncertainty must be > 0 everywhere, got min {uncertainty.min():g}")
    z = np.abs(observed - theory) / uncertainty
    worst = int(np.argmax(z))
    beyond = 0 if z_max is None else int(np.count_nonzero(z > check_positive("z_max", z_max)))
    return TheoryDistance(str(name), float(z.flat[worst]), worst, beyond, int(z.size))


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
        distance = theory_distance(name, observed, uncertainty, prediction, z_max=z_max)
        out[name] = (distance, distance.z <= z_max)
    return out


def check_follows(observed, uncertainty, follows, rejects, *, z_max: float = 4.0,
                  min_rejected=None,
                  what: str = "the simulation") -> tuple[TheoryDistance, TheoryDistance]:
    """Assert that ``observed`` follows one theory and not the other.

    The observation must lie within ``z_max`` uncertainties of ``follows`` at *every* point,
    and farther than ``z_max`` from ``rejects`` at *most* points (``min_rejected``; by
    default a strict majority). A single far point does not reject a theory: a claim that
    holds at one of several points (one mode, one time) is made about that point, by
    passing that point alone.

    Parameters
    ----------
    observed, uncertainty : array_like
        Observation and its uncertainty (> 0).
    follows, rejects : tuple (name, prediction)
        The theory the observation should follow and the one it should *not* follow.
    z_max : float
        Largest standardised distance counted as agreement (default 4).
    min_rejected : int, optional
        How many points must be farther than ``z_max`` from ``rejects`` (default
        ``n // 2 + 1`` of the ``n`` points; at most ``n``).
    what : str
        What was observed, for the error message.

    Raises
    ------
    AssertionError
        If the observation is more than ``z_max`` uncertainties from ``follows`` at any point,
        or farther than ``z_max`` from ``rejects`` at fewer than ``min_rejected`` points (the
        setting cannot tell the two theories apart there).
    """
    (good_name, good), (bad_name, bad) = follows, rejects
    verdict = theory_verdict(observed, uncertainty, {good_name: good, bad_name: bad}, z_max=z_max)
    (good_distance, good_ok), (bad_distance, _) = verdict[good_name], verdict[bad_name]
    n = bad_distance.points
    need = n // 2 + 1 if min_rejected is None else check_int("min_rejected", min_rejected, 1, n)
    if not good_ok:
        raise AssertionError(
            f"{what} is {good_distance.z:.1f} uncertainties from {good_name} "
            f"(allowed {z_max:g}; worst at flat index {good_distance.worst})")
    if bad_distance.beyond < need:
        raise AssertionError(
            f"{what} cannot tell {good_name} from {bad_name}: only {bad_distance.beyond} of "
            f"{n} points are farther than {z_max:g} uncertainties from {bad_name} "
            f"(need {need}; largest distance {bad_distance.z:.1f})")
    return good_distance, bad_distance
