"""Taylor coefficients and Laplacians on AutoTensorFlow, AutoMLX, AutoPyTensor and AutoAutograd (each
skipped where its package is missing): analytic series up to order six, prepared at one point and
called at another (twice), agreement with pushforward, hvp and the Hessian's trace, batches of
directions with a Constant context, native and NumPy arrays, float32.

TensorFlow, MLX and PyTensor have Taylor kernels of their own (nested forward mode in one compiled
program); autograd keeps the core's nested pushforwards. MLX's float64 exp, sin and tanh are float32
approximations (relative error ~1e-8), so its transcendental references are checked to 1e-6 only.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from math import factorial
from typing import Any

import numpy as np
import pytest

import diface as di


@dataclass(frozen=True)
class Engine:
    name: str
    package: str
    backend: Any
    exact: float  # relative tolerance of transcendental references (polynomials and rationals: 1e-10)
    order: int  # the highest order tested (compiling deeper nestings costs seconds: see the backends)
    elementwise_order: int  # that of the elementwise series (TensorFlow: its tracing costs most there)

    @property
    def ns(self) -> Any:
        return _NAMESPACES[self.name]()


def _tf() -> Any:
    import tensorflow as tf

    return dict(
        exp=tf.exp,
        sin=tf.sin,
        tanh=tf.tanh,
        sum=tf.reduce_sum,
        concat=lambda parts: tf.concat(parts, 0),
        const=tf.constant,
        native=tf.constant,
        native_type=tf.Tensor,
    )


def _mlx() -> Any:
    import mlx.core as mx

    def const(a: Any) -> Any:
        a = np.asarray(a)
        return mx.array(a, dtype=mx.float64 if a.dtype == np.float64 else mx.float32)

    return dict(
        exp=mx.exp,
        sin=mx.sin,
        tanh=mx.tanh,
        sum=mx.sum,
        concat=lambda parts: mx.concatenate(parts),
        const=const,
        native=const,
        native_type=mx.array,
    )


def _pytensor() -> Any:
    import pytensor.tensor as pt

    return dict(exp=pt.exp, sin=pt.sin, tanh=pt.tanh, sum=pt.sum, concat=pt.concatenate, const=np.asarray)


def _autograd() -> Any:
    import autograd.numpy as anp

    return dict(exp=anp.exp, sin=anp.sin, tanh=anp.tanh, sum=anp.sum, concat=anp.concatenate, const=np.asarray)


_NAMESPACES = {"tensorflow": _tf, "mlx": _mlx, "pytensor": _pytensor, "autograd": _autograd}

_ALL = [
    Engine("tensorflow", "tensorflow", lambda: di.AutoTensorFlow(), 1e-10, 3, 2),
    Engine("mlx", "mlx", lambda: di.AutoMLX(), 1e-6, 4, 4),
    Engine("pytensor", "pytensor", lambda: di.AutoPyTensor(), 1e-10, 4, 4),
    Engine("autograd", "autograd", lambda: di.AutoAutograd(), 1e-10, 6, 6),
]
ENGINES = [
    pytest.param(
        e,
        id=e.name,
        marks=pytest.mark.skipif(importlib.util.find_spec(e.package) is None, reason=f"{e.package} not installed"),
    )
    for e in _ALL
]

X0 = np.array([0.3, -0.2, 0.5, 0.1, 0.7, -0.4, 0.2, 0.6])
X1 = np.array([-0.1, 0.4, 0.2, -0.6, 0.3, 0.5, -0.3, 0.9])
V = np.array([1.0, -0.5, 2.0, 0.3, -1.5, 0.8, 1.2, -0.7])


def _close(actual: Any, expected: Any, rtol: float) -> None:
    actual, expected = np.asarray(actual), np.asarray(expected)
    scale = max(1.0, float(np.max(np.abs(expected))))
    np.testing.assert_allclose(actual, expected, rtol=0, atol=rtol * scale)


def _elementwise(ns: dict) -> Any:
    """exp, sin, x⁵ and 1/(2+x), each on two entries, concatenated (x⁵ as products: TensorFlow traces
    NumPy-behavior powers as function calls, which nested accumulators take seconds over)."""

    def f(z: Any) -> Any:
        p = z[4:6]
        return ns["concat"]([ns["exp"](z[0:2]), ns["sin"](z[2:4]), p * p * p * p * p, 1.0 / (2.0 + z[6:8])])

    return f


def _elementwise_series(x: np.ndarray, v: np.ndarray, j: int) -> tuple[np.ndarray, np.ndarray]:
    """dʲ/dtʲ of `_elementwise` along v: (the exp and sin entries, the polynomial and rational ones)."""
    e, s, p, r = (slice(2 * i, 2 * i + 2) for i in range(4))
    transcendental = np.concatenate([v[e] ** j * np.exp(x[e]), v[s] ** j * np.sin(x[s] + j * np.pi / 2)])
    poly = v[p] ** j * x[p] ** (5 - j) * (factorial(5) / factorial(5 - j) if j <= 5 else 0.0)
    rational = (-1) ** j * factorial(j) * v[r] ** j / (2.0 + x[r]) ** (j + 1)
    return transcendental, np.concatenate([poly, rational])


@pytest.mark.parametrize("engine", ENGINES)
def test_elementwise_series(engine: Engine) -> None:
    f = _elementwise(engine.ns)
    k = engine.elementwise_order
    prep = di.prepare_taylor(f, engine.backend(), X0, order=k)
    for _ in range(2):
        y, series = prep.taylor(X1, V)
        assert len(series) == k
        _close(y[:4], np.concatenate([np.exp(X1[:2]), np.sin(X1[2:4])]), engine.exact)
        for j, d in enumerate(series, 1):
            transcendental, algebraic = _elementwise_series(X1, V, j)
            _close(d[:4], transcendental, engine.exact)
            _close(d[4:], algebraic, 1e-10)
    coefficients = prep.taylor_coefficients(X0, V)
    _close(coefficients[k - 1][4:], _elementwise_series(X0, V, k)[1], 1e-10)


def _mlp(ns: dict, seed: int = 0) -> tuple[Any, Any]:
    rng = np.random.default_rng(seed)
    w1, b1, w2 = rng.normal(size=(5, 8)) / 2, rng.normal(size=5), rng.normal(size=5)
    W1, B1, W2 = ns["const"](w1), ns["const"](b1), ns["const"](w2)

    def f(z: Any) -> Any:
        return ns["sum"](W2 * ns["tanh"](ns["sum"](W1 * z[None, :], axis=1) + B1))

    def series(x: np.ndarray, v: np.ndarray) -> list:
        t = np.tanh(w1 @ x + b1)
        b = w1 @ v
        s = 1 - t**2
        derivatives = [s, -2 * t * s, s * (6 * t**2 - 2), s * (16 * t - 24 * t**3)]
        return [float(w2 @ (b ** (j + 1) * d)) for j, d in enumerate(derivatives)]

    return f, series


def _composition(ns: dict) -> Any:
    return lambda z: ns["exp"](ns["sin"](z))


def _composition_series(x: np.ndarray, v: np.ndarray) -> list:
    """exp(sin(x + t v)) to order four (Faà di Bruno)."""
    f, c, s = np.exp(np.sin(x)), np.cos(x), np.sin(x)
    u1, u2, u3, u4 = v * c, -(v**2) * s, -(v**3) * c, v**4 * s
    return [
        f * u1,
        f * (u1**2 + u2),
        f * (u1**3 + 3 * u1 * u2 + u3),
        f * (u1**4 + 6 * u1**2 * u2 + 3 * u2**2 + 4 * u1 * u3 + u4),
    ]


@pytest.mark.parametrize("engine", ENGINES)
def test_mlp_and_composition(engine: Engine) -> None:
    f, series = _mlp(engine.ns)
    k = min(engine.order, 4)
    prep = di.prepare_taylor(f, engine.backend(), X0, order=k)
    for _ in range(2):
        coefficients = prep.taylor_coefficients(X1, V)
        for d, expected in zip(coefficients, series(X1, V)[:k], strict=True):
            _close(d, expected, engine.exact)
    g = _composition(engine.ns)
    prep = di.prepare_taylor(g, engine.backend(), X0[:3], order=k)
    for _ in range(2):
        coefficients = prep.taylor_coefficients(X1[:3], V[:3])
        for d, expected in zip(coefficients, _composition_series(X1[:3], V[:3])[:k], strict=True):
            _close(d, expected, engine.exact)


@pytest.mark.parametrize("engine", ENGINES)
def test_low_orders_agree_with_pushforward_and_hvp(engine: Engine) -> None:
    backend = engine.backend()
    f, _ = _mlp(engine.ns)
    (d1, d2) = di.prepare_taylor(f, backend, X0, order=2).taylor_coefficients(X1, V)
    _close(d1, di.pushforward(f, backend, X1, V), 1e-12)
    _close(d2, V @ np.asarray(di.hvp(f, backend, X1, V)), 1e-12)


@pytest.mark.parametrize("engine", ENGINES)
def test_laplacian_is_the_trace_of_the_hessian(engine: Engine) -> None:
    backend = engine.backend()
    f, _ = _mlp(engine.ns)
    prep = di.prepare_laplacian(f, backend, X0)
    for _ in range(2):
        _close(prep.laplacian(X1), np.trace(np.asarray(di.hessian(f, backend, X1))), 1e-12)
    y, gradient, lap = di.value_gradient_and_laplacian(f, backend, X1, prep=prep)
    _close(y, di.value_and_gradient(f, backend, X1)[0], 1e-12)
    _close(gradient, di.gradient(f, backend, X1), 1e-12)
    _close(lap, np.trace(np.asarray(di.hessian(f, backend, X1))), 1e-12)

    # a vector f, elementwise: Δ(zᵢ³ + zᵢ Σ z²) = (10 + 2n) zᵢ
    ns = engine.ns
    g = lambda z: z * z * z + z * ns["sum"](z * z)
    prep = di.prepare_laplacian(g, backend, X0)
    for _ in range(2):
        _close(prep.laplacian(X1), (10 + 2 * X1.size) * X1, 1e-12)


@pytest.mark.parametrize("engine", ENGINES)
def test_directions_and_a_constant(engine: Engine) -> None:
    f = lambda z, c: c * z * z * z * z
    directions = (V, 2 * V, -V)
    prep = di.prepare_taylor(f, engine.backend(), X0, directions, di.Constant(np.float64(2.0)), order=2)
    for c in (3.0, 0.5):
        for _ in range(2):
            y, series = prep.taylor(X1, directions, di.Constant(np.float64(c)))
            _close(y, c * X1**4, 1e-12)
            assert len(series) == 3 and all(len(c) == 2 for c in series)
            for v, coefficients in zip(directions, series, strict=True):
                for j, d in enumerate(coefficients, 1):
                    _close(d, c * v**j * X1 ** (4 - j) * factorial(4) / factorial(4 - j), 1e-12)


@pytest.mark.parametrize("engine", ENGINES)
def test_native_arrays_and_float32(engine: Engine) -> None:
    ns = engine.ns
    f = lambda z: ns["sum"](ns["exp"](z) * z * z)
    x32, v32 = X1[:3].astype(np.float32), V[:3].astype(np.float32)
    expected = np.sum(v32.astype(np.float64) ** 2 * np.exp(X1[:3]) * (X1[:3] ** 2 + 4 * X1[:3] + 2))
    prep = di.prepare_taylor(f, engine.backend(), x32, order=2)
    d1, d2 = prep.taylor_coefficients(x32, v32)
    assert np.asarray(d2).dtype == np.float32
    _close(d2, expected, 1e-5)
    lap = di.laplacian(f, engine.backend(), x32)
    assert np.asarray(lap).dtype == np.float32
    _close(lap, np.sum(np.exp(X1[:3]) * (X1[:3] ** 2 + 4 * X1[:3] + 2)), 1e-5)
    native = ns.get("native")
    if native is None:
        return  # PyTensor and autograd compute on NumPy arrays
    x, v = native(X1[:3]), native(V[:3])
    prep = di.prepare_taylor(f, engine.backend(), x, order=3)
    for _ in range(2):
        y, (d1, d2, d3) = prep.taylor(x, v)
        assert all(isinstance(a, ns["native_type"]) for a in (y, d1, d2, d3))
        _close(np.asarray(d2), np.sum(V[:3] ** 2 * np.exp(X1[:3]) * (X1[:3] ** 2 + 4 * X1[:3] + 2)), engine.exact)
    lap = di.prepare_laplacian(f, engine.backend(), x).laplacian(x)
    assert isinstance(lap, ns["native_type"])
