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


def test_each_experiment_package_map_names_its_modules_and_what_it_re_exports():
    """The package docstring is the map a newcomer reads: it names every module of the package,
    and the modules it says are *not* re-exported are exactly those whose public names the
    package does not carry (every other module's ``__all__`` is in the package namespace)."""
    import importlib
    import pkgutil
    import re

    for name in ("induction", "grokking"):
        package = importlib.import_module(f"icllib.nonlinear.{name}")
        doc = " ".join(package.__doc__.split())
        modules = {m.name for m in pkgutil.iter_modules(package.__path__)}
        assert set(re.findall(r":mod:`\.(\w+)`", doc)) == modules, name
        stated = re.search(r"Every module but ``(\w+)`` and ``(\w+)`` is re-exported", doc)
        assert stated, name
        not_exported = {m for m in modules
                        if not all(hasattr(package, n) for n in importlib.import_module(
                            f"{package.__name__}.{m}").__all__)}
        assert not_exported == set(stated.groups()), (name, not_exported)
