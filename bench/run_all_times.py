"""How long a reader waits for Run All: each chapter opened in JupyterLab and run, timed.

Run:  python bench/run_all_times.py [CHAPTER ...] [--top K] [--windowing MODE]
      python bench/run_all_times.py --cells [CHAPTER ...] [--top K] [--figures live|checked]

CHAPTER is a chapter file or a prefix of one (``01``, ``05b``, ``book/03-fixed-points.md``);
default: every chapter.  With ``--cells`` it may also be a MyST notebook outside ``book/``
(an older version of a chapter, to compare: it runs from ``book/`` all the same).  A benchmark
that prints figures, never a test.

Default mode (what a Binder reader waits for): one JupyterLab (``jupyter lab`` of this
environment, started and stopped here, with settings, runtime and workspace folders of its
own) and one headless Chromium page, the machinery of ``tests/test_jupyterlab.py`` and
``tests/conftest.py``.  For each chapter: open it as a notebook (jupytext) with JupyterLab's
own command, wait for its kernel to be idle and its page to be rendered, then
``notebook:run-all-cells`` and wait until every code cell has an execution count and the
kernel is idle again.  That wait is the chapter's figure ("run all, s"); "open, s" is the
time from the open command to an idle kernel.  JupyterLab records each cell's kernel-side
timing (``recordTiming``), from which the ``--top`` slowest cells are listed.  Windowing is
JupyterLab's default (``contentVisibility`` in JupyterLab 4.6, what a reader has);
``--windowing none`` attaches every cell, as ``tests/test_jupyterlab.py`` does.  Autosave is
off and each chapter is closed unsaved: the files stay as they are.  Uncaught page errors
during the run are counted and the first one shown (e.g. JupyterLab's
``_markdownOverlapsToolbar``, see below).

``--cells`` (cheaper, to find hot cells): each chapter converted by jupytext and executed cell
by cell by nbclient in a fresh kernel of this environment, from ``book/`` as JupyterLab runs
it, every cell timed (wall clock, submit to reply).  ``--figures`` sets ``ICLLIB_FIGURES``
for the kernel: ``live`` (default, JupyterLab's: unset) or ``checked`` (what nbval runs,
every frame of each interactive figure drawn and checked).  ``--top 0`` lists every cell.

On the ``_markdownOverlapsToolbar`` page error: JupyterLab's cell toolbar
(``@jupyterlab/cell-toolbar``, CellToolbarTracker) checks, in an idle callback after the
active cell changes, whether the toolbar overlaps the cell's content; for a rendered markdown
cell it reads ``cell.inputArea.renderedInput.node`` unchecked.  jupyterlab-myst's markdown
cell sets ``renderedInput`` only when its asynchronous MyST render finishes (each render
parses every markdown cell of the notebook), and with JupyterLab's default windowing a cell far
down the notebook is only set up when it is first needed.  Run All makes the last cell
active, in every chapter a markdown cell (the references or an exercise): when the idle
callback comes before that cell's first render, it throws.  A race, likelier on a slow or busy
machine (with the CPU throttled 6 times: chapters 2 and 4, not every time; never with
``--windowing none``).  The reader sees nothing: no dialog, no output; the check only decides
whether the toolbar is hidden over that cell.

Numbers depend on the machine and its load: note both (``uptime``) with any figure quoted.
"""

from __future__ import annotations

import argparse
import faulthandler
import importlib.util
import os
import re
import shutil
import signal
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BOOK = ROOT / "book"


def _load(name: str, path: Path):
    """Import a test module by path (``tests`` is not a package; its ``conftest`` would clash
    with the root one by name)."""
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def all_chapters() -> list[str]:
    """The chapters: ``book/*.md`` with a jupytext kernelspec (as tests/test_jupyterlab.py)."""
    return [p.name for p in sorted(BOOK.glob("*.md"))
            if "kernelspec:" in p.read_text(encoding="utf-8")[:600]]


def pick_chapters(names: list[str], files: bool = False) -> list[str]:
    """The chapters ``names`` picks (default all); with ``files``, a MyST notebook outside
    ``book/`` (e.g. an older version, ``git show HEAD:book/01-setup.md > /tmp/01-old.md``)
    is taken as it is, by its absolute path."""
    chapters = all_chapters()
    if not names:
        return chapters
    out = []
    for name in names:
        path = Path(name).resolve()
        if files and path.is_file() and path.parent != BOOK:
            out.append(str(path))
            continue
        name = Path(name).name
        found = [c for c in chapters if c == name or c.startswith(name)]
        exact = [c for c in found if c in (name, f"{name}.md") or c.startswith(f"{name}-")]
        found = exact or found
        if len(found) != 1:
            sys.exit(f"{name!r} names {len(found)} chapters of {chapters}")
        out.append(found[0])
    return out


def _cell_label(source: str) -> str:
    """The cell's first line that says something (no comment-only or empty line)."""
    lines = [ln.strip() for ln in source.splitlines() if ln.strip()]
    code = [ln for ln in lines if not ln.startswith("#")]
    text = (code or lines or [""])[0]
    return text if len(text) <= 60 else text[:57] + "..."


def _source_lines(chapter: str, cells) -> dict:
    """``{cell index: line of book/<chapter> where its source starts}`` for the code cells,
    given as ``[(index, source), ...]`` in order."""
    text = (BOOK / chapter).read_text(encoding="utf-8")
    out, pos = {}, 0
    for i, source in cells:
        if not source.strip():
            continue
        at = text.find(source, pos)
        if at >= 0:
            out[i] = text.count("\n", 0, at) + 1
            pos = at + len(source)
    return out


# ------------------------------------------------------------------------- --cells (nbclient)


def profile_cells(chapter: str, figures: str, verbose: bool = False,
                  timeout: float = 900) -> tuple[float, float, list]:
    """Execute one chapter cell by cell: (kernel start s, total s, [(index, line, s, label)])."""
    import jupytext
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError
    from traitlets.config import Config

    nb = jupytext.read(str(BOOK / chapter))
    lines = _source_lines(chapter, [(i, c.source) for i, c in enumerate(nb.cells)
                                    if c.cell_type == "code"])
    saved = os.environ.get("ICLLIB_FIGURES")
    if figures == "live":
        os.environ.pop("ICLLIB_FIGURES", None)
    else:
        os.environ["ICLLIB_FIGURES"] = figures
    # the kernel's channels over IPC sockets in a folder of its own: over TCP (the default)
    # another process starting a kernel at the same time can take a port between its choice
    # and its binding, and the run then waits for a reply that never comes
    ipc = tempfile.mkdtemp(prefix="run-all-times-kernel-")
    rows, began = [], {}

    def on_notebook_start(notebook):            # the kernel is up
        began["kernel"] = time.perf_counter() - began["t0"]

    def on_cell_execute(cell, cell_index):
        began[cell_index] = time.perf_counter()
        if verbose:
            print(f"  cell {cell_index} ...", end="", flush=True)

    def on_cell_executed(cell, cell_index, execute_reply):
        sec = time.perf_counter() - began[cell_index]
        ok = execute_reply["content"]["status"] == "ok"
        rows.append((cell_index, lines.get(cell_index), sec,
                     _cell_label(cell.source) if ok else "FAILED"))
        if verbose:
            print(f" {sec:.2f} s", flush=True)

    try:
        config = Config()
        config.KernelManager.transport, config.KernelManager.ip = "ipc", os.path.join(ipc, "k")
        client = NotebookClient(nb, config=config, timeout=timeout, kernel_name="python3",
                                resources={"metadata": {"path": str(BOOK)}},
                                shutdown_kernel="immediate", on_notebook_start=on_notebook_start,
                                on_cell_execute=on_cell_execute,
                                on_cell_executed=on_cell_executed)
        # no stand-in for ipywidgets' Output widget (an interactive figure's): with one, a
        # chapter's run stalled now and then (1 in 8 here) waiting for a reply
        client.comm_open_handlers = {}
        began["t0"] = time.perf_counter()
        try:
            client.execute()
        except CellExecutionError as err:           # Run All would stop there too
            what = re.sub(r"\x1b\[[0-9;]*m", "", str(err).strip().splitlines()[-1])[:80]
            i, line, sec, _ = rows[-1]
            rows[-1] = (i, line, sec, f"FAILED: {what}")
    finally:
        shutil.rmtree(ipc, ignore_errors=True)
        if saved is None:
            os.environ.pop("ICLLIB_FIGURES", None)
        else:
            os.environ["ICLLIB_FIGURES"] = saved
    return began.get("kernel", float("nan")), sum(r[2] for r in rows), rows


def _print_cells(chapter, rows, top):
    shown = sorted(rows, key=lambda r: -r[2])[:top] if top else rows
    for i, line, sec, label in shown:
        where = f"cell {i:>3}" + (f" (line {line})" if line else "")
        print(f"    {sec:7.2f} s  {where:<22} {label}", flush=True)


def main_cells(chapters, args) -> None:
    print(f"per-cell profile (nbclient, ICLLIB_FIGURES={args.figures}); load: "
          f"{_load_average()}", flush=True)
    totals = []
    for chapter in chapters:
        start, total, rows = profile_cells(chapter, args.figures, args.verbose, args.timeout)
        totals.append((chapter, start, total))
        failed = [r for r in rows if r[3].startswith("FAILED")]
        print(f"{chapter}: {total:.1f} s in {len(rows)} code cells "
              f"(+ {start:.1f} s kernel start)"
              + (f"; stopped at cell {failed[0][0]}: {failed[0][3]}" if failed else ""),
              flush=True)
        _print_cells(chapter, rows, args.top)
    print()
    print(f"{'chapter':<28} {'cells, s':>9} {'kernel start, s':>16}")
    for chapter, start, total in totals:
        print(f"{chapter:<28} {total:9.1f} {start:16.1f}")
    print(f"load at the end: {_load_average()}")


# -------------------------------------------------------------------- default (JupyterLab)

# Done when every code cell has its execution count, none is running or queued, and the
# kernel is idle; or as soon as a cell shows an error (Run All stops there).
RUN_ALL_DONE = """() => {
  const panel = window.jupyterapp.shell.currentWidget;
  const k = panel.sessionContext.session && panel.sessionContext.session.kernel;
  const cells = panel.content.widgets.filter(c => c.model.type === 'code');
  if (cells.some(c => c.model.outputs.toJSON().some(o => o.output_type === 'error')))
    return 'error';
  const done = cells.every(c => c.model.executionCount !== null
                                && c.model.executionState !== 'running'
                                && !(c.promptNode && c.promptNode.textContent.includes('*')));
  return done && !!k && k.status === 'idle' ? 'done' : false;
}"""
# Each code cell's kernel-side time from the metadata recordTiming writes, with its source.
CELL_TIMES = """() => window.jupyterapp.shell.currentWidget.content.widgets.map((c, i) => {
  if (c.model.type !== 'code') return null;
  const t = c.model.getMetadata('execution');
  if (!t || !t['iopub.execute_input'] || !t['shell.execute_reply']) return null;
  return [i, (Date.parse(t['shell.execute_reply']) - Date.parse(t['iopub.execute_input'])) / 1000,
          c.model.sharedModel.getSource()];
}).filter(x => x !== null)"""


def main_lab(chapters, args) -> None:
    from playwright.sync_api import sync_playwright

    lab_tests = _load("_lab_tests", ROOT / "tests" / "test_jupyterlab.py")
    browser_conf = _load("_browser_conftest", ROOT / "tests" / "conftest.py")
    settings = dict(lab_tests.LAB_SETTINGS)
    tracker = {"recordTiming": True}
    if args.windowing != "default":
        tracker["windowingMode"] = args.windowing
    settings["@jupyterlab/notebook-extension:tracker"] = tracker
    print(f"Run All in JupyterLab (headless Chromium, windowing {args.windowing}); load: "
          f"{_load_average()}", flush=True)
    results = []
    with tempfile.TemporaryDirectory(prefix="run-all-times-") as home, \
            lab_tests.jupyterlab_server(home, settings) as (url, token), \
            sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=browser_conf.CHROMIUM, headless=True,
                                     args=browser_conf.CHROMIUM_ARGS)
        page = browser.new_context(viewport={"width": 1400, "height": 1000}).new_page()
        errors = []
        page.on("pageerror", lambda e: errors.append(str(e).splitlines()[0]))
        lab_tests._load_jupyterlab(page, url, token)
        for chapter in chapters:
            errors.clear()
            t0 = time.perf_counter()
            lab_tests._open_chapter(page, chapter)
            page.wait_for_selector(".jp-NotebookPanel .jp-Notebook .jp-Cell",
                                   timeout=lab_tests.START_TIMEOUT_S * 1000)
            page.wait_for_function(lab_tests.KERNEL_IDLE,
                                   timeout=lab_tests.START_TIMEOUT_S * 1000)
            opened = time.perf_counter() - t0
            # as a reader would: the chapter rendered before Run All
            lab_tests._wait_until_rendered(page, every_markdown=args.windowing != "full")
            t0 = time.perf_counter()
            page.evaluate("() => window.jupyterapp.commands.execute('notebook:run-all-cells')")
            state = page.wait_for_function(RUN_ALL_DONE, timeout=args.timeout * 1000,
                                           polling=100).json_value()
            seconds = time.perf_counter() - t0
            times = page.evaluate(CELL_TIMES)          # [index, seconds, source]
            lines = _source_lines(chapter, [(i, src) for i, _, src in times])
            times.sort(key=lambda r: -r[1])
            if state == "error":
                seconds = float("nan")
                print(f"{chapter}: a cell failed: {page.evaluate(lab_tests.ERROR_OUTPUTS)[:1]}")
            # let the last renders finish (a page error may come from them), then close unsaved
            lab_tests._wait_until_rendered(page, every_markdown=False)
            results.append((chapter, opened, seconds, list(errors)))
            print(f"{chapter}: run all {seconds:.1f} s (open {opened:.1f} s)"
                  + (f"; {len(errors)} page error(s): {errors[0]}" if errors else ""),
                  flush=True)
            top = times[:args.top] if args.top else sorted(times)
            _print_cells(chapter, [(i, lines.get(i), sec, _cell_label(src))
                                   for i, sec, src in top], 0)
            page.evaluate(lab_tests.CLOSE_EVERY_DOCUMENT)
            page.wait_for_selector(".jp-NotebookPanel", state="detached", timeout=30_000)
            lab_tests._shut_down_kernels(url, token)
        browser.close()
    print()
    print(f"{'chapter':<28} {'run all, s':>10} {'open, s':>8}  page errors")
    for chapter, opened, seconds, errs in results:
        print(f"{chapter:<28} {seconds:10.1f} {opened:8.1f}  {len(errs)}")
    print(f"load at the end: {_load_average()}")


def _load_average() -> str:
    try:
        one, five, fifteen = os.getloadavg()
    except OSError:
        return "unknown"
    return (f"{one:.2f} {five:.2f} {fifteen:.2f} on {os.cpu_count()} cores, "
            f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("chapters", nargs="*", help="chapter files or prefixes (default: all)")
    ap.add_argument("--cells", action="store_true",
                    help="per-cell profile with nbclient instead of JupyterLab")
    ap.add_argument("--top", type=int, default=5,
                    help="slowest cells listed per chapter (0: every cell)")
    ap.add_argument("--windowing", default="default",
                    choices=("default", "contentVisibility", "full", "defer", "none"),
                    help="JupyterLab's notebook windowing (default: JupyterLab's own)")
    ap.add_argument("--figures", choices=("live", "checked", "static"), default="live",
                    help="--cells: ICLLIB_FIGURES for the kernel (default live, as JupyterLab)")
    ap.add_argument("--verbose", action="store_true",
                    help="--cells: print each cell's time as it finishes")
    ap.add_argument("--timeout", type=float, default=900,
                    help="seconds one chapter's Run All (--cells: one cell) may take")
    args = ap.parse_args(argv)
    if hasattr(signal, "SIGUSR1"):     # `kill -USR1 <pid>`: where a stuck run waits
        faulthandler.register(signal.SIGUSR1)
    chapters = pick_chapters(args.chapters, files=args.cells)
    (main_cells if args.cells else main_lab)(chapters, args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
