"""Events of runs (icllib.nonlinear.reproduction, the chapters' run_events) and the stored
events of every shipped run regenerated on other kernels (scripts/regenerated_events.py)."""

import math

import numpy as np
import pytest

from icllib.nonlinear.reproduction import EVENTS_FILE, event_differences, load_events, save_events
from icllib.nonlinear.runs import data_dir


def test_events_round_trip_keeps_nan_and_the_command(tmp_path):
    events = {"b": {"t": 3.0, "never": float("nan")}, "a": {"t": -1.5, "never": 2.0}}
    save_events(tmp_path / "e.json", events, command="scripts/other-cpu make")
    back, command = load_events(tmp_path / "e.json")
    assert command == "scripts/other-cpu make"
    assert back["a"] == {"t": -1.5, "never": 2.0}
    assert back["b"]["t"] == 3.0 and math.isnan(back["b"]["never"])
    assert "null" in (tmp_path / "e.json").read_text()      # strict JSON, no NaN literal


def test_events_round_trip_keeps_absent_events_and_float32_values(tmp_path):
    """Runs with events the others lack (ablations) keep exactly their own events; a float32
    value survives the 9 significant digits the file keeps (the failure guarded: an absent
    event read back as NaN or 0, or a value rounded below float32 precision)."""
    x = float(np.float32(0.155000344))
    events = {"with": {"t": x, "ablated": 2.5}, "without": {"t": 1e-7}}
    save_events(tmp_path / "e.json", events, command="c")
    back, _ = load_events(tmp_path / "e.json")
    assert back["without"] == {"t": 1e-7} and back["with"]["ablated"] == 2.5
    assert np.float32(back["with"]["t"]) == np.float32(x)
    assert back["with"]["t"] == pytest.approx(x, rel=1e-8)


def test_event_differences_signs_nan_pairs_and_one_sided_events():
    shipped = {"r": {"t": 100.0, "both_never": math.nan, "one_never": 5.0}}
    other = {"r": {"t": 75.0, "both_never": math.nan, "one_never": math.nan}}
    d = event_differences(shipped, other)["r"]
    assert d == {"t": -25.0, "both_never": 0.0, "one_never": math.inf}


def test_event_differences_and_save_refuse_bad_input(tmp_path):
    with pytest.raises(ValueError, match="same runs.*only shipped: \\['x'\\]"):
        event_differences({"x": {"t": 1.0}}, {"y": {"t": 1.0}})
    with pytest.raises(ValueError, match="run 'x'.*same events.*\\['s', 't'\\]"):
        event_differences({"x": {"t": 1.0}}, {"x": {"s": 1.0}})
    with pytest.raises(ValueError, match="events must be a non-empty mapping"):
        save_events(tmp_path / "e.json", {}, command="c")
    with pytest.raises(ValueError, match="command must be"):
        save_events(tmp_path / "e.json", {"x": {"t": 1.0}}, command=" ")


def test_induction_run_events_are_the_chapter_tests():
    from icllib.nonlinear.induction import (
        DIP_TESTS,
        DISTANCE_RANKS,
        LAYERS,
        VIEWS,
        curve_half,
        dip_test,
        load_runs,
    )
    from icllib.nonlinear.induction.reproduction import HALF_EVENTS, WINDOW_EVENTS, run_events

    runs = load_runs([1, 2], [0])
    deep, shallow = runs[2, 0], runs[1, 0]
    ev = run_events(deep)
    w = deep.window
    assert (ev["window_start"], ev["window_mid"], ev["window_end"]) == (w.start, w.mid, w.end)
    assert ev["emerged"] == 1.0 and ev["control"] == 0.0
    assert ev["final_icl_loss"] == deep.icl_loss[-1]
    for v in VIEWS:
        for layer in LAYERS:
            for r in DISTANCE_RANKS:
                assert ev[f"half {v} / {layer} / {r}"] == curve_half(deep, v, layer, rank=r)
            for t in DIP_TESTS:
                assert ev[f"dip {v} / {layer} / {t}"] == float(dip_test(deep, v, layer, t).is_dip)
    # a one-layer run has no window of its own: its window events exist only against the
    # placebo window of its partner, its half-times always
    one = run_events(shallow)
    assert one["emerged"] == 0.0 and one["control"] == 1.0 and set(one) == set(ev)
    assert all(math.isnan(one[k]) for k in WINDOW_EVENTS) and math.isnan(one["circuit_kind"])
    assert all(np.isfinite(one[k]) for k in HALF_EVENTS if "stacked" not in k
               and "summed" not in k)
    placebo = run_events(shallow, w)
    assert placebo["window_start"] == w.start
    assert all(placebo[k] == float(dip_test(shallow, v, layer, t, window=w).is_dip)
               for v in VIEWS for layer in LAYERS for t in DIP_TESTS
               for k in [f"dip {v} / {layer} / {t}"])


def test_grokking_run_events_are_the_chapter_factor_table():
    from icllib.nonlinear.grokking import (
        PLACES,
        factor_table,
        grokking_timing,
        load_controls,
        load_runs,
    )
    from icllib.nonlinear.grokking.reproduction import run_events

    run, control = load_runs([1.0], [0])[1.0, 0], load_controls()[0]
    ev, table = run_events(run), factor_table({0: run})
    assert ev["test_50"] == grokking_timing(run)["test_50"]
    for (matrix, rank), cell in table.items():
        half = cell[0]["half"]
        assert ev[f"half {matrix} / {rank}"] == half or (np.isnan(half) and np.isnan(
            ev[f"half {matrix} / {rank}"]))
        assert PLACES[int(ev[f"place {matrix} / {rank}"])] == cell[0]["place"]
        for k in ("settle", "rotation_peak"):
            # a NaN event (never happened) must be NaN on both sides, never a number
            assert ev[f"{k} {matrix} / {rank}"] == cell[0][k] or (
                np.isnan(cell[0][k]) and np.isnan(ev[f"{k} {matrix} / {rank}"]))
    ev_control = run_events(control)
    assert math.isnan(ev_control["test_50"]) and set(ev_control) == set(ev)


@pytest.mark.parametrize("chapter", ["ch6", "ch7"])
def test_stored_events_cover_every_shipped_run(chapter):
    """Every run file the chapter ships was regenerated on other kernels, and its stored events
    are the events the chapter computes (same names) -- a run added without regenerating it,
    or an event added to run_events without re-running the script, fails here."""
    if chapter == "ch6":
        from icllib.nonlinear.induction.reproduction import chapter_events
    else:
        from icllib.nonlinear.grokking.reproduction import run_events
        from icllib.nonlinear.reproduction import folder_events

        def chapter_events(folder):
            return folder_events(folder, run_events)

    folder = data_dir(chapter, "quick")
    events, command = load_events(folder / EVENTS_FILE)
    assert command.startswith("scripts/other-cpu ")
    files = sorted(folder.glob("*.npz"))
    assert sorted(events) == [p.stem for p in files]
    shipped = chapter_events(folder)
    assert sorted(shipped) == [p.stem for p in files]       # the events file is not a run
    event_differences(shipped, events)      # same runs, same events, or it raises


def test_largest_change_and_count_changed_select_by_run_and_prefix():
    from icllib.nonlinear.reproduction import count_changed, largest_change

    d = {"a": {"dip x": 1.0, "dip y": 0.0, "start": -25.0},
         "b": {"dip x": 0.0, "dip y": -1.0, "start": math.inf}}
    assert count_changed(d, prefix="dip ") == 2 and count_changed(d, ["a"], "dip ") == 1
    assert largest_change(d, ["a"], "start") == 25.0
    assert largest_change(d) == math.inf
    with pytest.raises(ValueError, match="unknown: \\['c'\\]"):
        largest_change(d, ["c"])
    with pytest.raises(ValueError, match="prefix 'lead'"):
        count_changed(d, prefix="lead")


def test_regenerated_events_script_refuses_a_folder_without_every_run(tmp_path, capsys):
    """scripts/regenerated_events.py must not store events of a partial regeneration."""
    import importlib.util
    from pathlib import Path

    script = Path(__file__).resolve().parents[1] / "scripts" / "regenerated_events.py"
    spec = importlib.util.spec_from_file_location("regenerated_events", script)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    (tmp_path / "wd1_seed0.npz").write_bytes(b"")     # one of twelve: refused before reading
    before = (data_dir("ch7", "quick") / EVENTS_FILE).read_bytes()
    assert module.main(["ch7", str(tmp_path)]) == 2
    assert "lacks the regenerated" in capsys.readouterr().err
    assert (data_dir("ch7", "quick") / EVENTS_FILE).read_bytes() == before


def test_medium_stored_events_cover_one_run_per_setting():
    """At the medium scale one two-layer run per setting was regenerated on other kernels
    (scripts/regenerated_events.py --runs): its stored events name shipped runs only, cover
    every setting the chapter states a verdict for, and have the events the chapter computes."""
    from icllib.nonlinear.induction import parse_run_name
    from icllib.nonlinear.induction.reproduction import chapter_events

    folder = data_dir("ch6", "medium")
    events, command = load_events(folder / EVENTS_FILE)
    assert command.startswith("scripts/other-cpu ")
    shipped = {p.stem for p in folder.glob("run_*.npz")}
    assert set(events) <= shipped
    settings = {(m["positional"], m["init_std"]) for m in map(parse_run_name, shipped)}
    assert {(m["positional"], m["init_std"]) for m in map(parse_run_name, events)} == settings
    computed = chapter_events(folder)
    event_differences({n: computed[n] for n in events}, events)   # same events, or it raises
