"""AutoFiniteDiff(vectorized=True) and AutoFiniteDiff(executor=...): the same results as the serial loop."""

from __future__ import annotations

import importlib.util
import multiprocessing
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor

import numpy as np
import pytest

import diface as di
from diface.backends.finitediff import EvaluationCount

METHODS = ["central", "forward", "backward", "complex"]
X = np.array([0.3, -1.2, 2.0, 0.7])


def f_scalar(x):
    return np.sum(np.exp(np.sin(x)) * x)


def f_vector(x):
    return np.tanh(np.cumsum(x)) * x[..., ::-1] ** 2


def f_scalar_batch(X):
    return np.sum(np.exp(np.sin(X)) * X, axis=-1)


def f_vector_batch(X):
    return np.tanh(np.cumsum(X, axis=-1)) * X[..., ::-1] ** 2


def f_fails_at_third(x):
    if x[2] > 2.0:
        raise ValueError("boom")
    return np.sum(x**2)


def serial(op, f, method, *args):
    return op(f, di.AutoFiniteDiff(method), *args)


@pytest.fixture(scope="module")
def threads():
    with ThreadPoolExecutor(8) as pool:
        yield pool


@pytest.fixture(scope="module")
def processes():
    # spawn, not fork: the test process may run JAX's threads
    with ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("spawn")) as pool:
        yield pool


@pytest.mark.parametrize("method", METHODS)
def test_vectorized_equals_serial(method):
    vec = di.AutoFiniteDiff(method, vectorized=True)
    t = np.array([1.0, 0.5, -2.0, 0.0])
    np.testing.assert_allclose(
        di.gradient(f_scalar_batch, vec, X), serial(di.gradient, f_scalar, method, X), rtol=1e-12, atol=1e-14
    )
    np.testing.assert_array_equal(di.jacobian(f_vector_batch, vec, X), serial(di.jacobian, f_vector, method, X))
    np.testing.assert_array_equal(
        di.pushforward(f_vector_batch, vec, X, t), serial(di.pushforward, f_vector, method, X, t)
    )
    np.testing.assert_allclose(
        di.hessian(f_scalar_batch, vec, X), serial(di.hessian, f_scalar, method, X), rtol=1e-9, atol=1e-9
    )
    value, jac = di.value_and_jacobian(f_vector_batch, vec, X)
    np.testing.assert_array_equal(jac, serial(di.jacobian, f_vector, method, X))
    np.testing.assert_array_equal(value, f_vector(X))
    prep = di.prepare_jacobian(f_vector_batch, vec, X)
    assert prep.evaluations.f_calls == (2 if method == "complex" else 1)


@pytest.mark.parametrize("method", METHODS)
def test_thread_pool_identical_to_serial(threads, method):
    b = di.AutoFiniteDiff(method, executor=threads)
    t = np.array([1.0, 0.5, -2.0, 0.0])
    np.testing.assert_array_equal(di.gradient(f_scalar, b, X), serial(di.gradient, f_scalar, method, X))
    np.testing.assert_array_equal(di.jacobian(f_vector, b, X), serial(di.jacobian, f_vector, method, X))
    np.testing.assert_array_equal(di.pushforward(f_vector, b, X, t), serial(di.pushforward, f_vector, method, X, t))
    np.testing.assert_array_equal(di.hessian(f_scalar, b, X), serial(di.hessian, f_scalar, method, X))
    value, grad = di.value_and_gradient(f_scalar, b, X)
    assert value == f_scalar(X)
    np.testing.assert_array_equal(grad, serial(di.gradient, f_scalar, method, X))


def test_process_pool_identical_to_serial(processes):
    b = di.AutoFiniteDiff(executor=processes)
    np.testing.assert_array_equal(di.jacobian(f_vector, b, X), serial(di.jacobian, f_vector, "central", X))
    with pytest.raises(di.ArgumentError, match="module level"):
        di.gradient(lambda x: np.sum(x), b, X)


def test_exception_names_the_point(threads, processes):
    for pool in (threads, processes):
        with pytest.raises(di.EvaluationError, match=r"column 2 \(x\[2\] \+ h\)") as info:
            di.gradient(f_fails_at_third, di.AutoFiniteDiff(executor=pool), X)
        assert isinstance(info.value.__cause__, ValueError)
        assert "boom" in str(info.value)

    def vec_fails(X):  # fine on the batch of one point that finds the output's shape, not after
        if X.shape[0] > 1:
            raise KeyError("nope")
        return np.sum(X, axis=-1)

    with pytest.raises(di.EvaluationError, match="batch of") as info:
        di.gradient(vec_fails, di.AutoFiniteDiff(vectorized=True), X)
    assert isinstance(info.value.__cause__, KeyError)


def test_object_with_map_and_map_callable():
    class Mapper:
        calls = 0

        def map(self, fn, items):
            Mapper.calls += 1
            return [fn(i) for i in items]

    expected = serial(di.jacobian, f_vector, "central", X)
    np.testing.assert_array_equal(di.jacobian(f_vector, di.AutoFiniteDiff(executor=Mapper()), X), expected)
    assert Mapper.calls == 1  # every point of one call submitted together
    np.testing.assert_array_equal(di.jacobian(f_vector, di.AutoFiniteDiff(executor=map), X), expected)


def test_autosparse_submits_one_task_per_color():
    submitted = []

    class Recorder:
        def map(self, fn, items):
            items = list(items)
            submitted.append(len(items))
            return [fn(i) for i in items]

    def f(x):
        return x[1:] ** 2 - x[:-1]

    x = np.linspace(0.5, 2.0, 50)
    backend = di.AutoSparse(di.AutoFiniteDiff(executor=Recorder()))
    prep = di.prepare_jacobian(f, backend, x)
    submitted.clear()
    jac = prep.jacobian(x)
    assert submitted == [2 * prep.ncolors]  # central: two points per color, one submission
    assert prep.evaluations.points == 2 * prep.ncolors
    np.testing.assert_array_equal(jac.toarray(), di.jacobian(f, di.AutoSparse(di.AutoFiniteDiff()), x).toarray())


def test_evaluations_reported():
    assert di.prepare_gradient(f_scalar, di.AutoFiniteDiff(), X).evaluations == EvaluationCount(8, 8)
    assert di.prepare_gradient(f_scalar, di.AutoFiniteDiff("forward"), X).evaluations == EvaluationCount(5, 5)
    vec = di.AutoFiniteDiff("forward", vectorized=True)
    assert di.prepare_gradient(f_scalar_batch, vec, X).evaluations == EvaluationCount(5, 1)
    with ThreadPoolExecutor(2) as pool:
        b = di.AutoFiniteDiff(executor=pool)
        assert di.prepare_jacobian(f_vector, b, X).evaluations == EvaluationCount(8, 8)


@pytest.mark.parametrize("method", METHODS)
def test_inplace_f_with_executor(threads, method):
    """Complex steps write complex values into y: each task's buffer is complex (a real one dropped
    the imaginary part, and the Jacobian came out as 0)."""

    def f(y, x):
        y[:] = f_vector(x)

    y = np.zeros(4)
    jac = di.jacobian(f, di.AutoFiniteDiff(method, executor=threads), X, y=y)
    np.testing.assert_array_equal(jac, serial(di.jacobian, f_vector, method, X))
    np.testing.assert_array_equal(y, f_vector(X))
    t = np.array([1.0, -0.5, 0.25, 2.0])
    pushed = di.pushforward(f, di.AutoFiniteDiff(method, executor=threads), X, t, y=np.zeros(4))
    np.testing.assert_array_equal(pushed, serial(di.pushforward, f_vector, method, X, t))
    assert y.dtype == np.float64
    with pytest.raises(di.NotSupportedError, match="out-of-place"):
        di.jacobian(f, di.AutoFiniteDiff(vectorized=True), X, y=y)


def test_bad_arguments():
    with pytest.raises(di.ArgumentError, match="vectorized"):
        di.AutoFiniteDiff(vectorized=1)
    with pytest.raises(di.ArgumentError, match="executor"):
        di.AutoFiniteDiff(executor=42)
    with pytest.raises(di.ArgumentError, match="not both"):
        di.AutoFiniteDiff(vectorized=True, executor=map)
    with pytest.raises(di.ShapeError, match="one output per point"):
        di.gradient(lambda X: np.sum(X), di.AutoFiniteDiff(vectorized=True), X)


@pytest.mark.skipif(importlib.util.find_spec("distributed") is None, reason="dask[distributed] is not installed")
def test_dask_local_cluster():
    from distributed import Client, LocalCluster

    with (
        LocalCluster(n_workers=2, processes=True, threads_per_worker=1, dashboard_address=None) as cluster,
        Client(cluster) as client,
    ):
        b = di.AutoFiniteDiff(executor=client)
        np.testing.assert_array_equal(di.gradient(f_scalar, b, X), serial(di.gradient, f_scalar, "central", X))
        np.testing.assert_array_equal(di.jacobian(f_vector, b, X), serial(di.jacobian, f_vector, "central", X))
        # closures are fine: Dask pickles with cloudpickle
        np.testing.assert_array_equal(di.gradient(lambda x: f_scalar(x), b, X), di.gradient(f_scalar, b, X))
        with pytest.raises(di.EvaluationError, match="column 2") as info:
            di.gradient(f_fails_at_third, b, X)
        assert isinstance(info.value.__cause__, ValueError)
