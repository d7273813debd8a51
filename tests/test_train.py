"""Tests for icllib.train: exact gradients, SGD conservation law, training loop, inputs."""

import pickle

import numpy as np
import pytest

from icllib.data import (
    DataConfig,
    random_rotation,
    sample_prompts,
    sample_statistics,
    sample_task_set,
)
from icllib.model import Params, predict
from icllib.theory import exact_loss_grad, paper_loss_grad, sgd_conservation_drift
from icllib.train import (
    DivergenceError,
    auto_sampler,
    balanced_init,
    loss_and_grads,
    random_init,
    stable_eta,
    train_sgd,
)

Z_MAX = 5.0  # z-score threshold for Monte-Carlo checks (chance exceedance ~6e-7 each)


def random_params(d, rng, scale=0.7):
    shape = (2 * d, 2 * d)
    return Params(scale * rng.standard_normal(shape), scale * rng.standard_normal(shape))


def loss_from_gamma(params, batch):
    """Independent batch-mean loss: Gamma = (C^T C + z_q z_q^T) / N formed explicitly."""
    d = batch.xq.shape[1]
    C = batch.C
    zq = np.concatenate([batch.xq, np.zeros_like(batch.xq)], axis=1)
    Gamma = (np.einsum("bmi,bmj->bij", C, C) + zq[:, :, None] * zq[:, None, :]) / batch.N
    y_hat = params.WP[d:, :] @ Gamma @ params.WQ[:, :d] @ batch.xq[:, :, None]
    return 0.5 * np.mean(np.sum((y_hat[..., 0] - batch.target) ** 2, axis=1))


# ----------------------------------------------------------------------------- gradients


@pytest.mark.parametrize("sampler", ["tokens", "statistics"])
@pytest.mark.parametrize("noise", [0.0, 0.5])
def test_gradients_equal_central_finite_differences(sampler, noise):
    rng = np.random.default_rng(1)
    d = 3
    cfg = DataConfig(s=[2.0, 1.0, 0.5], N=4, U=random_rotation(d, rng), noise=noise)
    draw = sample_prompts if sampler == "tokens" else sample_statistics
    batch = draw(cfg, 6, rng)
    params = random_params(d, rng)
    loss, grads = loss_and_grads(params, batch)
    assert abs(loss - loss_from_gamma(params, batch)) <= 1e-12 * loss
    if sampler == "tokens":  # and against the forward pass of eq. 1
        y = predict(batch.Z, params)
        assert abs(loss - 0.5 * np.mean(np.sum((y - batch.target) ** 2, 1))) <= 1e-12 * loss
    eps = 1e-6
    for name in ("WP", "WQ"):
        M = getattr(params, name)
        G = getattr(grads, name)
        fd = np.empty_like(M)
        for idx in np.ndindex(M.shape):
            old = M[idx]
            M[idx] = old + eps
            lp = loss_from_gamma(params, batch)
            M[idx] = old - eps
            lm = loss_from_gamma(params, batch)
            M[idx] = old
            fd[idx] = (lp - lm) / (2 * eps)
        scale = np.max(np.abs(G))
        assert np.max(np.abs(G - fd)) < 1e-7 * scale, name
    # the blocks that never reach y_hat get exactly zero gradient
    np.testing.assert_array_equal(grads.WP[:d, :], 0.0)
    np.testing.assert_array_equal(grads.WQ[:, d:], 0.0)


def _mean_block_grads(cfg, params, chunks, B, rng):
    """Per-chunk gradients of the four blocks (chunks, 4, d, d), in the U basis."""
    U = cfg.basis
    out = np.empty((chunks, 4, cfg.d, cfg.d))
    for c in range(chunks):
        _, g = loss_and_grads(params, sample_statistics(cfg, B, rng))
        for i, M in enumerate((g.p1, g.p2, g.q1, g.q2)):
            out[c, i] = U.T @ M @ U
    return out


def test_task_averaged_gradients_on_the_null_manifold():
    """At p1 = q2 = 0 the mean gradients of p1, q2 vanish (book chapter 2); those of
    p2, q1 do not, and their diagonals are the exact-mean-flow gradient (book ch. 2), not the
    paper's decoupled one."""
    rng = np.random.default_rng(2)
    s = np.array([3.0, 1.0, 0.5])
    N = 6
    U = random_rotation(3, rng)
    cfg = DataConfig(s=s, N=N, U=U)
    p = np.array([0.5, 1.0, 0.3])
    q = np.array([0.2, 0.6, 1.0])
    params = Params.from_blocks(p2=U @ np.diag(p) @ U.T, q1=U @ np.diag(q) @ U.T)
    g = _mean_block_grads(cfg, params, chunks=100, B=2000, rng=rng)
    z_p1 = zs(g[:, 0], 0.0)
    z_q2 = zs(g[:, 3], 0.0)
    assert np.max(np.abs(z_p1)) < Z_MAX and np.max(np.abs(z_q2)) < Z_MAX
    gp_exact, gq_exact = exact_loss_grad(p, q, s, N)
    gp_paper, gq_paper = paper_loss_grad(p, q, s, N)
    diag_p2 = np.diagonal(g[:, 1], axis1=1, axis2=2)
    diag_q1 = np.diagonal(g[:, 2], axis1=1, axis2=2)
    assert np.max(np.abs(zs(diag_p2, gp_exact))) < Z_MAX
    assert np.max(np.abs(zs(diag_q1, gq_exact))) < Z_MAX
    assert np.max(np.abs(zs(diag_p2, 0.0))) > 10 * Z_MAX  # p2's gradient does not vanish
    assert np.max(np.abs(zs(diag_q1, 0.0))) > 10 * Z_MAX
    assert np.max(np.abs(zs(diag_p2, gp_paper))) > 4 * Z_MAX  # the decoupled theory misses
    # off-diagonal (U basis) mean gradients vanish: the diagonal structure is invariant
    off = ~np.eye(3, dtype=bool)
    assert np.max(np.abs(zs(g[:, 1][:, off], 0.0))) < Z_MAX
    assert np.max(np.abs(zs(g[:, 2][:, off], 0.0))) < Z_MAX


def zs(samples, predicted):
    n = samples.shape[0]
    se = samples.std(axis=0, ddof=1) / np.sqrt(n)
    return (samples.mean(axis=0) - predicted) / se


# ----------------------------------------------------------------------------- conservation


@pytest.mark.parametrize("init", ["balanced", "random"])
@pytest.mark.parametrize("sampler", [sample_statistics, sample_prompts])
def test_sgd_step_changes_conserved_quantity_by_eta2_gp2_minus_gq2(init, sampler):
    """Per SGD step, Delta C = eta^2 (||g_p||^2 - ||g_q||^2) exactly (book chapter 3)."""
    rng = np.random.default_rng(3)
    d = 3
    cfg = DataConfig(s=[2.0, 1.0, 0.5], N=5, U=random_rotation(d, rng))
    params = balanced_init(d, 0.3) if init == "balanced" else random_init(d, 0.3, rng)
    eta = 0.05
    for _ in range(20):
        batch = sampler(cfg, int(rng.integers(1, 50)), rng)
        C0 = np.sum(params.WP_y**2) - np.sum(params.WQ_x**2)
        _, g = loss_and_grads(params, batch)
        params = Params(params.WP - eta * g.WP, params.WQ - eta * g.WQ)
        C1 = np.sum(params.WP_y**2) - np.sum(params.WQ_x**2)
        predicted = sgd_conservation_drift(g.WP_y, g.WQ_x, eta)
        scale = eta**2 * (np.sum(g.WP_y**2) + np.sum(g.WQ_x**2))
        assert abs((C1 - C0) - predicted) <= 1e-10 * scale
        # the first-order term eta <W, g> alone is far larger than the tolerance
        first = 2 * eta * np.sum(params.WP_y * g.WP_y)
        assert abs(first) > 1e3 * 1e-10 * scale


@pytest.mark.parametrize(
    "case",
    ["task set", "fresh tasks, noise, tokens", "general tasks, noise"],
)
def test_train_sgd_is_plain_sgd_and_records_the_conserved_quantity(case):
    """train_sgd with record_every=1 equals a hand-written loop on the same random stream.

    The loop uses loss_and_grads on the public samplers' batches in the original basis, so
    this also checks train_sgd's eigenbasis fast path (tasks sharing U) against the general
    gradient code.
    """
    d = 2
    U = random_rotation(d, np.random.default_rng(0))
    sampler, tasks = "statistics", None
    if case == "task set":
        cfg = DataConfig(s=[1.5, 0.5], N=7, U=U, P=5)
    elif case == "fresh tasks, noise, tokens":
        cfg = DataConfig(s=[1.5, 0.5], N=7, U=U, noise=0.3)
        sampler = "tokens"
    else:
        cfg = DataConfig(s=[1.5, 0.5], N=7, U=U, noise=0.3)
        tasks = np.random.default_rng(3).standard_normal((4, d, d))  # not U diag(lambda) U^T
    params0 = random_init(d, 0.2, np.random.default_rng(1))
    eta, B, steps = (0.1 if tasks is None else 0.02), 16, 12
    rec = train_sgd(cfg, params0, eta=eta, B=B, steps=steps, rng=np.random.default_rng(2),
                    record_every=1, tasks=tasks, sampler=sampler)
    rng = np.random.default_rng(2)
    if cfg.P is not None:
        tasks = sample_task_set(cfg, rng)
    draw = sample_statistics if sampler == "statistics" else sample_prompts
    params = params0.copy()
    for k in range(steps + 1):
        loss, g = loss_and_grads(params, draw(cfg, B, rng, tasks=tasks))
        assert rec.steps[k] == k
        assert rec.loss[k] == pytest.approx(loss, rel=1e-12)
        for name in ("p1", "p2", "q1", "q2"):
            np.testing.assert_allclose(getattr(rec, name)[k], U.T @ getattr(params, name) @ U,
                                       atol=1e-13)
        C = np.sum(params.WP_y**2) - np.sum(params.WQ_x**2)
        assert rec.conserved[k] == pytest.approx(C, rel=1e-12, abs=1e-14)
        if k < steps:
            predicted = sgd_conservation_drift(g.WP_y, g.WQ_x, eta)
            params = Params(params.WP - eta * g.WP, params.WQ - eta * g.WQ)
            assert rec.conserved[k] + predicted == pytest.approx(
                np.sum(params.WP_y**2) - np.sum(params.WQ_x**2), rel=1e-10, abs=1e-14
            )
    np.testing.assert_allclose(rec.params.WP, params.WP, atol=1e-13)
    np.testing.assert_allclose(rec.params.WQ, params.WQ, atol=1e-13)
    # params0 is not modified
    np.testing.assert_array_equal(params0.WP, random_init(d, 0.2, np.random.default_rng(1)).WP)


def test_auto_sampler_picks_the_faster_exact_sampler_and_the_recording_names_it():
    """'auto': the Bartlett factor where it needs no more normals than the actions and no
    gamma draws (the running example, D = 4, N = 10), the actions otherwise, and always the
    factor for tasks that do not share the eigenbasis."""
    assert auto_sampler(10, 4, True) == "statistics"      # 6 upper normals <= 2 D = 8
    assert auto_sampler(10, 8, True) == "actions"         # 28 > 16
    assert auto_sampler(100, 4, True) == "actions"        # chi-square with 100 dof: gamma
    assert auto_sampler(100, 16, False) == "statistics"   # general tasks
    for d, N, expected in ((4, 10, "statistics"), (8, 10, "actions")):
        rec = train_sgd(DataConfig(s=np.linspace(0.5, 2.0, d), N=N), balanced_init(d, 0.1),
                        eta=0.01, B=8, steps=2, rng=np.random.default_rng(0))
        assert rec.sampler == expected
        same = train_sgd(DataConfig(s=np.linspace(0.5, 2.0, d), N=N), balanced_init(d, 0.1),
                         eta=0.01, B=8, steps=2, rng=np.random.default_rng(0), sampler=expected)
        np.testing.assert_array_equal(rec.p2, same.p2)    # 'auto' is that sampler's stream


@pytest.mark.parametrize("case", ["fresh tasks", "task set, noise, rotated"])
def test_actions_sampler_keeps_the_sgd_conservation_law(case):
    """sampler='actions': every step changes C by eta^2 (|g_P|^2 - |g_Q|^2) (book ch. 3).

    The identity needs W^P_y . g_P = W^Q_x . g_Q, i.e. the backward product uses the same
    symmetric Gram matrix as the forward one; GramActions draws the second product after the
    first, so this checks that it is one matrix.  Same tolerance as the other samplers.
    """
    d = 3
    if case == "fresh tasks":
        cfg, tasks = DataConfig(s=[2.0, 1.0, 0.5], N=4), None
    else:
        U = random_rotation(d, np.random.default_rng(0))
        cfg = DataConfig(s=[2.0, 1.0, 0.5], N=20, U=U, noise=0.4, P=6)
        tasks = sample_task_set(cfg, np.random.default_rng(5))
    params0 = random_init(d, 0.3, np.random.default_rng(1))
    eta, steps = 0.05, 15
    rec = train_sgd(cfg, params0, eta=eta, B=32, steps=steps, rng=np.random.default_rng(2),
                    record_every=1, tasks=tasks, sampler="actions")
    WPy = np.concatenate([rec.p1, rec.p2], axis=2)  # (T, d, 2d), U basis
    WQx = np.concatenate([rec.q1, rec.q2], axis=1)  # (T, 2d, d)
    C = np.sum(WPy**2, axis=(1, 2)) - np.sum(WQx**2, axis=(1, 2))
    np.testing.assert_allclose(rec.conserved, C, rtol=1e-12, atol=1e-14)
    for k in range(steps):
        gP = (WPy[k] - WPy[k + 1]) / eta
        gQ = (WQx[k] - WQx[k + 1]) / eta
        assert np.sum(gP**2) > 0
        predicted = sgd_conservation_drift(gP, gQ, eta)
        assert rec.conserved[k] + predicted == pytest.approx(rec.conserved[k + 1], rel=1e-10,
                                                             abs=1e-14)


def test_actions_sampler_gradients_average_to_the_exact_mean_flow():
    """Mean gradient of sampler='actions' on the null manifold = the exact mean-flow one.

    As in test_task_averaged_gradients_on_the_null_manifold, from the eigenbasis fast path
    (PromptSampler.draw_raw + WhitenedGradients); the paper's decoupled gradient is rejected.
    """
    from icllib.data import PromptSampler
    from icllib.train.gradients import WhitenedGradients

    s, N, B, chunks = np.array([3.0, 1.0, 0.5]), 6, 2000, 100
    cfg = DataConfig(s=s, N=N)
    p = np.array([0.5, 1.0, 0.3])
    q = np.array([0.2, 0.6, 1.0])
    params = Params.from_blocks(p2=np.diag(p), q1=np.diag(q))
    sam = PromptSampler(cfg, np.random.default_rng(4))
    grads = WhitenedGradients(np.sqrt(s), 0.0, N, B)
    buffers = {}
    g = np.empty((chunks, 2, 3, 3))
    for c in range(chunks):
        G, lam, _, gq = sam.draw_raw(B, "actions", buffers=buffers)
        _, gP, gQ = grads(params.WP_y, params.WQ_x, G, lam, gq)
        g[c, 0], g[c, 1] = gP[:, 3:], gQ[:3]  # p2, q1
    gp_exact, gq_exact = exact_loss_grad(p, q, s, N)
    gp_paper, _ = paper_loss_grad(p, q, s, N)
    diag_p2 = np.diagonal(g[:, 0], axis1=1, axis2=2)
    diag_q1 = np.diagonal(g[:, 1], axis1=1, axis2=2)
    assert np.max(np.abs(zs(diag_p2, gp_exact))) < Z_MAX
    assert np.max(np.abs(zs(diag_q1, gq_exact))) < Z_MAX
    assert np.max(np.abs(zs(diag_p2, gp_paper))) > 4 * Z_MAX
    off = ~np.eye(3, dtype=bool)
    assert np.max(np.abs(zs(g[:, 0][:, off], 0.0))) < Z_MAX
    assert np.max(np.abs(zs(g[:, 1][:, off], 0.0))) < Z_MAX


def test_recording_shapes_and_mode_properties():
    rng = np.random.default_rng(4)
    U = random_rotation(3, rng)
    cfg = DataConfig(s=[2.0, 1.0, 0.5], N=10, U=U)
    rec = train_sgd(cfg, balanced_init(3, 0.2), eta=0.02, B=32, steps=25, rng=rng, record_every=10)
    np.testing.assert_array_equal(rec.steps, [0, 10, 20, 25])
    for name in ("p1", "p2", "q1", "q2"):
        assert getattr(rec, name).shape == (4, 3, 3)
    assert rec.p.shape == rec.q.shape == rec.a.shape == (4, 3)
    assert rec.loss.shape == rec.conserved.shape == (4,)
    # the balanced start in the U basis: p2 = q1 = 0.2 I, p1 = q2 = 0, a = 0.04
    np.testing.assert_allclose(rec.p2[0], 0.2 * np.eye(3), atol=1e-14)
    np.testing.assert_allclose(rec.a[0], 0.04, rtol=1e-12)
    np.testing.assert_array_equal(rec.p1[0], 0.0)
    # a is chapter 2's mode product: the diagonal products of both pathways
    diag = {b: np.einsum("tii->ti", getattr(rec, b)) for b in ("p1", "p2", "q1", "q2")}
    np.testing.assert_allclose(rec.a, diag["p2"] * diag["q1"] + diag["p1"] * diag["q2"],
                               rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(rec.p2[-1], U.T @ rec.params.p2 @ U, atol=1e-13)
    assert np.all(rec.a[-1] > rec.a[0])  # every mode grows from a small balanced start


def test_initialisations():
    U = random_rotation(3, np.random.default_rng(5))
    P = balanced_init(3, [0.1, 0.2, 0.3], U=U)
    np.testing.assert_allclose(U.T @ P.p2 @ U, np.diag([0.1, 0.2, 0.3]), atol=1e-15)
    np.testing.assert_array_equal(P.p2, P.q1)
    for M in (P.p1, P.q2, P.WP[:3, :], P.WQ[:, 3:]):
        np.testing.assert_array_equal(M, 0.0)
    R = random_init(20, 0.01, np.random.default_rng(6))
    for M in (R.WP, R.WQ):
        assert np.all(M != 0) and 0.008 < M.std() < 0.012
    with pytest.raises(ValueError, match="scale must be a finite number"):
        balanced_init(3, np.nan)
    with pytest.raises(ValueError, match="scale must be a finite number"):
        balanced_init(3, [0.1, 0.2])
    with pytest.raises(ValueError, match="scale must be a finite number >= 0"):
        random_init(3, -1.0, np.random.default_rng(0))
    with pytest.raises(ValueError, match="d must be an integer >= 1"):
        balanced_init(0, 0.1)
    for wrong_type in ("0.1", None, True, [0.1, "x", 0.3]):
        with pytest.raises(TypeError, match=r"^scale must be a finite number or 3 finite "):
            balanced_init(3, wrong_type)


# ----------------------------------------------------------------------------- stability


def test_stable_eta_estimate():
    cfg = DataConfig(s=[4.0, 2.0, 1.0, 0.5], N=10)
    assert stable_eta(cfg) == pytest.approx(1 / 16)  # 1/s_max^2 from a balanced start
    assert stable_eta(cfg, conserved=1.0) < stable_eta(cfg)


def test_divergence_raises_with_step_and_stable_range():
    cfg = DataConfig(s=[4.0, 2.0, 1.0, 0.5], N=10)
    eta_max = stable_eta(cfg)
    match = r"diverged at step \d+.*stable range 0 < eta < ~0\.0625"
    with pytest.raises(DivergenceError, match=match):
        train_sgd(cfg, balanced_init(4, 0.05), eta=3 * eta_max, B=1024, steps=200,
                  rng=np.random.default_rng(0))
    rec = train_sgd(cfg, balanced_init(4, 0.05), eta=0.3 * eta_max, B=1024, steps=300,
                    rng=np.random.default_rng(0))
    assert np.all(np.isfinite(rec.loss))


def test_divergence_error_carries_the_step_it_diverged_at():
    cfg = DataConfig(s=[4.0, 2.0, 1.0, 0.5], N=10)

    def run(steps):
        return train_sgd(cfg, balanced_init(4, 0.05), eta=3 * stable_eta(cfg), B=1024,
                         steps=steps, record_every=1, rng=np.random.default_rng(0))

    with pytest.raises(DivergenceError) as info:
        run(200)
    step = info.value.step
    assert isinstance(step, int) and 0 < step <= 200
    assert f"diverged at step {step}:" in str(info.value)
    rec = run(step - 1)                     # the same stream, stopped one step earlier: finite
    assert rec.steps[-1] == step - 1 and np.all(np.isfinite(rec.loss))
    with pytest.raises(DivergenceError) as again:
        run(step)
    assert again.value.step == step
    copy = pickle.loads(pickle.dumps(info.value))
    assert copy.step == step and str(copy) == str(info.value)


# ----------------------------------------------------------------------------- inputs


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(eta=0.0), "eta must be a finite number > 0"),
        (dict(eta=-0.1), "eta must be a finite number > 0"),
        (dict(eta=np.nan), "eta must be a finite number > 0"),
        (dict(eta=np.inf), "eta must be a finite number > 0"),
        (dict(B=0), "B must be an integer >= 1, got 0"),
        (dict(steps=-1), "steps must be an integer >= 0"),
        (dict(record_every=0), "record_every must be an integer >= 1"),
        (dict(sampler="exact"), "sampler must be one of 'auto', 'statistics', 'tokens', 'actions'"),
        (dict(sampler="actions", tasks=np.ones((3, 2, 2))), "sampler='actions' needs tasks"),
        (dict(params0=balanced_init(3, 0.1)), "params0 has d = 3 but config has d = 2"),
        (dict(tasks=np.zeros((2, 3, 3))), r"tasks must have shape \(P, 2, 2\)"),
    ],
)
def test_train_sgd_rejects_bad_input(kwargs, match):
    args = dict(
        config=DataConfig(s=[1.0, 0.5], N=5),
        params0=balanced_init(2, 0.1),
        eta=0.1,
        B=4,
        steps=3,
        rng=np.random.default_rng(0),
    )
    args.update(kwargs)
    config, params0 = args.pop("config"), args.pop("params0")
    with pytest.raises(ValueError, match=match):
        train_sgd(config, params0, **args)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(B=2.5), "B must be an integer >= 1"),
        (dict(rng=0), "rng must be a numpy.random.Generator"),
        (dict(params0=np.eye(4)), "params0 must be an icllib.model.Params"),
        (dict(config=(1.0, 2.0)), "config must be a DataConfig"),
    ],
)
def test_train_sgd_rejects_arguments_of_the_wrong_type(kwargs, match):
    args = dict(config=DataConfig(s=[1.0, 0.5], N=5), params0=balanced_init(2, 0.1), eta=0.1,
                B=4, steps=3, rng=np.random.default_rng(0))
    args.update(kwargs)
    config, params0 = args.pop("config"), args.pop("params0")
    with pytest.raises(TypeError, match=match):
        train_sgd(config, params0, **args)


def test_loss_and_grads_rejects_mismatched_batch():
    rng = np.random.default_rng(0)
    batch = sample_statistics(DataConfig(s=[1.0, 0.5], N=5), 4, rng)
    with pytest.raises(ValueError, match="params have d = 3"):
        loss_and_grads(balanced_init(3, 0.1), batch)
    with pytest.raises(TypeError, match="batch must be a PromptBatch or ContextStatistics"):
        loss_and_grads(balanced_init(2, 0.1), {"C": 1})
    with pytest.raises(TypeError, match="params must be an icllib.model.Params"):
        loss_and_grads(None, batch)


def test_progress_bar(capsys):
    rec = train_sgd(
        DataConfig(s=[1.0], N=3), balanced_init(1, 0.1), eta=0.1, B=2, steps=20,
        rng=np.random.default_rng(0), progress=True,
    )
    assert rec.steps[-1] == 20
    assert "20/20" in capsys.readouterr().err
