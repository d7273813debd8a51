"""icllib.nonlinear.circuits, shared by both non-linear experiments: the metrics of a stack
of circuit matrices and the parameter norms."""

from __future__ import annotations

import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from icllib.metrics import subspace_distance  # noqa: E402
from icllib.nonlinear.circuits import circuit_metrics, parameter_norm  # noqa: E402


def test_circuit_metrics_keeps_the_middle_axes_and_matches_the_metrics():
    rng = np.random.default_rng(0)
    low = rng.standard_normal((5, 2, 3, 6, 2)) @ rng.standard_normal((5, 2, 3, 2, 6))  # rank 2
    m = circuit_metrics(low, ks=(1,), lag=2)
    for name in ("effective_rank", "norm", "subspace_distance", "rotation"):
        assert m[name].shape == (5, 2, 3)
    assert m["marginal_effective_rank"].shape == (5, 2, 3, 1)
    assert np.all(m["effective_rank"] <= 2 + 1e-9)
    np.testing.assert_allclose(m["subspace_distance"][-1], 0.0, atol=1e-9)
    assert np.all(np.isnan(m["rotation"][-2:])) and np.all(np.isfinite(m["rotation"][:-2]))
    np.testing.assert_allclose(m["norm"], np.linalg.norm(low, axis=(-2, -1)))
    assert m["subspace_distance"][1, 1, 2] == pytest.approx(
        subspace_distance(low[1, 1, 2], low[-1, 1, 2]))
    r = circuit_metrics(low, rank=1, reference=0)
    assert r["subspace_distance"][2, 0, 0] == pytest.approx(
        subspace_distance(low[2, 0, 0], low[0, 0, 0], rank=1))
    with pytest.raises(ValueError, match="stack"):
        circuit_metrics(low[0, 0, 0])
    with pytest.raises(ValueError, match="lag"):
        circuit_metrics(low, lag=5)
    with pytest.raises(ValueError, match="reference"):
        circuit_metrics(low, reference=5)


def test_parameter_norm_is_the_norm_of_all_parameters():
    m = torch.nn.Linear(3, 2)
    expect = math.sqrt(sum(float((p.detach().double() ** 2).sum()) for p in m.parameters()))
    assert parameter_norm(m) == pytest.approx(expect, rel=1e-12)


def test_parameters_norm_per_seed_equals_the_norm_of_each_seed():
    from icllib.nonlinear.circuits import parameters_norm

    g = torch.Generator().manual_seed(0)
    stacked = [torch.randn(3, 4, 5, generator=g), torch.randn(3, 7, generator=g)]
    per_seed = parameters_norm(stacked, batch_dims=1)
    assert per_seed.shape == (3,) and per_seed.dtype == torch.float64
    for i in range(3):
        module = torch.nn.Module()
        module.a = torch.nn.Parameter(stacked[0][i].clone())
        module.b = torch.nn.Parameter(stacked[1][i].clone())
        expected = np.sqrt(sum(float((t[i].double() ** 2).sum()) for t in stacked))
        assert abs(parameter_norm(module) - expected) < 1e-12 * expected
        assert abs(float(per_seed[i]) - expected) < 1e-12 * expected
    with pytest.raises(ValueError, match="batch_dims"):
        parameters_norm(stacked, batch_dims=2)
