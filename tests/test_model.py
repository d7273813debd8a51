"""Tests for icllib.model: forward pass (eq. 1), block form and pathways (eq. 6), eq. 8."""

import numpy as np
import pytest

from icllib.data import DataConfig, random_rotation, sample_prompts
from icllib.model import (
    Params,
    forward,
    gamma_blocks,
    pathways,
    predict,
    predict_from_statistics,
    reduced_predict,
)

TOL = 1e-10


def random_params(d, rng, scale=1.0):
    return Params(scale * rng.standard_normal((2 * d, 2 * d)),
                  scale * rng.standard_normal((2 * d, 2 * d)))


def batch(d=3, N=5, B=7, seed=0, U=True):
    rng = np.random.default_rng(seed)
    cfg = DataConfig(s=np.linspace(2.0, 0.5, d), N=N, U=random_rotation(d, rng) if U else None)
    return sample_prompts(cfg, B, rng), rng


def rel_err(a, b):
    return np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-300)


def test_forward_equals_token_by_token_definition():
    """f(Z) = Z + W^P (1/N sum_{i<=N+1} z_i z_i^T) W^Q Z, computed with an explicit loop."""
    b, rng = batch()
    params = random_params(3, rng)
    Z = b.Z
    out = forward(Z, params)
    for k in range(Z.shape[0]):
        Gamma = sum(np.outer(z, z) for z in Z[k].T) / b.N  # includes the query, divided by N
        expected = Z[k] + params.WP @ Gamma @ params.WQ @ Z[k]
        assert rel_err(out[k], expected) < TOL
    # a wrong normalisation (N + 1) is detected
    Gamma_wrong = Z @ np.swapaxes(Z, 1, 2) / (b.N + 1)
    wrong = Z + params.WP @ Gamma_wrong @ params.WQ @ Z
    assert rel_err(out, wrong) > 1e-3


def test_predict_equals_forward_block_formula_and_statistics():
    b, rng = batch(d=4, N=6, B=9, seed=1)
    params = random_params(4, rng)
    d, N = 4, b.N
    y_forward = forward(b.Z, params)[:, d:, -1]
    y_predict = predict(b.Z, params)
    y_stats = predict_from_statistics(b.Sigma_hat, b.W, b.xq, params, N)
    # the block formula (paper eq. 6, book chapter 1), written out
    Sh, W, xq = b.Sigma_hat, b.W, b.xq
    p1, p2, q1, q2 = params.p1, params.p2, params.q1, params.q2
    WT = np.swapaxes(W, 1, 2)
    Gxx = Sh + xq[:, :, None] * xq[:, None, :] / N
    y_blocks = (
        np.einsum("ij,bjk,kl,bl->bi", p1, Gxx, q1, xq)
        + np.einsum("ij,bjk,bkl,lm,bm->bi", p1, Sh, WT, q2, xq)
        + np.einsum("ij,bjk,bkl,lm,bm->bi", p2, W, Sh, q1, xq)
        + np.einsum("ij,bjk,bkl,blm,mn,bn->bi", p2, W, Sh, WT, q2, xq)
    )
    for y in (y_predict, y_stats, y_blocks, pathways(Sh, W, xq, params, N).total):
        assert rel_err(y, y_forward) < TOL
    # the residual passes Z's query label slot (= 0) through unchanged
    np.testing.assert_array_equal(b.Z[:, d:, -1], 0.0)


def test_gamma_blocks_equal_ZZT_over_N():
    b, _ = batch(d=3, N=8, seed=2)
    G = gamma_blocks(b.Sigma_hat, b.W, b.xq, b.N)
    assert rel_err(G, b.Z @ np.swapaxes(b.Z, 1, 2) / b.N) < TOL


def test_unreachable_blocks_do_not_change_the_prediction():
    b, rng = batch(seed=3)
    params = random_params(3, rng)
    y = predict(b.Z, params)
    other = params.copy()
    other.WP[:3, :] = rng.standard_normal((3, 6))  # W^P x-rows
    other.WQ[:, 3:] = rng.standard_normal((6, 3))  # W^Q y-columns
    np.testing.assert_allclose(predict(b.Z, other), y, rtol=1e-12, atol=1e-12)
    # ... but the reachable ones do
    other.p1[...] += 0.1
    assert rel_err(predict(b.Z, other), y) > 1e-3


def test_pathways_separate_the_four_terms():
    b, rng = batch(seed=4)
    d = 3
    p1, p2, q1, q2 = (rng.standard_normal((d, d)) for _ in range(4))
    full = Params.from_blocks(p1=p1, p2=p2, q1=q1, q2=q2)
    pw = pathways(b.Sigma_hat, b.W, b.xq, full, b.N)
    # each term is the prediction with only its two blocks switched on
    for name, kw in [
        ("p1_q1", dict(p1=p1, q1=q1)),
        ("p1_q2", dict(p1=p1, q2=q2)),
        ("p2_q1", dict(p2=p2, q1=q1)),
        ("p2_q2", dict(p2=p2, q2=q2)),
    ]:
        only = Params.from_blocks(d=d, **kw)
        assert rel_err(getattr(pw, name), predict(b.Z, only)) < TOL, name
    # eq. 8: on p1 = q2 = 0 the prediction is p2 W Sigma_hat q1 x_q
    red = reduced_predict(p2, q1, b.W, b.Sigma_hat, b.xq)
    assert rel_err(red, pw.p2_q1) < TOL
    assert rel_err(red, predict(b.Z, Params.from_blocks(p2=p2, q1=q1))) < TOL


def test_params_blocks_are_views_and_from_blocks_places_them():
    d = 2
    blocks = {k: np.full((d, d), float(i + 1)) for i, k in enumerate(["p1", "p2", "q1", "q2"])}
    P = Params.from_blocks(**blocks)
    np.testing.assert_array_equal(P.WP[d:, :d], 1.0)
    np.testing.assert_array_equal(P.WP[d:, d:], 2.0)
    np.testing.assert_array_equal(P.WQ[:d, :d], 3.0)
    np.testing.assert_array_equal(P.WQ[d:, :d], 4.0)
    np.testing.assert_array_equal(P.WP[:d, :], 0.0)
    np.testing.assert_array_equal(P.WQ[:, d:], 0.0)
    P.p2[0, 0] = 7.0
    assert P.WP[d, d] == 7.0
    np.testing.assert_array_equal(P.WP_y, P.WP[d:, :])
    np.testing.assert_array_equal(P.WQ_x, P.WQ[:, :d])


@pytest.mark.parametrize(
    "WP, WQ, match",
    [
        (np.zeros((3, 3)), np.zeros((3, 3)), "WP must be a square 2d x 2d"),
        (np.zeros((4, 2)), np.zeros((4, 2)), "WP must be a square 2d x 2d"),
        (np.zeros((4, 4)), np.zeros((6, 6)), "WQ must have the shape of WP"),
        (np.full((4, 4), np.nan), np.zeros((4, 4)), "WP must hold finite"),
        (np.zeros((4, 4)), np.full((4, 4), np.inf), "WQ must hold finite"),
    ],
)
def test_params_reject_bad_input(WP, WQ, match):
    with pytest.raises(ValueError, match=match):
        Params(WP, WQ)


def test_model_functions_reject_mismatched_dimensions():
    b, rng = batch(d=3)
    wrong = random_params(2, rng)
    with pytest.raises(ValueError, match="Z must have shape"):
        forward(b.Z, wrong)
    with pytest.raises(ValueError, match="Z must have shape"):
        predict(b.Z, wrong)
    with pytest.raises(ValueError, match="Z needs at least one context column"):
        predict(b.Z[..., -1:], random_params(3, rng))
    with pytest.raises(ValueError, match="params have d = 2"):
        predict_from_statistics(b.Sigma_hat, b.W, b.xq, wrong, b.N)
    with pytest.raises(ValueError, match="W must have shape"):
        pathways(b.Sigma_hat, b.W[:, :2, :2], b.xq, random_params(3, rng), b.N)
    with pytest.raises(ValueError, match="N must be an integer >= 1"):
        predict_from_statistics(b.Sigma_hat, b.W, b.xq, random_params(3, rng), 0)
    with pytest.raises(ValueError, match="xq must hold finite"):
        predict_from_statistics(b.Sigma_hat, b.W, np.full_like(b.xq, np.nan),
                                random_params(3, rng), 5)
    with pytest.raises(TypeError, match="params must be an icllib.model.Params"):
        forward(b.Z, (np.eye(6), np.eye(6)))
    with pytest.raises(ValueError, match="q1 must have shape"):
        reduced_predict(np.eye(3), np.eye(2), b.W, b.Sigma_hat, b.xq)
