"""Sphinx extension: make the book's kernels draw interactive figures as static frames.

Kernels started by myst-nb inherit this process's environment, so setting
``ICLLIB_FIGURES=static`` here makes :func:`icllib.widgets.interactive_figure` pre-render
every control value into the page (a live Jupyter session keeps ipywidgets).
"""

import os


def setup(app):
    os.environ.setdefault("ICLLIB_FIGURES", "static")
    return {"parallel_read_safe": True, "parallel_write_safe": True}
