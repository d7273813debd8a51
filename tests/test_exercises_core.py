"""icllib.exercises.core: the engine of every checker, check_function (verdicts, messages,
argument checks, a candidate that cannot corrupt the reference's inputs)."""

import numpy as np
import pytest

from icllib.exercises import CheckResult, check_function


def _sample(rng):
    return {"x": rng.standard_normal(3)}


def test_check_function_passes_identical_and_reports(capsys):
    res = check_function(lambda x: 2 * x, lambda x: 2 * x, _sample, trials=5, name="double")
    assert isinstance(res, CheckResult) and res and res.passed and res.trials == 5
    assert res.max_error == 0.0
    assert capsys.readouterr().out.startswith("PASSED double")


def test_check_function_fails_wrong_formula_with_location(capsys):
    res = check_function(lambda x: 2 * x + 1e-3, lambda x: 2 * x, _sample, trials=5)
    assert not res and res.trials == 1 and res.max_error > 1
    out = capsys.readouterr().out
    assert out.startswith("FAILED") and "expected" in out and "got" in out


def test_check_function_tolerance_boundary():
    # relative error 1e-9 passes at rtol 1e-7; 1e-6 fails
    ref = lambda x: np.ones(3) + 0 * x  # noqa: E731
    assert check_function(lambda x: np.ones(3) * (1 + 1e-9), ref, _sample, verbose=False)
    assert not check_function(lambda x: np.ones(3) * (1 + 1e-6), ref, _sample, verbose=False)


def test_check_function_reports_exceptions_shapes_and_nan():
    ref = lambda x: x  # noqa: E731

    def stub(x):
        raise NotImplementedError

    r = check_function(stub, ref, _sample, verbose=False)
    assert not r and "not implemented" in r.message
    r = check_function(lambda x: x[:2], ref, _sample, verbose=False)
    assert not r and "shape" in r.message
    r = check_function(lambda x: x * np.nan, ref, _sample, verbose=False)
    assert not r and "non-finite" in r.message
    r = check_function(lambda x: (x, x), ref, _sample, verbose=False)
    assert not r and "2 output" in r.message
    r = check_function(lambda x: {}["missing"], ref, _sample, verbose=False)
    assert not r and "KeyError" in r.message


def test_candidate_cannot_corrupt_reference_inputs():
    def mutating(x):
        x *= 0
        return x

    # the reference sees its own copy, so the (wrong) candidate fails instead of matching
    assert not check_function(mutating, lambda x: x, _sample, verbose=False)


@pytest.mark.parametrize("bad, named", [(dict(trials=0), "trials"), (dict(trials=1.5), "trials"),
                                        (dict(rtol=-1), "rtol"),
                                        (dict(rtol=0.0, atol=0.0), "rtol and atol"),
                                        (dict(atol=np.inf), "atol")])
def test_check_function_validates_arguments(bad, named):
    error = TypeError if bad.get("trials") == 1.5 else ValueError     # a count as a float
    with pytest.raises(error, match=named):
        check_function(lambda x: x, lambda x: x, _sample, **bad)


def test_check_function_rejects_what_is_not_a_function():
    with pytest.raises(TypeError, match="candidate must be a function, got NoneType"):
        check_function(None, lambda x: x, _sample)
    with pytest.raises(TypeError, match="reference must be a function, got int"):
        check_function(lambda x: x, 3, _sample)
    with pytest.raises(TypeError, match="sample_inputs must be a function, got str"):
        check_function(lambda x: x, lambda x: x, "inputs")


def test_check_function_failure_shows_a_small_vector_input(capsys):
    """Issue 30: a failing trial names a short 1-d input by its values (a spectrum), a large
    one by its shape."""
    def sample(rng):
        return {"s": np.array([4.0, 2.0, 1.0, 0.5]), "M": np.zeros((3, 3))}

    res = check_function(lambda s, M: s + 1.0, lambda s, M: s, sample, trials=1)
    assert not res
    out = capsys.readouterr().out
    assert "s = [4, 2, 1, 0.5]" in out and "M: array of shape (3, 3)" in out, out
