"""The self-study path: a chapter opened as a notebook in JupyterLab, in headless Chromium.

Every chapter must, in notebook form, be as finished as its web page: open as a notebook,
render its boxes, keep exercise solutions (text and code) hidden until asked for, show no raw
citation key, log no console error, run without an error output, redraw its interactive figure
when a control moves, answer its questions (a wrong and a right answer change the feedback),
and save back to exactly the same bytes.

Runs against the project's own environment (``.venv``, made by ``scripts/setup.sh`` from
``requirements.txt`` and ``postBuild``, exactly what Binder installs). JupyterLab is started on
127.0.0.1 with a token set here and settings, runtime and workspace folders of its own (so
nothing in the home directory is read or written), with live figures (``ICLLIB_FIGURES``
unset). Each chapter must open as a notebook (jupytext), render its ``prf:`` boxes
(jupyterlab-myst), run every cell without an error output, and redraw its interactive figure
when a control moves. The server is stopped after the module, also when a test fails.

Marker ``browser``; ``scripts/test.sh`` runs this module in a stream of its own (it needs no build).
"""

import json
import os
import re
import secrets
import socket
import subprocess
import sys
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "book" / "_ext"))
from book_site import label_definitions  # noqa: E402  (the book's own label reader)

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[1]
JUPYTER = Path(sys.executable).parent / "jupyter"
SHOTS = ROOT / "_build" / "screenshots"
# Every chapter; ICLLIB_LAB_CHAPTERS="01-setup.md,05-loss.md" runs only those (while editing).
CHAPTERS = [c for c in sorted(p.name for p in (ROOT / "book").glob("*.md")
                              if "kernelspec:" in p.read_text(encoding="utf-8")[:600])
            if c in os.environ.get("ICLLIB_LAB_CHAPTERS", c).split(",")]
BIB_KEYS = re.findall(r"^@\w+\{([^,]+),", (ROOT / "references.bib").read_text(), re.M)
START_TIMEOUT_S = 90
RUN_TIMEOUT_S = 300        # a chapter runs in well under a minute at quick scale
REDRAW_TIMEOUT_S = 60


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# The settings of the JupyterLab the tests start (its own settings folder): {plugin: values}.
LAB_SETTINGS = {
    # The test only reads the chapters: no autosave may rewrite them while cells run.
    "@jupyterlab/docmanager-extension:plugin": {"autosave": False},
    # Every cell in the page (no windowing), so the checks see the whole chapter.
    "@jupyterlab/notebook-extension:tracker": {"windowingMode": "none"},
}


@contextmanager
def jupyterlab_server(home, settings=LAB_SETTINGS):
    """Start JupyterLab on 127.0.0.1 with its settings, runtime and workspace folders under
    ``home`` (``settings``: ``{plugin id: values}``, written there), live figures, and yield
    ``(url, token)`` once it answers; stop it on leaving (also after a failure). Shared with
    ``bench/run_all_times.py``."""
    home = Path(home)
    for plugin, values in settings.items():
        package, name = plugin.rsplit(":", 1)
        folder = home / "settings" / package
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{name}.jupyterlab-settings").write_text(json.dumps(values))
    env = {k: v for k, v in os.environ.items() if k != "ICLLIB_FIGURES"}   # live widgets
    env.update(JUPYTER_CONFIG_DIR=str(home / "config"), JUPYTER_RUNTIME_DIR=str(home / "runtime"),
               JUPYTERLAB_SETTINGS_DIR=str(home / "settings"),
               JUPYTERLAB_WORKSPACES_DIR=str(home / "workspaces"))
    token, port = secrets.token_hex(16), _free_port()
    cmd = [str(JUPYTER), "lab", "--no-browser", "--ip=127.0.0.1", f"--port={port}",
           f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={ROOT}",
           "--LabApp.expose_app_in_browser=True"]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        cmd.append("--allow-root")
    log = open(home / "server.log", "w")
    server = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            if server.poll() is not None:
                pytest.fail(f"JupyterLab exited: {(home / 'server.log').read_text()[-2000:]}")
            try:
                urllib.request.urlopen(f"{url}/api/status?token={token}", timeout=2)
                break
            except OSError:
                if time.monotonic() > deadline:
                    pytest.fail(f"JupyterLab did not answer in {START_TIMEOUT_S} s")
                time.sleep(0.5)
        yield url, token
    finally:
        server.terminate()
        try:
            server.wait(15)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait(5)
        log.close()


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    with jupyterlab_server(tmp_path_factory.mktemp("jupyterlab")) as served:
        yield served


# JavaScript run in the page: JupyterLab's application object is exposed by
# --LabApp.expose_app_in_browser.
KERNEL_IDLE = """() => {
  const w = window.jupyterapp && window.jupyterapp.shell.currentWidget;
  const k = w && w.sessionContext && w.sessionContext.session && w.sessionContext.session.kernel;
  return !!k && k.status === 'idle';
}"""
# Running or queued cells show [*]; "run all" stops at the first error and leaves the rest empty.
NOTHING_RUNNING = """() => {
  const nb = window.jupyterapp.shell.currentWidget.content;
  // Off-screen cells may have no DOM (windowed notebook): ask the model too.
  return !nb.widgets.some(c => c.model.type === 'code' && (c.model.executionState === 'running'
                               || (c.promptNode && c.promptNode.textContent.includes('*'))));
}"""
NOT_RUN = """() => {
  const nb = window.jupyterapp.shell.currentWidget.content;
  return nb.widgets.map((c, i) => [c, i])
           .filter(([c, i]) => c.model.type === 'code' && c.model.executionCount === null)
           .map(([c, i]) => i);
}"""
ERROR_OUTPUTS = """() => {
  const nb = window.jupyterapp.shell.currentWidget.content;
  const errors = [];
  nb.widgets.forEach((c, i) => {
    if (c.model.type !== 'code') return;
    for (const o of c.model.outputs.toJSON())
      if (o.output_type === 'error') errors.push(`cell ${i}: ${o.ename}: ${o.evalue}`);
      else if (o.output_type === 'stream' && o.name === 'stderr')   // a warning a reader sees
        errors.push(`cell ${i}: stderr: ${[].concat(o.text).join('').slice(0, 300)}`);
  });
  return errors;
}"""


HIDDEN_INPUTS = """() => {
  // Cells whose source is collapsed (jupyter.source_hidden): is the code on screen?
  const nb = window.jupyterapp.shell.currentWidget.content;
  return nb.widgets.map((c, i) => [c, i])
    .filter(([c, i]) => c.model.type === 'code' && c.model.getMetadata('jupyter')
                        && c.model.getMetadata('jupyter').source_hidden)
    .map(([c, i]) => ({index: i, hidden: c.inputHidden,
                       shown: !!c.node.querySelector('.jp-InputArea')
                              && c.node.querySelector('.jp-InputArea').offsetParent !== null}));
}"""
SOLUTION_CELLS = """() => {
  // Code cells that follow a solution box: their source must be collapsed.
  const nb = window.jupyterapp.shell.currentWidget.content;
  // as tests/test_notebook_form.py: the cell's last directive is a solution, closed at its end
  const endsWithSolution = src => {
    const names = [...src.matchAll(/^(?:`{3,}|:{3,})\\{([\\w:-]+)\\}/gm)].map(m => m[1]);
    return names.length > 0 && names[names.length - 1] === 'solution'
           && /(```|:::)$/.test(src.trimEnd());
  };
  const out = [];
  nb.widgets.forEach((c, i) => {
    const prev = nb.widgets[i - 1];
    if (c.model.type === 'code' && prev && prev.model.type === 'markdown'
        && endsWithSolution(prev.model.sharedModel.getSource()))
      out.push(i);
  });
  return out;
}"""


# What jupyterlab-myst logs for a reference it cannot resolve (a label defined in a later cell
# of the same notebook, a missing one, a "#label" link to either)
UNRESOLVED = ("Cross reference target was not found", "No target for internal reference")
# MyST roles left as text: a role jupyterlab-myst did not parse
RAW_ROLE = re.compile(r"\{(?:ref|prf:ref|eq|numref|doc|cite|cite:p|cite:t)\}`")
RENDERED_TEXT = """() => Array.from(document.querySelectorAll('.jp-MarkdownCell .jp-RenderedMarkdown,'
                                                 + ' .jp-MarkdownCell .jp-RenderedMySTMarkdown'))
                   .map(e => e.innerText).join('\\n')"""


def _shut_down_kernels(url, token):
    """Delete every session (and its kernel), so one chapter's kernel is gone before the next
    chapter opens."""
    req = urllib.request.Request(f"{url}/api/sessions?token={token}")
    with urllib.request.urlopen(req, timeout=10) as r:
        sessions = json.load(r)
    for session in sessions:
        urllib.request.urlopen(urllib.request.Request(
            f"{url}/api/sessions/{session['id']}?token={token}", method="DELETE"), timeout=30)
    return len(sessions)


def _running_kernels(url, token):
    with urllib.request.urlopen(f"{url}/api/kernels?token={token}", timeout=10) as r:
        return len(json.load(r))


def _figure_src(cell):
    img = cell.locator(".jp-OutputArea-output img").first
    return img.get_attribute("src") if img.count() else None


def _move_a_control_and_see_the_figure_redraw(page):
    """The first interactive figure: move its first control, the picture must change."""
    cell = page.locator(".jp-CodeCell").filter(
        has=page.locator(".widget-slider, .widget-dropdown")).first
    cell.scroll_into_view_if_needed()
    before = _figure_src(cell)
    assert before, "the interactive figure shows no image"
    slider = cell.locator(".widget-slider .noUi-handle")
    if slider.count():
        slider.first.focus()
        page.keyboard.press("ArrowRight")
    else:
        select = cell.locator(".widget-dropdown select").first
        # by index: ipywidgets shows labels with non-breaking spaces, so a label never
        # equals the option's value and a choice by label could pick the current option
        current = select.evaluate("s => s.selectedIndex")
        select.select_option(index=(current + 1) % select.locator("option").count())
    deadline = time.monotonic() + REDRAW_TIMEOUT_S
    while _figure_src(cell) in (before, None):
        if time.monotonic() >= deadline:
            SHOTS.mkdir(parents=True, exist_ok=True)
            cell.screenshot(path=str(SHOTS / "jupyterlab-redraw-failed.png"))
            text = cell.locator(".jp-OutputArea").first.inner_text()[-2000:]
            raise AssertionError("moving the control did not redraw the figure; the cell's "
                                 f"output reads: {text!r}")
        page.wait_for_timeout(250)


QUIZ_CELL = """() => window.jupyterapp.shell.currentWidget.content.widgets.findIndex(
    c => c.model.type === 'code' && !!c.node.querySelector('.Quiz .MCButton'))"""
RERUN_CELL = """async i => {
  const nb = window.jupyterapp.shell.currentWidget.content;
  nb.activeCellIndex = i;
  await window.jupyterapp.commands.execute('notebook:run-cell');
  return true;
}"""


def _answer_the_first_quiz(page):
    """The chapter's first multiple-choice question (icllib.quiz, drawn by its cell's output),
    as a reader uses it: the cell run again (now that JupyterLab has typeset the chapter's maths
    and set its own ``window.MathJax``, where jupyterquiz alone would fetch MathJax from a CDN),
    then a wrong answer and the right one (by the answer key the output carries; the built
    page's test in test_browser.py checks the key itself). Each answer must change the feedback
    under the question, to "incorrect" and then "correct", with no uncaught error in the page and
    no request to another host."""
    from urllib.parse import urlparse

    from playwright.sync_api import expect

    host = urlparse(page.url).netloc
    trouble = []

    def on_error(error):
        trouble.append(f"uncaught: {error}")

    def on_request(request):
        u = urlparse(request.url)
        if u.scheme in ("http", "https", "ws", "wss") and u.netloc != host:
            trouble.append(f"request to another host: {request.url}")

    page.on("pageerror", on_error)
    page.on("request", on_request)
    try:
        index = page.evaluate(QUIZ_CELL)
        assert index >= 0, "no quiz drawn after Run All"
        page.evaluate(RERUN_CELL, index)
        page.wait_for_function(KERNEL_IDLE, timeout=RUN_TIMEOUT_S * 1000)
        cell = page.locator(".jp-Notebook .jp-Cell").nth(index)
        quiz = cell.locator(".Quiz").filter(has=page.locator(".MCButton")).first
        quiz.scroll_into_view_if_needed(timeout=REDRAW_TIMEOUT_S * 1000)
        feedback = quiz.locator(".Feedback")
        for key, verdict in (("false", "incorrect"), ("true", "correct")):
            quiz.locator(f".MCButton[data-correct='{key}']").first.click()
            expect(feedback).to_have_class(re.compile(rf"(^|\s){verdict}(\s|$)"),
                                           timeout=REDRAW_TIMEOUT_S * 1000)
    finally:
        page.remove_listener("pageerror", on_error)
        page.remove_listener("request", on_request)
    assert trouble == [], trouble


def _set_windowing(url, token, mode):
    """Set the notebook's windowing mode in the running JupyterLab ("none": every cell in the
    page; "full": JupyterLab's default, cells rendered as they scroll into view)."""
    body = json.dumps({"raw": json.dumps({"windowingMode": mode})}).encode()
    req = urllib.request.Request(
        f"{url}/lab/api/settings/@jupyterlab/notebook-extension:tracker?token={token}",
        data=body, method="PUT", headers={"Content-Type": "application/json"})
    urllib.request.urlopen(req, timeout=10)


def _load_jupyterlab(page, url, token):
    """Load JupyterLab in ``page`` with a fresh workspace (?reset: no tab of an earlier
    session reopens) and wait until the application has started."""
    page.goto(f"{url}/lab?reset&token={token}")
    page.wait_for_function("() => window.jupyterapp && window.jupyterapp.started",
                           timeout=START_TIMEOUT_S * 1000)
    page.evaluate("async () => { await window.jupyterapp.started; return true; }")


def _open_chapter(page, chapter):
    """Open ``book/<chapter>`` as a notebook (jupytext's view, not the text editor) with
    JupyterLab's own command; JupyterLab starts a kernel for it, as for any notebook."""
    page.evaluate("""async path => {      // (the command returns the widget: not sent back)
        await window.jupyterapp.commands.execute('docmanager:open',
                                                 {path, factory: 'Jupytext Notebook'});
        return true; }""", f"book/{chapter}")


def test_every_reference_resolves_with_jupyterlabs_default_windowing(lab, browser):
    """As a reader's JupyterLab renders a chapter (default windowing: markdown cells render as
    they scroll into view), no reference is unresolved: jupyterlab-myst resolves a label only
    once the cell that defines it has rendered, so a reference to a label of a later cell logs
    "Cross reference target was not found" and may stay a raw label. Every chapter is opened
    and scrolled through from top to bottom (its cells are not run)."""
    url, token = lab
    _set_windowing(url, token, "full")
    failures = {}
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    messages = []
    page.on("console", lambda m: messages.append(m.text)
            if any(u in m.text for u in UNRESOLVED) else None)
    try:
        # one JupyterLab page; each chapter opened as a notebook by JupyterLab's own command
        _load_jupyterlab(page, url, token)
        for chapter in CHAPTERS:
            messages.clear()
            _open_chapter(page, chapter)
            page.wait_for_selector(".jp-NotebookPanel .jp-Notebook .jp-Cell",
                                   timeout=START_TIMEOUT_S * 1000)
            # markdown renders without a kernel: no need to wait for one (it is shut down
            # below); scroll cell by cell so that each renders, then let the last settle
            page.evaluate("""async () => {
                const nb = window.jupyterapp.shell.currentWidget.content;
                for (let i = 0; i < nb.widgets.length; i++) {
                    nb.activeCellIndex = i; nb.scrollToItem(i);
                    await new Promise(r => setTimeout(r, 10));
                }}""")
            _wait_until_rendered(page, every_markdown=False)   # the last cells settle
            if messages:
                failures[chapter] = list(messages[:3])
            # closed without a save dialog (nothing was edited; the file stays as it was)
            page.evaluate("() => { window.jupyterapp.shell.currentWidget.dispose(); return true; }")
            page.wait_for_selector(".jp-NotebookPanel", state="detached", timeout=30_000)
            _shut_down_kernels(url, token)
    finally:
        context.close()
        _shut_down_kernels(url, token)
        _set_windowing(url, token, "none")
    assert failures == {}, failures


@pytest.fixture(scope="module")
def lab_page(lab, browser):
    """One JupyterLab page for every chapter (loading the application once, not once per
    chapter); each test opens its chapter with JupyterLab's own command and closes it. The
    console messages of the page collect in ``messages``, cleared by each test."""
    url, token = lab
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    messages = []
    page.on("console", lambda m: messages.append((m.type, m.text)))
    _load_jupyterlab(page, url, token)
    yield page, messages
    context.close()


# What a reader waits for before acting on a notebook: every markdown cell rendered (by
# jupyterlab-myst, asynchronously) and the notebook's page quiet, no change to its DOM for
# QUIET_MS. Closing or re-running a notebook while jupyterlab-myst is still rendering a cell
# disposes the cell under it ("Failed to render TypeError: Cannot read properties of null
# (reading 'renderInput')", seen on loaded machines); waiting for this state, not for a fixed
# delay, is what keeps the test from racing the renderer.
QUIET_MS = 750
RENDERING_SETTLED = """async (quietMs, everyMarkdown) => {
  const panel = window.jupyterapp.shell.currentWidget;
  if (!panel || !panel.content || !panel.content.widgets) return true;
  // every markdown cell shown rendered (not as its source); the renderer's asynchronous work
  // on it is what the quiet period below waits out
  const markdownDone = () => panel.content.widgets.every(
    c => c.model.type !== 'markdown' || c.rendered);
  while (everyMarkdown && !markdownDone()) await new Promise(r => setTimeout(r, 100));
  await new Promise(resolve => {
    let timer = setTimeout(done, quietMs);
    const observer = new MutationObserver(() => { clearTimeout(timer); timer = setTimeout(done, quietMs); });
    function done() { observer.disconnect(); resolve(); }
    // the notebook's cells only: the toolbar's kernel indicator changes on its own
    observer.observe(panel.content.node, {subtree: true, childList: true, characterData: true});
  });
  return true;
}"""


def _wait_until_rendered(page, timeout_s=START_TIMEOUT_S, every_markdown=True):
    """Wait for RENDERING_SETTLED, bounded by ``timeout_s`` (no fixed delay). With JupyterLab's
    default windowing only the cells in view render: ``every_markdown=False`` waits for the
    page to be quiet only."""
    flag = "true" if every_markdown else "false"
    page.evaluate(f"""async () => {{
        const settled = ({RENDERING_SETTLED})({QUIET_MS}, {flag});
        const limit = new Promise((_, reject) => setTimeout(
            () => reject(new Error('rendering did not settle in {timeout_s} s')), {timeout_s * 1000}));
        return await Promise.race([settled, limit]); }}""")


CLOSE_EVERY_DOCUMENT = """() => {
  // closed without a save dialog (a test that saved left nothing unsaved; one that failed
  // half-way may have)
  for (const w of Array.from(window.jupyterapp.shell.widgets('main'))) w.dispose();
  return true;
}"""


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_chapter_runs_as_a_notebook_in_jupyterlab(lab, lab_page, chapter):
    url, token = lab
    page, messages = lab_page
    assert _running_kernels(url, token) == 0, "a previous chapter's kernel is still running"
    source = (ROOT / "book" / chapter).read_bytes()
    labels = set(label_definitions([ROOT / "book" / chapter]))
    messages.clear()
    try:
        _open_chapter(page, chapter)
        page.wait_for_selector(".jp-NotebookPanel .jp-Notebook .jp-Cell", timeout=START_TIMEOUT_S * 1000)
        page.wait_for_function(KERNEL_IDLE, timeout=START_TIMEOUT_S * 1000)
        has_proofs = "{prf:" in source.decode()
        if has_proofs:
            # the first proof title a reader sees: a statement moved into a collapsed
            # dropdown renders too, but hidden, so it cannot be waited for as visible
            title = page.locator("aside.myst-proof .myst-proof-title >> visible=true").first
            title.wait_for(timeout=30_000)
            assert title.inner_text().split()[0] in {"Definition", "Proposition", "Theorem", "Lemma"}
        # Solutions: the boxes are collapsed dropdowns (their text unseen), and the reference
        # code cells after them show no source until the reader opens them. Markdown cells
        # render one after another: wait until every solution box is there.
        n_solutions = len(re.findall(r"\{solution\}", source.decode()))
        page.wait_for_function(f"() => document.querySelectorAll('details.myst-exercise').length"
                               f" >= {n_solutions}", timeout=60_000)
        hidden = page.evaluate(HIDDEN_INPUTS)
        assert all(h["hidden"] and not h["shown"] for h in hidden), hidden
        assert set(page.evaluate(SOLUTION_CELLS)) <= {h["index"] for h in hidden}
        assert page.locator("details.myst-exercise").count() == n_solutions
        assert page.locator("details.myst-exercise[open]").count() == 0
        # every reference resolved: no console message about one, no raw role or label text
        rendered = page.evaluate(RENDERED_TEXT)
        assert not RAW_ROLE.search(rendered), f"raw roles: {RAW_ROLE.findall(rendered)[:5]}"
        shown = sorted(k for k in labels if re.search(rf"(?<![\w/#-]){re.escape(k)}(?![\w-])",
                                                      rendered))
        assert shown == [], f"labels shown as text: {shown}"
        unresolved = [t for _, t in messages if any(u in t for u in UNRESOLVED)]
        assert unresolved == [], unresolved
        text = page.evaluate("() => document.body.innerText")
        raw = [k for k in BIB_KEYS if re.search(rf"\b(\w+-)?{re.escape(k)}\b", text)]
        assert raw == [], f"citations shown as raw keys: {raw}"

        _wait_until_rendered(page)     # not while jupyterlab-myst is still rendering cells
        page.evaluate("() => window.jupyterapp.commands.execute('notebook:run-all-cells')")
        page.wait_for_timeout(1000)
        page.wait_for_function(NOTHING_RUNNING, timeout=RUN_TIMEOUT_S * 1000, polling=1000)
        page.wait_for_function(KERNEL_IDLE, timeout=RUN_TIMEOUT_S * 1000)
        _wait_until_rendered(page)     # running re-renders every markdown cell
        assert page.evaluate(ERROR_OUTPUTS) == []
        assert page.evaluate(NOT_RUN) == [], "cells left unexecuted"

        if "interactive_figure(" in source.decode():
            _move_a_control_and_see_the_figure_redraw(page)
        if "show_quiz(" in source.decode():
            _answer_the_first_quiz(page)
        SHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SHOTS / f"jupyterlab-{Path(chapter).stem}.png"))

        # A reader who only read and ran the chapter and saved it changes nothing.
        page.evaluate("() => window.jupyterapp.commands.execute('docmanager:save')")
        page.wait_for_function("() => !window.jupyterapp.shell.currentWidget.context.model.dirty",
                               timeout=30_000)
        console_errors = [t for kind, t in messages if kind == "error"]
        assert console_errors == [], console_errors
    finally:
        try:
            _wait_until_rendered(page)   # never dispose a notebook under a running render
        except Exception:                # a test that failed still closes and shuts down
            pass
        page.evaluate(CLOSE_EVERY_DOCUMENT)
        page.wait_for_selector(".jp-NotebookPanel", state="detached", timeout=30_000)
        _shut_down_kernels(url, token)
        after = (ROOT / "book" / chapter).read_bytes()
        if after != source:
            (ROOT / "book" / chapter).write_bytes(source)     # leave the checkout as it was
    assert after == source, "opening, running and saving the chapter changed its file"
