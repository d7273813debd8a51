"""Tests for icllib.validation: one rule per kind of argument, applied everywhere.

Also checks the module structure of the linear half: every module declares ``__all__`` (and
defines what it lists), and no module imports another module's private name.
"""

import ast
import importlib
from pathlib import Path

import numpy as np
import pytest

from icllib.data import DataConfig
from icllib.theory import exact_loss, s_inf, tau
from icllib.train import balanced_init, train_sgd
from icllib.validation import (
    check_array,
    check_choice,
    check_generator,
    check_instance,
    check_int,
    check_modes,
    check_nonnegative,
    check_orthogonal,
    check_positive,
    check_positive_array,
    check_real,
    check_spectrum,
    check_time_grid,
    check_times,
)

ROOT = Path(__file__).resolve().parents[1]
LINEAR = sorted(p for p in (ROOT / "icllib").rglob("*.py") if "nonlinear" not in p.parts)


# ----------------------------------------------------------------------------- integers


@pytest.mark.parametrize("value", [3, np.int64(3), np.int32(3), np.uint8(3)])
def test_integers_are_integral_values(value):
    out = check_int("n", value, 1)
    assert out == 3 and type(out) is int


@pytest.mark.parametrize("value", [3.0, np.float64(3.0), True, np.bool_(True), "3", None,
                                   np.array(3)])
def test_integral_floats_bools_and_others_are_not_integers(value):
    with pytest.raises(TypeError, match=r"^n must be an integer >= 1, got "):
        check_int("n", value, 1)


def test_integer_range_messages():
    with pytest.raises(ValueError, match=r"^N must be an integer >= 1, got 0$"):
        check_int("N", 0, 1)
    with pytest.raises(ValueError, match=r"^k must be an integer in 1\.\.5, got 7$"):
        check_int("k", 7, 1, 5)
    with pytest.raises(ValueError, match=r"^k must be an integer <= 5, got 6$"):
        check_int("k", 6, maximum=5)
    assert check_int("k", 5, 1, 5) == 5


@pytest.mark.parametrize(
    "call",
    [
        lambda: s_inf([1.0, 2.0], 10.0),
        lambda: exact_loss(np.ones(2), np.ones(2), [1.0, 2.0], 10.0),
        lambda: DataConfig(s=[1.0, 2.0], N=10.0),
        lambda: tau([1.0], 0.1, P=4.0, convention="passes"),
        lambda: train_sgd(DataConfig(s=[1.0], N=3), balanced_init(1, 0.1), eta=0.1, B=4,
                          steps=10.0, rng=np.random.default_rng(0)),
    ],
)
def test_one_integer_rule_everywhere(call):
    """The same count given as 10.0 is rejected by every module (it used to pass theory)."""
    with pytest.raises(TypeError, match="must be an integer"):
        call()


# ----------------------------------------------------------------------------- reals


def test_real_numbers():
    assert check_real("x", np.float32(0.5)) == 0.5 and check_real("x", 2) == 2.0
    assert check_positive("eta", 1e-3) == 1e-3
    assert check_nonnegative("noise", 0) == 0.0
    for bad in (True, "0.1", np.array(0.1), None):
        with pytest.raises(TypeError, match=r"^x must be a finite number, got "):
            check_real("x", bad)
    for bad in (np.nan, np.inf):
        with pytest.raises(ValueError, match=r"^x must be a finite number, got "):
            check_real("x", bad)
    with pytest.raises(ValueError, match=r"^eta must be a finite number > 0, got 0\.0$"):
        check_positive("eta", 0.0)
    with pytest.raises(ValueError, match=r"^noise must be a finite number >= 0, got -1$"):
        check_nonnegative("noise", -1)
    with pytest.raises(ValueError, match=r"^rtol must be a finite number in \[0, 1\), got 1$"):
        check_real("rtol", 1, 0, 1, exclusive_maximum=True)
    with pytest.raises(ValueError, match=r"in \(0, 1\)"):
        check_real("f", 0.0, 0, 1, exclusive_minimum=True, exclusive_maximum=True)


# ----------------------------------------------------------------------------- others


def test_choices_and_generators():
    assert check_choice("sampler", "tokens", ("statistics", "tokens")) == "tokens"
    with pytest.raises(ValueError, match=r"^sampler must be 'statistics' or 'tokens', got 'x'$"):
        check_choice("sampler", "x", ("statistics", "tokens"))
    with pytest.raises(ValueError, match=r"^mode must be one of 'a', 'b', 'c', got "):
        check_choice("mode", np.zeros(2), ("a", "b", "c"))
    rng = np.random.default_rng(0)
    assert check_generator("rng", rng) is rng
    with pytest.raises(TypeError, match=r"^rng must be a numpy\.random\.Generator"):
        check_generator("rng", np.random.RandomState(0))


def test_arrays():
    a = check_array("W", [[1, 2], [3, 4]], (..., 2, 2))
    assert a.dtype == np.float64
    assert check_array("W", np.zeros((5, 3, 2, 2)), (..., 2, 2)).shape == (5, 3, 2, 2)
    assert check_array("x", np.zeros((4, 7)), (4, None)).shape == (4, 7)
    message = r"^W must have shape \(\.\.\., 2, 2\) to match S, got \(2,\)$"
    with pytest.raises(ValueError, match=message):
        check_array("W", np.zeros(2), (..., 2, 2), hint=" to match S")
    with pytest.raises(ValueError, match=r"^p0 must have shape \(3,\), got \(2,\)$"):
        check_array("p0", np.zeros(2), (3,))
    with pytest.raises(ValueError, match=r"^x must hold finite values$"):
        check_array("x", [1.0, np.nan])
    with pytest.raises(TypeError, match=r"^x must be a real array"):
        check_array("x", "abc")
    with pytest.raises(ValueError, match="s must hold positive finite eigenvalues"):
        check_spectrum("s", [1.0, 0.0])
    with pytest.raises(ValueError, match="s must be a 1-D array"):
        check_spectrum("s", [[1.0]])
    with pytest.raises(ValueError, match="t must be increasing"):
        check_time_grid("t", [0.0, 0.0], strict=True)
    with pytest.raises(ValueError, match="t must start at >= 0"):
        check_time_grid("t", [-1.0, 0.0], start=0)
    assert check_orthogonal("U", None, 3) is None
    with pytest.raises(ValueError, match="U must be orthogonal"):
        check_orthogonal("U", [[1.0, 1.0], [0.0, 1.0]], 2)


# ----------------------------------------------------------------------------- structure


def _module_name(path):
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def test_every_module_declares_what_it_exports():
    """Each module of the linear half lists its exports in ``__all__``. That each listed name
    is defined is ruff's F822 (pyproject.toml selects "F"), which ruff 0.8 applies to every
    module but the packages' ``__init__.py``: those are imported and checked here."""
    undeclared, packages = [], []
    for path in LINEAR:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        if not any(isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "__all__"
                                                         for t in node.targets)
                   for node in tree.body):
            undeclared.append(str(path.relative_to(ROOT)))
        if path.name == "__init__.py":
            packages.append(importlib.import_module(_module_name(path)))
    assert not undeclared, f"no __all__ in {undeclared}"
    missing = {p.__name__: [n for n in p.__all__ if not hasattr(p, n)] for p in packages}
    assert len(packages) >= 4 and not any(missing.values()), f"__all__ lists undefined {missing}"


def test_no_module_imports_another_modules_private_names():
    private = [
        f"{path.relative_to(ROOT)}: {node.module}.{alias.name}"
        for path in LINEAR
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.ImportFrom)
        and (node.level > 0 or (node.module or "").startswith("icllib"))
        for alias in node.names
        if alias.name.startswith("_")
    ]
    assert len(LINEAR) > 20 and not private, "imports of private names:\n" + "\n".join(private)


@pytest.mark.parametrize("call", [
    lambda: check_generator("rng", 0),
    lambda: check_int("N", 2.5, 1),
    lambda: check_int("N", True, 1),
    lambda: check_real("eta", "0.1", 0),
    lambda: check_real("eta", None, 0),
    lambda: check_instance("params", [1.0], dict),
    lambda: check_array("s", "abc"),
])
def test_a_wrong_type_is_a_type_error_only(call):
    """Python's convention: the wrong type raises a plain TypeError, not a ValueError."""
    with pytest.raises(TypeError) as info:
        call()
    assert type(info.value) is TypeError and not isinstance(info.value, ValueError)


@pytest.mark.parametrize("call", [
    lambda: check_int("N", 0, 1),
    lambda: check_real("eta", float("nan"), 0),
    lambda: check_real("eta", -1.0, 0),
    lambda: check_array("s", [1.0, 2.0], (3,)),
])
def test_a_wrong_value_of_the_right_type_is_a_value_error_only(call):
    with pytest.raises(ValueError) as info:
        call()
    assert not isinstance(info.value, TypeError)


def test_an_rng_seed_in_place_of_a_generator_is_a_type_error_from_the_library():
    from icllib.data import sample_prompts
    with pytest.raises(TypeError, match="rng must be a numpy.random.Generator"):
        sample_prompts(DataConfig(s=[1.0, 0.5], N=4), 8, 0)


def test_packages_re_export_what_their_docstrings_say():
    """icllib.theory re-exports every public name of its modules; icllib.data and icllib.train
    re-export each name their docstring lists in double backticks under a module (the top-level
    docstring says exactly this)."""
    import pkgutil
    import re

    for pkg_name in ("icllib.theory", "icllib.data", "icllib.train"):
        pkg = importlib.import_module(pkg_name)
        public = {}
        for info in pkgutil.iter_modules(pkg.__path__):
            mod = importlib.import_module(f"{pkg_name}.{info.name}")
            public.update({n: info.name for n in getattr(mod, "__all__", [])})
        if pkg_name == "icllib.theory":
            listed = set(public)
        else:
            listed = set(re.findall(r"``(\w+)``", pkg.__doc__)) & set(public)
        assert listed, pkg_name
        missing = sorted(n for n in listed if not hasattr(pkg, n))
        assert not missing, f"{pkg_name} does not re-export {missing}"


# ======================================================================================
# Found by mutation testing (issue 25, section 4): tests that kill the mutants
# of icllib.validation that survived the tests above. Every public function of the
# library validates its arguments through these helpers, so each test states one rule
# of the module docstring of :mod:`icllib.validation` at its boundary: the value
# returned, the bound itself (inclusive or exclusive) and the message that names the
# argument.


def test_real_bounds_are_inclusive_unless_exclusive():
    assert check_real("x", 1.0, 0, 1) == 1.0                     # maximum itself allowed
    assert check_real("x", 0.0, 0, 1) == 0.0                     # minimum itself allowed
    assert check_real("x", -5.0, maximum=1) == -5.0
    with pytest.raises(ValueError, match=r"^x must be a finite number <= 1, got 1\.5$"):
        check_real("x", 1.5, maximum=1)
    with pytest.raises(ValueError, match=r"^x must be a finite number < 1, got 1\.0$"):
        check_real("x", 1.0, maximum=1, exclusive_maximum=True)


def test_instance_message_names_the_type():
    assert check_instance("cfg", "abc", str) == "abc"
    with pytest.raises(TypeError, match=r"^cfg must be a str, got int$"):
        check_instance("cfg", 3, str)
    with pytest.raises(TypeError, match=r"^cfg must be a DataConfig, got int$"):
        check_instance("cfg", 3, str, what="a DataConfig")


def test_positive_array_rejects_zero_and_returns_the_array():
    out = check_positive_array("s", [[1, 2], [3, 4]])
    assert out.dtype == np.float64 and out.shape == (2, 2)
    np.testing.assert_array_equal(out, [[1.0, 2.0], [3.0, 4.0]])
    for bad in ([1.0, 0.0], [1.0, -1.0], [1.0, np.inf], [1.0, np.nan], []):
        with pytest.raises(ValueError, match="^s must hold positive finite numbers"):
            check_positive_array("s", bad)


def test_modes_axis_is_the_last_axis():
    out = check_modes("p", np.ones((5, 3)), 3)                   # leading axes free
    assert out.shape == (5, 3) and out.dtype == np.float64
    assert check_modes("p", [1.0, 2.0], 2).shape == (2,)        # one state, no leading axis
    assert check_modes("p", np.ones((2, 7, 3)), 3).shape == (2, 7, 3)
    for bad in (np.ones((3, 5)), np.ones((3, 3, 5)), np.ones(4), 1.0):
        with pytest.raises(ValueError, match="^p must have the mode axis last with length d=3"):
            check_modes("p", bad, 3)


def test_times_are_non_negative():
    np.testing.assert_array_equal(check_times("t", [0.0, 2.5]), [0.0, 2.5])
    with pytest.raises(ValueError, match=r"^t must be >= 0"):
        check_times("t", [-1e-9, 1.0])


def test_time_grid_rules():
    np.testing.assert_array_equal(check_time_grid("t", [0.0]), [0.0])          # one time
    np.testing.assert_array_equal(check_time_grid("t", [0.0, 0.5, 0.5]), [0.0, 0.5, 0.5])
    np.testing.assert_array_equal(check_time_grid("t", [0.0, 0.25, 0.5], strict=True),
                                  [0.0, 0.25, 0.5])                             # small steps
    assert check_time_grid("t", [0.0, 1.0], start=0).shape == (2,)             # start itself
    assert check_time_grid("t", [2.0, 3.0], start=0)[0] == 2.0
    with pytest.raises(ValueError, match="^t must be non-decreasing$"):
        check_time_grid("t", [0.0, -0.5])
    for bad in ([], [[0.0, 1.0]], np.zeros((2, 2))):
        with pytest.raises(ValueError, match="^t must be a non-empty 1-D"):
            check_time_grid("t", bad)


def test_orthogonal_matrices_are_accepted_and_returned():
    c, s = np.cos(0.3), np.sin(0.3)
    R = np.array([[c, -s], [s, c]])
    np.testing.assert_array_equal(check_orthogonal("U", R, 2), R)
    np.testing.assert_array_equal(check_orthogonal("U", np.eye(3), 3), np.eye(3))
    # off by much more than the tolerance (1e-8): rejected
    with pytest.raises(ValueError, match="^U must be orthogonal"):
        check_orthogonal("U", R * (1 + 1e-6), 2)
    with pytest.raises(ValueError, match=r"^U must be an orthogonal 2 x 2 matrix, got shape"):
        check_orthogonal("U", np.eye(3), 2)


def test_integer_bounds_are_inclusive():
    """``minimum <= value <= maximum``: ``N = 1`` is a valid context length."""
    assert check_int("N", 1, 1) == 1
    assert check_int("k", np.int64(0), 0) == 0
    assert check_int("x", 5, 1, 5) == 5
    with pytest.raises(ValueError, match=r"^N must be an integer >= 1, got 0$"):
        check_int("N", 0, 1)
    with pytest.raises(ValueError, match=r"^x must be an integer in 1\.\.5, got 6$"):
        check_int("x", 6, 1, 5)


def test_array_shape_needs_the_same_number_of_axes():
    with pytest.raises(ValueError, match=r"^x must have shape \(2,\), got \(2, 2\)$"):
        check_array("x", np.zeros((2, 2)), (2,))
    with pytest.raises(ValueError, match=r"^x must have shape \(4, \*\), got \(4,\)$"):
        check_array("x", np.zeros(4), (4, None))
    assert check_array("x", np.zeros((4, 1)), (4, None)).shape == (4, 1)
