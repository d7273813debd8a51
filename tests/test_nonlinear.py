"""The icllib.nonlinear package as a whole: its model modules never import the exercises, and
every module is small, declares ``__all__`` and keeps to the line length."""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NONLINEAR = ROOT / "icllib" / "nonlinear"


def test_model_modules_never_import_the_exercises_and_modules_are_small():
    for path in NONLINEAR.rglob("*.py"):
        text = path.read_text()
        tree = ast.parse(text)
        names = [n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
        names += [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
        assert not any("exercises" in n for n in names), path
        assert len(text.splitlines()) < 400, path
        assert "__all__" in text, path
        assert max(len(line) for line in text.splitlines()) <= 100, path
