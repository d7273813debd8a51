"""icllib.stages: the balanced-start curves shared by chapters 4 and 5."""

import numpy as np
import pytest

from icllib.examples import RUNNING_EXAMPLE, SPECTRA
from icllib.stages import balanced_start_curves
from icllib.theory import escape_time, logistic_a, paper_loss, s_inf, tau

S, N, ETA = RUNNING_EXAMPLE.s, RUNNING_EXAMPLE.N, RUNNING_EXAMPLE.eta


def test_balanced_start_curves():
    c = balanced_start_curves(S, N, ETA, 1e-4, n_points=50)
    assert c.t[0] == 0 and c.t.size == 51 and np.all(np.diff(c.t) > 0)
    assert c.t[-1] == pytest.approx(6.0 * max(c.t_star.max(), tau(S, ETA).max()))
    np.testing.assert_allclose(c.t_star, escape_time(1e-4, S, N, ETA))
    np.testing.assert_allclose(c.paper_a, logistic_a(c.t, 1e-4, S, N, ETA))
    np.testing.assert_allclose(c.paper_loss, paper_loss(c.paper_a, S, N))
    np.testing.assert_allclose(c.exact.a[0], 1e-4)
    np.testing.assert_allclose(c.s_inf, s_inf(S, N))
    # isotropic spectrum: the paper's logistic is the exact flow
    iso = balanced_start_curves(SPECTRA["isotropic"], N, ETA, 1e-4, n_points=50)
    np.testing.assert_allclose(iso.exact.a, iso.paper_a, rtol=1e-7, atol=1e-12)
    with pytest.raises(ValueError, match="n_points"):
        balanced_start_curves(S, N, ETA, 1e-4, n_points=1)
    with pytest.raises(ValueError, match="a0"):
        balanced_start_curves(S, N, ETA, 1.0)
