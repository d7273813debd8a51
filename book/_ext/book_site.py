"""Local Sphinx extension for the book's site.

* Kernels started by myst-nb inherit this process's environment, so setting
  ``ICLLIB_FIGURES=static`` here (:func:`icllib.widgets.use_static_figures`) makes
  :func:`icllib.widgets.interactive_figure` pre-render
  every control value into the page (a live Jupyter session keeps ipywidgets).
* sphinx-thebe registers its configuration script once per read phase, so a full build
  declares ``THEBE_JS_URL`` twice and the browser logs an error on every page; scripts are
  de-duplicated here.
* The site is kept light (see :func:`_prune_mathjax` and :func:`_slim_notebook_downloads`):
  only the MathJax files pages can load are shipped, no figure and no quiz script is stored twice.
* Every label (``:label:``/``:name:`` options, ``(label)=`` targets, ``$$ ... $$ (label)``
  equations, ``\\label{...}``) is defined once in the whole book: a duplicate is a build
  warning (:func:`duplicate_labels`).  Sphinx keeps prf, math and std labels in separate
  domains and says nothing, but JupyterLab (jupyterlab-myst) has one namespace per notebook.
* Accessibility (WCAG 2.1 AA; axe-core checks every page in tests/test_browser.py): the book's
  stylesheet (``static/book-a11y.css``) darkens the link colour so that links keep 4.5:1 on
  the tinted boxes, and :func:`_accessible_names` fixes the theme's buttons whose accessible
  name left out their visible text.
* Numbering per chapter (:func:`_number_per_chapter`): every numbered thing (propositions,
  definitions, exercises, equations) is numbered within its page and carries the chapter's
  own number, "Proposition 4.2", "Exercise 5b.3", "(7.1)".  Sphinx numbers them across the
  whole book unless the toctree is ``numbered``, and a numbered toctree would number the
  chapters itself (5b and 6b would become 6 and 8); so the chapter number is read from the
  page title instead, "5b. A finite set of tasks".
* A reference solution's code cell (the hidden-input cell right after a ``solution`` box,
  which JupyterLab shows collapsed) is moved into that box on the web page
  (:func:`_solution_code_into_its_box`): its output ("PASSED ...", the answer) is part of the
  solution and shows only when the reader opens it, never under the exercise.
* A link to a label in another chapter is a plain markdown link, ``[text](02-dynamics.md#label)``,
  so that it reads as text in JupyterLab too; MyST-parser resolves ``doc.md#anchor`` only for
  heading anchors, so each page's labels are registered as anchors
  (:func:`_register_label_anchors`).
"""

import json
import re
from collections import defaultdict
from pathlib import Path

from docutils import nodes
from sphinx.util import logging

logger = logging.getLogger(__name__)

# --- MathJax: ship only what pages can load --------------------------------------------------
# sphinx-mathjax-offline copies the whole MathJax 3 distribution (~24 MB: every component, the
# SVG output, the speech-rule engine, the a11y tools ...) into _static/mathjax at build-finished,
# and points ``mathjax_path`` at one component.  A page loads that component and, lazily, only
# files of the two kinds below, so everything else is deleted once the copy is done.
# Recorded in Chromium over every page (wait for MathJax.startup.promise): the component plus
# 9 of the woff-v2 fonts; no TeX extension today.  The allow-list is wider on purpose, so that
# a new formula cannot break a page offline:
#   * the component itself (``mathjax_path``, tex-chtml.js: TeX input with base, ams,
#     newcommand, noundefined, require, autoload built in; CommonHTML output; the menu);
#   * every CommonHTML web font (output/chtml/fonts/woff-v2, ~390 kB).  The browser fetches a
#     font when a formula first uses its variant (bold, calligraphic, fraktur, big delimiters
#     ...), which depends on the formula, so all are kept;
#   * every TeX extension (input/tex/extensions, ~330 kB).  The component's autoload fetches
#     one the first time a page uses one of its commands (\boldsymbol, \cancel, \bbox, \ce,
#     \color, \href, \braket, \verb, \unicode, \enclose, {CD}, {prooftree} ...), and
#     \require{...} fetches any of them (mathtools, physics, cases ...); keeping all of them is
#     cheap and means no chapter can hit a 404 for a command.  all-packages.js (215 kB) is the
#     exception: only the tex-full components load it, never autoload or \require.
# Not shipped: the MathJax menu's opt-in accessibility tools (Explorer, speech, semantic
# enrichment: a11y/, sre/, ~4 MB), which load only if a reader switches them on in the menu.
MATHJAX_DIR = "mathjax"  # under _static, where sphinx-mathjax-offline puts it
MATHJAX_KEEP = ("output/chtml/fonts/woff-v2/*.woff", "input/tex/extensions/*.js")
MATHJAX_DROP = ("input/tex/extensions/all-packages.js",)


def _mathjax_component(app):
    """The component file (relative to _static/mathjax) that pages load, or None."""
    path = str(app.config.mathjax_path or "")
    prefix = MATHJAX_DIR + "/"
    if "://" in path or path.startswith("//") or not path.startswith(prefix):
        return None
    return path[len(prefix):]


def _prune_mathjax(app, exc):
    if exc is not None or app.builder.format != "html":
        return
    root = Path(app.outdir) / "_static" / MATHJAX_DIR
    if not root.is_dir():
        return
    component = _mathjax_component(app)
    if component is None or not (root / component).is_file():
        logger.warning("book_site: mathjax_path %r is not a file of the offline MathJax copy; "
                       "not pruning %s", app.config.mathjax_path, root)
        return
    keep = {root / component}
    for pattern in MATHJAX_KEEP:
        keep.update(root.glob(pattern))
    keep.difference_update(root / p for p in MATHJAX_DROP)
    removed = 0
    for path in sorted(root.rglob("*"), reverse=True):  # children before their directories
        if path.is_dir():
            if not any(path.iterdir()):
                path.rmdir()
        elif path not in keep:
            removed += path.stat().st_size
            path.unlink()
    logger.info("book_site: pruned %.1f MB of MathJax files no page loads", removed / 1e6)


# --- Notebook downloads: no second copy of the figures ----------------------------------------
# The ".ipynb" download button (sphinx-book-theme) serves the executed notebook, which
# sphinx-book-theme copies into _sources/ while writing each page.  Its figure outputs are the
# same bytes as the page's figures (matplotlib PNGs in _images/, every frame of each static
# interactive figure inline in the page), so the site would store every figure twice (~5 MB).
# The download is for running the chapter in Jupyter, where running a cell redraws its figure
# (and an interactive figure becomes live ipywidgets; the static one would not even run there,
# its script is stripped from an untrusted notebook).  So the downloaded copy keeps the code,
# the text and every text output, and each figure output becomes a one-line note.
IMAGE_MIMES = ("image/png", "image/jpeg", "image/gif", "image/webp", "image/svg+xml")
FIGURE_NOTE = ("[figure not stored in this download: run the cell to draw it, "
               "or see it in the web version of the chapter]")
# A quiz (icllib.quiz) is the same: its output is a script (~20 kB a quiz) that an untrusted
# notebook does not run, and running the cell draws it again; its outputs become one note.
QUIZ_NOTE = ("[check-your-understanding questions not stored in this download: run the cell "
             "to answer them, or see them in the web version of the chapter]")


def _is_figure_output(data):
    html = data.get("text/html", "")
    html = "".join(html) if isinstance(html, list) else html
    return any(m in data for m in IMAGE_MIMES) or "icl-interactive" in html or "data:image/" in html


# A downloaded chapter imports icllib, which a reader outside the repository does not have: the
# download opens with a markdown cell giving README's install command (one `pip install` of the
# repository: icllib with the stored runs it carries), built from the repository's address
# (`repository.url` of _config.yml, the theme's ``repository_url``). Pages with no icllib
# import get no such cell.
INSTALL_CELL_ID = "install-icllib"
TORCH_CPU_INDEX = "https://download.pytorch.org/whl/cpu"


def install_note(repository_url):
    """The first cell's text: how to install icllib for this notebook."""
    return ("**To run this notebook** outside the book's repository, install the book's "
            "library `icllib` (with the stored runs the chapters load) in the environment of "
            "its Jupyter kernel, then restart the kernel:\n\n"
            f'    pip install "icllib[nonlinear] @ git+{repository_url}" '
            f"--extra-index-url {TORCH_CPU_INDEX}")


def _add_install_note(nb, note):
    """Put ``note`` first in ``nb`` (a notebook's JSON) if a code cell uses icllib; once."""
    cells = nb.setdefault("cells", [])
    uses = any(c.get("cell_type") == "code" and "icllib" in "".join(c.get("source", ""))
               for c in cells)
    if not uses or any(c.get("id") == INSTALL_CELL_ID for c in cells):
        return False
    cell = {"cell_type": "markdown", "metadata": {}, "source": note}
    if (nb.get("nbformat", 4), nb.get("nbformat_minor", 0)) >= (4, 5):   # cell ids from 4.5
        cell["id"] = INSTALL_CELL_ID
    cells.insert(0, cell)
    return True


def _slim_notebook(path, note=None):
    from icllib.quiz import is_quiz_output

    nb = json.loads(path.read_text(encoding="utf-8"))
    changed = _add_install_note(nb, note) if note else False
    for cell in nb.get("cells", []):
        outputs = cell.get("outputs", [])
        quiz = [o for o in outputs if o.get("data") and is_quiz_output(o["data"])]
        if quiz:
            cell["outputs"] = [o for o in outputs if o not in quiz] + [
                {"output_type": "display_data", "data": {"text/plain": QUIZ_NOTE},
                 "metadata": {}}]
            changed = True
        for out in cell.get("outputs", []):
            data = out.get("data")
            shown = out.get("output_type") in ("display_data", "execute_result")
            if shown and data and _is_figure_output(data):
                out["data"] = {"text/plain": FIGURE_NOTE}
                out["metadata"] = {}
                changed = True
    if changed:
        path.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


def _slim_notebook_downloads(app, exc):
    if exc is not None or app.builder.format != "html":
        return
    sources = Path(app.outdir) / "_sources"
    url = (app.config.html_theme_options or {}).get("repository_url")
    note = install_note(url) if url else None
    for path in sorted(sources.rglob("*.ipynb")) if sources.is_dir() else []:
        _slim_notebook(path, note)


def _dedupe_scripts(app, pagename, templatename, context, doctree):
    scripts = context.get("script_files")
    if not scripts:
        return
    seen, unique = set(), []
    for js in scripts:
        # The same script may be registered with different priorities: compare content only
        # (a body-only script has filename None or "").
        key = (getattr(js, "filename", str(js)) or "", getattr(js, "attributes", {}).get("body"))
        if key not in seen:
            seen.add(key)
            unique.append(js)
    scripts[:] = unique


# --- Labels: one namespace for the whole book ------------------------------------------------
# A label is defined by a directive option (``:label:`` of prf:*, exercise, solution, math ...;
# ``:name:``), a target line ``(label)=``, a dollar-math equation ``$$ ... $$ (label)`` or an
# amsmath ``\label{...}`` (which mystmd, and so JupyterLab, reads as a label).  Lines inside
# code fences (code cells, ``python`` blocks) define nothing; directive fences are read through.
LABEL_DEFINITIONS = (
    re.compile(r"^\s*:(?:label|name):\s*(\S+)\s*$"),
    re.compile(r"^\s*\(([^()\s]+)\)=\s*$"),
    re.compile(r"\$\$\s*\(([^()\s]+)\)\s*$"),
    re.compile(r"\\label\{([^{}]+)\}"),
)
FENCE = re.compile(r"^\s*(`{3,}|~{3,}|:{3,})\s*(.*?)\s*$")
CODE_DIRECTIVES = ("{code-cell}", "{code-block}", "{code}", "{sourcecode}")


def _is_code_fence(info):
    return not info.startswith("{") or info.split()[0] in CODE_DIRECTIVES


def label_definitions(paths):
    """``{label: [(path, line), ...]}`` for every label defined in the given MyST files."""
    found = defaultdict(list)
    for path in map(Path, paths):
        fences = []   # open fences, innermost last: (marker, is_code)
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            fence = FENCE.match(line)
            if fence:
                marker, info = fence.groups()
                top = fences[-1] if fences else None
                if top and not info and marker[0] == top[0][0] and len(marker) >= len(top[0]):
                    fences.pop()
                    continue
                if not (top and top[1]):          # inside a code fence a fence line is text
                    fences.append((marker, _is_code_fence(info)))
                    continue
            if fences and fences[-1][1]:
                continue
            for pattern in LABEL_DEFINITIONS:
                for label in pattern.findall(line):
                    found[label].append((path, n))
    return dict(found)


def duplicate_labels(paths):
    """The labels defined more than once across ``paths``: ``{label: [(path, line), ...]}``."""
    return {label: places for label, places in label_definitions(paths).items() if len(places) > 1}


def _book_sources(app):
    """The MyST files this build reads (the table of contents, less ``exclude_patterns``)."""
    from sphinx.project import Project

    project = Project(app.srcdir, app.config.source_suffix)
    docnames = project.discover(app.config.exclude_patterns, app.config.include_patterns)
    paths = (Path(project.doc2path(d, True)) for d in sorted(docnames))
    return [p for p in paths if p.suffix == ".md"]


def _check_unique_labels(app):
    root = Path(app.srcdir)
    for label, places in sorted(duplicate_labels(_book_sources(app)).items()):
        where = ", ".join(f"{Path(p).relative_to(root)}:{n}" for p, n in places)
        logger.warning("book_site: label %r is defined %d times (%s); every label must be "
                       "unique across the book", label, len(places), where)


def _register_label_anchors(app, doctree):
    """Make ``[text](this-page.md#label)`` resolve for every label this page defines.

    MyST-parser resolves the ``#anchor`` of a link to another document from the heading slugs
    it records (``env.metadata[doc]["myst_slugs"]``) and warns otherwise.  Each label defined in
    this page's source whose element is in the doctree (``label`` for prf/exercise/targets,
    ``equation-label`` for equations) is added there; a link to anything else still warns.
    """
    docname = app.env.docname
    source = Path(app.env.doc2path(docname))
    if source.suffix != ".md":
        return
    ids = {i for node in doctree.findall(nodes.Element) for i in node.get("ids", ())}
    slugs = app.env.metadata[docname].setdefault("myst_slugs", {})
    for label, places in label_definitions([source]).items():
        for anchor in (label, nodes.make_id(label), nodes.make_id("equation-" + label)):
            if anchor in ids:
                slugs.setdefault(label, (places[0][1], anchor, label))
                break


# --- Numbering per chapter ------------------------------------------------------------------
CHAPTER_TITLE = re.compile(r"^(\d+[a-z]?)\.\s")


def chapter_number(title):
    """The chapter's number from its title, ``"5b. A finite set of tasks"`` -> ``"5b"``;
    None for a page without one (the introduction, the appendix)."""
    match = CHAPTER_TITLE.match(title)
    return match.group(1) if match else None


def renumber_per_chapter(fignumbers, chapter):
    """Number each kind of item of one page 1, 2, ... in page order, prefixed by ``chapter``.

    ``fignumbers`` is Sphinx's ``{figtype: {id: number tuple}}`` for the page; without a
    numbered toctree the tuples are one book-wide counter per kind, so their order is the
    page order.  Rewritten in place.
    """
    prefix = (chapter,) if chapter else ()
    for numbers in fignumbers.values():
        for k, ident in enumerate(sorted(numbers, key=numbers.get), 1):
            numbers[ident] = (*prefix, k)


def _number_per_chapter(app, env):
    # Runs after Sphinx's own numbering (TocTreeCollector, env-get-updated, priority 500);
    # sphinx-proof, sphinx-exercise, {numref} and equation numbers all read env.toc_fignumbers.
    for docname, fignumbers in env.toc_fignumbers.items():
        title = env.titles[docname].astext() if docname in env.titles else ""
        renumber_per_chapter(fignumbers, chapter_number(title))
    return []


# --- Reference solutions: code and output inside the solution box ---------------------------
# A chapter writes an exercise's reference code as the code cell right after its ``solution``
# box, tagged hide-input and collapsed in JupyterLab (tests/test_notebook_form.py).  The cell's
# output (the checker's "PASSED ...", the answer itself) would be printed in the main line of
# the page, under the exercise; the cell is moved into the box, after the solution's text.


def solution_code_cell(node):
    """Whether ``node`` is a myst-nb code cell tagged hide-input (a reference solution's code)."""
    return (isinstance(node, nodes.container) and node.get("nb_element") == "cell_code"
            and "hide-input" in node.get("cell_metadata", {}).get("tags", []))


def _solution_code_into_its_box(app, doctree):
    from sphinx_exercise.nodes import solution_node

    for box in list(doctree.findall(solution_node)):
        parent = box.parent
        following = parent.index(box) + 1
        if following < len(parent.children) and solution_code_cell(parent[following]):
            cell = parent[following]
            parent.remove(cell)
            body = box.children[-1] if isinstance(box.children[-1], nodes.section) else box
            body.append(cell)


# --- Collapsible proofs ---------------------------------------------------------------------
# sphinx-proof's {prf:proof} has no title: it writes "Proof. " into its first paragraph. With
# `:class: dropdown` (a proof kept off the main line) sphinx-togglebutton then finds no
# .admonition-title to put its button in, throws, and leaves this proof and every later dropdown
# of the page open. A collapsible proof gets the title "Proof" instead of the inline prefix.


def proof_dropdowns(doctree):
    """The admonitions of ``{prf:proof}`` directives with the class ``dropdown``."""
    return [node for node in doctree.findall(nodes.admonition)
            if {"proof", "dropdown"} <= set(node["classes"])]


def _title_collapsible_proofs(app, doctree):
    for box in proof_dropdowns(doctree):
        if box.children and isinstance(box.children[0], nodes.title):
            continue
        first = next(iter(box.findall(nodes.Text)), None)
        if first is not None and first.astext().startswith("Proof. "):
            first.parent.replace(first, nodes.Text(first.astext()[len("Proof. "):]))
        box.insert(0, nodes.title("", "Proof"))
        # every proof has the id "proof"; the toggle finds its box by id, so a shared id would
        # make each collapsible proof's title open the first one. Without it the toggle names
        # each box itself.
        box["ids"] = [i for i in box["ids"] if i != "proof"]


# --- Accessibility ----------------------------------------------------------------------------
STATIC = Path(__file__).resolve().parent / "static"
# Each: (what the theme writes, what the page gets). The accessible name of a control must
# contain its visible text (WCAG 2.5.3 "label in name"): an aria-label that says something else
# hides the text from speech-input users ("click Show code cell source" finds nothing).
ACCESSIBLE_NAMES = (
    # myst-nb's "Show code cell source" toggles: without the aria-label the name is the text
    ('<summary aria-label="Toggle hidden content">', "<summary>"),
    # the search buttons: visible text "Search Ctrl+K"; the name is then that text
    ('search-button__button pst-js-only" title="Search" aria-label="Search"',
     'search-button__button pst-js-only" title="Search"'),
    ('search-button__button pst-js-only" aria-label="Search"',
     'search-button__button pst-js-only"'),
    # the colour-mode button shows one icon titled Light, Dark or System
    ('theme-switch-button pst-js-only" aria-label="Color mode"',
     'theme-switch-button pst-js-only" aria-label="Color mode: light, dark or system"'),
)


def _add_stylesheet(app):
    app.config.html_static_path.append(str(STATIC))
    app.add_css_file("book-a11y.css")


def _accessible_names(app, exc):
    """Rewrite the theme's controls in every built page (see :data:`ACCESSIBLE_NAMES`)."""
    if exc is not None or app.builder.format != "html":
        return
    for path in Path(app.outdir).rglob("*.html"):
        text = original = path.read_text(encoding="utf-8")
        for old, new in ACCESSIBLE_NAMES:
            text = text.replace(old, new)
        if text != original:
            path.write_text(text, encoding="utf-8")


SOURCE_MAP_COMMENT = re.compile(r"\n?(?://[#@] sourceMappingURL=[^\n]*|/\*[#@] sourceMappingURL=[^*]*\*/)[ \t]*$")


def _drop_source_maps(app, exc):
    """The theme's source maps (3.5 MB, a sixth of the site) serve only a developer's
    debugger: a reader's browser never fetches them.  Remove them and the comments that name
    them, so that a phone downloads less and no page refers to a missing file."""
    if exc is not None or app.builder.format != "html":
        return
    static = Path(app.outdir) / "_static"
    for path in static.rglob("*.map"):
        path.unlink()
    for path in [*static.rglob("*.js"), *static.rglob("*.css")]:
        text = path.read_text(encoding="utf-8", errors="surrogateescape")
        stripped = SOURCE_MAP_COMMENT.sub("", text)
        if stripped != text:
            path.write_text(stripped, encoding="utf-8", errors="surrogateescape")


def setup(app):
    from icllib.widgets import use_static_figures

    use_static_figures()
    app.connect("builder-inited", _check_unique_labels)
    app.connect("builder-inited", _add_stylesheet)
    app.connect("build-finished", _accessible_names, priority=900)
    app.connect("doctree-read", _register_label_anchors)
    app.connect("doctree-read", _solution_code_into_its_box)
    app.connect("doctree-read", _title_collapsible_proofs)
    app.connect("env-get-updated", _number_per_chapter, priority=900)
    app.connect("html-page-context", _dedupe_scripts, priority=900)
    # After sphinx-mathjax-offline's own build-finished handler (default priority 500), which
    # copies the MathJax distribution: listeners run in increasing priority.
    app.connect("build-finished", _prune_mathjax, priority=900)
    app.connect("build-finished", _slim_notebook_downloads, priority=900)
    app.connect("build-finished", _drop_source_maps, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
