"""The check-your-understanding questions (icllib.quiz): what a quiz must hold, what its output
is made of, and that the chapters carry them where the book says.

The questions' behaviour in a browser (a wrong and a right answer, feedback, no network) is
tested on the built page in tests/test_browser.py and in JupyterLab in tests/test_jupyterlab.py.
"""

import json
import re
from pathlib import Path

import jupytext
import pytest

from icllib import quiz
from icllib.quiz import QuizError, check, choice, numeric, quiz_parts

ROOT = Path(__file__).resolve().parents[1]
# the chapters that test their ideas with questions (issue 30), at least two each
QUIZ_CHAPTERS = ("intro.md", "01-setup.md", "02-dynamics.md", "03-fixed-points.md",
                 "04-timescales.md", "05-loss.md", "05b-finite-tasks.md")


def good_choice(**changes):
    q = choice("Which mode first?", right=("Mode 1", "Right: shortest clock."),
               wrong={"Mode 4": "No: slowest clock.", "All": "No: four clocks."})
    q.update(changes)
    return q


def test_choice_and_numeric_make_jupyterquiz_questions():
    q = good_choice()
    assert q["type"] == "multiple_choice"
    assert [a["correct"] for a in q["answers"]] == [True, False, False]
    assert all(a["feedback"] for a in q["answers"])
    n = numeric("Factor?", 2, "Right.", wrong={4: "No: per step.", (0.7, 0.72): "No: 1/sqrt 2."})
    kinds = [(a["type"], a.get("correct")) for a in n["answers"]]
    assert kinds == [("value", True), ("value", False), ("range", False), ("default", None)]
    r = numeric("Value?", 0.38, "Right.", tolerance=0.01)
    assert r["answers"][0]["range"] == pytest.approx([0.37, 0.39])


@pytest.mark.parametrize("broken, message", [
    (lambda: good_choice(answers=[{"answer": "A", "correct": True, "feedback": "x"},
                                  {"answer": "B", "correct": True, "feedback": "y"}]),
     "exactly one right"),
    (lambda: good_choice(answers=[{"answer": "A", "correct": False, "feedback": "x"},
                                  {"answer": "B", "correct": False, "feedback": "y"}]),
     "exactly one right"),
    (lambda: good_choice(answers=[{"answer": "A", "correct": True, "feedback": "x"},
                                  {"answer": "B", "correct": False}]), "feedback"),
    (lambda: good_choice(answers=[{"answer": "A", "correct": True, "feedback": "x"}]),
     "two answers"),
    (lambda: good_choice(question="Is $a_0$ small?"), "TeX"),
    (lambda: numeric("Factor?", 2, "Right.", wrong={2: "No."}), "overlaps"),
    (lambda: numeric("Factor?", 0.38, "Right.", tolerance=0.01, wrong={(0.385, 0.4): "No."}),
     "overlaps"),
    (lambda: numeric("Factor?", float("nan"), "Right."), "finite"),
    (lambda: {"question": "Say it", "type": "string", "answers": []}, "type"),
])
def test_a_broken_question_is_refused(broken, message):
    with pytest.raises(QuizError, match=message):
        check(broken())


def test_the_quiz_output_is_self_contained_and_offline_safe():
    """The questions travel inside the output (no file, no URL); jupyterquiz's script runs with
    the stand-in MathJax and console; its number field is labelled; the colours are the
    accessible ones."""
    q = good_choice()
    n = numeric("Factor?", 2, "Right.")
    html, script = quiz_parts(q, n)
    assert script.startswith("(function (MathJax, console) {")
    assert json.dumps([q, n]) in script                   # the questions, inline
    assert 'typeset: function () {}' in script
    assert quiz._NUMERIC_LABEL[1] in script and quiz._NUMERIC_LABEL[0] not in script
    div_id = re.search(r'<div id="(\w+)"', html).group(1)
    assert f"show_questions(questions{div_id}, {div_id})" in script
    for var, colour in quiz.COLORS.items():
        assert f"{var}: {colour};" in html
    assert quiz.TITLE in html
    # the only address in the script is jupyterquiz's MathJax download, which the stand-in
    # (a MathJax 3 with typeset) never reaches
    assert set(re.findall(r"https?://[^\s'\"]+", script)) == {
        "https://cdn.jsdelivr.net/npm/mathjax@3/es5/tex-svg.js"}
    assert "MathJax.hasOwnProperty('typeset')" in script


def test_the_script_leaves_out_what_a_quiz_here_does_not_use():
    """jupyterquiz's free-text question type, comment lines and indentation are left out; what
    is left runs (tests/test_browser.py), and is about half of what jupyterquiz writes."""
    from importlib.resources import files

    _, script = quiz_parts(good_choice())
    string_js = files("jupyterquiz").joinpath("js", "string.js").read_text(encoding="utf-8")
    assert "StringQuestion" in string_js and "StringQuestion" not in script
    lines = script.splitlines()
    assert not any(line.lstrip().startswith("//") or line != line.strip() for line in lines[1:-3])
    assert len(script) < 25_000


def test_a_downloaded_notebook_carries_a_note_for_each_quiz(tmp_path):
    """book_site's download slimming: a quiz's two outputs become one note; other outputs stay."""
    import sys

    sys.path.insert(0, str(ROOT / "book" / "_ext"))
    import book_site

    html, script = quiz_parts(good_choice())
    nb = {"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [
        {"cell_type": "code", "source": "show_quiz(...)", "metadata": {}, "outputs": [
            {"output_type": "display_data", "data": {"text/html": html}, "metadata": {}},
            {"output_type": "display_data", "data": {"application/javascript": script},
             "metadata": {}}]},
        {"cell_type": "code", "source": "print(1)", "metadata": {}, "outputs": [
            {"output_type": "stream", "name": "stdout", "text": "1\n"}]}]}
    path = tmp_path / "chapter.ipynb"
    path.write_text(json.dumps(nb))
    book_site._slim_notebook(path)
    cells = json.loads(path.read_text())["cells"]
    assert [o["data"] for o in cells[0]["outputs"]] == [{"text/plain": book_site.QUIZ_NOTE}]
    assert cells[1]["outputs"] == nb["cells"][1]["outputs"]
    assert quiz.is_quiz_output({"text/html": html}) and quiz.is_quiz_output(
        {"application/javascript": script.splitlines(keepends=True)})
    assert not quiz.is_quiz_output({"text/html": "<p>a table</p>"})


def quiz_cells(path):
    return [c for c in jupytext.read(path).cells
            if c.cell_type == "code" and "show_quiz(" in c.source]


@pytest.mark.parametrize("name", QUIZ_CHAPTERS)
def test_the_chapters_ask_their_questions_in_hidden_cells(name, monkeypatch):
    """Each chapter of issue 30 asks at least two questions, each a valid quiz (what the page
    shows), in cells whose source the page removes and JupyterLab collapses."""
    cells = quiz_cells(ROOT / "book" / name)
    assert cells, f"{name}: no quiz"
    for cell in cells:
        assert "remove-input" in cell.metadata.get("tags", []), cell.source[:80]
        assert cell.metadata.get("jupyter", {}).get("source_hidden") is True, cell.source[:80]
    shown = []
    monkeypatch.setattr(quiz, "show_quiz", lambda *qs, **kw: shown.extend(qs))
    namespace = {}
    for cell in cells:           # in order: a later quiz cell uses the first one's imports
        exec(cell.source, namespace)
    assert len(shown) >= 2
    assert all(check(q) for q in shown)
