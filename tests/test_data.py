"""Tests for icllib.data: covariances, task sets, prompts and the exact Wishart sampler.

Monte-Carlo checks use z-scores: the deviation of a sample mean from its prediction divided by
the standard error estimated from the same samples.  With fixed seeds they are deterministic;
the threshold Z_MAX = 5 is exceeded by chance with probability ~6e-7 per statistic, while the
wrong formulas named in each test miss by tens to hundreds of standard errors.
"""

import numpy as np
import pytest

from icllib.data import (
    ContextStatistics,
    DataConfig,
    PromptBatch,
    covariance,
    random_rotation,
    sample_prompts,
    sample_statistics,
    sample_task_set,
    wishart_factor,
)
from icllib.theory import s_inf

Z_MAX = 5.0


def zscores(samples, predicted):
    """z-scores of the sample means (axis 0) against ``predicted``."""
    samples = np.asarray(samples)
    n = samples.shape[0]
    mean = samples.mean(axis=0)
    se = samples.std(axis=0, ddof=1) / np.sqrt(n)
    return (mean - predicted) / np.where(se > 0, se, np.inf)


def two_sample_z(a, b):
    a, b = np.asarray(a), np.asarray(b)
    se = np.sqrt(a.var(axis=0, ddof=1) / a.shape[0] + b.var(axis=0, ddof=1) / b.shape[0])
    return (a.mean(axis=0) - b.mean(axis=0)) / np.where(se > 0, se, np.inf)


# ----------------------------------------------------------------------------- covariance


def test_covariance_is_U_diag_s_UT():
    rng = np.random.default_rng(0)
    s = np.array([3.0, 1.0, 0.25])
    U = random_rotation(3, rng)
    Sigma = covariance(s, U)
    np.testing.assert_allclose(Sigma, Sigma.T, atol=0)
    np.testing.assert_allclose(U.T @ Sigma @ U, np.diag(s), atol=1e-12)
    np.testing.assert_allclose(np.sort(np.linalg.eigvalsh(Sigma)), np.sort(s), rtol=1e-12)
    np.testing.assert_array_equal(covariance(s), np.diag(s))


def test_random_rotation_is_orthogonal_and_seeded():
    Q = random_rotation(5, np.random.default_rng(1))
    np.testing.assert_allclose(Q.T @ Q, np.eye(5), atol=1e-12)
    np.testing.assert_array_equal(Q, random_rotation(5, np.random.default_rng(1)))
    assert not np.allclose(Q, random_rotation(5, np.random.default_rng(2)))


@pytest.mark.parametrize(
    "s, U, match",
    [
        ([1.0, -1.0], None, "s must hold positive"),
        ([1.0, 0.0], None, "s must hold positive"),
        ([1.0, np.nan], None, "s must hold positive"),
        ([1.0, np.inf], None, "s must hold positive"),
        ([[1.0, 2.0]], None, "s must be a 1-D"),
        ([], None, "s must be a 1-D"),
        ([1.0, 2.0], np.eye(3), "U must be an orthogonal 2 x 2"),
        ([1.0, 2.0], [[1.0, 1.0], [0.0, 1.0]], "U must be orthogonal"),
        ([1.0, 2.0], [[1.0, np.nan], [0.0, 1.0]], "U must hold finite"),
    ],
)
def test_covariance_rejects_bad_input(s, U, match):
    with pytest.raises(ValueError, match=match):
        covariance(s, U)


# ----------------------------------------------------------------------------- config


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(s=[1.0, 2.0], N=0), "N must be an integer >= 1, got 0"),
        (dict(s=[1.0, 2.0], N=5, P=0), "P must be an integer >= 1"),
        (dict(s=[1.0, 2.0], N=5, noise=-0.1), "noise must be a finite number >= 0"),
        (dict(s=[1.0, 2.0], N=5, noise=np.nan), "noise must be a finite number >= 0"),
        (dict(s=[1.0, -2.0], N=5), "s must hold positive"),
        (dict(s=[1.0, 2.0], N=5, U=np.eye(3)), "U must be an orthogonal 2 x 2"),
    ],
)
def test_data_config_rejects_bad_input(kwargs, match):
    with pytest.raises(ValueError, match=match):
        DataConfig(**kwargs)


@pytest.mark.parametrize("N", [2.5, True, "5"])
def test_data_config_rejects_a_count_of_the_wrong_type(N):
    with pytest.raises(TypeError, match="N must be an integer >= 1"):
        DataConfig(s=[1.0, 2.0], N=N)


def test_data_config_is_frozen_and_validated():
    cfg = DataConfig(s=[2, 1], N=np.int64(7))
    assert cfg.N == 7 and cfg.d == 2 and cfg.P is None
    np.testing.assert_array_equal(cfg.Sigma_x, np.diag([2.0, 1.0]))
    with pytest.raises(AttributeError):  # frozen dataclass: FrozenInstanceError
        cfg.N = 3
    with pytest.raises(ValueError, match="read-only"):
        cfg.s[0] = 5.0  # read-only array


# ----------------------------------------------------------------------------- tasks and prompts


def test_task_set_shares_the_eigenbasis_and_has_unit_variance_eigenvalues():
    rng = np.random.default_rng(3)
    U = random_rotation(4, rng)
    cfg = DataConfig(s=[4.0, 2.0, 1.0, 0.5], N=10, U=U, P=4000)
    tasks = sample_task_set(cfg, rng)
    assert tasks.shape == (4000, 4, 4)
    np.testing.assert_allclose(tasks, np.swapaxes(tasks, 1, 2), atol=1e-14)
    Sx = cfg.Sigma_x
    np.testing.assert_allclose(tasks @ Sx, Sx @ tasks, atol=1e-12)  # commute with Sigma_x
    lam = np.einsum("ji,pjk,ki->pi", U, tasks, U)  # diag(U^T W U)
    assert np.max(np.abs(zscores(lam, 0.0))) < Z_MAX
    assert np.max(np.abs(zscores(lam**2, 1.0))) < Z_MAX
    # a wrong variance (e.g. lambda ~ N(0, 2)) would be far off
    assert np.min(np.abs(zscores(lam**2, 2.0))) > 4 * Z_MAX


def test_task_set_needs_P():
    with pytest.raises(ValueError, match="config.P is None"):
        sample_task_set(DataConfig(s=[1.0], N=3), np.random.default_rng(0))


def test_prompt_layout_matches_eq4():
    rng = np.random.default_rng(4)
    U = random_rotation(3, rng)
    cfg = DataConfig(s=[2.0, 1.0, 0.5], N=6, U=U)
    b = sample_prompts(cfg, 5, rng)
    assert isinstance(b, PromptBatch)
    assert b.X.shape == (5, 6, 3) and b.Y.shape == (5, 6, 3)
    assert b.xq.shape == (5, 3) and b.W.shape == (5, 3, 3) and b.Z.shape == (5, 6, 7)
    np.testing.assert_allclose(b.Y, b.X @ np.swapaxes(b.W, 1, 2), atol=1e-13)  # y_i = W x_i
    Z = b.Z
    np.testing.assert_array_equal(Z[:, :3, :6], np.swapaxes(b.X, 1, 2))
    np.testing.assert_array_equal(Z[:, 3:, :6], np.swapaxes(b.Y, 1, 2))
    np.testing.assert_array_equal(Z[:, :3, 6], b.xq)
    np.testing.assert_array_equal(Z[:, 3:, 6], 0.0)  # the query's label slot
    np.testing.assert_allclose(b.target, np.einsum("bij,bj->bi", b.W, b.xq))
    np.testing.assert_allclose(b.Sigma_hat, np.einsum("bni,bnj->bij", b.X, b.X) / 6)


def test_prompts_from_a_task_set_use_only_those_tasks():
    rng = np.random.default_rng(5)
    cfg = DataConfig(s=[1.0, 0.5], N=4, P=3)
    tasks = sample_task_set(cfg, rng)
    for sampler in (sample_prompts, sample_statistics):
        b = sampler(cfg, 200, rng, tasks=tasks)
        dist = np.abs(b.W[:, None] - tasks[None]).max(axis=(2, 3))
        assert np.all(dist.min(axis=1) == 0.0)
        assert len(np.unique(dist.argmin(axis=1))) == 3
        np.testing.assert_allclose(b.Y, b.X @ np.swapaxes(b.W, 1, 2), atol=1e-13)
    # general (non-shared-basis) task matrices are used as given
    general = rng.standard_normal((2, 2, 2))
    b = sample_statistics(DataConfig(s=[1.0, 0.5], N=4), 50, rng, tasks=general)
    np.testing.assert_allclose(b.Y, b.X @ np.swapaxes(b.W, 1, 2), atol=1e-13)


@pytest.mark.parametrize("sampler", [sample_prompts, sample_statistics])
def test_samplers_reject_bad_input(sampler):
    rng = np.random.default_rng(0)
    cfg = DataConfig(s=[1.0, 0.5], N=4)
    with pytest.raises(ValueError, match="B must be an integer >= 1, got 0"):
        sampler(cfg, 0, rng)
    with pytest.raises(TypeError, match="rng must be a numpy.random.Generator"):
        sampler(cfg, 3, 42)
    with pytest.raises(ValueError, match=r"tasks must have shape \(P, 2, 2\)"):
        sampler(cfg, 3, rng, tasks=np.zeros((3, 3, 3)))
    with pytest.raises(ValueError, match="tasks must hold finite"):
        sampler(cfg, 3, rng, tasks=np.full((1, 2, 2), np.nan))
    with pytest.raises(ValueError, match="config.P = 2: pass the task set"):
        sampler(DataConfig(s=[1.0, 0.5], N=4, P=2), 3, rng)
    with pytest.raises(ValueError, match="tasks holds 3 tasks but config.P = 2"):
        sampler(DataConfig(s=[1.0, 0.5], N=4, P=2), 3, rng, tasks=np.zeros((3, 2, 2)))
    with pytest.raises(TypeError, match="config must be a DataConfig"):
        sampler({"s": [1.0], "N": 3}, 3, rng)


# ----------------------------------------------------------------------------- Wishart sampler


def test_statistics_sampler_draws_few_virtual_tokens():
    rng = np.random.default_rng(6)
    s = [2.0, 1.0, 0.5]
    st = sample_statistics(DataConfig(s=s, N=1000), 4, rng)
    assert isinstance(st, ContextStatistics) and st.C.shape == (4, 3, 6) and st.N == 1000
    st = sample_statistics(DataConfig(s=s, N=2), 4, rng)  # N < d: the QR factor has N rows
    assert st.C.shape == (4, 2, 6)
    st = sample_statistics(DataConfig(s=s, N=1000, noise=0.1), 4, rng)  # stacked [x; e]
    assert st.C.shape == (4, 6, 6)
    G = wishart_factor(4, 2, 3, rng)
    assert G.shape == (3, 2, 4) and np.all(np.tril(G, -1) == 0)
    assert np.all(np.diagonal(G, 0, 1, 2) > 0)


def wishart_second_moments(Sigma, N):
    """E[Sh_ij Sh_kl] for N Sh ~ Wishart(N, Sigma): S_ij S_kl + (S_ik S_jl + S_il S_jk) / N."""
    S = Sigma
    return (np.einsum("ij,kl->ijkl", S, S)
            + (np.einsum("ik,jl->ijkl", S, S) + np.einsum("il,jk->ijkl", S, S)) / N)


@pytest.mark.parametrize("N", [2, 3, 7, 40])
def test_both_samplers_match_wishart_moments(N):
    """Mean, entry covariance and E[Sigma_hat^2] = S s_inf(S) for both samplers (book ch. 2).

    N = 2 < d exercises the QR-factor branch, N = 3 = d the boundary.
    """
    rng = np.random.default_rng(100 + N)
    s = np.array([2.0, 1.0, 0.5])
    U = random_rotation(3, rng)
    cfg = DataConfig(s=s, N=N, U=U)
    Sx = cfg.Sigma_x
    n = 60_000
    second = wishart_second_moments(Sx, N)
    # the moment identity (book chapter 2) in the eigenbasis: E[Sigma_hat^2] = U S s_inf(S) U^T
    sq = U @ np.diag(s * s_inf(s, N)) @ U.T
    wrong_sq = U @ np.diag(s * s) @ U.T  # forgetting the finite-N terms
    results = {}
    for name, sampler in (("tokens", sample_prompts), ("statistics", sample_statistics)):
        Sh = sampler(cfg, n, rng).Sigma_hat
        flat = Sh.reshape(n, 9)
        prods = (flat[:, :, None] * flat[:, None, :]).reshape(n, 81)
        assert np.max(np.abs(zscores(flat, Sx.ravel()))) < Z_MAX, name
        assert np.max(np.abs(zscores(prods, second.reshape(81)))) < Z_MAX, name
        Sh2 = np.matmul(Sh, Sh).reshape(n, 9)
        assert np.max(np.abs(zscores(Sh2, sq.ravel()))) < Z_MAX, name
        assert np.max(np.abs(zscores(Sh2, wrong_sq.ravel()))) > 2 * Z_MAX, name
        results[name] = (flat, prods)
    # and the two samplers against each other
    for a, b in zip(results["tokens"], results["statistics"]):
        assert np.max(np.abs(two_sample_z(a, b))) < Z_MAX


def test_samplers_agree_with_label_noise():
    """With noise the whole context Gram C^T C / N (x, y and cross blocks) has one law."""
    rng = np.random.default_rng(7)
    cfg = DataConfig(s=[1.5, 0.5], N=9, noise=0.7)
    n = 60_000
    grams = {}
    for name, sampler in (("tokens", sample_prompts), ("statistics", sample_statistics)):
        b = sampler(cfg, n, rng)
        G = np.einsum("bmi,bmj->bij", b.C, b.C) / cfg.N
        grams[name] = G.reshape(n, 16)
        # E[Gamma_yy] = E[W Sx W^T] + noise^2 I = Sx + noise^2 I (E[lambda^2] = 1)
        Eyy = np.diag(cfg.s) + 0.49 * np.eye(2)
        assert np.max(np.abs(zscores(G[:, 2:, 2:].reshape(n, 4), Eyy.ravel()))) < Z_MAX
        # the noise-free law would miss by the 0.49 on the diagonal
        assert np.max(np.abs(zscores(G[:, 2:, 2:].reshape(n, 4), np.diag(cfg.s).ravel()))) > 10
        # cross block: E[Gamma_yx | W] = W Sigma_x, so E[W Gamma_yx] = E[W^2] Sigma_x = Sigma_x
        WG = np.matmul(b.W, G[:, 2:, :2]).reshape(n, 4)
        assert np.max(np.abs(zscores(WG, np.diag(cfg.s).ravel()))) < Z_MAX
    g1, g2 = grams["tokens"], grams["statistics"]
    assert np.max(np.abs(two_sample_z(g1, g2))) < Z_MAX
    assert np.max(np.abs(two_sample_z(g1**2, g2**2))) < Z_MAX


def test_moment_identity_E_Sh_A_Sh():
    """E[Sh A Sh] = ((N+1)/N) S A S + Tr(A S) S / N for symmetric A (book chapter 2)."""
    rng = np.random.default_rng(8)
    s = np.array([3.0, 1.0, 0.4])
    N = 5
    U = random_rotation(3, rng)
    cfg = DataConfig(s=s, N=N, U=U)
    S = cfg.Sigma_x
    M = rng.standard_normal((3, 3))
    A = M + M.T
    predicted = ((N + 1) / N) * S @ A @ S + np.trace(A @ S) * S / N
    decoupled = A @ (U @ np.diag(s * s_inf(s, N)) @ U.T)  # the paper's replacement A E[Sh^2]
    n = 100_000
    for sampler in (sample_statistics, sample_prompts):
        Sh = sampler(cfg, n, rng).Sigma_hat
        vals = (Sh @ A @ Sh).reshape(n, 9)
        assert np.max(np.abs(zscores(vals, predicted.ravel()))) < Z_MAX
        assert np.max(np.abs(zscores(vals, decoupled.ravel()))) > 4 * Z_MAX


# ----------------------------------------------------------------------------- the raw draws


def test_box_muller_normals_are_standard_normal_and_seeded():
    """icllib.data.draws.standard_normal: moments, independence of the pair halves, seeds."""
    from icllib.data.draws import CHUNK_PAIRS, standard_normal

    z = standard_normal(np.random.default_rng(11), 400_001)  # odd: the last pair is cut
    assert z.shape == (400_001,) and z.dtype == np.float64
    for power, moment in ((1, 0.0), (2, 1.0), (3, 0.0), (4, 3.0)):
        assert abs(zscores(z**power, moment)) < Z_MAX, power
    # a chunk of k words holds the k cosines, then the k sines of the same pairs: they are
    # uncorrelated, and so are their squares (a shared radius alone would correlate those)
    k = CHUNK_PAIRS
    c, s = z[:k], z[k : 2 * k]
    assert abs(zscores(c * s, 0.0)) < Z_MAX
    assert abs(zscores(c**2 * s**2, 1.0)) < Z_MAX
    np.testing.assert_array_equal(z, standard_normal(np.random.default_rng(11), 400_001))
    assert not np.allclose(z[:100], standard_normal(np.random.default_rng(12), 400_001)[:100])
    out = np.empty((3, 5))
    assert standard_normal(np.random.default_rng(0), (3, 5), out=out) is out
    with pytest.raises(ValueError, match="out must be a C-contiguous float64 array"):
        standard_normal(np.random.default_rng(0), (3, 5), out=np.empty((5, 3)))
    # a 32-bit bit generator (raw words of 32 bits) goes through Generator.integers
    w = standard_normal(np.random.Generator(np.random.MT19937(3)), 200_000)
    assert abs(zscores(w**2, 1.0)) < Z_MAX and abs(zscores(w**4, 3.0)) < Z_MAX


@pytest.mark.parametrize("N, D", [(1, 3), (3, 5), (7, 4), (20, 8), (100, 2)])
def test_bartlett_diagonal_is_chi_with_N_minus_j_degrees_of_freedom(N, D):
    """Diagonal draws (sums of exponentials and a squared normal for few degrees of freedom,
    numpy's gamma for many): mean N - j and variance 2 (N - j) of G_jj^2, row by row."""
    from icllib.data.wishart import bartlett_factor

    n = 100_000
    G = bartlett_factor(np.random.default_rng(N + 10 * D), N, D, n)
    m = min(N, D)
    assert G.shape == (m, D, n)
    chi2 = np.diagonal(G, axis1=0, axis2=1).T ** 2  # (m, n)
    dof = N - np.arange(m)
    assert np.max(np.abs(zscores(chi2.T, dof))) < Z_MAX
    assert np.max(np.abs(zscores(((chi2.T - dof) ** 2), 2 * dof))) < Z_MAX
    assert np.all(G[np.tril_indices(m, -1, D)] == 0)


# ----------------------------------------------------------------------------- Gram actions


@pytest.mark.parametrize("N, D", [(1, 4), (2, 5), (10, 16), (7, 1), (16, 16), (40, 6)])
def test_gram_actions_are_those_of_a_wishart_matrix(N, D):
    """GramActions: A z_1 and then A z_2 with z_2 = A z_1 chosen after the first product.

    For A ~ Wishart_D(N, I): E[A z] = N z, E[(A z)_i (A z)_j] = N^2 z_i z_j + N (delta_ij |z|^2
    + z_i z_j), and E[A (A z)] = E[A^2] z = N (N + D + 1) z.  The last one needs the second
    product to use the same A as the first: an independent second draw would give N^2 z (the
    'wrong' prediction, rejected here when it differs from the right one by >= 10 standard
    errors).  Sizes cover N < D (rank N), N = 1, D = 1, and chi-squares drawn as sums of
    exponentials (N <= 16) and by the gamma sampler (N = 40).  Also against the full Bartlett
    factor (two-sample z) for the first two moments of A (A z).
    """
    from icllib.data import GramActions
    from icllib.data.wishart import bartlett_factor

    n = 100_000
    rng = np.random.default_rng(1000 + 10 * N + D)
    z = 0.5 + np.arange(D) / D * np.where(np.arange(D) % 2, -1.0, 1.0)
    Z = np.tile(z[:, None], (1, n))
    acts = GramActions(N, D, n).draw(rng)
    a1 = acts.first(Z, np.empty((D, n)))
    a2 = acts.second(a1.copy(), np.empty((D, n)))
    assert np.max(np.abs(zscores(a1.T, N * z))) < Z_MAX
    second = N**2 * np.outer(z, z) + N * (np.eye(D) * (z @ z) + np.outer(z, z))
    prods = (a1.T[:, :, None] * a1.T[:, None, :]).reshape(n, D * D)
    assert np.max(np.abs(zscores(prods, second.ravel()))) < Z_MAX
    assert np.max(np.abs(zscores(a2.T, N * (N + D + 1) * z))) < Z_MAX
    wrong = zscores(a2.T, N**2 * z)
    if D > 1:
        assert np.max(np.abs(wrong)) > 10, wrong
    # the same law as the full factor's products
    G = bartlett_factor(rng, N, D, n)
    b1 = np.einsum("ijb,ib->jb", G, np.einsum("ijb,jb->ib", G, Z))
    b2 = np.einsum("ijb,ib->jb", G, np.einsum("ijb,jb->ib", G, b1))
    for a, b in ((a2, b2), (a2**2, b2**2), (a1 * a2, b1 * b2)):
        assert np.max(np.abs(two_sample_z(a.T, b.T))) < Z_MAX
    # symmetry: z_1 . (A z_2) = z_2 . (A z_1) to rounding (one matrix behind both products);
    # each side is a sum of O(D) products, so rounding is ~D eps times the terms' sizes
    lhs, rhs = np.einsum("ib,ib->b", Z, a2), np.einsum("ib,ib->b", a1, a1)
    scale = np.linalg.norm(Z, axis=0) * np.linalg.norm(a2, axis=0) + rhs
    assert np.all(np.abs(lhs - rhs) <= 1e-12 * scale)


def test_gram_actions_of_zero_and_of_parallel_vectors():
    """A 0 = 0, and a second vector along the first gets only the first row's part."""
    from icllib.data import GramActions

    acts = GramActions(5, 3, 4).draw(np.random.default_rng(3))
    z = np.zeros((3, 4))
    z[:, 1:] = [[1.0], [2.0], [-1.0]]
    a1 = acts.first(z, np.empty((3, 4)))
    assert np.all(a1[:, 0] == 0) and np.all(np.isfinite(a1))
    a2 = acts.second(2.0 * z, np.empty((3, 4)))
    np.testing.assert_allclose(a2, 2.0 * a1, rtol=1e-12, atol=1e-12)
    a2 = acts.second(np.ones((3, 4)), np.empty((3, 4)))
    assert np.all(np.isfinite(a2))
