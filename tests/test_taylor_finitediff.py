"""AutoFiniteDiff: Taylor coefficients (orders 1 to 4) and exact Laplacians by central differences with
Richardson extrapolation, against analytic references, with finite-difference tolerances; the error
estimate in the preparation's report covers the true error in at least 95% of cases."""

from __future__ import annotations

import math
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import diface as di

FD = di.AutoFiniteDiff()
RNG = np.random.default_rng(7)
W1, B1 = RNG.standard_normal((4, 3)) / 2, RNG.standard_normal(4) / 2
W2 = RNG.standard_normal((2, 4)) / 2
A = np.array([0.5, -0.3, 0.8])
POLY = np.polynomial.Polynomial([-7.0, 1.0, 0.0, -2.0, 0.0, 3.0])  # 3u⁵ - 2u³ + u - 7


def tolerance(order: int, dtype=np.float64) -> float:
    """The kit's tolerance for results accurate to eps ** a: 300 eps^a (diface.testing._check.tolerances)."""
    return 300 * float(np.finfo(dtype).eps) ** FD.taylor_accuracy_exponent(order)


# -- analytic references: d_j = d^j/dt^j f(x + t v) at t = 0 -----------------------------------------------
def _tanh_derivative_polys(k: int) -> list:
    """P_j with tanh^(j)(u) = P_j(tanh u): P_0 = t, P_(j+1) = P_j'(t) (1 - t²)."""
    polys = [np.polynomial.Polynomial([0.0, 1.0])]
    for _ in range(k):
        polys.append(polys[-1].deriv() * np.polynomial.Polynomial([1.0, 0.0, -1.0]))
    return polys


TANH = _tanh_derivative_polys(4)


def _exp_sin_series(x, v, k):
    """Taylor coefficients (divided by j!) of exp(sin(x + t v)) by composing power series."""
    s = [np.sin(x + j * np.pi / 2) * v**j / math.factorial(j) for j in range(k + 1)]
    e = [np.exp(s[0])]
    for j in range(1, k + 1):
        e.append(sum(i * s[i] * e[j - i] for i in range(1, j + 1)) / j)
    return e


def _rational(u, j):
    """d^j/du^j 1 / (1 + u²) = Im((-1)^j j! (u - i)^-(j+1))."""
    return np.imag((-1) ** j * math.factorial(j) * (u - 1j) ** -(j + 1))


CASES = {
    "exp": (np.exp, lambda x, v, j: np.exp(x) * v**j),
    "sin": (np.sin, lambda x, v, j: np.sin(x + j * np.pi / 2) * v**j),
    "polynomial": (POLY, lambda x, v, j: POLY.deriv(j)(x) * v**j),
    "rational": (lambda x: 1 / (1 + np.dot(A, x) ** 2), lambda x, v, j: _rational(np.dot(A, x), j) * np.dot(A, v) ** j),
    "composition": (
        lambda x: np.exp(np.sin(x)),
        lambda x, v, j: _exp_sin_series(x, v, j)[j] * math.factorial(j),
    ),
    "tanh_mlp": (
        lambda x: W2 @ np.tanh(W1 @ x + B1),
        lambda x, v, j: W2 @ (TANH[j](np.tanh(W1 @ x + B1)) * (W1 @ v) ** j),
    ),
}


def point(seed: int):
    rng = np.random.default_rng(seed)
    return rng.uniform(-1.5, 1.5, 3), rng.uniform(-1.0, 1.0, 3)


def check_close(got, want, order, dtype=np.float64):
    tol = tolerance(order, dtype)
    assert np.allclose(got, want, rtol=tol, atol=tol), (order, np.max(np.abs(got - want)), tol)


# -- values ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", list(CASES))
def test_values_against_analytic(name):
    f, ref = CASES[name]
    x0, v0 = point(0)
    x, v = point(1)
    prep = di.prepare_taylor(f, FD, x0, v0, order=4)  # prepared at one point, called at another
    for _ in range(2):  # each call twice
        y, series = prep.taylor(x, v)
        assert len(series) == 4
        np.testing.assert_allclose(y, f(x), rtol=1e-15)
        for j, d in enumerate(series, 1):
            check_close(d, ref(x, v, j), j)
        coefficients = prep.taylor_coefficients(x, v)
        for a, b in zip(coefficients, series):
            np.testing.assert_array_equal(a, b)


def test_error_estimate_covers_the_true_error():
    """The report's estimate bounds the true error in >= 95% of cases: six analytic functions, 8 points and
    directions each, orders 1 to 4, every element of y (float64)."""
    covered = total = 0
    per_order = np.zeros((2, 4))
    for f, ref in CASES.values():
        prep = di.prepare_taylor(f, FD, *point(0), order=4)
        for seed in range(8):
            x, v = point(100 + seed)
            v = v * (0.3 + 2 * (seed % 3) / 2)  # directions of several lengths
            _, series = prep.taylor(x, v)
            for j, (d, e) in enumerate(zip(series, prep.report.error[0]), 1):
                assert isinstance(e, np.ndarray) and e.shape == np.shape(f(x))
                hit = np.abs(d - ref(x, v, j)) <= e
                covered, total = covered + int(np.sum(hit)), total + hit.size
                per_order[:, j - 1] += (np.sum(hit), hit.size)
    assert total >= 400
    assert covered / total >= 0.95, per_order
    assert np.all(per_order[0] / per_order[1] >= 0.9), per_order


def test_order_one_is_the_pushforward_and_order_two_the_hvp():
    f = lambda x: np.sum(np.exp(np.sin(x)) * x)
    x, v = point(3)
    d1, d2 = di.taylor_coefficients(f, FD, x, v, order=2)
    check_close(d1, di.pushforward(f, di.AutoTape(), x, v), 1)
    first = 300 * float(np.finfo(np.float64).eps) ** FD.accuracy_exponent  # FD's pushforward: eps^(2/3)
    assert abs(d1 - di.pushforward(f, FD, x, v)) < first
    check_close(d2, np.dot(v, di.hvp(f, di.AutoTape(), x, v)), 2)
    assert abs(d2 - np.dot(v, di.hvp(f, FD, x, v))) < 1e-6  # nested differences: about eps^(4/9)


def test_tuple_of_directions_and_a_constant_context():
    f = lambda x, c: c * np.exp(x)
    x, _ = point(4)
    vs = (np.array([1.0, 0.0, 0.0]), np.array([0.5, -1.0, 2.0]), np.zeros(3))
    prep = di.prepare_taylor(f, FD, x, vs, di.Constant(2.0), order=3)
    for _ in range(2):
        _, series = prep.taylor(x, vs, di.Constant(3.0))
        assert len(series) == 3 and len(prep.report.error) == 3
        for v, coefficients in zip(vs, series):
            for j, d in enumerate(coefficients, 1):
                check_close(d, 3.0 * np.exp(x) * v**j, j)
    assert all(np.all(d == 0) for d in series[2])  # a zero direction: exact zeros
    assert prep.evaluations == di.backends.finitediff.EvaluationCount(3 * 14 + 1, 3 * 14 + 1)


def test_float32_and_scalar_x():
    x, v = point(5)
    prep = di.prepare_taylor(np.exp, FD, x.astype(np.float32), v.astype(np.float32), order=4)
    ds = prep.taylor_coefficients(x.astype(np.float32), v.astype(np.float32))
    for j, (d, e) in enumerate(zip(ds, prep.report.error[0]), 1):
        assert d.dtype == np.float32
        want = np.exp(x) * v**j
        if j <= 2:  # orders 3 and 4 keep few digits in float32 (the estimate says how few)
            assert np.allclose(d, want, rtol=tolerance(j, np.float32), atol=tolerance(j, np.float32))
        assert np.all(np.abs(d - want) <= e)
    _, (d1, d2, d3, d4) = di.taylor(np.sin, FD, 0.5, 2.0, order=4)
    check_close(np.array([d1, d2, d3, d4]), [2 * np.cos(0.5), -4 * np.sin(0.5), -8 * np.cos(0.5), 16 * np.sin(0.5)], 4)


def test_batched_evaluation_gives_the_serial_values():
    f = lambda x: np.tanh(x @ W1.T + B1) @ W2.T  # one point or a stack of them
    x, v = point(6)
    serial = di.prepare_taylor(f, FD, x, v, order=4)
    vec = di.prepare_taylor(f, di.AutoFiniteDiff(vectorized=True), x, v, order=4)
    assert vec.evaluations.f_calls == 1
    want = serial.taylor(x, v)
    with ThreadPoolExecutor(2) as pool:
        pooled = di.taylor(f, di.AutoFiniteDiff(executor=pool), x, v, order=4)
    for got in (vec.taylor(x, v), pooled):  # a stacked matrix product may round differently
        np.testing.assert_allclose(got[0], want[0], rtol=1e-15)
        for j, (a, b) in enumerate(zip(got[1], want[1]), 1):
            check_close(a, b, j)


def test_orders_above_four_refused_at_preparation():
    calls = []

    def f(x):
        calls.append(1)
        return np.exp(x)

    with pytest.raises(di.NotSupportedError, match=r"AutoTape\(\)"):
        di.prepare_taylor(f, FD, np.ones(2), order=5)
    assert len(calls) <= 1  # the core's output spec; the engine evaluates nothing
    assert FD.taylor_accuracy_exponent(4) < FD.taylor_accuracy_exponent(1) <= 1


# -- Laplacians ------------------------------------------------------------------------------------------
def laplacian_tolerance() -> float:
    return 300 * float(np.finfo(np.float64).eps) ** FD.accuracy_exponent


def test_laplacian_is_the_trace_of_the_hessian():
    f = lambda x: np.sum(np.exp(np.sin(x)) * x) + np.prod(x)
    x0, _ = point(7)
    x, _ = point(8)
    prep = di.prepare_laplacian(f, FD, x0)
    tol = laplacian_tolerance()
    for _ in range(2):
        lap = prep.laplacian(x)
        assert abs(lap - np.trace(di.hessian(f, di.AutoTape(), x))) < tol * max(1, abs(lap))
        y, g, lap2 = prep.value_gradient_and_laplacian(x)
        assert y == f(x) and lap2 == lap
        np.testing.assert_allclose(g, di.gradient(f, di.AutoTape(), x), rtol=tol, atol=tol)
    assert prep.evaluations.points == 4 * 3 + 1


def test_laplacian_of_a_vector_function_elementwise():
    f = lambda x: np.tanh(x @ W1.T + B1)
    x, _ = point(9)
    want = np.array([np.trace(di.hessian(lambda x, i=i: f(x)[i], di.AutoTape(), x)) for i in range(4)])
    tol = laplacian_tolerance()
    for backend in (FD, di.AutoFiniteDiff(vectorized=True)):
        _, jac, lap = di.value_gradient_and_laplacian(f, backend, x)
        np.testing.assert_allclose(lap, want, rtol=tol, atol=tol)
        np.testing.assert_allclose(jac, di.jacobian(f, di.AutoTape(), x), rtol=tol, atol=tol)
    # Hutchinson's estimate still goes through the engine's Taylor coefficients
    est = di.laplacian(f, FD, x, method="hutchinson", samples=64, seed=0)
    assert np.all(np.abs(est - want) < 1.0)


def test_native_arrays_of_another_library():
    torch = pytest.importorskip("torch")
    x, v = point(10)
    xt, vt = torch.tensor(x), torch.tensor(v)
    _, ds = di.taylor(torch.exp, FD, xt, vt, order=3)
    assert isinstance(ds[2], torch.Tensor)
    check_close(ds[2].numpy(), np.exp(x) * v**3, 3)
    lap = di.laplacian(lambda x: torch.sum(torch.sin(x)), FD, xt)
    assert abs(float(lap) + np.sum(np.sin(x))) < laplacian_tolerance()
