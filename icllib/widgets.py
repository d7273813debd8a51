"""Interactive figures that work both in a live kernel and in the static HTML book.

A chapter writes one call::

    from icllib.widgets import interactive_figure, slider, dropdown

    def draw(fig, N, spectrum):
        ax = fig.add_subplot()
        ...

    interactive_figure(draw, {"N": slider([5, 10, 20], value=10, label="N"),
                              "spectrum": dropdown({"isotropic": 0, "steep": 1})})

Two renderings, chosen by the ``ICLLIB_FIGURES`` environment variable:

``live`` (default: Jupyter, Binder)
    ipywidgets controls (``continuous_update=False``) that redraw a matplotlib figure.
``static`` (set by the book build)
    every combination of control values is drawn once, as a palette-compressed PNG, and
    the page switches between the frames with a few lines of inline JavaScript: the
    reader moves a real control and sees the figure change, with no kernel.  Each distinct
    picture is stored once in the page (the initial one only as the ``<img>``'s source).

and a third for tests, ``checked`` (set by the tests, nbval included): every combination is
drawn and checked as for ``static``, but not rasterised into a PNG (the build rasterises
every frame); then the ``live`` widget is shown.

Each drawn frame is checked: a figure with a non-finite data value raises instead of
silently showing a gap.
"""

from __future__ import annotations

import base64
import hashlib
import html
import io
import itertools
import json
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from .validation import check_choice

__all__ = [
    "ENV_VAR",
    "MODES",
    "MAX_FRAMES",
    "Control",
    "slider",
    "dropdown",
    "figure_mode",
    "use_static_figures",
    "use_checked_figures",
    "check_frames",
    "check_finite",
    "draw_figure",
    "render_frames",
    "static_html",
    "StaticFigure",
    "live_widget",
    "interactive_figure",
]

ENV_VAR = "ICLLIB_FIGURES"
MODES = ("live", "static", "checked")
MAX_FRAMES = 64


@dataclass(frozen=True)
class Control:
    """One control of an interactive figure.

    Attributes
    ----------
    kind : {"slider", "dropdown"}
    values : tuple
        The values passed to ``draw``.
    labels : tuple of str
        What the reader sees for each value.
    index : int
        Position of the initial value.
    label : str or None
        The control's caption (defaults to the keyword name).
    """

    kind: str
    values: tuple
    labels: tuple
    index: int
    label: str | None = None


def _make_control(kind, values, value, label, fmt) -> Control:
    if isinstance(values, Mapping):
        labels, vals = tuple(str(k) for k in values), tuple(values.values())
    else:
        vals = tuple(values)
        labels = tuple(fmt.format(v) for v in vals)
    if len(vals) < 1:
        raise ValueError(f"a {kind} needs at least one value, got none")
    if value is None:
        index = 0 if kind == "dropdown" else len(vals) // 2
    else:
        matches = [i for i, v in enumerate(vals) if _same(v, value)]
        if not matches:
            raise ValueError(f"value {value!r} is not among the {kind}'s values {vals!r}")
        index = matches[0]
    return Control(kind, vals, labels, index, label)


def _same(a, b) -> bool:
    try:
        return bool(a == b)
    except Exception:  # e.g. arrays: compare identity
        return a is b


def slider(values, value=None, label: str | None = None, fmt: str = "{}") -> Control:
    """A slider over a finite, ordered list of values.

    Parameters
    ----------
    values : sequence
        The positions of the slider (a few to a few dozen).
    value : optional
        The initial value (one of ``values``); default the middle one.
    label : str, optional
        Caption shown next to the slider.
    fmt : str
        Format string for the value read-out, e.g. ``"{:.2f}"``.
    """
    return _make_control("slider", values, value, label, fmt)


def dropdown(options, value=None, label: str | None = None, fmt: str = "{}") -> Control:
    """A drop-down menu; ``options`` is a sequence, or a mapping ``label -> value``."""
    return _make_control("dropdown", options, value, label, fmt)


def figure_mode() -> str:
    """Return ``"live"``, ``"static"`` or ``"checked"`` from ``ICLLIB_FIGURES`` (default
    ``"live"``)."""
    mode = os.environ.get(ENV_VAR, "").strip().lower() or "live"
    return check_choice(ENV_VAR, mode, MODES)


def use_static_figures() -> None:
    """Make ``static`` the default of ``ICLLIB_FIGURES`` for this process and its kernels.

    The one place where the book build (``book/_ext/book_site.py``) chooses pre-rendered
    figures, so that every frame of every interactive figure is drawn into the page (the tests
    choose :func:`use_checked_figures`); an explicit ``ICLLIB_FIGURES`` in the environment
    still wins.
    """
    os.environ.setdefault(ENV_VAR, "static")


def use_checked_figures() -> None:
    """Make ``checked`` the default of ``ICLLIB_FIGURES`` for this process and its kernels.

    The tests' choice (``conftest.py``): every frame of every interactive figure is drawn and
    checked, without the cost of rasterising it (the build does that, for every frame); an
    explicit ``ICLLIB_FIGURES`` in the environment still wins.
    """
    os.environ.setdefault(ENV_VAR, "checked")


def check_finite(fig: Figure, where: str = "") -> None:
    """Raise ``ValueError`` if any line, collection or image of ``fig`` holds a non-finite value."""
    for ax_i, ax in enumerate(fig.axes):
        arrays = [line.get_xydata() for line in ax.get_lines()]
        arrays += [np.asarray(c.get_offsets()) for c in ax.collections]
        arrays += [np.ma.filled(np.asarray(im.get_array(), dtype=float), 0.0)
                   for im in ax.get_images() if im.get_array() is not None]
        for arr in arrays:
            if np.ma.isMaskedArray(arr):
                arr = np.ma.filled(np.asarray(arr, dtype=float), 0.0)
            arr = np.asarray(arr, dtype=float)
            if arr.size and not np.all(np.isfinite(arr)):
                raise ValueError(f"the figure{where} draws a non-finite value in axes {ax_i}")


def draw_figure(draw: Callable, values: Mapping[str, Any], figsize=(7.0, 4.0)) -> Figure:
    """Call ``draw(fig, **values)`` on a fresh Agg figure, check it, and return the figure."""
    fig = Figure(figsize=figsize, layout="constrained")
    FigureCanvasAgg(fig)
    draw(fig, **values)
    check_finite(fig, where=f" for {dict(values)!r}")
    return fig


def _png_bytes(fig: Figure, dpi: int, colors: int) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi)
    try:  # palette quantisation shrinks plot PNGs ~3x with no visible loss
        from PIL import Image

        im = Image.open(io.BytesIO(buf.getvalue())).convert("RGB")
        q = im.quantize(colors=colors, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE)
        out = io.BytesIO()
        q.save(out, format="PNG", optimize=True)
        return out.getvalue()
    except ImportError:  # pragma: no cover - Pillow ships with matplotlib
        return buf.getvalue()


def render_frames(draw: Callable, controls: Mapping[str, Control], *, figsize=(7.0, 4.0),
                  dpi: int = 80, colors: int = 96) -> list[bytes]:
    """Draw every combination of control values; return the PNG frames in row-major order.

    The last control varies fastest.  Raises ``ValueError`` if there are more than
    ``MAX_FRAMES`` combinations or if any frame draws a non-finite value.
    """
    return [_png_bytes(fig, dpi, colors) for fig in _every_frame(draw, controls, figsize)]


def check_frames(draw: Callable, controls: Mapping[str, Control], *,
                 figsize=(7.0, 4.0)) -> int:
    """Draw and check every combination of control values, as :func:`render_frames` does,
    without rasterising the figures; return the number of frames.

    Raises ``ValueError`` as :func:`render_frames` does.
    """
    return sum(1 for _ in _every_frame(draw, controls, figsize))


def _every_frame(draw, controls, figsize):
    """Yield the checked figure of every combination of control values (row-major order)."""
    names = list(controls)
    sizes = [len(controls[n].values) for n in names]
    total = int(np.prod(sizes)) if sizes else 1
    if total > MAX_FRAMES:
        raise ValueError(f"controls give {total} combinations; at most {MAX_FRAMES} frames are "
                         f"drawn for the static book (sizes {dict(zip(names, sizes))})")
    for combo in itertools.product(*[range(s) for s in sizes]):
        values = {n: controls[n].values[i] for n, i in zip(names, combo)}
        yield draw_figure(draw, values, figsize)


_SCRIPT = """
(function () {
  var root = document.getElementById("%(id)s");
  var spec = JSON.parse(root.querySelector("script.icl-frames").textContent);
  var img = root.querySelector("img.icl-frame");
  var first = img.getAttribute("src");
  var inputs = root.querySelectorAll("[data-control]");
  function update() {
    var flat = 0;
    inputs.forEach(function (el, k) {
      var i = parseInt(el.value, 10);
      flat = flat * spec.sizes[k] + i;
      var out = root.querySelector("output[data-for='" + el.dataset.control + "']");
      if (out) { out.textContent = spec.labels[k][i]; }
    });
    var b64 = spec.frames[spec.index[flat]];
    img.src = b64 === null ? first : "data:image/png;base64," + b64;
    img.dataset.frame = String(flat);
  }
  inputs.forEach(function (el) {
    el.addEventListener("input", update);
    el.addEventListener("change", update);
  });
  update();
})();
"""


def static_html(frames: list[bytes], controls: Mapping[str, Control], alt: str = "") -> str:
    """Self-contained HTML: the controls, the current frame, and the script that switches frames."""
    names = list(controls)
    b64 = [base64.b64encode(f).decode("ascii") for f in frames]
    fig_id = "icl-fig-" + hashlib.sha1("".join(b64).encode()).hexdigest()[:12]
    start = 0
    for n in names:
        start = start * len(controls[n].values) + controls[n].index
    # Each distinct picture is stored once: ``index`` maps a combination (row-major) to its
    # picture in ``frames``.  The picture the <img> shows at first is already in the page (its
    # src), so its slot in ``frames`` is null and the script reuses the <img>'s own src.
    distinct, index = {}, []
    for f in b64:
        index.append(distinct.setdefault(f, len(distinct)))
    stored = [None if f == b64[start] else f for f in distinct]
    spec = {"sizes": [len(controls[n].values) for n in names],
            "labels": [list(controls[n].labels) for n in names],
            "index": index,
            "frames": stored}
    parts = [f'<div class="icl-interactive" id="{fig_id}" '
             'style="border:1px solid #ddd;border-radius:6px;padding:6px;margin:0.5em 0">',
             '<div class="icl-controls" style="display:flex;flex-wrap:wrap;gap:1.2em;'
             'font-size:0.9em;align-items:center">']
    for n in names:
        c = controls[n]
        caption = html.escape(c.label or n)
        if c.kind == "slider":
            parts.append(
                f'<label>{caption} <input type="range" data-control="{html.escape(n)}" '
                f'min="0" max="{len(c.values) - 1}" step="1" value="{c.index}" '
                f'aria-label="{caption}" style="vertical-align:middle"> '
                f'<output data-for="{html.escape(n)}">'
                f'{html.escape(c.labels[c.index])}</output></label>')
        else:
            opts = "".join(
                f'<option value="{i}"{" selected" if i == c.index else ""}>'
                f'{html.escape(lab)}</option>'
                for i, lab in enumerate(c.labels))
            parts.append(f'<label>{caption} <select data-control="{html.escape(n)}" '
                         f'aria-label="{caption}">{opts}</select></label>')
    parts.append("</div>")
    parts.append(f'<img class="icl-frame" alt="{html.escape(alt)}" style="max-width:100%" '
                 f'data-frame="{start}" src="data:image/png;base64,{b64[start]}">')
    # "</" cannot occur in base64 or in escaped labels, so the JSON is safe inside <script>.
    parts.append('<script type="application/json" class="icl-frames">'
                 + json.dumps(spec).replace("</", "<\\/") + "</script>")
    parts.append("<script>" + _SCRIPT % {"id": fig_id} + "</script></div>")
    return "".join(parts)


class StaticFigure:
    """A pre-rendered interactive figure; displays as HTML (``_repr_html_``)."""

    def __init__(self, html_text: str, frames: list[bytes]):
        self.html = html_text
        self.frames = frames

    def _repr_html_(self) -> str:
        return self.html


def live_widget(draw: Callable, controls: Mapping[str, Control], *, figsize=(7.0, 4.0)):
    """Build the ipywidgets version: controls above an Output that ``draw`` redraws."""
    import ipywidgets as W
    from IPython.display import display

    widgets = {}
    for n, c in controls.items():
        options = list(zip(c.labels, c.values))
        common = dict(options=options, value=c.values[c.index], description=c.label or n,
                      style={"description_width": "initial"})
        if c.kind == "slider":
            widgets[n] = W.SelectionSlider(continuous_update=False, **common)
        else:
            widgets[n] = W.Dropdown(**common)

    def redraw(**values):
        fig = draw_figure(draw, values, figsize)
        display(fig)

    out = W.interactive_output(redraw, widgets)
    return W.VBox([W.HBox(list(widgets.values()), layout=W.Layout(flex_flow="row wrap")), out])


def interactive_figure(draw: Callable, controls: Mapping[str, Control], *, figsize=(7.0, 4.0),
                       dpi: int = 80, alt: str = "", mode: str | None = None):
    """Show a figure with controls; see the module docstring for the two renderings.

    Parameters
    ----------
    draw : callable
        ``draw(fig, **values)`` draws into the given (empty) matplotlib ``Figure``.
    controls : mapping
        Keyword name -> :func:`slider` or :func:`dropdown`.
    figsize : (float, float)
        Figure size in inches.
    dpi : int
        Resolution of the static frames.
    alt : str
        Alternative text of the static image.
    mode : {"live", "static", "checked"}, optional
        Overrides ``ICLLIB_FIGURES``.

    Returns
    -------
    StaticFigure or ipywidgets.VBox
        Already displayed when running under IPython; returned for tests.
    """
    if not callable(draw):
        raise ValueError("draw must be a callable draw(fig, **values)")
    if not isinstance(controls, Mapping) or not all(
            isinstance(c, Control) for c in controls.values()):
        raise ValueError("controls must map names to slider(...) or dropdown(...) controls")
    mode = check_choice("mode", mode or figure_mode(), MODES)
    if mode == "static":
        frames = render_frames(draw, controls, figsize=figsize, dpi=dpi)
        result = StaticFigure(static_html(frames, controls, alt), frames)
    else:
        if mode == "checked":
            check_frames(draw, controls, figsize=figsize)
        result = live_widget(draw, controls, figsize=figsize)
    try:
        from IPython import get_ipython
        from IPython.display import display

        if get_ipython() is not None:
            display(result)
            return None
    except ImportError:  # pragma: no cover
        pass
    return result
