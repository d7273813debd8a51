"""Static interactive figures store each distinct picture once in the page."""

import base64
import json
import re

import numpy as np

from icllib.widgets import dropdown, interactive_figure, slider


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
