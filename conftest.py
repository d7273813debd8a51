"""Let nbval test the MyST-markdown chapters directly (no .ipynb on disk).

``pytest --nbval-lax --nbval-current-env book/`` collects every chapter ``book/*.md`` that has
a jupytext header, reads it through :func:`jupytext.read`, and runs its cells in a fresh
kernel.  Text notebooks carry no outputs, so the checks live in the cells themselves
(assertions, many in cells tagged ``remove-input`` and ``remove-output``: hidden on the page
but executed by the book build, whose inline execution drops ``remove-cell`` cells).
"""


import os

import pytest
from hypothesis import settings

from icllib.widgets import use_checked_figures

# Hypothesis draws the same examples on every run (derandomize; no example database), so a test
# run is reproducible and a failure in CI is the failure a contributor sees. HYPOTHESIS_PROFILE=
# explore draws fresh examples, for a local search for counterexamples.
settings.register_profile("derandomized", derandomize=True, database=None)
settings.register_profile("explore", derandomize=False)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "derandomized"))

# Interactive figures draw and check every frame under test (every control value is
# exercised); the build rasterises them all (icllib.widgets, mode "checked").
use_checked_figures()


def _is_myst_notebook(path) -> bool:
    if path.suffix != ".md" or path.parent.name != "book":
        return False
    with open(path, encoding="utf-8") as fh:
        head = fh.read(400)
    return head.startswith("---") and "jupytext:" in head and "kernelspec:" in head


def pytest_collect_file(file_path, parent):
    opt = parent.config.option
    if not (getattr(opt, "nbval", False) or getattr(opt, "nbval_lax", False)):
        return None
    if not _is_myst_notebook(file_path):
        return None
    import jupytext
    from nbval.plugin import IPyNbFile

    class MystNotebookFile(IPyNbFile):
        def collect(self):
            from unittest import mock

            import nbval.plugin

            nb = jupytext.read(str(self.fspath))
            # nbval reads the file with nbformat.read; hand it the jupytext notebook instead.
            with mock.patch.object(nbval.plugin.nbformat, "read", lambda *a, **k: nb):
                items = list(super().collect())
            yield from items

    return MystNotebookFile.from_parent(parent, path=file_path)


def _stderr_text(outputs) -> str:
    return "".join(o.get("text", "") for o in outputs or ()
                   if o.get("output_type") == "stream" and o.get("name") == "stderr")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    """A chapter cell whose output holds stderr text (a warning, a traceback printed by a
    library) fails under nbval: a reader would see it under the cell."""
    outcome = yield
    text = _stderr_text(getattr(item, "test_outputs", None))
    if text and outcome.excinfo is None:
        pytest.fail(f"the cell wrote to stderr (a reader would see it):\n{text[-1500:]}",
                    pytrace=False)


QUEUE_VAR = "ICLLIB_NBVAL_QUEUE"


def pytest_runtestloop(session):
    """``ICLLIB_NBVAL_QUEUE=DIR``: share the chapters with other test processes. Before it runs
    a chapter's cells, the process claims the chapter by making ``DIR/<file name>`` (atomic:
    one process gets it) and skips a chapter another process claimed, without reporting it.
    ``scripts/test.sh`` lets each of its streams take chapters when its own work is done, so
    the streams end together; it then checks that every chapter was claimed."""
    queue = os.environ.get(QUEUE_VAR)
    opt = session.config.option
    if not queue or opt.collectonly or not (getattr(opt, "nbval", False)
                                            or getattr(opt, "nbval_lax", False)):
        return None                               # only an nbval run shares its chapters
    if session.testsfailed:
        raise session.Interrupted(f"{session.testsfailed} errors during collection")
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    chapters = {}
    for item in session.items:
        chapters.setdefault(item.path, []).append(item)
    for path, items in chapters.items():
        try:
            os.mkdir(os.path.join(queue, path.name))
        except FileExistsError:
            continue
        if reporter is not None:
            reporter.write_line(f"[nbval queue] {path.name}")
        for i, item in enumerate(items):
            # the chapter's last cell tears its kernel down (nextitem None), as at the end
            nextitem = items[i + 1] if i + 1 < len(items) else None
            item.config.hook.pytest_runtest_protocol(item=item, nextitem=nextitem)
            if session.shouldfail:
                raise session.Failed(session.shouldfail)
            if session.shouldstop:
                raise session.Interrupted(session.shouldstop)
    return True
