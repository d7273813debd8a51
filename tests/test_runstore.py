"""icllib.runstore, the book's one run store: one place (data_dir), one command scheme
(make_command), one file format (RunSummary), one writer (save_run, atomic) and one loader
(load_run, load_runs), for the linear runs (icllib.train.stored) and the non-linear ones
(icllib.nonlinear.runs) alike."""

from __future__ import annotations

import pickle
from pathlib import Path

import numpy as np
import pytest

from icllib import runstore
from icllib.datafiles import data_root
from icllib.runstore import RunSummary, data_dir, load_run, load_runs, make_command, save_run

ROOT = Path(__file__).resolve().parents[1]


def _summary(value: float = 1.0, **extra) -> RunSummary:
    arrays = {"steps": np.arange(5), "loss": np.full(200, value, np.float32), **extra}
    return RunSummary({"scale": "quick", "command": "c", "seconds": 0.0}, arrays)


class Unpicklable:
    """An object array entry that fails while the file is half written (after ``meta`` and
    the first arrays): what an interrupted write leaves."""

    def __reduce__(self):
        raise RuntimeError("interrupted")


def _failing_summary() -> RunSummary:
    return _summary(2.0, z=np.array([Unpicklable()], dtype=object))


def test_both_stores_use_the_same_place_command_format_and_loader():
    import icllib.nonlinear.runs as nonlinear
    import icllib.train.stored as linear

    for name in ("data_dir", "make_command"):
        assert getattr(nonlinear, name) is getattr(runstore, name)
        assert getattr(linear, name) is getattr(runstore, name)
    for name in ("RunSummary", "save_run", "load_run", "load_runs"):
        assert getattr(nonlinear, name) is getattr(runstore, name)
    assert linear.save_run is save_run and linear.RunSummary is RunSummary
    assert linear.load_runs is load_runs
    assert data_dir("linear", "quick") == ROOT / "book" / "data" / "linear" / "quick"
    assert make_command("linear", "quick", "--group task-sets") == (
        "python scripts/make_linear_runs.py --scale quick --group task-sets")
    assert make_command("ch6", "full", "--seeds 0", "cuda") == (
        "python scripts/make_ch6_runs.py --scale full --seeds 0 --device cuda")
    with pytest.raises(ValueError, match="scale"):
        data_dir("linear", "huge")
    # a missing non-linear run names the command that makes it where it can be made
    assert nonlinear.missing_runs_command("ch7", "full", "--controls") == (
        "python scripts/make_ch7_runs.py --scale full --controls --device cuda")
    assert nonlinear.missing_runs_command("ch7", "quick") == (
        "python scripts/make_ch7_runs.py --scale quick")


def test_every_shipped_file_of_every_chapter_loads_with_the_one_loader():
    # not a run an older make_* script is still writing (book/data/ch7/medium may be filling)
    files = sorted(f for f in data_root().glob("*/*/*.npz")
                   if not f.name.endswith(".partial.npz"))
    assert {f.parent.parent.name for f in files} >= {"linear", "ch6", "ch7"}
    for f in files:
        s = load_run(f)
        assert set(RunSummary.required_meta) <= set(s.meta), f
        assert s.meta["scale"] == f.parent.name, f
        assert s.meta["command"].startswith(
            f"python scripts/make_{f.parent.parent.name}_runs.py --scale {f.parent.name}"), f
        assert all(a.dtype in (np.float64, np.int64) for a in s.arrays.values()), f


def test_save_run_round_trips_and_leaves_only_the_file(tmp_path):
    path = save_run(_summary(), tmp_path / "new" / "r.npz")
    assert path == tmp_path / "new" / "r.npz"
    assert [p.name for p in path.parent.iterdir()] == ["r.npz"]
    back = load_run(path)
    assert back.meta == _summary().meta and list(back) == ["meta", "steps", "loss"]
    np.testing.assert_array_equal(back.loss, _summary().loss)


def test_an_interrupted_write_leaves_no_file(tmp_path):
    path = tmp_path / "r.npz"
    with pytest.raises((RuntimeError, pickle.PicklingError)):
        save_run(_failing_summary(), path)
    assert list(tmp_path.iterdir()) == []          # nothing at path, no temporary file left


def test_an_interrupted_write_leaves_an_existing_file_unchanged(tmp_path):
    path = save_run(_summary(1.0), tmp_path / "r.npz")
    before = path.read_bytes()
    with pytest.raises((RuntimeError, pickle.PicklingError)):
        save_run(_failing_summary(), path)
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["r.npz"]
    np.testing.assert_array_equal(load_run(path).loss, np.ones(200))


def test_a_missing_file_names_the_command_and_meta_is_checked(tmp_path):
    with pytest.raises(FileNotFoundError, match="make_linear_runs.py --scale quick --group x"):
        load_runs(tmp_path, {"x": "x.npz"},
                  command=make_command("linear", "quick", "--group x"))
    with pytest.raises(ValueError, match="meta must have the keys"):
        RunSummary({"scale": "quick"}, {})
    with pytest.raises(ValueError, match="'meta'"):
        RunSummary(_summary().meta, {"meta": np.zeros(1)})
    s = _summary()
    with pytest.raises(AttributeError, match="seed"):     # a file of several runs
        _ = s.seed
    assert repr(s) == "RunSummary(2 arrays)"
