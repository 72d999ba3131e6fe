"""AutoTape on NumPy's edges: every index NumPy takes (boolean scalars x[True], x[0, np.False_], 0-d
boolean arrays, negative steps, empty slices, lists, masks) read and written; ufuncs with where= and out=
(the derivative 0, never NaN, where the mask is False); the counting and integer-valued functions
(histogram, bincount, unique, digitize, nonzero, ...) recorded with their differentiable parts and guards;
np.where / np.select with Python-number conditions. Values against NumPy or analytic derivatives, in
forward and reverse mode, prepared at one point and called at another, each call twice."""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import diface as di

MODES = ("forward", "reverse")
X0 = np.array([[1.0, -2.0, 3.0], [0.5, 4.0, -1.0]])
X1 = X0 * 1.3 + 0.1


def twice(call: Callable, *args: Any) -> Any:
    """call(*args), made twice: the same answer both times."""
    first, second = call(*args), call(*args)
    for a, b in zip(first, second) if isinstance(first, tuple) else ((first, second),):
        np.testing.assert_array_equal(a, b)
    return first


def linear_jacobian(f: Callable, x: np.ndarray) -> np.ndarray:
    """The Jacobian of a linear f (indexing, assignment), column by column from the basis vectors."""
    cols = [np.asarray(f(np.eye(x.size)[i].reshape(x.shape))) for i in range(x.size)]
    return np.stack(cols, axis=-1).reshape(cols[0].shape + x.shape)


def check_sin_of_linear(g: Callable) -> None:
    """sin(g(x)) for a linear g: its Jacobian and the Hessian of its sum, analytic, in both modes,
    prepared at X1 and called at X0 (and the other way)."""
    lin = linear_jacobian(g, X0)
    for x, other in ((X0, X1), (X1, X0)):
        y = g(x)
        want = np.cos(y)[(...,) + (None,) * x.ndim] * lin
        flat = lin.reshape(y.size, x.size)
        hess = np.einsum("k,ki,kj->ij", -np.sin(y).ravel(), flat, flat).reshape(x.shape * 2)
        f = lambda x: np.sin(g(x))
        for mode in MODES:
            tape = di.AutoTape(mode=mode)
            np.testing.assert_allclose(twice(di.jacobian, f, tape, x), want, rtol=1e-14, atol=1e-15)
            prep = di.prepare_jacobian(f, tape, other)
            np.testing.assert_allclose(twice(prep.jacobian, x), want, rtol=1e-14, atol=1e-15)
        s = lambda x: np.sum(np.sin(g(x)))
        prep_h = di.prepare_hessian(s, di.AutoTape(), other)
        np.testing.assert_allclose(twice(prep_h.hessian, x), hess, atol=1e-14)


# -- indexing -------------------------------------------------------------------------------------------------
KEYS = {
    "True": True,
    "False": False,
    "np.True_": np.True_,
    "0-d True array": np.array(True),
    "0-d False array": np.array(False),
    "0, True": (0, True),
    "..., None, True": (..., None, True),
    "True, True": (True, True),
    "False, 1": (False, 1),
    "True, 0, list": (True, 0, [0, 2]),
    "list, :, True (advanced block first)": ([1, 0], slice(None), True),
    "negative steps": (slice(None, None, -1), slice(None, None, -2)),
    "empty slice": (slice(None), slice(2, 0)),
    "repeated list": [0, 1, 1],
    "list of bools": [True, False],
    ":, list of bools": (slice(None), [True, False, True]),
    "two lists": ([1, 0], [2, 0]),
    "lists around None": ([0, 1], None, [1, 2]),
    "broadcast lists": ([[0], [1]], [[2, 1]]),
    "NumPy ints": (np.int64(1), np.int32(-1)),
    "1, ..., None": (1, ..., None),
    "empty list": [],
    "()": (),
}


@pytest.mark.parametrize("name", list(KEYS))
def test_every_index_numpy_takes(name):
    key = KEYS[name]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        value = di.value_and_jacobian(lambda x: x[key], di.AutoTape(), X0)[0]
    np.testing.assert_array_equal(value, X0[key])
    assert value.shape == X0[key].shape
    check_sin_of_linear(lambda x: x[key])


def _written(key: Any, value: Callable) -> Callable:
    def g(x):
        z = x * 2.0
        z[key] = value(x)
        return z

    return g


def _through_a_view(x):
    z = x * 2.0
    row = z[1]
    row[True] = 3 * x[0]
    row[0, ...] = row[0] * 2
    return z


WRITES = {
    "True": _written(True, lambda x: 3 * x[0]),
    "np.True_": _written(np.True_, lambda x: 3 * x),
    "False (no element)": _written(False, lambda x: 3 * x[0]),
    "0, True": _written((0, True), lambda x: 3 * x[1]),
    "0-d True array": _written(np.array(True), lambda x: x[::-1]),
    "..., None, True": _written((..., None, True), lambda x: x[..., None, None] * 5),
    "list, :, True": _written(([1, 0], slice(None), True), lambda x: x[::-1] * 5),
    "negative steps": _written((slice(None, None, -1), slice(None, None, -2)), lambda x: x[:, :2] * 5),
    "list of bools": _written([True, False], lambda x: x[1] * 5),
    "two lists": _written(([1, 0], [2, 0]), lambda x: x[0, :2] * 5),
    "through a view": _through_a_view,
    "traced 0-d mask": lambda x: _written(np.all(x[0] > -5), lambda x: x[1] * 3)(x),
}


@pytest.mark.parametrize("name", list(WRITES))
def test_writes_through_every_index(name):
    check_sin_of_linear(WRITES[name])


def test_a_traced_boolean_scalar_index_guards_its_count():
    f = lambda x: x[np.all(x > 0)] * 2.0
    prep = di.prepare_jacobian(f, di.AutoTape(), np.array([1.0, 2.0]))
    np.testing.assert_array_equal(twice(prep.jacobian, np.array([3.0, 4.0])), 2 * np.eye(2)[None])
    with pytest.raises(di.TapeMismatchError, match="number of elements a traced mask selects"):
        prep.jacobian(np.array([-1.0, 2.0]))
    assert di.jacobian(f, di.AutoTape(), np.array([-1.0, 2.0])).shape == (0, 2, 2)  # x[False]: no row


# -- ufuncs with where= -----------------------------------------------------------------------------------------
B0 = np.array([2.0, 0.0, -1.0, 0.0, 0.5])
B1 = np.array([0.5, 0.0, 3.0, 0.0, -2.0])


def _safe_reciprocal(b):
    return np.divide(1.0, b, out=np.zeros_like(b), where=np.abs(b) > 0.1)  # 0 around b = 0


def _log_or_keep(b):
    out = b * 1.0
    np.log(b, out=out, where=b > 0)
    return out


WHERE_UFUNCS = {
    # f, its Jacobian's diagonal, the diagonal of the Hessian of its sum
    "1 / b where |b| > 0.1": (
        _safe_reciprocal,
        lambda b: np.where(b != 0, -1 / np.where(b != 0, b, 1) ** 2, 0),
        lambda b: np.where(b != 0, 2 / np.where(b != 0, b, 1) ** 3, 0),
    ),
    "log(b) where b > 0, else b": (
        _log_or_keep,
        lambda b: np.where(b > 0, 1 / np.abs(b), 1.0),
        lambda b: np.where(b > 0, -1 / b**2, 0),
    ),
    "sqrt(b) into float32 where listed": (
        lambda b: np.sqrt(np.abs(b), out=np.zeros_like(b, dtype=np.float32), where=[1, 0, 1, 0, 1]).astype(float),
        lambda b: np.where([1, 0, 1, 0, 1], np.sign(b) * 0.5 / np.sqrt(np.abs(b) + (b == 0)), 0),
        None,
    ),
    "arccosh(b) where b > 1 (a tuple out=)": (
        lambda b: np.arccosh(b + 1.5, out=(np.zeros_like(b),), where=b + 1.5 > 1),
        lambda b: np.where(b + 1.5 > 1, 1 / np.sqrt(np.maximum((b + 1.5) ** 2 - 1, 1e-300)), 0),
        None,
    ),
}


@pytest.mark.parametrize("name", list(WHERE_UFUNCS))
def test_ufuncs_with_where_and_out(name):
    f, d1, d2 = WHERE_UFUNCS[name]
    for b, other in ((B0, B1), (B1, B0)):
        with np.errstate(all="ignore"):
            want = np.diag(d1(b))
        for mode in MODES:
            tape = di.AutoTape(mode=mode)
            value, jac = twice(di.value_and_jacobian, f, tape, b)
            np.testing.assert_allclose(value, f(b), rtol=1e-6)  # float32 in one case
            np.testing.assert_allclose(jac, want, rtol=1e-6)
            prep = di.prepare_jacobian(f, tape, other)
            np.testing.assert_allclose(twice(prep.jacobian, b), want, rtol=1e-6)
        if d2 is not None:
            s = lambda b: np.sum(f(b))
            prep_h = di.prepare_hessian(s, di.AutoTape(), other)
            with np.errstate(all="ignore"):
                hess = np.diag(d2(b))
            np.testing.assert_allclose(twice(prep_h.hessian, b), hess, rtol=1e-12)
            np.testing.assert_allclose(twice(di.hessian, s, di.AutoTape(mode="forward"), b), hess, rtol=1e-12)


def test_where_by_an_equality_that_holds_is_refused():
    """1 / b where b != 0, else 0: at b = 0 the function jumps (no derivative); the tape refuses there
    rather than give the masked branch's 0, and a preparation made elsewhere guards it."""
    f = lambda b: np.divide(1.0, b, out=np.zeros_like(b), where=b != 0)
    with pytest.raises(
        di.NotSupportedError, match=r"test_tape_numpy_edges\.py:\d+ chooses its branch by an exact equality"
    ):
        di.jacobian(f, di.AutoTape(), B0)
    prep = di.prepare_jacobian(f, di.AutoTape(), np.array([2.0, 0.5, -1.0, 3.0, 0.5]))
    np.testing.assert_allclose(twice(prep.jacobian, -B1 - 1.0), np.diag(-1 / (B1 + 1.0) ** 2))
    with pytest.raises(di.TapeMismatchError, match="equality"):
        prep.jacobian(B0)


def test_where_without_out():
    with pytest.raises(di.NotSupportedError, match=r"numpy\.divide with where= and no out=.*test_tape_numpy_edges\.py"):
        di.jacobian(lambda b: np.divide(1.0, b, where=b != 0), di.AutoTape(), B0)
    # a comparison (no derivative): False where NumPy leaves the result uninitialised
    f = lambda b: np.where(np.greater_equal(b, 0.4, where=b != 0), b**2, -b)
    want = np.diag(np.where((B0 >= 0.4) & (B0 != 0), 2 * B0, -1.0))
    np.testing.assert_array_equal(twice(di.jacobian, f, di.AutoTape(), B0), want)
    # into out=: kept where the mask is False
    g = lambda b: np.where(np.greater(b, 1.0, out=b < 0, where=b != 0), b, 3 * b)
    want = np.diag(np.where(np.where(B0 != 0, B0 > 1.0, B0 < 0), 1.0, 3.0))
    prep = di.prepare_jacobian(g, di.AutoTape(), B1)
    np.testing.assert_array_equal(twice(prep.jacobian, B0), want)
    with pytest.raises(TypeError, match="to dtype\\('bool'\\)"):
        di.jacobian(lambda b: np.exp(b, out=np.zeros_like(b), where=b * 1.0), di.AutoTape(), B0)


# -- integer-valued functions ---------------------------------------------------------------------------------------
V0 = np.array([0.3, -1.2, 2.5, 0.7, -0.1, 1.9])
V1 = np.array([0.4, -1.0, 2.2, 0.9, -0.3, 1.7])  # the same order, bins and signs
REPEATS = np.array([0, 1, 0, 3, 3, 2])


def _edges_jacobian(v: np.ndarray, n: int) -> np.ndarray:
    """d linspace(min v, max v, n + 1) / dv."""
    k = np.arange(n + 1) / n
    jac = np.zeros((n + 1, v.size))
    jac[:, np.argmin(v)] += 1 - k
    jac[:, np.argmax(v)] += k
    return jac


def _bins(v: np.ndarray, n: int) -> np.ndarray:
    return np.clip(np.searchsorted(np.histogram_bin_edges(v, n), v, side="right") - 1, 0, n - 1)


INTEGER_VALUED = {
    # f, its Jacobian at v (analytic)
    "digitize": (lambda v: np.digitize(v, [0.0, 1.0]) * v, lambda v: np.diag(np.digitize(v, [0.0, 1.0]) * 1.0)),
    "digitize, traced bins": (
        lambda v: np.digitize(v[:3], np.sort(v[3:]), right=True) * v[:3],
        lambda v: np.eye(3, 6) * np.digitize(v[:3], np.sort(v[3:]), right=True)[:, None],
    ),
    "histogram counts": (lambda v: np.histogram(v, bins=3)[0] * 1.0, lambda v: np.zeros((3, 6))),
    "histogram edges": (lambda v: np.histogram(v, bins=3)[1], lambda v: _edges_jacobian(v, 3)),
    "histogram_bin_edges": (lambda v: np.histogram_bin_edges(v, 4), lambda v: _edges_jacobian(v, 4)),
    "histogram weights": (
        lambda v: np.histogram(v, bins=3, weights=v**2)[0],
        lambda v: (np.arange(3)[:, None] == _bins(v, 3)) * 2 * v,
    ),
    "histogram weights, range": (
        lambda v: np.histogram(np.arange(6.0), bins=2, range=(0, 4), weights=v)[0],
        lambda v: np.array([[1.0, 1, 0, 0, 0, 0], [0, 0, 1, 1, 1, 0]]),
    ),
    "histogram density": (
        lambda v: np.histogram(v, bins=3, density=True)[0],
        lambda v: np.outer(
            np.histogram(v, bins=3)[0] / v.size / (np.ptp(v) / 3) ** 2 / 3,
            np.eye(6)[np.argmin(v)] - np.eye(6)[np.argmax(v)],
        ),
    ),
    "bincount, weights": (
        lambda v: np.bincount(REPEATS, weights=v),
        lambda v: (np.arange(4)[:, None] == REPEATS).astype(float),
    ),
    "bincount of a traced array": (
        lambda v: np.bincount((v > 0).astype(int), minlength=3) * 1.0,
        lambda v: np.zeros((3, 6)),
    ),
    "unique values": (
        lambda v: np.unique(v[REPEATS]),
        lambda v: np.eye(6)[REPEATS[np.unique(v[REPEATS], return_index=True)[1]]],
    ),
    "unique counts": (lambda v: np.unique(v[REPEATS], return_counts=True)[1] * 1.0, lambda v: np.zeros((4, 6))),
    "unique rows": (
        lambda v: np.unique(v.reshape(3, 2)[[0, 1, 0]], axis=0).ravel(),
        lambda v: np.eye(6)[np.argsort(v.reshape(3, 2)[:2, 0]).repeat(2) * 2 + np.tile([0, 1], 2)],
    ),
    "nonzero": (lambda v: v[np.nonzero(v > 0)] ** 2, lambda v: (2 * v * np.eye(6))[v > 0]),
    "flatnonzero": (lambda v: v[np.flatnonzero(v > 0)] ** 2, lambda v: (2 * v * np.eye(6))[v > 0]),
    "argwhere": (lambda v: v[np.argwhere(v > 0)[:, 0]] ** 2, lambda v: (2 * v * np.eye(6))[v > 0]),
    "where with one argument": (lambda v: v[np.where(v > 0)] ** 2, lambda v: (2 * v * np.eye(6))[v > 0]),
    "sign, floor, trunc, fix, rint": (
        lambda v: np.sign(v) * v + np.floor(v) + np.trunc(v) + np.fix(v) * v + np.rint(v),
        lambda v: np.diag(np.sign(v) + np.fix(v)),
    ),
    "isnan, isfinite, signbit, isposinf": (
        lambda v: (1.0 * np.isnan(v) + np.isfinite(v) + np.signbit(v) + np.isposinf(v)) * v,
        lambda v: np.diag(1.0 + np.signbit(v)),
    ),
    "lexsort, nanargmax": (
        lambda v: v[np.lexsort((v,))] + v[np.nanargmax(v)],
        lambda v: np.eye(6)[np.argsort(v)] + np.eye(6)[np.argmax(v)],
    ),
}
if hasattr(np, "unique_all"):  # NumPy >= 2
    INTEGER_VALUED["unique_all values"] = (
        lambda v: np.unique_all(v[REPEATS]).values,
        lambda v: np.eye(6)[REPEATS[np.unique(v[REPEATS], return_index=True)[1]]],
    )


@pytest.mark.parametrize("name", list(INTEGER_VALUED))
def test_integer_valued_functions_are_recorded(name):
    f, jacobian = INTEGER_VALUED[name]
    for v, other in ((V0, V1), (V1, V0)):
        want = jacobian(v)
        for mode in MODES:
            tape = di.AutoTape(mode=mode)
            value, jac = twice(di.value_and_jacobian, f, tape, v)
            np.testing.assert_allclose(value, f(v), rtol=1e-15)
            assert np.shape(value) == np.shape(f(v))
            np.testing.assert_allclose(jac, want, rtol=1e-13, atol=1e-15)
            prep = di.prepare_jacobian(f, tape, other)
            np.testing.assert_allclose(twice(prep.jacobian, v), want, rtol=1e-13, atol=1e-15)


def test_second_derivatives_through_histogram_unique_and_bincount():
    edges = di.value_and_jacobian(lambda v: np.histogram(v, bins=3)[1], di.AutoTape(), V0)[0]
    np.testing.assert_array_equal(edges, np.histogram(V0, bins=3)[1])  # NumPy's edges, bit for bit
    f = lambda v: np.sum(np.histogram(v, bins=3, weights=v**2)[0] ** 2)  # sum_k (sum_{i in k} v_i^2)^2
    members = (np.arange(3)[:, None] == _bins(V0, 3)).astype(float)
    s = members @ V0**2
    want = 8 * np.outer(V0, V0) * (members.T @ members) + np.diag(4 * (members.T @ s))
    prep = di.prepare_hessian(f, di.AutoTape(), V1)
    np.testing.assert_allclose(twice(prep.hessian, V0), want, rtol=1e-13)
    g = lambda v: np.sum(np.unique(v[REPEATS]) ** 3 * np.arange(4)) + np.sum(np.bincount(REPEATS, weights=v) ** 2)
    first = REPEATS[np.unique(V0[REPEATS], return_index=True)[1]]  # the element behind each unique value
    want = np.zeros((6, 6))
    want[first, first] = 6 * V0[first] * np.arange(4)
    groups = (REPEATS[:, None] == REPEATS).astype(float)
    prep = di.prepare_hessian(g, di.AutoTape(), V1)
    np.testing.assert_allclose(twice(prep.hessian, V0), want + 2 * groups, rtol=1e-13)
    with pytest.raises(di.NotSupportedError, match="bins='auto'"):
        di.jacobian(lambda v: np.histogram(v, bins="auto")[1], di.AutoTape(), V0)


SHAPES_GUARDED = {
    "unique": (lambda v: np.unique(v[REPEATS]), np.ones(6), "number of unique values"),
    "bincount": (lambda v: np.bincount((v > 0).astype(int) * 2) * 1.0, -np.abs(V0), "length of numpy.bincount"),
    "nonzero": (lambda v: v[np.nonzero(v > 0)], -V0, "traced mask"),
}


@pytest.mark.parametrize("name", list(SHAPES_GUARDED))
def test_a_result_whose_shape_depends_on_the_values_is_guarded(name):
    f, elsewhere, what = SHAPES_GUARDED[name]
    prep = di.prepare_jacobian(f, di.AutoTape(), V1)
    for v in (V0, V0[::-1]):  # the same shapes, other positions: recomputed
        np.testing.assert_array_equal(twice(prep.jacobian, v), di.jacobian(f, di.AutoTape(), v))
    with pytest.raises(di.TapeMismatchError, match=what):
        prep.jacobian(elsewhere)


# -- conditions that are Python numbers --------------------------------------------------------------------------
CONDITIONS = {
    "where(False, v, inf)": (
        lambda v: np.where(False, v, np.inf) + np.where(True, v**2, 0.0),
        lambda v: np.diag(2 * v),
    ),
    "where(0.0, v, w), where(1, v, w)": (
        lambda v: np.where(0.0, v, 3 * v) + np.where(1, v, 2.0),
        lambda v: 4 * np.eye(6),
    ),
    "where(np.True_, 0-d, v)": (lambda v: np.where(np.True_, v[0], v), lambda v: np.eye(6)[[0] * 6]),
    "where(traced 0-d, number, number)": (lambda v: np.where(v[0] > 0, 1.0, 2) * v, lambda v: np.eye(6)),
    "select with a Python bool": (
        lambda v: np.select([False, v > 0], [v, v**2], default=-v),
        lambda v: np.diag(np.where(v > 0, 2 * v, -1)),
    ),
    "clip(number, v, number)": (lambda v: np.clip(1.0, v, 2), lambda v: np.diag((v > 1.0) & (v < 2.0)) * 1.0),
}


@pytest.mark.parametrize("name", list(CONDITIONS))
def test_python_number_conditions(name):
    f, jacobian = CONDITIONS[name]
    for mode in MODES:
        prep = di.prepare_jacobian(f, di.AutoTape(mode=mode), V1)
        np.testing.assert_array_equal(twice(prep.jacobian, V0), jacobian(V0))
        np.testing.assert_array_equal(di.value_and_jacobian(f, di.AutoTape(mode=mode), V0)[0], f(V0))


def test_select_refuses_conditions_that_are_not_boolean_as_numpy_does():
    with pytest.raises(TypeError, match="invalid entry 0 in condlist"):
        di.jacobian(lambda v: np.select([1], [v]), di.AutoTape(), V0)


# -- Taylor mode and sparsity detection on the new recordings ------------------------------------------------------
def test_taylor_coefficients_through_where_and_boolean_indices():
    f = lambda b: _safe_reciprocal(b)[True][0] + np.sum(b[None, False])
    v = np.array([1.0, 2.0, -1.0, 0.5, 0.25])
    prep = di.prepare_taylor(f, di.AutoTape(), B1, v, order=3)
    safe = np.where(B0 != 0, B0, 1.0)
    for k, d in enumerate(twice(prep.taylor_coefficients, B0, v), start=1):
        want = np.where(B0 != 0, (-1) ** k * math.factorial(k) * v**k / safe ** (k + 1), 0.0)
        np.testing.assert_allclose(d, want, rtol=1e-13)


def test_sparsity_patterns_of_the_new_recordings():
    from diface.backends.tape.analysis.sparsity import recording_sparsity
    from diface.backends.tape.recording.record import record

    functions = {
        "where=": (_safe_reciprocal, np.eye(5, dtype=bool)),
        "x[0, True] * x[1]": (
            lambda b: b.reshape(5, 1)[0, True] * b[1],
            np.eye(1, 5, dtype=bool) | np.eye(1, 5, 1, dtype=bool),
        ),
        "histogram weights": (
            lambda w: np.histogram(np.arange(5.0), bins=2, weights=w)[0],
            np.array([[1, 1, 0, 0, 0], [0, 0, 1, 1, 1]], dtype=bool),
        ),
    }
    for name, (f, want) in functions.items():
        pattern = recording_sparsity(record(f, B0, (), (), None), False).jacobian_pattern().toarray() != 0
        assert (pattern == want).all(), name


def test_an_equality_guard_keeps_a_global_sparsity_pattern():
    """The guard that no point hits an equality (np.where(x == 0, ...)) decides no shape: the tracer's
    global pattern is where's union of both branches, and the sparse Jacobian is the dense one."""
    f = lambda x: np.where(x == 0, 1.0, np.sin(x) / np.where(x == 0, 1.0, x)) * x[::-1]
    x = np.array([0.5, -1.0, 2.0, 0.3])
    sparse = di.AutoSparse(di.AutoTape(), sparsity_detector=di.TracerSparsityDetector())
    prep = di.prepare_jacobian(f, sparse, x)
    assert prep.sparsity_pattern.nnz == 8  # the diagonal and the anti-diagonal
    for _ in range(2):
        np.testing.assert_allclose(prep.jacobian(x + 0.1).toarray(), di.jacobian(f, di.AutoTape(), x + 0.1))
