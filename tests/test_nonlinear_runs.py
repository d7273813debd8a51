"""icllib.nonlinear.runs, shared by both non-linear experiments: one file format, one
directory scheme and one metadata for the runs of chapters 6 and 7."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from icllib.nonlinear.runs import (  # noqa: E402
    META_KEYS,
    RunSummary,
    data_dir,
    load_run,
    load_runs,
    save_run,
)

ROOT = Path(__file__).resolve().parents[1]


def _meta(**kw):
    meta = {k: None for k in META_KEYS}
    meta.update(experiment="x", chapter="chX", scale="quick", seed=3, config={}, command="c",
                analysis={})
    meta.update(kw)
    return meta


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
