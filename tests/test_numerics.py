"""icllib.numerics: the finite-difference Jacobian of a mode field (exact on polynomial
fields; the Hessians of the two losses and their neutral directions)."""

import numpy as np
import pytest

from icllib.flows import exact_mean_velocity, paper_velocity
from icllib.numerics import mode_jacobian
from icllib.theory import (
    exact_fixed_point_pq,
    exact_loss_grad,
    paper_fixed_point,
    paper_loss_grad,
    s_inf,
    saddle_eigenvalues,
)

S4 = np.array([4.0, 2.0, 1.0, 0.5])


@pytest.mark.parametrize("vel", [paper_velocity, exact_mean_velocity])
def test_mode_jacobian_at_the_saddle(vel):
    eta, N = 0.01, 10
    J = mode_jacobian(lambda p, q: vel(p, q, S4, N, eta=eta), np.zeros(4), np.zeros(4))
    expected = np.zeros((8, 8))
    inv_tau = eta * S4**2
    expected[:4, 4:] = np.diag(inv_tau)
    expected[4:, :4] = np.diag(inv_tau)
    np.testing.assert_allclose(J, expected, atol=1e-12)
    eig = np.sort(np.linalg.eigvals(J).real)
    np.testing.assert_allclose(eig, np.sort(saddle_eigenvalues(S4, eta).ravel()), rtol=1e-9)


def test_mode_jacobian_on_the_paper_hyperbola_is_rank_one_per_mode():
    N, eta = 10, 0.01
    k = s_inf(S4, N)
    p = np.array([0.3, 0.6, 1.0, 1.4])
    q = 1.0 / (k * p)
    J = mode_jacobian(lambda p, q: paper_velocity(p, q, S4, N, eta=eta), p, q)
    for a in range(4):      # -s_inf/tau v v^T with v = (q, p) in mode a's plane
        v = np.array([q[a], p[a]])
        block = J[np.ix_([a, 4 + a], [a, 4 + a])]
        np.testing.assert_allclose(block, -k[a] * eta * S4[a]**2 * np.outer(v, v), atol=1e-9)


def test_hessians_count_neutral_directions():
    N = 10
    pe, qe = exact_fixed_point_pq(S4, N)
    pp = np.sqrt(paper_fixed_point(S4, N))
    He = mode_jacobian(lambda p, q: exact_loss_grad(p, q, S4, N), pe, qe)
    Hp = mode_jacobian(lambda p, q: paper_loss_grad(p, q, S4, N), pp, pp)
    np.testing.assert_allclose(He, He.T, atol=1e-8)
    assert np.sum(np.abs(np.linalg.eigvalsh(He)) < 1e-6) == 1
    assert np.sum(np.abs(np.linalg.eigvalsh(Hp)) < 1e-6) == 4


def test_mode_jacobian_validates_its_arguments():
    def f(p, q):
        return p, q

    with pytest.raises(TypeError, match="field must be a function of \\(p, q\\), got int"):
        mode_jacobian(3, np.zeros(2), np.zeros(2))
    with pytest.raises(ValueError, match="q must have shape"):
        mode_jacobian(f, np.zeros(2), np.zeros(3))
    with pytest.raises(ValueError, match="h must be"):
        mode_jacobian(f, np.zeros(2), np.zeros(2), h=0.0)
