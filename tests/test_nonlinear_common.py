"""Tests for what both non-linear experiments share: icllib.nonlinear.circuits, .runs, .device,
the level crossing of icllib.metrics and the scale switch of icllib.scale."""

from __future__ import annotations

import ast
import math
import os
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from icllib.metrics import first_crossing, subspace_distance  # noqa: E402
from icllib.nonlinear.circuits import circuit_metrics, parameter_norm  # noqa: E402
from icllib.nonlinear.device import deterministic, enable_determinism  # noqa: E402
from icllib.nonlinear.runs import (  # noqa: E402
    META_KEYS,
    RunSummary,
    data_dir,
    load_run,
    load_runs,
    save_run,
)
from icllib.scale import pick  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
NONLINEAR = ROOT / "icllib" / "nonlinear"


def _meta(**kw):
    meta = {k: None for k in META_KEYS}
    meta.update(experiment="x", chapter="chX", scale="quick", seed=3, config={}, command="c",
                analysis={})
    meta.update(kw)
    return meta


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


def test_run_files_round_trip_and_expose_arrays_three_ways(tmp_path):
    s = RunSummary(_meta(), {"steps": np.arange(4, dtype=np.int32),
                             "loss": np.linspace(1, 0, 4, dtype=np.float32),
                             "qk/norm": np.ones((4, 2), np.float32)})
    save_run(s, tmp_path / "r.npz")
    t = load_run(tmp_path / "r.npz")
    assert t.meta == s.meta and t.seed == 3 and list(t) == ["meta", "steps", "loss", "qk/norm"]
    assert t["steps"].dtype == np.int64 and t["loss"].dtype == np.float64
    np.testing.assert_array_equal(t.loss, s["loss"])
    np.testing.assert_array_equal(t.qk["norm"], t["qk/norm"])
    with pytest.raises(AttributeError, match="nothing"):
        _ = t.nothing
    with pytest.raises(ValueError, match="meta must have the keys"):
        RunSummary({"seed": 1}, {})


def test_missing_runs_raise_the_same_error_naming_the_command(tmp_path):
    with pytest.raises(FileNotFoundError, match="make_chX_runs.py --scale full"):
        load_runs(tmp_path, {1: "a.npz"}, command="python scripts/make_chX_runs.py --scale full")
    from icllib.nonlinear import grokking, induction

    with pytest.raises(FileNotFoundError, match="make_ch7_runs.py --scale quick"):
        grokking.load_runs(directory=tmp_path, scale="quick")
    with pytest.raises(FileNotFoundError, match="make_ch6_runs.py --scale full"):
        induction.load_runs([2], [0], scale="full", directory=tmp_path)


def test_one_directory_scheme_and_one_metadata_for_both_experiments():
    assert data_dir("ch6", "quick") == ROOT / "book" / "data" / "ch6" / "quick"
    assert data_dir("ch7", "full") == ROOT / "book" / "data" / "ch7" / "full"
    for chapter in ("ch6", "ch7"):
        files = sorted(data_dir(chapter, "quick").glob("*.npz"))
        assert files
        for f in files:
            meta = load_run(f).meta
            assert set(META_KEYS) <= set(meta) and meta["chapter"] == chapter
            assert meta["scale"] == "quick" and "--scale quick" in meta["command"]
            assert meta["command"].startswith(f"python scripts/make_{chapter}_runs.py ")


def test_first_crossing_without_interpolation_returns_a_sample_time():
    t = np.array([0.0, 10, 20, 30])
    y = np.array([0.0, 0.4, 0.8, 1.0])
    assert first_crossing(t, y, 0.5) == pytest.approx(12.5)
    assert first_crossing(t, y, 0.5, interpolate=False) == 20
    assert first_crossing(t, 1 - y, 0.5, below=True, interpolate=False) == 20
    assert math.isnan(first_crossing(t, y, 2.0, interpolate=False))


def test_pick_takes_an_explicit_scale(monkeypatch):
    monkeypatch.setenv("ICLLIB_SCALE", "full")
    assert pick(quick=1, full=2) == 2 and pick(quick=1, full=2, scale="quick") == 1
    # medium: its own value where one is given, the quick one otherwise (never the full one)
    assert pick(quick=1, medium=3, full=2, scale="medium") == 3
    assert pick(quick=1, full=2, scale="medium") == 1
    monkeypatch.setenv("ICLLIB_SCALE", "medium")
    assert pick(quick=1, medium=3, full=2) == 3
    with pytest.raises(ValueError, match="scale"):
        pick(quick=1, full=2, scale="large")


def test_determinism_switch_sets_the_cublas_workspace(monkeypatch):
    monkeypatch.delenv("CUBLAS_WORKSPACE_CONFIG", raising=False)
    before = torch.are_deterministic_algorithms_enabled()
    try:
        enable_determinism("cpu")
        assert "CUBLAS_WORKSPACE_CONFIG" not in os.environ
        enable_determinism("cuda")
        assert os.environ["CUBLAS_WORKSPACE_CONFIG"] == ":4096:8"
    finally:
        torch.use_deterministic_algorithms(before)
    threads = torch.get_num_threads()
    with deterministic("cpu", num_threads=1):
        assert torch.are_deterministic_algorithms_enabled() and torch.get_num_threads() == 1
    assert torch.are_deterministic_algorithms_enabled() == before
    assert torch.get_num_threads() == threads


def test_model_modules_never_import_the_exercises_and_modules_are_small():
    for path in NONLINEAR.rglob("*.py"):
        text = path.read_text()
        tree = ast.parse(text)
        names = [n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
        names += [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
        assert not any("exercises" in n for n in names), path
        assert len(text.splitlines()) < 400, path
        assert "__all__" in text, path
        assert max(len(line) for line in text.splitlines()) <= 100, path


def test_exercise_checkers_accept_the_references_and_reject_a_wrong_answer():
    from icllib.exercises import check_embedding_fourier_power
    from icllib.nonlinear.grokking import embedding_fourier_power

    assert check_embedding_fourier_power(embedding_fourier_power, trials=5).passed

    def unfolded(W_E, p):                       # forgets to add the power of p - k
        power = (np.abs(np.fft.fft(np.asarray(W_E, float)[:p], axis=0)) ** 2).sum(axis=1)
        return power[: p // 2 + 1] / power[: p // 2 + 1].sum()

    assert not check_embedding_fourier_power(unfolded, trials=5).passed


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
