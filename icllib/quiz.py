"""Check-your-understanding questions in a chapter, with immediate feedback offline.

A chapter shows a quiz right after the idea it tests, from a hidden code cell::

    from icllib.quiz import choice, numeric, show_quiz

    show_quiz(
        choice("Which mode leaves its plateau first?",
               right=("Mode 1", "Right: its clock 1/(η s₁²) is the shortest."),
               wrong={"Mode 4": "No: the smallest variance has the slowest clock."}),
        numeric("How many times longer is the clock of a mode with half the variance?", 4,
                "Right: τ = 1/(η s²), so half of s makes τ four times as long.",
                wrong={2: "No: the clock goes as 1/s², not 1/s."}))

The questions are rendered by `jupyterquiz <https://pypi.org/project/jupyterquiz/>`_ (its own
HTML, CSS and JavaScript, emitted into the cell's output), so they work on the static web page
(no kernel) and in JupyterLab alike, and the questions are stored in the output itself: nothing
is fetched when the page is viewed.  Two things in jupyterquiz 2.9 are not offline-safe, and
:func:`show_quiz` closes them by running its script with a stand-in for ``MathJax``:

* in JupyterLab 4, whose ``window.MathJax`` has a version but no ``typeset`` (its renderer keeps
  MathJax to itself), jupyterquiz loads MathJax from cdn.jsdelivr.net, and every click throws
  "MathJax.typeset is not a function" (jupyterquiz issue #20, jupyterlab issue #15614);
* on the web page, when the page's own MathJax has not finished loading 500 ms after the quiz
  is drawn (a slow machine), jupyterquiz throws reading the missing version.

So the questions carry no TeX (a ``$`` is refused): write symbols in Unicode or HTML (a₀, λ,
``<i>N</i>``), which read the same in both front ends.  jupyterquiz's console logging (a line
per click) is silenced the same way; its errors and warnings still reach the console.  Two
accessibility fixes (WCAG 2.1 AA, checked by axe-core in tests/test_browser.py): colours with
enough contrast (:data:`COLORS`), and the number field's label tied to its field.

Every multiple-choice question has exactly one right answer and a feedback text for every
answer: a wrong answer's feedback says why it is wrong.  A numeric question has one right value
(within an optional tolerance), feedback for the wrong values worth naming, and a default
feedback for any other value.  :func:`show_quiz` checks this before anything is shown.
"""

from __future__ import annotations

import importlib
import json
import math
from collections.abc import Mapping

__all__ = ["COLORS", "TITLE", "choice", "numeric", "check", "quiz_parts", "is_quiz_output",
           "show_quiz"]

# WCAG 2.1 AA colours (4.5:1 for jupyterquiz's 16 px text): jupyterquiz's own green feedback
# (#009113, 4.1:1 on white) and its light text on a light-grey number field (1.7:1) fall short.
COLORS = {
    "--jq-correct-color": "#007a10",          # 5.5:1 on white, 5.3:1 under #fafafa text
    "--jq-incorrect-color": "#c80202",        # 6.0:1 on white
    "--jq-numeric-input-bg": "#392061",       # the light answer text on the question's purple
    "--jq-numeric-input-label": "#101010",
}
TITLE = "Check your understanding"

# jupyterquiz labels its number field with a <label> that names no control: axe-core's "label"
# rule (critical) fails the page, and a screen reader announces an unnamed field.  The label is
# tied to its field (jupyterquiz's make_numeric gives the field the id ``id + "-0"``), and says
# that Enter submits.
_NUMERIC_LABEL = ('lab.innerHTML = "Type numeric answer here:";',
                  'lab.innerHTML = "Type a number, then press Enter:"; lab.htmlFor = id + "-0";')

# jupyterquiz's script holds every question type it has; the free-text type (its string.js) is
# left out, since only multiple choice and numbers are accepted here.  Lines that are only a
# comment and indentation go too: the script is carried by every quiz in the page and in the
# notebook (about 38 kB a quiz as jupyterquiz writes it, 20 kB so).
_UNUSED_JS = ("string.js",)

# jupyterquiz's script runs with these as ``MathJax`` and ``console`` (see the module's
# docstring): a MathJax 3 that typesets nothing (the questions hold no TeX) and a console
# without the per-click log lines.
_SCRIPT = """(function (MathJax, console) {
%s
})({version: "3", typeset: function () {}},
   {log: function () {}, warn: window.console.warn.bind(window.console),
    error: window.console.error.bind(window.console)});
"""


class QuizError(ValueError):
    """A question that :func:`show_quiz` refuses (no right answer, an answer without feedback,
    TeX in the text ...)."""


def _check_text(text, what):
    if not isinstance(text, str) or not text.strip():
        raise QuizError(f"{what}: empty")
    if "$" in text:
        raise QuizError(f"{what}: TeX ($) is not typeset in JupyterLab; write the symbols in "
                        f"Unicode or HTML: {text[:60]!r}")


def choice(question: str, right: tuple[str, str], wrong: Mapping[str, str]) -> dict:
    """A multiple-choice question: ``right`` is ``(answer, feedback)``, ``wrong`` maps each
    wrong answer to the feedback that says why it is wrong."""
    answers = [{"answer": right[0], "correct": True, "feedback": right[1]}]
    answers += [{"answer": a, "correct": False, "feedback": f} for a, f in wrong.items()]
    return check({"question": question, "type": "multiple_choice", "answers": answers})


def _numeric_answer(key, correct, feedback):
    if isinstance(key, tuple):          # (lo, hi): any number from lo up to, not including, hi
        return {"type": "range", "range": list(key), "correct": correct, "feedback": feedback}
    return {"type": "value", "value": key, "correct": correct, "feedback": feedback}


def numeric(question: str, value: float, feedback: str, *, tolerance: float = 0.0,
            wrong: Mapping[float | tuple[float, float], str] | None = None,
            default: str = "Not quite: go back to the idea above and work it out again.") -> dict:
    """A numeric question with one right ``value`` (within ``tolerance``, if given), feedback
    for the wrong answers in ``wrong`` (a value, or a range ``(lo, hi)``, to why it is wrong)
    and ``default`` for any other number."""
    key = (value - tolerance, value + tolerance) if tolerance else value
    answers = [_numeric_answer(key, True, feedback)]
    answers += [_numeric_answer(k, False, f) for k, f in (wrong or {}).items()]
    answers.append({"type": "default", "feedback": default})
    return check({"question": question, "type": "numeric", "answers": answers})


def _interval(answer):
    return tuple(answer["range"]) if "range" in answer else (answer["value"],) * 2


def check(q: dict) -> dict:
    """``q`` (jupyterquiz's dictionary form), if it is a question :func:`show_quiz` accepts."""
    _check_text(q.get("question"), "question")
    answers = q.get("answers") or []
    where = f"question {q['question'][:50]!r}"
    if q.get("type") == "multiple_choice":
        if len(answers) < 2:
            raise QuizError(f"{where}: fewer than two answers")
        if sum(a.get("correct") is True for a in answers) != 1:
            raise QuizError(f"{where}: not exactly one right answer")
        texts = [a.get("answer") for a in answers]
        if len(set(texts)) != len(texts):
            raise QuizError(f"{where}: an answer given twice")
        for a in answers:
            _check_text(a.get("answer"), f"{where}, an answer")
            _check_text(a.get("feedback"), f"{where}, feedback for {a.get('answer')!r}")
    elif q.get("type") == "numeric":
        right = [a for a in answers if a.get("correct") is True]
        if len(right) != 1:
            raise QuizError(f"{where}: not exactly one right value")
        for a in answers:
            _check_text(a.get("feedback"), f"{where}, feedback")
            numbers = [a["value"]] if "value" in a else a.get("range", [])
            if not all(isinstance(x, (int, float)) and math.isfinite(x) for x in numbers):
                raise QuizError(f"{where}: a value that is not a finite number: {numbers}")
        lo, hi = _interval(right[0])
        if lo > hi:
            raise QuizError(f"{where}: an empty range")
        for a in answers:
            if a is not right[0] and a.get("type") != "default":
                w_lo, w_hi = _interval(a)
                if w_lo <= hi and lo <= w_hi:
                    raise QuizError(f"{where}: a wrong answer overlaps the right one: {a}")
        if answers[-1].get("type") != "default":
            raise QuizError(f"{where}: no default feedback for other values")
    else:
        raise QuizError(f"{where}: type {q.get('type')!r} (multiple_choice or numeric)")
    return q


def quiz_parts(*questions: dict, shuffle_answers: bool = True) -> tuple[str, str]:
    """The quiz's HTML and its script (what :func:`show_quiz` displays), from jupyterquiz."""
    if not questions:
        raise QuizError("no questions")
    for q in questions:
        check(q)
    module = importlib.import_module("jupyterquiz.dynamic.display")
    shown = []
    original = module.display
    module.display = shown.append    # jupyterquiz displays an HTML and a Javascript object
    try:
        # a copy through JSON: the page gets exactly what was checked, as plain data
        module.display_quiz(json.loads(json.dumps(list(questions))),
                            shuffle_answers=shuffle_answers, colors=dict(COLORS))
    finally:
        module.display = original
    html, script = (o.data for o in shown)
    if script.count(_NUMERIC_LABEL[0]) != 1:
        raise RuntimeError("jupyterquiz's number field label changed: check icllib.quiz against "
                           "its version")
    script = script.replace(*_NUMERIC_LABEL)
    script = _slim(script, "jupyterquiz")
    title = f'<p class="icl-quiz-title"><strong>{TITLE}</strong></p>\n'
    return title + html, _SCRIPT % script


def _slim(script, package):
    """``script`` without jupyterquiz's unused question types, its comment-only lines, its
    indentation and its blank lines (no line is joined to another: the script's statements and
    strings stay as they were)."""
    from importlib.resources import files

    for name in _UNUSED_JS:
        code = files(package).joinpath("js", name).read_text(encoding="utf-8")
        if script.count(code) != 1:
            raise RuntimeError(f"jupyterquiz's {name} is not in its script once: check "
                               "icllib.quiz against its version")
        script = script.replace(code, "\n")
    lines = (line.strip() for line in script.splitlines())
    return "\n".join(line for line in lines if line and not line.startswith("//"))


def is_quiz_output(data: Mapping) -> bool:
    """Whether a notebook output's ``data`` (mime type to content) is part of a quiz made here."""
    def text(mime):
        value = data.get(mime, "")
        return "".join(value) if isinstance(value, list) else value
    return ('<p class="icl-quiz-title">' in text("text/html")
            or text("application/javascript").startswith(_SCRIPT.split("\n", 1)[0]))


def show_quiz(*questions: dict, shuffle_answers: bool = True) -> None:
    """Display ``questions`` (made by :func:`choice` and :func:`numeric`) as one quiz."""
    from IPython.display import HTML, Javascript, display

    html, script = quiz_parts(*questions, shuffle_answers=shuffle_answers)
    display(HTML(html))
    display(Javascript(script))
