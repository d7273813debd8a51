"""icllib.scale: the switch that sizes every experiment."""

import pytest

from icllib.scale import pick


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
