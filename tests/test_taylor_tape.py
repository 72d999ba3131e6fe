"""AutoTape's Taylor mode (`diface.backends.tape.analysis.taylor`): coefficients against analytic series,
against pushforwards and Hessian-vector products, the collapsed Laplacian against the Hessian's trace,
and the fallback to the core's derivation where the recording holds an operation without a rule."""

from __future__ import annotations

import math

import numpy as np
import pytest

import diface as di
from diface.backends.tape.analysis import taylor as _taylor

TAPE = di.AutoTape()
X0 = np.array([0.3, 0.8, 1.4])  # preparation point
X1 = np.array([0.5, 1.1, 0.7])  # call point
V = np.array([0.7, -1.2, 0.4])


def _plans(monkeypatch: pytest.MonkeyPatch) -> list:
    """Collect the plans made from now on (to tell the native pass from the fallback)."""
    made: list = []
    original = _taylor.Plan.__init__

    def spy(self: _taylor.Plan, tape: object) -> None:
        original(self, tape)
        made.append(self)

    monkeypatch.setattr(_taylor.Plan, "__init__", spy)
    return made


def _tanh_derivative_polys(order: int) -> list:
    """P_j with d^j tanh(z)/dz^j = P_j(tanh z)."""
    polys = [np.polynomial.Polynomial([0.0, 1.0])]
    for _ in range(order):
        polys.append(polys[-1].deriv() * np.polynomial.Polynomial([1.0, 0.0, -1.0]))
    return polys


W1 = np.array([[0.5, -0.3, 0.8], [0.2, 0.9, -0.4], [-0.7, 0.1, 0.3], [0.4, 0.4, 0.6]])
B1 = np.array([0.1, -0.2, 0.05, 0.3])
W2 = np.array([0.6, -1.1, 0.9, 0.5])


def _mlp(x):
    return W2 @ np.tanh(W1 @ x + B1)


def _mlp_series(x, v, order):
    y = np.tanh(W1 @ x + B1)
    c = W1 @ v
    polys = _tanh_derivative_polys(order)
    return [np.sum(W2 * c**j * polys[j](y)) for j in range(1, order + 1)]


def _falling(a: float, j: int) -> float:
    return math.prod(a - i for i in range(j))


CASES = {
    "exp": (np.exp, lambda x, v, j: v**j * np.exp(x)),
    "sin": (np.sin, lambda x, v, j: v**j * np.sin(x + j * np.pi / 2)),
    "polynomial": (
        lambda x: np.sum(x**4 - 2 * x**3),
        lambda x, v, j: np.sum(
            v**j * (_falling(4, j) * x ** (4 - j) - 2 * _falling(3, j) * x ** max(3 - j, 0) * (j <= 3))
        ),
    ),
    "rational": (lambda x: 1 / (1 + x), lambda x, v, j: (-1) ** j * math.factorial(j) * v**j / (1 + x) ** (j + 1)),
    "composition": (
        lambda x: np.exp(3 * np.log(x)) + np.sqrt(x) ** 3 + np.tanh(np.arctanh(x / 2)),
        lambda x, v, j: v**j * (_falling(3, j) * x ** (3 - j) + _falling(1.5, j) * x ** (1.5 - j)) + v * (j == 1) / 2,
    ),
    "mlp": (_mlp, None),
}


@pytest.mark.parametrize("name", list(CASES))
def test_coefficients_against_analytic_series(name, monkeypatch):
    plans = _plans(monkeypatch)
    f, series = CASES[name]
    for order in (1, 3, 6):
        prep = di.prepare_taylor(f, TAPE, X0, V, order=order)
        for _ in range(2):  # each call twice: nothing of a call leaks into the next
            y, d = prep.taylor(X1, V)
            assert len(d) == order
            np.testing.assert_allclose(y, f(X1), rtol=1e-13)
            expected = _mlp_series(X1, V, order) if series is None else [series(X1, V, j) for j in range(1, order + 1)]
            for dj, ej in zip(d, expected):
                np.testing.assert_allclose(dj, ej, rtol=1e-10, atol=1e-12)
    assert plans and all(p.ok for p in plans)


def test_order_one_is_the_pushforward_and_order_two_the_hvp():
    def f(x):
        return np.sum(np.sin(x) * x[::-1]) + np.log(np.sum(x**2)) / (1 + x[0] * x[1])

    prep = di.prepare_taylor(f, TAPE, X0, V, order=2)
    (d1, d2) = prep.taylor_coefficients(X1, V)
    np.testing.assert_allclose(d1, di.pushforward(f, TAPE, X1, V), rtol=1e-12)
    np.testing.assert_allclose(d2, V @ di.hvp(f, TAPE, X1, V), rtol=1e-12)
    vector = lambda x: np.stack([np.exp(x[0] * x[1]), np.cos(x @ x)])
    (e1,) = di.taylor_coefficients(vector, TAPE, X1, V, order=1)
    np.testing.assert_allclose(e1, di.pushforward(vector, TAPE, X1, V), rtol=1e-12)


def test_a_batch_of_directions_in_one_pass():
    f = lambda x: np.tanh(x * x[::-1]) @ np.exp(x)
    dirs = (V, np.array([1.0, 0.0, -2.0]), np.array([0.3, 0.3, 0.3]))
    prep = di.prepare_taylor(f, TAPE, X0, dirs, order=4)
    _, batch = prep.taylor(X1, dirs)
    assert len(batch) == 3
    for v, coefficients in zip(dirs, batch):
        single = di.taylor_coefficients(f, TAPE, X1, v, order=4)
        for a, b in zip(coefficients, single):
            np.testing.assert_allclose(a, b, rtol=1e-12)


def test_linear_and_piecewise_operations(monkeypatch):
    plans = _plans(monkeypatch)
    a = np.arange(9.0).reshape(3, 3) / 5

    def f(x):
        m = np.concatenate([x[::-1], x[:2] * 3]).reshape(1, 5)
        z = np.where(x > 0.6, x**2, np.sin(x)) + np.maximum(x, 0.9) * np.abs(x) + np.clip(x, 0.4, 1.0) * x
        return np.cumsum(z) @ (a @ x) + np.sum(m) ** 3 + np.mean(np.outer(x, x)) + np.max(np.exp(x)) + np.std(x)

    d = di.taylor_coefficients(f, TAPE, X1, V, order=3)
    ref = _core_taylor(f, X1, V, 3)
    for a_, b_ in zip(d, ref):
        np.testing.assert_allclose(a_, b_, rtol=1e-10)
    assert plans and all(p.ok for p in plans)


def test_functions_of_two_traced_inputs(monkeypatch):
    plans = _plans(monkeypatch)

    def f(x):
        r = x[::-1]
        return (
            np.hypot(x, r) + np.hypot(x, 2.0) + np.arctan2(x, r) + np.arctan2(1.5, x) + np.logaddexp(x, 3 * r)
            + np.logaddexp2(x, 0.5) + x**r + x / r + np.sin(x) * np.exp(r) + np.maximum(x, r)
        )  # fmt: skip

    d = di.taylor_coefficients(f, TAPE, X1, V, order=4)
    for a, b in zip(d, _core_taylor(f, X1, V, 4)):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)
    assert plans and all(p.ok for p in plans)


def test_powers_at_a_zero_base():
    x = np.array([0.0, 0.5, 2.0])

    def f(x):
        return x**2.5 + x ** np.array([2.0, 3.0, 0.5]) + np.power(x, 4.5) + x**3

    d = di.taylor_coefficients(f, TAPE, x, V, order=2)  # finite: the series by binomials where x is 0
    for a, b in zip(d, _core_taylor(f, x, V, 2)):
        np.testing.assert_allclose(a, b, rtol=1e-12)
    g = lambda x: np.sum(x ** (x + 1.0))  # a traced exponent at a zero base: the core's derivation
    with np.errstate(divide="ignore", invalid="ignore"):
        d = di.taylor_coefficients(g, TAPE, x, V, order=2)
        for a, b in zip(d, _core_taylor(g, x, V, 2)):
            np.testing.assert_allclose(a, b, rtol=1e-12)
        np.testing.assert_allclose(di.laplacian(g, TAPE, x), np.trace(di.hessian(g, TAPE, x)), rtol=1e-12)


def _core_taylor(f, x, v, order, *contexts):
    """The core's nested pushforwards on the tape."""
    from diface import _derive

    class Derived(di.AutoTape):
        def prepare_taylor(self, problem, tangents, order):
            return _derive.derive_taylor(self, problem, tangents, order)

    return di.taylor_coefficients(f, Derived(), x, v, *contexts, order=order)


def test_inverse_and_solve(monkeypatch):
    plans = _plans(monkeypatch)
    m = np.array([[2.0, 0.3, 0.1], [0.2, 1.5, -0.4], [0.1, 0.2, 3.0]])

    def f(x):
        a = m + np.diag(np.sin(x))
        return np.linalg.solve(a, np.exp(x)) + np.linalg.inv(a + np.outer(x, x)) @ x**2

    d = di.taylor_coefficients(f, TAPE, X1, V, order=4)
    for a, b in zip(d, _core_taylor(f, X1, V, 4)):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)
    _, jac, lap = di.value_gradient_and_laplacian(f, TAPE, X1)
    hess = [np.trace(di.hessian(lambda x, i=i: f(x)[i], TAPE, X1)) for i in range(3)]
    np.testing.assert_allclose(lap, hess, rtol=1e-10)
    np.testing.assert_allclose(jac, di.jacobian(f, TAPE, X1), rtol=1e-12)
    assert plans and all(p.ok for p in plans)


def test_laplacian_is_the_trace_of_the_hessian():
    rng = np.random.default_rng(1)
    w = [(rng.normal(size=(5, 8)), rng.normal(size=8)), (rng.normal(size=(8, 8)), rng.normal(size=8))]
    top = rng.normal(size=8)

    def mlp(x, w):
        h = x
        for a, b in w:
            h = np.tanh(h @ a + b)
        return h @ top + np.sum(x**3) / (1 + x @ x)

    ctx = di.Constant(w)  # a tree context
    x0, x1 = rng.normal(size=5), rng.normal(size=5)
    prep = di.prepare_laplacian(mlp, TAPE, x0, ctx)
    for _ in range(2):
        lap = prep.laplacian(x1, ctx)
        np.testing.assert_allclose(lap, np.trace(di.hessian(mlp, TAPE, x1, ctx)), rtol=1e-10)
        y, g, lap2 = prep.value_gradient_and_laplacian(x1, ctx)
        np.testing.assert_allclose(g, di.gradient(mlp, TAPE, x1, ctx), rtol=1e-12)
        np.testing.assert_allclose(y, mlp(x1, w), rtol=1e-13)
        assert lap2 == pytest.approx(float(lap), rel=1e-13)


def test_laplacian_of_a_vector_function_is_elementwise():
    def f(x):  # x of shape (2, 2)
        return np.stack([np.sum(np.sin(x) * x.T), np.prod(x[0]) * np.exp(x[1, 0]), np.sum(x**2) ** 1.5])

    x = np.array([[0.3, -0.4], [0.8, 0.5]])
    _, jac, lap = di.value_gradient_and_laplacian(f, TAPE, x)
    hess = [di.hessian(lambda x, i=i: f(x)[i], TAPE, x).reshape(4, 4) for i in range(3)]
    np.testing.assert_allclose(lap, [np.trace(h) for h in hess], rtol=1e-10)
    np.testing.assert_allclose(jac, di.jacobian(f, TAPE, x), rtol=1e-12)
    np.testing.assert_allclose(di.laplacian(np.sin, TAPE, X1), -np.sin(X1), rtol=1e-13)


def test_operations_without_a_rule_fall_back_to_the_core(monkeypatch):
    plans = _plans(monkeypatch)

    def f(x):
        return np.linalg.det(np.outer(x, x) + np.diag(x)) + np.prod(x)

    prep = di.prepare_taylor(f, TAPE, X0, V, order=3)
    d = prep.taylor_coefficients(X1, V)
    for a, b in zip(d, _core_taylor(f, X1, V, 3)):
        np.testing.assert_allclose(a, b, rtol=1e-10)
    assert any(not p.ok for p in plans)
    lap = di.laplacian(f, TAPE, X1)
    np.testing.assert_allclose(lap, np.trace(di.hessian(f, TAPE, X1)), rtol=1e-9)


def test_float32_and_static_contexts():
    x32 = X1.astype(np.float32)
    d = di.taylor_coefficients(lambda x: np.exp(np.sin(x)), TAPE, x32, V.astype(np.float32), order=3)
    ref = di.taylor_coefficients(lambda x: np.exp(np.sin(x)), TAPE, X1, V, order=3)
    for a, b in zip(d, ref):
        assert a.dtype == np.float32
        np.testing.assert_allclose(a, b, rtol=1e-4)
    lap32 = di.laplacian(lambda x: np.sum(np.tanh(x) ** 2), TAPE, x32)
    assert lap32.dtype == np.float32

    def powered(x, k):  # k a static context: a new value records f again
        return np.sum(x**k)

    prep = di.prepare_taylor(powered, TAPE, X0, V, di.Constant(3), order=3)
    for k in (3, 5):
        (_, _, d3) = prep.taylor_coefficients(X1, V, di.Constant(k))
        np.testing.assert_allclose(d3, np.sum(_falling(k, 3) * X1 ** (k - 3) * V**3), rtol=1e-12)


def test_threads_share_one_preparation():
    from concurrent.futures import ThreadPoolExecutor

    w = np.array([[0.5, -0.3, 0.8], [0.2, 0.9, -0.4]])

    def f(x):
        return np.sum(np.tanh(w @ x) ** 2) + np.sum(np.sin(x @ w.T))

    prep = di.prepare_laplacian(f, TAPE, X0)
    points = [X0 + 0.1 * k for k in range(8)]
    expected = [np.trace(di.hessian(f, TAPE, p)) for p in points]
    with ThreadPoolExecutor(4) as pool:
        got = list(pool.map(prep.laplacian, points * 3))
    np.testing.assert_allclose(got, expected * 3, rtol=1e-10)
    twin = prep.copy()  # the same recording, buffers of its own
    assert twin is not prep and twin.laplacian(points[3]) == pytest.approx(expected[3], rel=1e-10)
    taylor = di.prepare_taylor(f, TAPE, X0, V, order=3).copy()
    np.testing.assert_allclose(taylor.taylor_coefficients(X1, V), _core_taylor(f, X1, V, 3), rtol=1e-10)
