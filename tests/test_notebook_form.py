"""The chapters as notebooks, without a browser: what JupyterLab would write back, and where
the solutions are.

JupyterLab reads a chapter through jupytext, sets the notebook's kernelspec to the kernel it
starts (ipykernel's ``python3``), and on save writes ``jupytext.writes(notebook, "md:myst")``
(text notebooks keep no outputs). A chapter stored in exactly that form is saved back
byte-identical: a reader who only opens, runs and saves it sees nothing in ``git status``.
``tests/test_jupyterlab.py`` checks the same thing in a real JupyterLab.
"""

import re
from pathlib import Path

import jupytext

ROOT = Path(__file__).resolve().parents[1]
CHAPTERS = sorted(p for p in (ROOT / "book").glob("*.md")
                  if "kernelspec:" in p.read_text(encoding="utf-8")[:600])


def _ipykernel_spec():
    from ipykernel.kernelspec import get_kernel_dict

    spec = get_kernel_dict()
    return {"display_name": spec["display_name"], "language": spec["language"], "name": "python3"}


def ends_with_a_solution(markdown: str) -> bool:
    """Whether a markdown cell ends with a solution box (its last directive, closed at the
    very end of the cell): the code cell after it is that solution's code."""
    directives = re.findall(r"^(?:```+|:::+)\{([\w:-]+)\}", markdown, re.M)
    closes = markdown.rstrip().endswith(("```", ":::"))
    return bool(directives) and directives[-1] == "solution" and closes


def test_there_are_chapters():
    assert len(CHAPTERS) >= 9


def failing_chapters(problems_of) -> dict:
    """``{chapter: its problems}`` for each chapter where ``problems_of(path)`` (a list of what
    is wrong) is not empty: one test per property names every chapter that breaks it."""
    found = {path.name: problems_of(path) for path in CHAPTERS}
    return {name: problems for name, problems in found.items() if problems}


def saved_form_problems(path) -> list:
    nb = jupytext.read(path)
    nb.metadata["kernelspec"] = _ipykernel_spec()
    same = jupytext.writes(nb, fmt="md:myst") == path.read_text(encoding="utf-8")
    return [] if same else ["not in the form jupytext writes"]


def test_saving_each_chapter_from_jupyterlab_writes_the_same_bytes():
    assert failing_chapters(saved_form_problems) == {}, (
        "normalise with `.venv/bin/python scripts/normalise_chapters.py`")


def solution_form_problems(path) -> list:
    """Every code cell right after a solution box is the reference solution: collapsed in
    JupyterLab (``jupyter.source_hidden``) and behind a toggle on the web page
    (``hide-input``; the site moves it into the solution box, book/_ext/book_site.py), and no
    gated solution (solution-start/end, whose code cells JupyterLab shows) is left. A cell is
    collapsed in JupyterLab exactly when the page hides its source (hide-input, remove-input)."""
    text = path.read_text(encoding="utf-8")
    problems = ["a gated solution"] if "{solution-start}" in text or "{solution-end}" in text \
        else []
    cells = jupytext.read(path).cells
    for before, cell in zip(cells, cells[1:]):
        if before.cell_type == "markdown" and ends_with_a_solution(before.source) \
                and cell.cell_type == "code":
            if cell.metadata.get("jupyter", {}).get("source_hidden") is not True:
                problems.append(f"solution open in JupyterLab: {cell.source[:60]}")
            if "hide-input" not in cell.metadata.get("tags", []):
                problems.append(f"solution shown on the page: {cell.source[:60]}")
    for cell in cells:
        hidden = cell.metadata.get("jupyter", {}).get("source_hidden") is True
        tags = set(cell.metadata.get("tags", []))
        if "hide-input" in tags and not hidden:
            problems.append(f"hidden on the page, open in JupyterLab: {cell.source[:60]}")
        if hidden and not tags & {"hide-input", "remove-input"}:  # remove-input: next test
            problems.append(f"collapsed in JupyterLab, shown on the page: {cell.source[:60]}")
    return problems


def test_solution_code_is_collapsed_in_the_notebook_and_hidden_on_the_page():
    assert failing_chapters(solution_form_problems) == {}


def hidden_check_cells(path):
    """The chapter's hidden code cells (``remove-input``/``remove-output``: checks and the
    numbers the prose quotes), as ``[(cell number, cell)]``."""
    return [(n, cell) for n, cell in enumerate(jupytext.read(path).cells)
            if cell.cell_type == "code"
            and {"remove-input", "remove-output"} & set(cell.metadata.get("tags", []))]


def test_hidden_check_cells_are_collapsed_in_the_notebook():
    """A cell the web page hides (``remove-input``) is collapsed in JupyterLab and on Binder
    (``jupyter.source_hidden``), so the notebook's reader sees its one-line placeholder, not
    a page of asserts."""
    assert failing_chapters(lambda path: [
        f"cell {n} shown in JupyterLab: {cell.source.strip().splitlines()[0][:70]}"
        for n, cell in hidden_check_cells(path)
        if cell.metadata.get("jupyter", {}).get("source_hidden") is not True]) == {}


# A comment that tells the check's history (what an earlier version did, what was tried once)
# rather than what the check checks and why it can fail.
HISTORY = re.compile(r"\b(?:earlier|previous|first|old) version\b|\btried\b|\bseen to fail\b|"
                     r"\bit replaces\b|\bused to\b|\bwas changed\b|\bno longer fails\b", re.I)


def history_comments(cells):
    """``[(cell number, line)]``: comment lines of ``cells`` that tell a history."""
    found = []
    for n, cell in cells:
        comments = " ".join(line.split("#", 1)[1].strip() for line in cell.source.splitlines()
                            if "#" in line)
        found += [(n, m.group(0)) for m in HISTORY.finditer(comments)]
    return found


def test_hidden_checks_say_what_they_check_not_their_history():
    assert failing_chapters(lambda path: history_comments(hidden_check_cells(path))) == {}


def test_a_history_comment_is_found():
    from nbformat.v4 import new_code_cell

    cells = [(0, new_code_cell("# The earlier version of this check used a window\nx = 1")),
             (1, new_code_cell("assert y  # Tried once with a wrong brake: it fails")),
             (2, new_code_cell("# Check: the floor follows l*, not L_inf (z > 15 with L_inf)."))]
    assert history_comments(cells) == [(0, "earlier version"), (1, "Tried")]


def test_no_solution_is_an_open_box():
    for path in CHAPTERS:
        text = path.read_text(encoding="utf-8")
        for m in re.finditer(r"(?:```+|:::+)\{solution\}[^\n]*\n((?::[^\n]*\n)*)", text):
            assert ":class: dropdown" in m.group(1), f"{path.name}: a solution shown open"


def test_no_code_cell_is_tagged_remove_cell():
    """The book executes inline (``nb_execution_mode: inline``, for ``{eval}``), and inline
    execution drops ``remove-cell`` cells before running them: a hidden check tagged so would
    never run in the build, and a variable it defines would be missing.  Hidden cells are
    tagged ``remove-input`` and ``remove-output`` instead."""
    assert failing_chapters(lambda path: [
        cell.source[:80] for cell in jupytext.read(path).cells
        if cell.cell_type == "code" and "remove-cell" in cell.metadata.get("tags", [])]) == {}


def inline_expression_problems(path) -> list:
    """jupyterlab-myst keeps the values of a markdown cell's {eval} roles in the cell's
    metadata (``user_expressions``); the chapter's jupytext header filters them out, so a
    reader who runs and saves a chapter in JupyterLab writes back the same bytes."""
    import copy

    nb = jupytext.read(path)
    if nb.metadata["jupytext"].get("cell_metadata_filter") != "-user_expressions":
        return ["the header does not filter out user_expressions"]
    evaluated = copy.deepcopy(nb)
    for cell in evaluated.cells:
        if cell.cell_type == "markdown":
            cell.metadata["user_expressions"] = [{"expression": "x", "result": {}}]
    same = jupytext.writes(evaluated, fmt="md:myst") == jupytext.writes(nb, fmt="md:myst")
    return [] if same else ["{eval} values are written back into the chapter"]


def test_evaluated_inline_expressions_are_not_saved_into_the_chapter():
    assert failing_chapters(inline_expression_problems) == {}


def test_nbval_fails_a_chapter_cell_that_writes_to_stderr(tmp_path):
    """conftest.py turns stderr text in a chapter cell's output (a warning a reader would see)
    into a failure under nbval; a clean cell passes."""
    import shutil
    import subprocess
    import sys

    (tmp_path / "book").mkdir()
    shutil.copy(ROOT / "conftest.py", tmp_path / "conftest.py")
    header = ("---\njupytext:\n  text_representation:\n    extension: .md\n"
              "    format_name: myst\nkernelspec:\n  display_name: Python 3 (ipykernel)\n"
              "  language: python\n  name: python3\n---\n# probe\n\n")
    for name, code in (("warns", "import warnings\nwarnings.warn('seen by a reader')"),
                       ("clean", "x = 1")):
        (tmp_path / "book" / f"{name}.md").write_text(
            header + "```{code-cell} ipython3\n" + code + "\n```\n", encoding="utf-8")
    runs = {name: subprocess.run([sys.executable, "-m", "pytest", "--nbval-lax",
                                  "--nbval-current-env", "-q", "-p", "no:cacheprovider",
                                  f"book/{name}.md"], cwd=tmp_path, capture_output=True,
                                 text=True) for name in ("warns", "clean")}
    assert runs["warns"].returncode == 1 and "wrote to stderr" in runs["warns"].stdout
    assert runs["clean"].returncode == 0, runs["clean"].stdout[-2000:]


def test_nbval_queue_runs_each_chapter_once_across_processes(tmp_path):
    """With ICLLIB_NBVAL_QUEUE (conftest.py), two pytest processes started together over the
    same chapters run each chapter exactly once between them, and a chapter already claimed
    by someone else in neither; each process exits 0."""
    import os
    import shutil
    import subprocess
    import sys

    (tmp_path / "book").mkdir()
    (tmp_path / "ran").mkdir()
    shutil.copy(ROOT / "conftest.py", tmp_path / "conftest.py")
    header = ("---\njupytext:\n  text_representation:\n    extension: .md\n"
              "    format_name: myst\nkernelspec:\n  display_name: Python 3 (ipykernel)\n"
              "  language: python\n  name: python3\n---\n# probe\n\n")
    names = ["a", "b", "c", "d"]
    for name in names:
        code = (f"import os\nwith open({str(tmp_path / 'ran' / name)!r}, 'a') as f:\n"
                "    f.write(f'{os.getppid()}\\n')")
        (tmp_path / "book" / f"{name}.md").write_text(
            header + "```{code-cell} ipython3\n" + code + "\n```\n", encoding="utf-8")
    queue = tmp_path / "queue"
    queue.mkdir()
    (queue / "c.md").mkdir()                      # claimed by a third process
    env = {**os.environ, "ICLLIB_NBVAL_QUEUE": str(queue)}
    cmd = [sys.executable, "-m", "pytest", "--nbval-lax", "--nbval-current-env", "-q",
           "-p", "no:cacheprovider", "book"]
    procs = [subprocess.Popen(cmd, cwd=tmp_path, env=env, stdout=subprocess.PIPE, text=True)
             for _ in range(2)]
    outputs = [p.communicate(timeout=300)[0] for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outputs
    ran = {p.name: p.read_text().split() for p in (tmp_path / "ran").iterdir()}
    assert sorted(ran) == ["a", "b", "d"] and all(len(v) == 1 for v in ran.values()), ran
    assert sorted(os.listdir(queue)) == [f"{n}.md" for n in names]


# A reference inside a chapter: a role ({ref}, {prf:ref}, {eq}, {numref}) or a "#label" link.
REFERENCE = re.compile(r"\{(?:ref|prf:ref|eq|numref)\}`(?:[^`<]*<)?([^`<>]+)>?`|\]\(#([^)\s]+)\)")


def forward_references(path):
    """``[(line, label)]``: references to a label that the same chapter defines further down.

    jupyterlab-myst resolves a label only once the cell defining it has rendered; with
    JupyterLab's default windowing a reference to a later cell logs "Cross reference target was
    not found" and can stay a raw label. Such a reference is written as a link to the chapter's
    own file, ``[the proposition below](06-nonlinear-metrics.md#label)``, which both the book
    (label anchors, book/_ext/book_site.py) and JupyterLab read as a link.
    """
    import sys
    sys.path.insert(0, str(ROOT / "book" / "_ext"))
    from book_site import label_definitions

    first = {label: min(n for _, n in where)
             for label, where in label_definitions([path]).items()}
    found = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        for match in REFERENCE.finditer(line):
            label = match.group(1) or match.group(2)
            if label in first and first[label] > n:
                found.append((n, label))
    return found


def test_no_reference_points_to_a_later_cell_of_the_same_chapter():
    assert failing_chapters(forward_references) == {}


def test_a_forward_reference_is_found(tmp_path):
    probe = tmp_path / "probe.md"
    probe.write_text("See {prf:ref}`later` and [it](#later).\n\n```{prf:proposition} T\n"
                     ":label: later\n\nText.\n```\n\nAgain {prf:ref}`later`.\n")
    assert forward_references(probe) == [(1, "later"), (1, "later")]


EVAL_ROLE = re.compile(r"\{eval\}`([^`]+)`")


def names_bound_by(source: str) -> set:
    """The names a code cell binds: assignment and loop targets, defs, classes, imports."""
    import ast

    from IPython.core.inputtransformer2 import TransformerManager

    # IPython turns magics (%matplotlib ...) into Python first, as the kernel does
    tree = ast.parse(TransformerManager().transform_cell(source))
    bound = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            bound.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            bound.update((a.asname or a.name).split(".")[0] for a in node.names)
    return bound


def evals_before_their_definition(path) -> list:
    """``[name]`` of each {eval} role whose name no earlier code cell binds.

    Inline execution evaluates a role when the page reaches it, so the cell that computes a
    number must come before the prose that shows it; nbval runs only the code cells and cannot
    see this (the build fails with a NameError warning, minutes later)."""
    import ast
    import builtins

    bound, found = set(dir(builtins)), []
    for cell in jupytext.read(path).cells:
        if cell.cell_type == "code":
            bound |= names_bound_by(cell.source)
            continue
        for expression in EVAL_ROLE.findall(cell.source):
            used = {node.id for node in ast.walk(ast.parse(expression, mode="eval"))
                    if isinstance(node, ast.Name)}
            found += sorted(used - bound)
    return found


def test_every_eval_role_comes_after_the_cell_that_computes_it():
    assert failing_chapters(evals_before_their_definition) == {}


def test_an_eval_role_before_its_cell_is_found(tmp_path):
    import nbformat

    probe = tmp_path / "probe.md"
    cells = [nbformat.v4.new_code_cell("%matplotlib inline\nearly_txt = '1'"),
             nbformat.v4.new_markdown_cell("Early {eval}`early_txt`, "
                                           "late {eval}`late_txt + early_txt`."),
             nbformat.v4.new_code_cell("late_txt, other = '2', 3"),
             nbformat.v4.new_markdown_cell("Now {eval}`late_txt`.")]
    jupytext.write(nbformat.v4.new_notebook(cells=cells), probe, fmt="md:myst")
    assert evals_before_their_definition(probe) == ["late_txt"]
