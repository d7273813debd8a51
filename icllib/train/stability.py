"""The stable learning-rate range of SGD, and what happens outside it (book chapter 4).

:func:`stable_eta` estimates the largest stable step from the top curvature of the loss
(paper eq. 14); :func:`icllib.train.train_sgd` raises :class:`DivergenceError`, naming that
estimate, when the batch loss explodes.
"""

from __future__ import annotations

import numpy as np

from ..data import DataConfig
from ..theory import s_inf
from ..validation import check_instance, check_real

__all__ = ["DIVERGENCE_FACTOR", "DivergenceError", "stable_eta"]

#: a batch loss this many times above the reference loss counts as divergence
DIVERGENCE_FACTOR = 1e6


class DivergenceError(FloatingPointError):
    """SGD left the stable range: the loss became non-finite or exploded.

    Parameters
    ----------
    message : str
    step : int
        The step at which training diverged: the batch loss of the parameters after ``step``
        updates was non-finite or exploded (training for ``step - 1`` steps does not raise).
        Kept as the attribute ``step``.
    """

    def __init__(self, message: str, step: int) -> None:
        super().__init__(message)
        self.step = int(step)

    def __reduce__(self):  # pickles (multiprocessing) with its step
        return (type(self), (self.args[0], self.step))


def stable_eta(config, conserved=0.0):
    """Estimated upper end of the stable learning-rate range, ``0 < eta < stable_eta``.

    Gradient descent on a loss with top Hessian eigenvalue ``h`` is stable for
    ``eta < 2 / h``.  In mode ``alpha`` the expected loss is
    ``1/2 s^2 s_inf (p q - 1/s_inf)^2 + const`` (paper eq. 14); on the fixed-point
    hyperbola ``p q = 1/s_inf`` its Hessian is ``s^2 s_inf [q, p]^T [q, p]``, of top eigenvalue
    ``s^2 s_inf (p^2 + q^2) = s^2 sqrt((s_inf C)^2 + 4)`` with ``C = p^2 - q^2`` conserved.
    This is the largest curvature met along the trajectory (at the saddle it is ``s^2``), and
    it is largest for the top mode ``s_max``, so

        stable_eta = 2 / (s_max^2 sqrt((s_inf,max C)^2 + 4)),

    which is ``1 / s_max^2`` from a balanced start (``C = 0``).  For ``eta`` above it the top
    mode overshoots and blows up within a few steps.

    It is the large-batch limit.  Per-prompt gradients are heavy-tailed (quartic in Gaussian
    inputs and tasks), and with small ``B`` rare large kicks throw the parameters where the
    curvature is larger: measured at ``s = (4, 2, 1, 0.5)``, ``N = 10`` from a balanced start
    (3000 steps, 3 seeds), SGD stayed stable up to about 0.5 of this value at ``B = 1024``,
    0.3 at ``B = 256``, 0.2 at ``B = 64``, and not even at 0.1 for ``B = 16``.  It also
    ignores label noise and the coupling of the exact mean flow.

    Parameters
    ----------
    config : DataConfig
    conserved : float
        ``||W^P_y||_F^2 - ||W^Q_{:,x}||_F^2`` of the start (0 for a balanced start).

    Returns
    -------
    float
    """
    check_instance("config", config, DataConfig)
    C = check_real("conserved", conserved)
    i = int(np.argmax(config.s))
    s_max = float(config.s[i])
    k = float(s_inf(config.s, config.N)[i])
    return 2.0 / (s_max**2 * np.sqrt((k * C) ** 2 + 4.0))
