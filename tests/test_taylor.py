"""Taylor coefficients and Laplacians through the one call path: the API, its errors, batches, out=,
trees, contexts, has_aux, Hutchinson's estimate and threads (engine by engine values are in
tests/test_taylor_<engine>.py, the wrappers in the composition matrix)."""

from __future__ import annotations

import math
import threading

import numpy as np
import pytest

import diface as di

TAPE = di.AutoTape()


def _exp_series(x: np.ndarray, v: np.ndarray, order: int) -> list:
    return [v**k * np.exp(x) for k in range(1, order + 1)]


@pytest.mark.parametrize("order", [1, 2, 4, 6])
def test_taylor_of_exp_to_order_six_prepared_elsewhere(order):
    x0, x1 = np.array([0.1, -0.3]), np.array([0.4, 1.2])
    v0, v1 = np.array([1.0, 1.0]), np.array([0.5, -2.0])
    prep = di.prepare_taylor(np.exp, TAPE, x0, v0, order=order)
    assert prep.order == order
    for _ in range(2):
        y, ds = di.taylor(np.exp, TAPE, x1, v1, order=order, prep=prep)
        np.testing.assert_allclose(y, np.exp(x1), rtol=1e-14)
        assert isinstance(ds, tuple) and len(ds) == order
        for d, want in zip(ds, _exp_series(x1, v1, order)):
            np.testing.assert_allclose(d, want, rtol=1e-10)
        coefficients = prep.taylor_coefficients(x1, v1)
        for d, want in zip(coefficients, ds):
            np.testing.assert_array_equal(d, want)


def test_first_and_second_coefficients_are_the_pushforward_and_the_hvp():
    f = lambda x: np.sum(np.sin(x) * x**2) + x[0] * x[1] ** 3
    x, v = np.array([0.3, -0.7, 1.1]), np.array([0.2, 0.5, -1.0])
    d1, d2 = di.taylor_coefficients(f, TAPE, x, v, order=2)
    np.testing.assert_allclose(d1, di.pushforward(f, TAPE, x, v), rtol=1e-12)
    np.testing.assert_allclose(d2, v @ di.hvp(f, TAPE, x, v), rtol=1e-12)


def test_a_tuple_of_directions_gives_a_tuple_of_series_and_out_takes_nested_buffers():
    f = lambda x: np.sin(x) * x[0]
    x = np.array([0.5, 1.5])
    vs = (np.array([1.0, 0.0]), np.array([0.3, -0.2]))
    prep = di.prepare_taylor(f, TAPE, x, vs, order=3)
    _y, series = prep.taylor(x, vs)
    assert len(series) == 2 and all(len(s) == 3 for s in series)
    for v, s in zip(vs, series):
        single = di.taylor_coefficients(f, TAPE, x, v, order=3)
        for a, b in zip(s, single):
            np.testing.assert_allclose(a, b, rtol=1e-13)
    out = tuple(tuple(np.full(2, np.nan) for _ in range(3)) for _ in vs)
    got = prep.taylor_coefficients(x, vs, out=out)
    assert got[1][2] is out[1][2]
    np.testing.assert_allclose(out[1][2], series[1][2], rtol=1e-13)
    with pytest.raises(di.ArgumentError, match="tuple of 3 buffers"):
        prep.taylor_coefficients(x, vs, out=tuple(tuple(np.zeros(2) for _ in range(2)) for _ in vs))


def test_taylor_on_trees_with_a_constant_and_has_aux():
    def f(p, c):
        return {"u": c * np.exp(p["a"]), "v": np.sum(p["b"] ** 3)}, {"twice": 2 * p["a"]}

    x = {"a": np.array([0.1, 0.2]), "b": np.array([1.0, -1.0])}
    v = {"a": np.array([1.0, 2.0]), "b": np.array([0.5, 0.5])}
    prep = di.prepare_taylor(f, TAPE, x, v, di.Constant(2.0), order=3, has_aux=True)
    (_y, aux), ds = di.taylor(f, TAPE, x, v, di.Constant(3.0), order=3, prep=prep, has_aux=True)
    np.testing.assert_allclose(aux["twice"], 2 * x["a"])
    for k, d in enumerate(ds, start=1):
        np.testing.assert_allclose(d["u"], 3.0 * v["a"] ** k * np.exp(x["a"]), rtol=1e-12)
        cube = [3 * x["b"] ** 2 * v["b"], 6 * x["b"] * v["b"] ** 2, 6 * v["b"] ** 3][k - 1]
        np.testing.assert_allclose(d["v"], np.sum(cube), rtol=1e-12)


@pytest.mark.parametrize("bad", [0, -1, 2.5, True, "3", None])
def test_a_bad_order_is_refused_before_anything_runs(bad):
    calls = []
    f = lambda x: calls.append(1) or x
    with pytest.raises(di.ArgumentError, match="order="):
        di.taylor(f, TAPE, np.ones(2), np.ones(2), order=bad)
    with pytest.raises(di.ArgumentError, match="order="):
        di.prepare_taylor(f, TAPE, np.ones(2), order=bad)
    assert calls == []


def test_a_preparation_of_another_order_is_refused():
    prep = di.prepare_taylor(np.sin, TAPE, np.ones(2), order=2)
    with pytest.raises(di.PreparationMismatchError, match="order=2"):
        di.taylor(np.sin, TAPE, np.ones(2), np.ones(2), order=3, prep=prep)


def test_taylor_keeps_float32():
    x = np.array([0.5, 1.0], np.float32)
    _y, (d1, d2) = di.taylor(np.exp, TAPE, x, np.ones(2, np.float32), order=2)
    assert d1.dtype == d2.dtype == np.float32
    np.testing.assert_allclose(d2, np.exp(x), rtol=1e-6)


# -- Laplacians ------------------------------------------------------------------------------------
def _mlp(seed: int = 0, n: int = 5, width: int = 8):
    rng = np.random.default_rng(seed)
    w1, w2, w3 = (
        rng.standard_normal((n, width)) / 2,
        rng.standard_normal((width, width)) / 3,
        rng.standard_normal(width),
    )
    return lambda x: np.tanh(np.tanh(x @ w1) @ w2) @ w3


def test_the_laplacian_is_the_trace_of_the_hessian_prepared_elsewhere():
    f = _mlp()
    x0, x1 = np.linspace(-1, 1, 5), np.array([0.3, -0.2, 0.9, 0.1, -0.6])
    prep = di.prepare_laplacian(f, TAPE, x0)
    for _ in range(2):
        lap = di.laplacian(f, TAPE, x1, prep=prep)
        np.testing.assert_allclose(lap, np.trace(di.hessian(f, TAPE, x1)), rtol=1e-12)
        y, g, lap_full = prep.value_gradient_and_laplacian(x1)
        np.testing.assert_allclose(g, di.gradient(f, TAPE, x1), rtol=1e-12)
        np.testing.assert_allclose(lap_full, lap, rtol=1e-13)
        np.testing.assert_allclose(y, f(x1), rtol=1e-14)


def test_the_laplacian_of_a_vector_function_is_elementwise_and_out_is_written():
    f = lambda x: np.stack([np.sum(x**3), np.sin(x[0]) * x[1] ** 2])
    x = np.array([0.7, -1.2, 0.4])
    want = np.array([6 * np.sum(x), -np.sin(x[0]) * x[1] ** 2 + 2 * np.sin(x[0])])
    np.testing.assert_allclose(di.laplacian(f, TAPE, x), want, rtol=1e-12)
    g, lap = np.full((2, 3), np.nan), np.full(2, np.nan)
    _y, jac, got = di.value_gradient_and_laplacian(f, TAPE, x, out=(g, lap))
    assert jac is g and got is lap
    np.testing.assert_allclose(g, di.jacobian(f, TAPE, x), rtol=1e-12)
    np.testing.assert_allclose(lap, want, rtol=1e-12)


def test_laplacians_of_trees_matrices_and_edge_shapes():
    f = lambda p: np.sum(p["a"] ** 4) + np.sum(np.sin(p["b"]))
    x = {"a": np.array([[1.0, 2.0], [0.5, -1.0]]), "b": np.array([0.3])}
    want = np.sum(12 * x["a"] ** 2) - np.sin(0.3)
    np.testing.assert_allclose(di.laplacian(f, TAPE, x), want, rtol=1e-12)
    np.testing.assert_allclose(di.laplacian(lambda t: t**3, TAPE, 2.0), 12.0)  # 0-d x
    assert float(di.laplacian(lambda x: np.sum(x) + 1.0, TAPE, np.zeros(0))) == 0.0  # empty x
    xf = np.asfortranarray(np.arange(6.0).reshape(2, 3)).T  # a transposed Fortran view
    np.testing.assert_allclose(di.laplacian(lambda x: np.sum(x**3), TAPE, xf), 6 * np.sum(xf), rtol=1e-13)


def test_hutchinson_is_exact_for_a_diagonal_hessian_and_unbiased_otherwise():
    separable = lambda x: np.sum(np.sin(x) * x**2)
    x = np.array([0.3, -1.1, 0.8, 2.0])
    prep = di.prepare_laplacian(separable, TAPE, x, method="hutchinson", samples=4, seed=1)
    assert prep.report.method == "hutchinson" and prep.report.standard_error is None
    np.testing.assert_allclose(prep.laplacian(x), np.trace(di.hessian(separable, TAPE, x)), rtol=1e-12)
    assert float(prep.report.standard_error) < 1e-12  # v_i² = 1: no spread

    coupled = _mlp(3, n=6)
    x = np.linspace(-0.5, 0.5, 6)
    exact = di.laplacian(coupled, TAPE, x)
    prep = di.prepare_laplacian(coupled, TAPE, x, method="hutchinson", samples=64, seed=0)
    estimates, errors = [], []
    for _ in range(20):
        estimates.append(prep.laplacian(x))
        errors.append(prep.report.standard_error)
    # 20 independent estimates of 64 samples each: their mean is within 4 standard errors of the truth
    assert abs(np.mean(estimates) - exact) < 4 * np.mean(errors) / math.sqrt(20)
    # the same seed gives the same sequence
    again = di.prepare_laplacian(coupled, TAPE, x, method="hutchinson", samples=64, seed=0)
    np.testing.assert_array_equal(again.laplacian(x), estimates[0])


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"method": "trace"}, "method="),
        ({"method": "hutchinson", "samples": 1}, "samples="),
        ({"method": "hutchinson", "seed": 1.5}, "seed="),
    ],
)
def test_bad_laplacian_settings_are_refused(kwargs, match):
    with pytest.raises(di.ArgumentError, match=match):
        di.laplacian(np.sin, TAPE, np.ones(2), **kwargs)


def test_a_laplacian_preparation_of_another_method_is_refused():
    prep = di.prepare_laplacian(np.sin, TAPE, np.ones(2))
    with pytest.raises(di.PreparationMismatchError):
        di.laplacian(np.sin, TAPE, np.ones(2), method="hutchinson", prep=prep)


def test_one_preparation_shared_by_threads():
    f = _mlp(5)
    prep_l = di.prepare_laplacian(f, TAPE, np.zeros(5))
    prep_t = di.prepare_taylor(f, TAPE, np.zeros(5), order=3)
    rng = np.random.default_rng(0)
    points = [rng.standard_normal(5) for _ in range(16)]
    want = [(float(np.trace(di.hessian(f, TAPE, p))), di.taylor_coefficients(f, TAPE, p, p, order=3)) for p in points]
    bad = []

    def work(i: int) -> None:
        for _ in range(5):
            lap = prep_l.laplacian(points[i])
            ds = prep_t.taylor_coefficients(points[i], points[i])
            if not (np.isclose(lap, want[i][0], rtol=1e-12) and np.allclose(ds, want[i][1], rtol=1e-12)):
                bad.append(i)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert bad == []


def test_second_order_wrappers_and_sparse_wrappers_give_the_same_laplacian():
    f = _mlp(7, n=4)
    x = np.array([0.1, 0.5, -0.4, 0.2])
    want = np.trace(di.hessian(f, TAPE, x))
    for backend in (di.SecondOrder(TAPE, TAPE), di.AutoSparse(TAPE), di.AutoSparse(di.SecondOrder(TAPE, TAPE))):
        np.testing.assert_allclose(di.laplacian(f, backend, x), want, rtol=1e-12)
