"""AutoTape decides nothing by reading source text (issue 22): f defined in a file, compiled with `exec`,
or given to `python -c` is recorded, refused and differentiated alike, by first and second order, and so
is sparsity detection through the tape (`AutoSparse(AutoAutograd())`, `AutoSparse(AutoFiniteDiff())`).
Messages may quote f's line where its source can be read; decisions come from the calls that reach the
tracer and the libraries whose code makes them. Also the tape failures of issue 16: second order on
guards, a prepared Hessian's mismatch naming f's branch, and a list mixing numbers and traced values
(SciPy's Cola benchmark)."""

from __future__ import annotations

import importlib.util
import json
import os
import pathlib
import re
import subprocess
import sys
import types
from typing import Any

import numpy as np
import pytest
import tape_source_cases as cases

import diface as di
import diface.backends.tape as tape_package
import diface.testing._scenarios as scenarios_module

pytest.importorskip("scipy")
autograd = pytest.importorskip("autograd")
import autograd.numpy as anp  # noqa: E402

TAPE = di.AutoTape()
HERE = os.path.basename(__file__)
TESTS = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(TESTS)


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


# -- the rule suite, three ways -------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def three_ways(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict]:
    source = cases.program()
    in_a_file = _import_file(tmp_path_factory.mktemp("cases") / "cases_in_a_file.py", source)
    command = (
        f"import json, sys\nsys.path.insert(0, {TESTS!r})\n{source}\nimport tape_source_cases as cases\n"
        "print(json.dumps(cases.outcomes(cases.functions(globals()))))\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([ROOT, os.environ.get("PYTHONPATH", "")])}
    run = subprocess.run([sys.executable, "-c", command], capture_output=True, text=True, env=env, cwd=ROOT)
    assert run.returncode == 0, run.stderr[-3000:]
    return {
        "file": cases.outcomes(cases.functions(vars(in_a_file))),
        "exec": cases.outcomes(cases.functions(_exec(source))),
        "python -c": json.loads(run.stdout.splitlines()[-1]),
    }


def test_guards_and_conversions_are_decided_alike_three_ways(three_ways):
    """Values, refusals (by type) and warnings of every operator on every case: f in a file, from exec,
    from python -c."""
    file = three_ways["file"]
    assert set(file) == set(cases.CASES)
    for way in ("exec", "python -c"):
        for name in cases.CASES:
            assert _same(three_ways[way][name], file[name]), f"{name}: {way} differs from a file"


def _same(a: dict, b: dict) -> bool:
    """The same refusals and warnings, and values equal to rounding (`mode="auto"` may time its way to
    the other mode, whose sums round in another order)."""
    if a.keys() != b.keys():
        return False
    for op in a:
        (oa, va), (ob, vb) = _split(a[op]), _split(b[op])
        if oa != ob or (va is None) != (vb is None):
            return False
        if va is not None and not np.allclose(va, vb, rtol=1e-13, atol=1e-15):
            return False
    return True


def _split(outcome: dict) -> tuple[dict, Any]:
    return {k: v for k, v in outcome.items() if k != "value"}, outcome.get("value")


def _value(three_ways: dict, name: str, op: str) -> np.ndarray:
    outcome = three_ways["file"][name][op]
    assert "value" in outcome, f"{name}, {op}: {outcome}"
    return np.array(outcome["value"])


def test_the_suite_gives_the_right_answers(three_ways):
    x, t = cases.X, np.array([1.0, -2.0, 0.5])
    # float()/int() of a comparison: an exact number, first and second order (issue 16)
    exact = {
        "float of a comparison": (3 * x**2, np.diag(6 * x)),  # 1.0 * sum(x**3)
        "int of a comparison": (4 * x, 4 * np.eye(3)),  # sum(x**2) * (1 + 1)
    }
    for name, (grad, hess) in exact.items():
        np.testing.assert_allclose(_value(three_ways, name, "gradient"), grad, rtol=1e-14)
        np.testing.assert_allclose(_value(three_ways, name, "hessian"), hess, rtol=1e-14)
        np.testing.assert_allclose(_value(three_ways, name, "hvp"), hess @ t, rtol=1e-14)
        assert three_ways["file"][name]["gradient"]["warned"] == []  # no derivative lost: no warning
        assert three_ways["file"][name]["prepared hessian"]["raised"] == "TapeMismatchError"  # x[0] < 0 at x2
    # a number that depends on x: float() is refused (it would drop the derivative), math.sin records it
    assert three_ways["file"]["float of x"]["gradient"]["raised"] == "NotSupportedError"
    assert three_ways["file"]["math.sin of x"]["gradient"]["warned"] == []
    sin_grad = np.full(3, np.sin(x[0])) + np.array([np.cos(x[0]) * np.sum(x), 0.0, 0.0])
    np.testing.assert_allclose(_value(three_ways, "math.sin of x", "gradient"), sin_grad, rtol=1e-14)
    # arrays built from lists of traced values keep the derivative
    np.testing.assert_allclose(
        _value(three_ways, "np.array of a list", "jacobian"), [[2 * x[0], 0, 0], [0, 1, 0], [0, 0, 0]]
    )
    np.testing.assert_allclose(_value(three_ways, "np.array of arrays", "sparse jacobian"), 3 * np.eye(3))
    np.testing.assert_allclose(
        _value(three_ways, "a ufunc on a list of arrays", "jacobian"), np.diag(np.cos(x) + 2 * np.cos(2 * x))
    )
    np.testing.assert_allclose(
        _value(three_ways, "anp.stack", "prepared jacobian"),
        np.diag(2 * cases.X2 + np.sin(cases.X2) + cases.X2 * np.cos(cases.X2)),
        rtol=1e-14,
    )
    np.testing.assert_allclose(_value(three_ways, "anp.array of x", "hessian"), 2 * np.eye(3))
    cola = "np.asarray of a list mixing numbers (Cola)"  # sum(sqrt([0.5, x0**2, x1**2, x2**2])) = 0.5**0.5 + sum|x|
    np.testing.assert_allclose(_value(three_ways, cola, "gradient"), np.sign(x), rtol=1e-14)
    np.testing.assert_allclose(_value(three_ways, cola, "hessian"), np.zeros((3, 3)), atol=1e-14)
    # conversions of x keep it traced, and a buffer f makes holds what f writes, whoever wrote f where
    for name, grad in (
        ("np.asarray of x", np.ones(3)),
        ("np.array of x", 2 * x),
        ("np.asarray of x, dtype=float", np.ones(3)),
        ("a store into a NumPy array", np.ones(3)),
    ):
        np.testing.assert_allclose(_value(three_ways, name, "gradient"), grad, rtol=1e-14)
    # what would lose the derivative is refused
    assert three_ways["file"]["a cast of an object array"]["gradient"]["raised"] == "NotSupportedError"
    assert three_ways["file"]["a cast of an object array"]["hessian"]["raised"] == "NotSupportedError"


# -- issue 22's and issue 16's cases ----------------------------------------------------------------------------
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


def test_np_array_of_traced_values_is_a_new_traced_array():
    """From a list (the forwarders) or with like= (NumPy's dispatch): dtype= and ndmin= applied, and
    writing into the result leaves x as it is."""

    def f(x):
        y = np.array(x, like=x)
        y[0] = 5.0
        return np.sum(x) + np.sum(y * np.array([x[0], x[1], 1.0], ndmin=2)) + np.sum(np.array([x[0]], like=x, ndmin=3))

    x = np.array([0.5, 1.5, 2.0])
    # sum(x) + 5 * x0 + x1 ** 2 + x2 + x0
    np.testing.assert_allclose(di.gradient(f, TAPE, x), [7.0, 1 + 2 * x[1], 2.0], rtol=1e-14)


# -- sparsity detection through the tape ---------------------------------------------------------------------
def _scenarios_from_a_string(monkeypatch: pytest.MonkeyPatch) -> list:
    """The kit's scenarios with every function compiled from the module's text (no file behind them)."""
    module = types.ModuleType("scenarios_from_a_string")
    module.__package__ = "diface.testing"
    monkeypatch.setitem(sys.modules, module.__name__, module)  # dataclasses look their module up
    source = pathlib.Path(scenarios_module.__file__).read_text()
    exec(compile(source, "<scenarios>", "exec"), vars(module))
    return module.default_scenarios()


def _sparse_jacobian(scenario: Any, backend: Any, xp: Any) -> tuple[np.ndarray, np.ndarray | None]:
    """The detected pattern, and the sparse Jacobian (None where the dense engine cannot run f: autograd
    writing into a Cache)."""
    f, x = scenario.bind(xp), scenario.fresh_x()
    y = {"y": np.zeros(scenario.y_shape)} if scenario.inplace else {}
    prep = di.prepare_jacobian(f, backend, x, *scenario.make_contexts(prep=True), **y)
    try:
        jac = di.jacobian(f, backend, x, *scenario.make_contexts(), prep=prep, **y).toarray()
    except di.NotSupportedError:
        jac = None
    return prep.sparsity_pattern.toarray(), jac


@pytest.mark.parametrize("dense", [di.AutoAutograd(), di.AutoFiniteDiff()], ids=["autograd", "finitediff"])
def test_the_kits_scenarios_are_sparsity_traced_from_a_string_as_from_a_file(dense, monkeypatch):
    backend, xp = di.AutoSparse(dense), (anp if isinstance(dense, di.AutoAutograd) else np)
    tol = 1e-12 if isinstance(dense, di.AutoAutograd) else 1e-6
    from_file = scenarios_module.default_scenarios()
    for a, b in zip(from_file, _scenarios_from_a_string(monkeypatch), strict=True):
        assert a.name == b.name and b.f.__code__.co_filename == "<scenarios>"
        if a.inplace and not dense.supports_inplace:
            continue
        (pattern, jac), (pattern_b, jac_b) = _sparse_jacobian(a, backend, xp), _sparse_jacobian(b, backend, xp)
        want = a.jacobian(a.x, *a.context_values()).reshape(pattern.shape)
        np.testing.assert_array_equal(pattern, pattern_b, err_msg=a.name)
        assert np.all(pattern[np.abs(want) > 0]), a.name
        assert (jac is None) == (jac_b is None) == (a.mutates and isinstance(dense, di.AutoAutograd)), a.name
        if jac is not None:
            np.testing.assert_allclose(jac, want, rtol=tol, atol=tol, err_msg=a.name)
            np.testing.assert_allclose(jac_b, want, rtol=tol, atol=tol, err_msg=a.name)


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


# -- nothing in the tape reads source text to decide ------------------------------------------------------------
def test_the_tape_parses_no_source():
    """Only `data.sites` reads source lines, for messages (`Site.source`, `describe`); no module parses code."""
    package = pathlib.Path(tape_package.__file__).parent
    for path in sorted(package.rglob("*.py")):
        text = path.read_text()
        assert not re.search(r"^\s*import ast|^\s*from ast |inspect\.getsource|inspect\.getsourcelines", text, re.M), (
            path.name
        )
        if path != package / "data" / "sites.py":
            assert "linecache" not in text and "getline" not in text, path.name
    sites = (package / "data" / "sites.py").read_text()
    assert sites.count("_source(") == 2  # its definition and Site's description of the call
