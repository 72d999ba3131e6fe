"""AutoJAX's Taylor mode (`jet`, or nested `jvp`s where jet lacks a rule) and its collapsed forward
Laplacian: values against analytic references at orders 1..6, prepared at one point and called at
another (twice), against the first- and second-order operators, batches of directions, contexts, JAX
and NumPy arrays, float32, and the fallbacks (operations jet or the collapsed propagation cannot take)."""

from __future__ import annotations

import math

import numpy as np
import pytest

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402

import diface as di  # noqa: E402
from diface.backends.jax._taylor import jet_covers  # noqa: E402

jax.config.update("jax_enable_x64", True)

B = di.AutoJAX()
X0 = np.array([0.3, -0.2, 0.5])  # the preparation's point
X1 = np.array([0.4, 0.1, -0.6])  # the call's
V = np.array([0.7, -1.1, 0.4])
RTOL = 1e-10
ORDER = 6

rng = np.random.default_rng(0)
W1, W2, W3 = rng.normal(size=(3, 5)), rng.normal(size=(5, 4)) / 2, rng.normal(size=4)


def mlp(x):
    return jnp.tanh(jnp.tanh(x @ W1) @ W2) @ W3


def rational_derivative(u, v, j):
    # 1/(1+u²) = (1/(u-i) - 1/(u+i)) / 2i, so its j-th derivative along v is exact in closed form
    z = (-1) ** j * math.factorial(j) * ((u - 1j) ** -(j + 1) - (u + 1j) ** -(j + 1)) / 2j
    return (z.real * v**j).astype(float)


class Series:
    """Truncated Taylor polynomials in NumPy (normalized coefficients c[k], shape (K + 1, ...)): the
    independent reference for compositions, by the classical recurrences."""

    def __init__(self, c):
        self.c = np.asarray(c, float)

    @classmethod
    def line(cls, x, v, order):  # x + t v
        return cls([x, v] + [np.zeros_like(x)] * (order - 1))

    def __mul__(self, o):
        return Series([sum(self.c[i] * o.c[k - i] for i in range(k + 1)) for k in range(len(self.c))])

    def __add__(self, o):
        return Series(self.c + o.c)

    def __getitem__(self, i):
        return Series(self.c[:, i])

    def matmul(self, w):
        return Series(self.c @ w)

    def sum(self):
        return Series(self.c.reshape(len(self.c), -1).sum(1))

    def _ode(self, first, d):  # y' = d(y) u', so y_k = Σ i u_i d_{k-i} / k
        y, dd = [first], []
        for k in range(1, len(self.c)):
            dd.append(d(y, k - 1))
            y.append(sum(i * self.c[i] * dd[k - i] for i in range(1, k + 1)) / k)
        return Series(y)

    def exp(self):
        return self._ode(np.exp(self.c[0]), lambda y, m: y[m])

    def tanh(self):  # tanh' = 1 - tanh²
        return self._ode(np.tanh(self.c[0]), lambda y, m: (m == 0) - sum(y[i] * y[m - i] for i in range(m + 1)))

    def sin(self):
        s, c = [np.sin(self.c[0])], [np.cos(self.c[0])]
        for k in range(1, len(self.c)):
            s.append(sum(i * self.c[i] * c[k - i] for i in range(1, k + 1)) / k)
            c.append(-sum(i * self.c[i] * s[k - i] for i in range(1, k + 1)) / k)
        return Series(s)

    def arctan(self):  # arctan' = 1 / (1 + u²), whose series is a division
        w = (self * self).c
        w[0] += 1
        q = [1 / w[0]]
        for k in range(1, len(w)):
            q.append(-sum(w[i] * q[k - i] for i in range(1, k + 1)) / w[0])
        return self._ode(np.arctan(self.c[0]), lambda y, m: q[m])

    def derivatives(self):
        return [math.factorial(j) * self.c[j] for j in range(1, len(self.c))]


def by_series(g):
    return lambda x, v, j: g(Series.line(x, v, ORDER)).derivatives()[j - 1]


# name: (f, the j-th derivative along v at x (NumPy))
CASES = {
    # exp, sin, a polynomial and a rational function, one per output
    "elementary": (
        lambda x: jnp.stack([jnp.exp(x[0]), jnp.sin(x[1]), x[2] ** 5 + x[0] * x[1], 1 / (1 + x[2] ** 2)]),
        lambda x, v, j: np.array(
            [
                np.exp(x[0]) * v[0] ** j,
                np.sin(x[1] + j * np.pi / 2) * v[1] ** j,
                math.perm(5, j) * x[2] ** max(5 - j, 0) * v[2] ** j * (j <= 5)
                + (2 * v[0] * v[1] if j == 2 else x[0] * v[1] + v[0] * x[1] if j == 1 else 0.0),
                rational_derivative(x[2], v[2], j),
            ]
        ),
    ),
    "tanh mlp": (mlp, by_series(lambda s: s.matmul(W1).tanh().matmul(W2).tanh().matmul(W3))),
    # arctan has no jet rule: nested jvps
    "composition with arctan": (
        lambda x: jnp.sum(jnp.sin(jnp.exp(x) * x[0])) + jnp.sum(jnp.arctan(x) * x),
        by_series(lambda s: (s.exp() * s[0]).sin().sum() + (s.arctan() * s).sum()),
    ),
}


@pytest.mark.parametrize("name", list(CASES))
def test_orders_one_to_six(name):
    f, reference = CASES[name]
    prep = di.prepare_taylor(f, B, X0, order=ORDER)
    for _ in range(2):
        y, ds = prep.taylor(X1, V)
        np.testing.assert_allclose(y, np.asarray(f(X1)), rtol=RTOL)
        assert len(ds) == ORDER and all(isinstance(d, np.ndarray) or np.isscalar(d) for d in ds)
        for j, d in enumerate(ds, 1):
            np.testing.assert_allclose(d, reference(X1, V, j), rtol=RTOL, atol=1e-12, err_msg=f"order {j}")
    assert jet_covers(f, jnp.asarray(X0)) is ("arctan" not in name)


def test_low_orders_agree_with_first_and_second_order_operators():
    f = lambda x: jnp.sum(jnp.sin(x) * jnp.exp(x[::-1]))
    prep = di.prepare_taylor(f, B, X0, order=2)
    d1, d2 = prep.taylor_coefficients(X1, V)
    np.testing.assert_allclose(d1, di.pushforward(f, B, X1, V), rtol=RTOL)
    np.testing.assert_allclose(d2, V @ di.hvp(f, B, X1, V), rtol=RTOL)
    # orders prepared apart agree with the leading coefficients of a higher one
    (e1,) = di.taylor_coefficients(f, B, X1, V, order=1)
    np.testing.assert_allclose(e1, d1, rtol=RTOL)


def test_batched_directions_native_arrays_and_contexts():
    f = lambda x, c: jnp.exp(c["a"] * x) * c["b"]
    c = {"a": jnp.asarray(0.5), "b": jnp.asarray([1.0, 2.0, 3.0])}
    x0, x1 = jnp.asarray(X0), jnp.asarray(X1)
    vs = (jnp.asarray(V), jnp.ones(3), jnp.asarray(-V))
    prep = di.prepare_taylor(f, B, x0, vs, di.Constant(c), order=3)
    for _ in range(2):
        y, series = prep.taylor(x1, vs, di.Constant(c))
        assert isinstance(y, jax.Array) and len(series) == 3
        for v, ds in zip(vs, series):
            for j, d in enumerate(ds, 1):
                assert isinstance(d, jax.Array)
                np.testing.assert_allclose(d, np.exp(0.5 * X1) * 0.5**j * np.asarray(v) ** j * [1, 2, 3], rtol=RTOL)


def test_float32():
    x = np.array([0.3, -0.2], np.float32)
    ds = di.taylor_coefficients(lambda x: jnp.sum(jnp.exp(x)), B, x, np.ones(2, np.float32), order=4)
    for d in ds:
        assert d.dtype == np.float32
        np.testing.assert_allclose(d, np.sum(np.exp(x)), rtol=1e-5)
    lap = di.laplacian(lambda x: jnp.sum(jnp.sin(x)), B, x)
    assert lap.dtype == np.float32
    np.testing.assert_allclose(lap, -np.sum(np.sin(x)), rtol=1e-5)


def _loop(x):  # a scan (no jet rule): the collapsed Laplacian applies nested jvps to the loop as a whole
    return jax.lax.fori_loop(0, 3, lambda i, h: jnp.tanh(h * 1.5), x)


LAPLACIAN_CASES = {
    "scalar": lambda x: jnp.sum(jnp.sin(x) * x**2) + x[0] * x[1] * x[2] / (1 + x @ x),
    "tanh mlp": mlp,
    # a vector f, with an inner jit, a custom_jvp function and a loop
    "vector": lambda x: jnp.tanh(jnp.outer(x, x)).sum(0) * jax.jit(jnp.sin)(x) + jax.nn.softplus(x) + _loop(x),
}


@pytest.mark.parametrize("name", list(LAPLACIAN_CASES))
def test_laplacian_is_the_trace_of_the_hessian(name):
    f = LAPLACIAN_CASES[name]
    prep = di.prepare_laplacian(f, B, X0)
    # di.hessian, prepared (unprepared, it would run eagerly: seconds)
    hessians = (
        di.prepare_hessian(lambda x: jnp.reshape(f(x), (-1,))[0], B, X0).hessian(X1) if name == "scalar" else None
    )
    hessians = np.asarray(jax.jit(jax.hessian(f))(X1)) if hessians is None else hessians
    jacobian = np.asarray(jax.jit(jax.jacfwd(f))(X1))
    for _ in range(2):
        lap = prep.laplacian(X1)
        np.testing.assert_allclose(lap, np.trace(hessians, axis1=-2, axis2=-1), rtol=RTOL, atol=1e-12)
        y, jac, lap2 = prep.value_gradient_and_laplacian(X1)
        np.testing.assert_allclose(y, np.asarray(f(X1)), rtol=RTOL)
        np.testing.assert_allclose(jac, jacobian, rtol=RTOL, atol=1e-12)
        np.testing.assert_allclose(lap2, lap, rtol=RTOL)


def test_laplacian_of_matrix_input_native_and_contexts_and_hutchinson():
    f = lambda x, a: jnp.sum(jnp.exp(x * a)) + jnp.sum(x[0] ** 3)  # x of shape (2, 3)
    x0, x1, a = jnp.asarray(X0 * np.ones((2, 1))), jnp.asarray(X1 * [[1.0], [2.0]]), jnp.asarray(0.7)
    prep = di.prepare_laplacian(f, B, x0, di.Constant(a))
    expected = 0.49 * np.sum(np.exp(0.7 * np.asarray(x1))) + np.sum(6 * np.asarray(x1)[0])
    for _ in range(2):
        _, g, lap = prep.value_gradient_and_laplacian(x1, di.Constant(a))
        assert isinstance(lap, jax.Array) and g.shape == (2, 3)
        np.testing.assert_allclose(lap, expected, rtol=RTOL)
    estimate = di.laplacian(lambda x: jnp.sum(x**2), B, X1, method="hutchinson", samples=4, seed=0)
    np.testing.assert_allclose(estimate, 6.0, rtol=RTOL)  # Hutchinson is exact for a multiple of I


def test_unprepared_and_without_jit():
    f = lambda x: jnp.sum(jnp.cos(x) ** 2)
    expected = -2 * np.sum(np.cos(2 * X1))
    for backend in (B, di.AutoJAX(jit=False)):
        np.testing.assert_allclose(di.laplacian(f, backend, X1), expected, rtol=RTOL)
        (_, d2) = di.taylor_coefficients(f, backend, X1, np.ones(3), order=2)
        np.testing.assert_allclose(d2, expected, rtol=RTOL)
