"""AutoTape's second order replays f's guards as guards (issues 16 and 22): `float(x[0] >= 0)` in f is
accepted by `hessian` as by `gradient`, wherever f comes from, and a prepared Hessian's mismatch names
the branch in f, not the line calling diface. Lists mixing numbers and traced values (SciPy's Cola
benchmark) and autograd.numpy's array builders are recorded, with f compiled from a string as from a
file (issue 22's `AutoSparse(AutoAutograd())` case)."""

from __future__ import annotations

import importlib.util
import os
import pathlib
import re
import types

import numpy as np
import pytest

import diface as di

pytest.importorskip("scipy")
autograd = pytest.importorskip("autograd")

TAPE = di.AutoTape()
HERE = os.path.basename(__file__)


def _line(marker: str) -> int:
    return next(i for i, text in enumerate(open(__file__).read().splitlines(), 1) if marker in text)


def _import_file(path: pathlib.Path, source: str) -> types.ModuleType:
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _exec(source: str, filename: str = "<string>") -> dict:
    namespace: dict = {}
    exec(compile(source, filename, "exec"), namespace)
    return namespace


def guarded(x):
    k = float(x[0] >= 0)
    return k * np.sum(x**3)


GUARDED = "def guarded(x):\n    k = float(x[0] >= 0)\n    return k * np.sum(x**3)\n"


def test_the_hessian_of_a_guard_is_accepted_and_right():
    """`float(x[0] >= 0)` in f is a guard: second order replays it as one (it once went through f's own
    cast check and was refused, naming the caller's `di.hessian(...)` line)."""
    x = np.array([0.5, 1.0, 2.0])
    compiled = _exec("import numpy as np\n" + GUARDED)["guarded"]
    for f in (guarded, compiled):
        np.testing.assert_allclose(di.gradient(f, TAPE, x), 3 * x**2, rtol=1e-14)
        np.testing.assert_allclose(di.hessian(f, TAPE, x), np.diag(6 * x), rtol=1e-14)
        np.testing.assert_allclose(di.hvp(f, TAPE, x, np.ones(3)), 6 * x, rtol=1e-14)
        np.testing.assert_allclose(di.hessian(f, TAPE, -x), np.zeros((3, 3)))
        prep = di.prepare_hessian(f, TAPE, x)
        np.testing.assert_allclose(prep.hessian(2 * x), np.diag(12 * x), rtol=1e-14)
    scalar = lambda s: float(s > 0) * s**3 + int(s < 0) * s**2
    assert di.second_derivative(scalar, TAPE, 0.5) == pytest.approx(3.0, rel=1e-14)
    assert di.second_derivative(scalar, TAPE, -0.5) == pytest.approx(2.0, rel=1e-14)


def branchy(x):
    if x[0] > 0:  # the branch
        return np.sum(x**3)
    return np.sum(x**2)


def test_a_prepared_hessian_names_the_branch_in_f():
    prep = di.prepare_hessian(branchy, TAPE, np.array([1.0, 2.0]))
    np.testing.assert_allclose(prep.hessian(np.array([3.0, 1.0])), np.diag([18.0, 6.0]))
    with pytest.raises(di.TapeMismatchError) as info:
        prep.hessian(np.array([-1.0, 2.0]))
    assert f"{HERE}:{_line('# the branch')}" in str(info.value), str(info.value)
    with pytest.raises(di.TapeMismatchError, match=re.escape(f"{HERE}:{_line('# the branch')}")):
        di.prepare_hvp(branchy, TAPE, np.array([1.0, 2.0]), np.ones(2)).hvp(np.array([-1.0, 2.0]), np.ones(2))
    # f whose source cannot be read: the mismatch is raised all the same, naming f's line number
    compiled = _exec("import numpy as np\ndef f(x):\n    if x[0] > 0:\n        return np.sum(x**3)\n    return 0.0\n")
    prep = di.prepare_hessian(compiled["f"], TAPE, np.array([1.0, 2.0]))
    with pytest.raises(di.TapeMismatchError, match="<string>:3"):
        prep.hessian(np.array([-1.0, 2.0]))


def cola_piece(x):
    """The object array of SciPy's Cola benchmark: a plain float among traced values."""
    return np.sum(np.sqrt(np.asarray([0.0, x[0]] + list(x[1::2]))) * np.arange(4.0))  # noqa: RUF005 (SciPy's)  # noqa: RUF005 (as SciPy)


def test_a_list_mixing_numbers_and_traced_values_is_recorded():
    x = np.array([0.7, 1.3, 0.4, 2.2, 0.9])
    picked, weights = [0, 1, 3], np.array([1.0, 2.0, 3.0])  # [0.0, x0, x1, x3] weighted 0, 1, 2, 3
    grad, hess = np.zeros(5), np.zeros((5, 5))
    grad[picked] = weights * 0.5 / np.sqrt(x[picked])
    hess[picked, picked] = -weights * 0.25 * x[picked] ** -1.5
    with np.errstate(divide="ignore", invalid="ignore"):  # sqrt's derivative at the constant 0.0 (unused)
        np.testing.assert_allclose(di.gradient(cola_piece, TAPE, x), grad, rtol=1e-14)
        np.testing.assert_allclose(di.hessian(cola_piece, TAPE, x), hess, rtol=1e-14)
        np.testing.assert_allclose(di.prepare_gradient(cola_piece, TAPE, x + 1).gradient(x), grad, rtol=1e-14)
    mixed = lambda x: np.sum(np.exp(np.array([[1.0, x[0]], [x[1] * x[2], 2.0]])))
    np.testing.assert_allclose(
        di.gradient(mixed, TAPE, x[:3]), [1.0, x[2], x[1]] * np.exp([x[0], x[1] * x[2], x[1] * x[2]])
    )


def test_numpys_builders_are_numpys_own_outside_a_recording():
    originals = (np.array, np.asarray, np.asanyarray)
    assert all(type(f).__name__ == "builtin_function_or_method" for f in originals)
    seen = []
    di.gradient(lambda x: seen.append(np.asarray) or np.sum(np.asarray([x[0], 1.0]) * x[:2]), TAPE, np.ones(3))
    assert seen[0] is not np.asarray  # while f is recorded: the forwarder
    assert (np.array, np.asarray, np.asanyarray) == originals

    def fails(x):
        raise RuntimeError("f's own error")

    with pytest.raises(RuntimeError, match="f's own error"):
        di.gradient(fails, TAPE, np.ones(3))
    assert (np.array, np.asarray, np.asanyarray) == originals
    assert np.asarray([1, 2]).dtype.kind == "i" and np.array([[1.0]], ndmin=3).shape == (1, 1, 1)


# -- sparsity detection through the tape ---------------------------------------------------------------------
BUILDERS = {
    "stack": "lambda x: anp.sum(anp.stack([x, anp.sin(x)], axis=0), axis=0) * x",
    "stack, last axis": "lambda x: anp.stack([x[1:], x[:-1] ** 2], axis=-1)",
    "concatenate": "lambda x: anp.concatenate([anp.sin(x), x[::-1] * x], axis=0)",
    "array of a list": "lambda x: anp.array([x[0, 0] ** 2, 1.0, x[1, 0] * x[2, 0]])",
    "array of arrays": "lambda x: anp.mean(anp.array([x, anp.exp(x), 2.0 * x]), axis=0)",
    "array of x": "lambda x: anp.array(x) * anp.tanh(x)",
}


@pytest.mark.parametrize("dense", [di.AutoAutograd(), di.AutoFiniteDiff()], ids=["autograd", "finitediff"])
def test_autograd_numpy_builders_are_sparsity_traced_from_a_string_as_from_a_file(dense, tmp_path):
    """Issue 22's case: x of shape (3, 1), f compiled from a string; detection accepts what autograd does."""
    backend = di.AutoSparse(dense)
    source = "import autograd.numpy as anp\n" + "".join(f"f_{k} = {text}\n" for k, text in enumerate(BUILDERS.values()))
    ways = {"file": vars(_import_file(tmp_path / "builders_in_a_file.py", source)), "exec": _exec(source)}
    x = np.array([[0.3], [-0.8], [1.1]])
    for k, name in enumerate(BUILDERS):
        for way, namespace in ways.items():
            f = namespace[f"f_{k}"]
            want = np.asarray(autograd.jacobian(f)(x)).reshape(-1, x.size)
            jac = di.jacobian(f, backend, x).toarray()
            tol = 1e-13 if isinstance(dense, di.AutoAutograd) else 1e-6
            np.testing.assert_allclose(jac, want, rtol=tol, atol=tol, err_msg=f"{name} ({way})")
