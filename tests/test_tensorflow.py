"""AutoTensorFlow: every operator and variant in each mode and SecondOrder combination, then what is
specific to TensorFlow: native tensors in and out, dtypes, tracing at preparation (no retracing),
contexts as traced or static inputs, immutability, sparsity from the traced graph, threads,
availability."""

from __future__ import annotations

import numpy as np
import pytest

from conftest import assert_operator, operator_cases

tf = pytest.importorskip("tensorflow")

import diface as di  # noqa: E402
from diface.testing import default_scenarios, edge_scenarios, layout_scenarios  # noqa: E402
from diface.testing._check import check_operator  # noqa: E402
from diface.testing._kit import applicable  # noqa: E402
from diface.testing._threads import check_threads  # noqa: E402

AUTO, FORWARD, REVERSE = di.AutoTensorFlow(), di.AutoTensorFlow("forward"), di.AutoTensorFlow("reverse")
SCENARIOS = {s.name: s for s in default_scenarios()}
# every scenario for the default and the eager backend; the forced modes on the scenarios whose sweeps
# differ (tracing costs a tenth of a second per operator, so the matrix is kept to what differs)
FEW = [SCENARIOS[n] for n in ("scalar to vector", "vector to vector", "vector to scalar, Constant contexts")]


@pytest.mark.parametrize(
    ("backend", "scenario", "op"),
    operator_cases([AUTO, di.AutoTensorFlow(jit=False)], False) + operator_cases([FORWARD, REVERSE], False, FEW),
)
def test_first_order(backend, scenario, op):
    assert_operator(backend, scenario, op)


# a plain AutoTensorFlow() is forward over reverse for hvp and the tape's jacobian of the gradient for
# Hessians; SecondOrder nests the other modes in one graph
SECOND = [SCENARIOS[n] for n in ("vector to scalar", "scalar to scalar")]


@pytest.mark.parametrize(
    ("backend", "scenario", "op"),
    operator_cases([AUTO], True)
    + operator_cases(
        [
            di.SecondOrder(REVERSE, FORWARD),
            di.SecondOrder(REVERSE, REVERSE),
            di.SecondOrder(FORWARD, FORWARD),
            di.SecondOrder(di.AutoFiniteDiff(), REVERSE),
            di.AutoTensorFlow(jit=False),
        ],
        True,
        SECOND,
    ),
)
def test_second_order(backend, scenario, op):
    assert_operator(backend, scenario, op)


# -- NumPy layouts and edge shapes of the kit, 8 threads on one preparation ---------------------------------
def test_numpy_layouts_and_edge_shapes_of_the_test_kit():
    scenarios = layout_scenarios([SCENARIOS["matrix to scalar"]]) + edge_scenarios()
    failures = []
    for scenario in scenarios:
        if applicable(AUTO, scenario):
            continue  # in-place functions and Cache writes: tensors are immutable
        for op in scenario.operators():
            if op in ("jacobian", "gradient", "derivative", "pushforward", "pullback"):
                failures += check_operator(AUTO, scenario, op)
    assert not failures, "\n".join(map(str, failures))


@pytest.mark.parametrize("op", ["gradient", "hvp", "pullback"])
def test_eight_threads_share_one_preparation(op):
    failures = check_threads(AUTO, SCENARIOS["vector to scalar"], op, threads=8, calls=20)
    assert not failures, "\n".join(map(str, failures))


# -- engine-specific: native in, native out; dtypes; tracing; contexts; errors --------------------------------
X = np.array([0.3, -1.2, 0.8, 2.0])
X2 = np.array([1.1, 0.4, -0.7, -1.5])
V = np.array([1.0, -2.0, 0.5, 3.0])


def f(x):
    return tf.reduce_sum(tf.sin(x) * x**2)


def f_gradient(x):
    return 2 * x * np.sin(x) + x**2 * np.cos(x)


def f_hessian(x):
    return np.diag(2 * np.sin(x) + 4 * x * np.cos(x) - x**2 * np.sin(x))


def g(x):
    return tf.sin(x) * x[::-1]


def g_jacobian(x):
    return np.diag(np.cos(x) * x[::-1]) + np.diag(np.sin(x))[:, ::-1]


PREP_GRADIENT = di.prepare_gradient(f, AUTO, X)
PREP_HESSIAN = di.prepare_hessian(f, AUTO, X)


def test_tensors_in_tensors_out_numpy_in_numpy_out():
    got = di.prepare_gradient(f, AUTO, tf.constant(X)).gradient(tf.constant(X2))
    assert isinstance(got, tf.Tensor) and got.dtype == tf.float64
    np.testing.assert_allclose(got.numpy(), f_gradient(X2), rtol=1e-12)
    got = PREP_GRADIENT.gradient(X2)
    assert isinstance(got, np.ndarray) and got.flags.writeable
    np.testing.assert_allclose(got, f_gradient(X2), rtol=1e-12)
    for _ in range(2):  # prepared at one point, used at another, twice
        np.testing.assert_allclose(PREP_HESSIAN.hessian(X2), f_hessian(X2), rtol=1e-12)
    for backend in (FORWARD, REVERSE):
        np.testing.assert_allclose(di.jacobian(g, backend, X2), g_jacobian(X2), rtol=1e-12)
    hvp = di.prepare_hvp(f, AUTO, X, (V,))
    np.testing.assert_allclose(hvp.hvp(X2, (V,))[0], f_hessian(X2) @ V, rtol=1e-12)


@pytest.mark.parametrize("native", [False, True])
def test_float32_stays_float32(native):
    x = X.astype(np.float32)
    x = tf.constant(x) if native else x
    for op in (di.gradient, di.hessian):
        r = op(f, AUTO, x)
        assert r.dtype == (tf.float32 if native else np.float32)


def test_prepared_calls_never_trace_again():
    prep = di.prepare_gradient(f, AUTO, X)
    traced = []
    original = tf.function

    def counting(*args, **kwargs):
        traced.append(1)
        return original(*args, **kwargs)

    tf.function = counting
    try:
        for x in (X2, X, X[::-1].copy(), X2):
            prep.gradient(x)
    finally:
        tf.function = original
    assert not traced


def test_new_constant_values_do_not_retrace():
    h = lambda x, a, w: a * tf.reduce_sum(w * tf.sin(x))
    w0, w1 = np.array([1.0, 2.0, 3.0, 4.0]), np.array([-1.0, 0.5, 0.0, 2.0])
    prep = di.prepare_gradient(h, AUTO, X, di.Constant(2.0), di.Constant(w0))
    for a, w in ((2.0, w0), (3.0, w1), (0.5, w1[::-1].copy())):
        got = prep.gradient(X2, di.Constant(a), di.Constant(w))
        np.testing.assert_allclose(np.asarray(got), a * np.asarray(w) * np.cos(X2), rtol=1e-12)


def test_static_contexts_pick_their_traced_variant():
    h = lambda x, k: tf.reduce_sum(x[:k] ** 2)
    prep = di.prepare_gradient(h, AUTO, X, di.Constant(2))
    np.testing.assert_allclose(prep.gradient(X2, di.Constant(2)), [2 * X2[0], 2 * X2[1], 0, 0])
    np.testing.assert_allclose(prep.gradient(X2, di.Constant(3)), [*(2 * X2[:3]), 0])


def test_inplace_is_refused_and_inputs_are_never_mutated():
    assert di.check_inplace(AUTO) is False

    def square(y, x):
        y[...] = x**2

    with pytest.raises(di.DifaceError, match=r"in-place|in place"):
        di.jacobian(square, AUTO, X, y=np.zeros(4))
    x = X.copy()
    x.flags.writeable = False
    di.gradient(f, AUTO, x)
    np.testing.assert_array_equal(x, X)


def test_wrong_arrays_and_settings_raise_clear_errors():
    with pytest.raises(di.ArgumentError, match="AutoTensorFlow takes"):
        di.gradient(f, AUTO, {1, 2})
    with pytest.raises(di.ArgumentError, match="mode"):
        di.AutoTensorFlow("sideways")
    with pytest.raises(di.ArgumentError, match="jit"):
        di.AutoTensorFlow(jit="yes")
    assert hash(AUTO) == hash(di.AutoTensorFlow()) and AUTO == di.AutoTensorFlow()


def test_missing_package_names_the_extra(monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "tensorflow" else real(name, *a))
    with pytest.raises(di.BackendUnavailableError, match=r"diface\[tensorflow\]"):
        di.gradient(f, di.AutoTensorFlow(), X)


# -- sparsity from the traced graph, inverse products --------------------------------------------------
def test_sparse_jacobian_and_hessian_from_the_traced_graph():
    sparse = di.AutoSparse(AUTO)
    k = lambda x: tf.sin(x[1:]) * x[:-1]
    J = di.jacobian(k, sparse, X)
    np.testing.assert_allclose(J.toarray(), di.jacobian(k, AUTO, X), rtol=1e-12)
    assert J.nnz == 3 * 2  # two diagonal bands
    q = lambda x: tf.reduce_sum(x[1:] ** 2 * x[:-1]) + tf.reduce_sum(tf.constant(np.ones((2, 4))) @ x)
    H = di.hessian(q, sparse, X)
    np.testing.assert_allclose(H.toarray(), di.hessian(q, AUTO, X), rtol=1e-12)
    assert H.nnz == 3 + 3 * 2  # x[i+1]**2 x[i]: the diagonal but for (0, 0), and the two off-diagonals
    J = di.jacobian(k, sparse, tf.constant(X))
    assert isinstance(J, tf.sparse.SparseTensor)


def test_unknown_operations_name_the_dense_detector():
    k = lambda x: tf.math.cumsum(x)
    with pytest.raises(di.NotSupportedError, match="DenseSparsityDetector"):
        di.jacobian(k, di.AutoSparse(AUTO), X)


@pytest.mark.parametrize("method", ["dense", "krylov"])
def test_inverse_products(method):
    h = lambda x: x**3 / 3 + 2 * x + 0.1 * x * tf.reduce_sum(x)
    J = di.jacobian(h, AUTO, X)
    t = np.array([1.0, 0.5, -0.25, 2.0])
    np.testing.assert_allclose(di.inverse_pushforward(h, AUTO, X, t, method=method), np.linalg.solve(J, t), rtol=1e-8)
    np.testing.assert_allclose(di.inverse_pullback(h, AUTO, X, t, method=method), np.linalg.solve(J.T, t), rtol=1e-8)


def test_differentiate_with_forward_mode_in_a_graph_is_refused_not_zero():
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    inner = di.DifferentiateWith(lambda x: jax.numpy.sin(x) * x, di.AutoJAX())
    h = lambda x: tf.reduce_sum(inner(x))
    with pytest.raises(di.NotSupportedError, match="forward mode"):
        di.prepare_gradient(h, FORWARD, X)
    prep = di.prepare_hessian(h, di.SecondOrder(REVERSE, REVERSE), X)
    np.testing.assert_allclose(prep.hessian(X2), np.diag(2 * np.cos(X2) - X2 * np.sin(X2)), rtol=1e-10)


def test_quiet_import_after_torch_and_jax_in_one_process():
    import subprocess
    import sys

    code = (
        "import torch, jax, numpy as np, diface as di\n"
        "import diface.backends.tensorflow._namespace as tnp\n"
        "print(di.gradient(lambda x: tnp.sum(x**2), di.AutoTensorFlow(), np.array([1.0, 2.0])))\n"
    )
    env = {k: v for k, v in __import__("os").environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "[2. 4.]" in done.stdout
    assert "oneDNN" not in done.stderr and "absl" not in done.stderr
