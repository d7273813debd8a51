"""The interactive-figure helper: both renderings, every frame, and the NaN guard."""

import base64
import json
import re

import numpy as np
import pytest

from icllib import widgets
from icllib.widgets import dropdown, interactive_figure, slider


def draw_line(fig, slope, offset):
    ax = fig.add_subplot()
    x = np.linspace(0, 1, 20)
    ax.plot(x, slope * x + offset)
    ax.set_ylim(-3, 3)


def test_static_renders_every_combination_in_row_major_order():
    calls = []

    def draw(fig, slope, offset):
        calls.append((slope, offset))
        draw_line(fig, slope, offset)

    controls = {"slope": slider([-1.0, 0.0, 1.0], value=0.0),
                "offset": dropdown({"low": -1, "high": 1})}
    fig = interactive_figure(draw, controls, mode="static")
    assert calls == [(s, o) for s in (-1.0, 0.0, 1.0) for o in (-1, 1)]
    assert len(fig.frames) == 6
    assert all(f.startswith(b"\x89PNG") for f in fig.frames)
    # Different parameters give different pictures.
    assert len(set(fig.frames)) == 6
    spec = json.loads(re.search(r'class="icl-frames">(.*?)</script>', fig.html).group(1))
    assert spec["sizes"] == [3, 2]
    assert spec["labels"] == [["-1.0", "0.0", "1.0"], ["low", "high"]]
    # The initial image is the frame of the initial values (slope 0.0 -> index 1, offset index 0).
    start = 1 * 2 + 0
    assert f'data-frame="{start}"' in fig.html
    assert base64.b64encode(fig.frames[start]).decode() in fig.html.split('class="icl-frames"')[0]


def test_static_html_is_deterministic():
    controls = {"slope": slider([0.5, 1.0]), "offset": slider([0.0])}
    a = interactive_figure(draw_line, controls, mode="static").html
    b = interactive_figure(draw_line, controls, mode="static").html
    assert a == b


def test_nan_in_any_frame_raises_naming_the_values():
    def draw(fig, k):
        ax = fig.add_subplot()
        ax.plot([0, 1], [0, np.nan if k == 3 else 1.0])

    with pytest.raises(ValueError, match=r"for \{'k': 3\} draws a non-finite value"):
        interactive_figure(draw, {"k": slider([1, 2, 3])}, mode="static")


def test_nan_in_image_raises():
    def draw(fig, k):
        ax = fig.add_subplot()
        img = np.ones((3, 3))
        img[1, 1] = np.nan if k else 0.0
        ax.imshow(img)

    interactive_figure(draw, {"k": slider([0])}, mode="static")
    with pytest.raises(ValueError, match="non-finite"):
        interactive_figure(draw, {"k": slider([0, 1])}, mode="static")


def test_too_many_frames_is_refused():
    with pytest.raises(ValueError, match="at most"):
        controls = {"slope": slider(list(range(20))), "offset": slider(list(range(5)))}
        interactive_figure(draw_line, controls, mode="static")


def test_bad_controls_and_values():
    with pytest.raises(ValueError, match="not among"):
        slider([1, 2, 3], value=5)
    with pytest.raises(ValueError, match="at least one"):
        dropdown([])
    with pytest.raises(ValueError, match="controls"):
        interactive_figure(draw_line, {"slope": [1, 2]}, mode="static")
    with pytest.raises(ValueError, match="mode"):
        interactive_figure(draw_line, {"slope": slider([1]), "offset": slider([0])}, mode="movie")


def test_mode_from_environment(monkeypatch):
    monkeypatch.setenv("ICLLIB_FIGURES", "live")
    assert widgets.figure_mode() == "live"
    monkeypatch.setenv("ICLLIB_FIGURES", "bogus")
    with pytest.raises(ValueError, match="ICLLIB_FIGURES"):
        widgets.figure_mode()


def test_live_widget_redraws_when_a_control_moves():
    pytest.importorskip("ipywidgets")
    seen = []

    def draw(fig, slope, offset):
        seen.append((slope, offset))
        draw_line(fig, slope, offset)

    box = interactive_figure(draw, {"slope": slider([0.0, 1.0, 2.0], value=1.0),
                                    "offset": dropdown([0, 1])}, mode="live")
    controls = box.children[0].children
    assert [c.continuous_update for c in controls if hasattr(c, "continuous_update")] == [False]
    assert seen[-1] == (1.0, 0)
    controls[0].value = 2.0
    assert seen[-1] == (2.0, 0)
    controls[1].value = 1
    assert seen[-1] == (2.0, 1)


def test_checked_mode_draws_and_checks_every_frame_without_rasterising(monkeypatch):
    """The tests' mode: every combination is drawn and checked (a NaN in a frame that is not
    the initial one raises), none is rasterised, and the live widget is what is shown."""
    pytest.importorskip("ipywidgets")
    seen = []

    def draw(fig, slope, offset):
        seen.append((slope, offset))
        draw_line(fig, np.nan if (slope, offset) == (2.0, 1) else slope, offset)

    def no_png(*args, **kwargs):
        raise AssertionError("a frame was rasterised")

    monkeypatch.setattr(widgets, "_png_bytes", no_png)
    controls = {"slope": slider([0.0, 1.0, 2.0], value=1.0), "offset": dropdown([0, 1])}
    with pytest.raises(ValueError, match=r"for \{.slope.: 2\.0, .offset.: 1\} draws a non-fin"):
        interactive_figure(draw, controls, mode="checked")
    seen.clear()
    controls["slope"] = slider([0.0, 1.0], value=1.0)
    box = interactive_figure(draw, controls, mode="checked")
    assert sorted(seen[:4]) == [(0.0, 0), (0.0, 1), (1.0, 0), (1.0, 1)]   # then the live one
    assert seen[4:] == [(1.0, 0)] and hasattr(box, "children")


def test_scale_switch(monkeypatch):
    from icllib.scale import current_scale, pick

    monkeypatch.delenv("ICLLIB_SCALE", raising=False)
    assert current_scale() == "quick" and pick(quick=1, full=2) == 1
    monkeypatch.setenv("ICLLIB_SCALE", "full")
    assert pick(quick=1, full=2) == 2
    monkeypatch.setenv("ICLLIB_SCALE", "huge")
    with pytest.raises(ValueError, match="ICLLIB_SCALE"):
        current_scale()


def test_mode_colors_are_distinct_and_validated():
    from icllib.plotting import mode_colors

    for d in (1, 4, 8, 20):
        colours = mode_colors(d)
        assert len(colours) == d == len(set(colours))
    with pytest.raises(ValueError, match="d must be"):
        mode_colors(0)


# ------------------------------------- static figures store each distinct picture once


def draw(fig, slope, style):
    ax = fig.add_subplot()
    x = np.linspace(0, 1, 20)
    ax.plot(x, slope * x)  # ``style`` does not change the picture: duplicate frames
    ax.set_ylim(-2, 2)


def test_each_picture_is_stored_once_and_the_initial_one_only_as_the_img():
    fig = interactive_figure(draw, {"slope": slider([-1.0, 0.0, 1.0], value=1.0),
                                    "style": dropdown({"a": 0, "b": 1})}, mode="static")
    assert len(fig.frames) == 6 and len(set(fig.frames)) == 3
    spec = json.loads(re.search(r'class="icl-frames">(.*?)</script>', fig.html).group(1))
    assert len(spec["frames"]) == 3 and spec["frames"].count(None) == 1
    start = 2 * 2 + 0
    assert spec["frames"][spec["index"][start]] is None
    for flat, png in enumerate(fig.frames):  # every combination resolves to its own picture
        stored = spec["frames"][spec["index"][flat]]
        assert (png == fig.frames[start]) if stored is None else base64.b64decode(stored) == png
    for png in set(fig.frames):
        assert fig.html.count(base64.b64encode(png).decode()) == 1
