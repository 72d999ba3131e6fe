"""AutoTape on NumPy code as people write it (issue 30): conversions of traced arrays stay traced, arrays f
creates are buffers it may fill with traced values, numbers taken out of the tape keep their derivative
or raise, SciPy's C solvers and pandas objects raise a clear error, and nothing is patched outside the
recording. Each function is compared with the same function written without the idiom, on the tape,
prepared at one point and called at another, each call twice."""

from __future__ import annotations

import math
import threading
from math import exp as math_exp
from math import sqrt as math_sqrt

import numpy as np
import pytest
from numpy import asarray, ones, sqrt, zeros

import diface as di

TAPE = di.AutoTape()
MODES = (di.AutoTape(mode="forward"), di.AutoTape(mode="reverse"))
X = np.array([0.7, -0.4, 1.3])
X0 = np.array([0.2, 0.5, -0.9])  # where the preparations are made


def _rhs(y: np.ndarray, p: np.ndarray) -> np.ndarray:
    return np.array([y[1], -p[0] * y[0] - p[1] * y[1] + p[2]])


def trajectory(p):
    """Explicit Euler into a buffer made with np.zeros, row by row (the issue's idiom)."""
    n, h = 12, 0.1
    p = np.asarray(p, dtype=float)
    Y = np.zeros((n + 1, 2))
    Y[0] = [1.0, 0.0]
    for i in range(n):
        Y[i + 1] = Y[i] + h * _rhs(Y[i], p)
    return Y[:, 0] ** 2 + Y[:, 1]


def trajectory_stacked(p):
    n, h = 12, 0.1
    y = np.array([1.0, 0.0])
    rows = [y]
    for _ in range(n):
        y = y + h * np.stack([y[1], -p[0] * y[0] - p[1] * y[1] + p[2]])
        rows.append(y)
    Y = np.stack(rows)
    return Y[:, 0] ** 2 + Y[:, 1]


def assembly(p):
    """Finite-element style assembly with np.add.at into np.zeros, then a solve."""
    k = np.exp(p)  # three element stiffnesses
    K = zeros((4, 4))
    for e in range(3):
        idx = (np.array([e, e, e + 1, e + 1]), np.array([e, e + 1, e, e + 1]))
        np.add.at(K, idx, k[e] * np.array([1.0, -1.0, -1.0, 1.0]))
    K[0, :] = 0.0
    K[0, 0] = 1.0
    return np.linalg.solve(K, np.array([0.0, 1.0, 1.0, 1.0]))


def assembly_dense(p):
    k = np.exp(p)
    K = np.stack(
        [
            np.stack([1.0 + 0 * k[0], 0 * k[0], 0 * k[0], 0 * k[0]]),
            np.stack([-k[0], k[0] + k[1], -k[1], 0 * k[0]]),
            np.stack([0 * k[0], -k[1], k[1] + k[2], -k[2]]),
            np.stack([0 * k[0], 0 * k[0], -k[2], k[2]]),
        ]
    )
    return np.linalg.solve(K, np.array([0.0, 1.0, 1.0, 1.0]))


def writes(x):
    """Every way of writing into a buffer: masks, in-place operators, add.at, copyto, put, out=, views."""
    b = np.empty(6)
    b[...] = 0.5
    b[:3] = x * 2
    b[3:] += x**2
    b[b > 1.0] = 1.0 + 0 * b[b > 1.0]  # a constant mask at the points used (guarded count)
    c = np.ones_like(np.arange(6.0))
    np.copyto(c, b * x[0])
    np.put(c, [0, 5], [x[1], x[2] ** 3])
    d = np.full(6, 2.0)
    np.multiply(c, b, out=d)
    row = d[2:4]
    row[:] = row * x[2]
    e = np.copy(np.linspace(0.0, 1.0, 6))
    e *= d
    return e + ones(6) * x[0]


def writes_pure(x):
    b = np.concatenate([x * 2, 0.5 + x**2])
    b = np.where(b > 1.0, 1.0, b)
    c = b * x[0]
    c = np.concatenate([x[1:2], c[1:5], x[2:3] ** 3])
    d = c * b
    d = np.concatenate([d[:2], d[2:4] * x[2], d[4:]])
    return np.linspace(0.0, 1.0, 6) * d + x[0]


def conversions(x):
    """What libraries do first with their inputs, by attribute and by name."""
    a, b = tuple(map(np.asarray, (x, x[::-1])))
    c = np.atleast_1d(np.asanyarray(x[0], dtype=np.float64)) + np.float64(x[0]) - np.float64(x)[0]
    d = np.ascontiguousarray(x.T) + np.asfortranarray(x) + asarray(x, float)
    e = np.array(x, copy=True, ndmin=2)[0]
    e[0] = 3.0  # writing into the copy leaves x as it is
    return a * b + c + d + e + x * np.asarray(x > 0, dtype=float) + sqrt(asarray([0.5, x[1] ** 2, x[2] ** 2]))


def conversions_pure(x):
    e = np.concatenate([np.array([3.0]), x[1:]])
    return x * x[::-1] + x[0] + 3 * x + e + x * (x > 0) + np.sqrt(np.stack([0.5 + 0 * x[0], x[1] ** 2, x[2] ** 2]))


def escapes(x):
    """Numbers taken out of the tape that keep their derivative."""
    s = sum(v**2 for v in x.tolist())
    hypot = math.hypot(x[0], x[1])
    return np.stack([math_exp(x[0]) + s, math.log(x[2] ** 2) * x.item(1), math_sqrt(x[2] ** 2) + hypot])


def escapes_pure(x):
    s = np.sum(x**2)
    return np.stack([np.exp(x[0]) + s, np.log(x[2] ** 2) * x[1], np.abs(x[2]) + np.sqrt(x[0] ** 2 + x[1] ** 2)])


PAIRS = {
    "trajectory": (trajectory, trajectory_stacked, np.array([2.0, 0.3, 0.1]), np.array([1.5, 0.2, 0.0])),
    "assembly": (assembly, assembly_dense, np.array([0.1, -0.3, 0.4]), np.array([0.0, 0.2, -0.1])),
    "writes": (writes, writes_pure, np.array([0.2, 0.3, 0.45]), np.array([0.1, 0.25, 0.4])),
    "conversions": (conversions, conversions_pure, X, np.array([0.5, -0.2, 1.1])),
    "escapes": (escapes, escapes_pure, X, X0),
}


@pytest.mark.parametrize("name", PAIRS)
def test_the_idiom_gives_what_the_pure_function_gives(name):
    f, pure, x, x0 = PAIRS[name]
    expected = di.jacobian(pure, TAPE, x)
    np.testing.assert_allclose(f(x), pure(x), rtol=1e-13)  # the functions agree outside the tape
    for backend in MODES:
        prep = di.prepare_jacobian(f, backend, x0)
        for _ in range(2):
            np.testing.assert_allclose(prep.jacobian(x), expected, rtol=1e-12, atol=1e-14)
            np.testing.assert_allclose(di.jacobian(f, backend, x), expected, rtol=1e-12, atol=1e-14)
    tx = (np.ones_like(x), np.arange(1.0, 1.0 + x.size))
    got = di.prepare_pushforward(f, TAPE, x0, tx).pushforward(x, tx)
    same_point = di.prepare_pushforward_same_point(f, TAPE, x, tx).pushforward(x, tx)
    pulled = di.prepare_pullback_same_point(f, TAPE, x, tuple(expected @ t for t in tx))
    for t, ty, ty_same, tx_back in zip(tx, got, same_point, pulled.pullback(x, tuple(expected @ t for t in tx))):
        np.testing.assert_allclose(ty, expected @ t, rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(ty_same, expected @ t, rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(tx_back, (expected @ t) @ expected, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name", ["trajectory", "writes", "assembly"])
def test_second_order_taylor_and_sparsity_through_buffers(name):
    f, pure, x, x0 = PAIRS[name]
    scalar, scalar_pure = (lambda v: np.sum(f(v) ** 2)), (lambda v: np.sum(pure(v) ** 2))
    prep = di.prepare_hessian(scalar, TAPE, x0)
    expected = di.hessian(scalar_pure, TAPE, x)
    for _ in range(2):
        np.testing.assert_allclose(prep.hessian(x), expected, rtol=1e-10, atol=1e-12)
    t = np.array([1.0, -1.0, 0.5])
    _, (_d1, d2) = di.taylor(scalar, TAPE, x, t, order=2)
    np.testing.assert_allclose(d2, t @ expected @ t, rtol=1e-10)
    # a traced mask decides a count (writes): no global pattern, the pattern at the point instead
    detector = di.DenseSparsityDetector(TAPE) if name == "writes" else di.TracerSparsityDetector()
    sparse = di.AutoSparse(TAPE, sparsity_detector=detector)
    np.testing.assert_allclose(di.jacobian(f, sparse, x).toarray(), di.jacobian(pure, TAPE, x), rtol=1e-12, atol=1e-14)


def test_float_of_a_value_that_depends_on_x_raises_naming_the_line():
    for f in (lambda x: float(x[0]) ** 2 + x[1], lambda x: complex(x[0]).real):
        with pytest.raises(di.NotSupportedError, match=r"test_tape_real_code\.py:\d+") as info:
            di.gradient(lambda x, f=f: np.sum(f(x)), TAPE, X)
        assert "derivative" in str(info.value)
    # of a Constant it is a guard (no derivative is lost): a new value records f again
    g = lambda x, c: x[0] * float(c[0])
    prep = di.prepare_gradient(g, TAPE, X, di.Constant(np.array([2.0])))
    np.testing.assert_allclose(prep.gradient(X0, di.Constant(np.array([2.0]))), [2.0, 0.0, 0.0])
    with pytest.raises(di.TapeMismatchError):
        prep.gradient(X0, di.Constant(np.array([3.0])))


def test_scipys_c_solvers_and_pandas_raise_a_clear_error():
    optimize = pytest.importorskip("scipy.optimize")
    integrate = pytest.importorskip("scipy.integrate")
    pd = pytest.importorskip("pandas")
    cases = {
        "optimize.least_squares": lambda p: optimize.least_squares(lambda y: y**3 + p[0] * y - 1.0, [0.5]).x[0],
        "integrate.dblquad": lambda p: integrate.dblquad(lambda u, t: np.exp(-p[0] * t * u), 0.0, 1.0, 0.0, 1.0)[0],
        "integrate.odeint": lambda p: integrate.odeint(lambda y, t: -p[0] * y, [1.0], [0.0, 1.0])[-1, 0],
    }
    for name, f in cases.items():
        with pytest.raises(di.NotSupportedError, match=rf"scipy\.{name}.*test_tape_real_code\.py:\d+"):
            di.gradient(f, TAPE, np.array([2.0]))
    # a callback of constants runs as usual; newton is pure Python and is recorded
    const = lambda p: p[0] * optimize.brentq(lambda y: y**3 + 2 * y - 1.0, 0.0, 2.0)
    root = optimize.brentq(lambda y: y**3 + 2 * y - 1.0, 0.0, 2.0)
    np.testing.assert_allclose(di.gradient(const, TAPE, np.array([2.0])), [root])
    newton = lambda p: optimize.newton(lambda y: y**3 + p[0] * y - 1.0, 0.5, tol=1e-14)
    y = optimize.newton(lambda y: y**3 + 2.0 * y - 1.0, 0.5, tol=1e-14)
    np.testing.assert_allclose(di.gradient(newton, TAPE, np.array([2.0])), [-y / (3 * y**2 + 2)], rtol=1e-10)
    s = pd.Series([1.0, 2.0, 3.0])
    for f in (lambda x: np.sum(x * s), lambda x: np.sum(s * x)):
        with pytest.raises(di.NotSupportedError, match="pandas Series"):
            di.gradient(f, TAPE, X)
    with pytest.raises(AttributeError, match="iloc") as info:
        di.gradient(lambda x: (x * 2).iloc[0], TAPE, X)
    assert isinstance(info.value, di.NotSupportedError)


def test_nothing_is_patched_outside_the_recording_thread():
    originals = (np.zeros, np.asarray, math.exp, zeros, asarray, math_exp)
    seen: dict[str, object] = {}
    started, release = threading.Event(), threading.Event()

    def other_thread():
        started.wait(60)
        seen["zeros"] = type(np.zeros(2))  # a recording is in progress in the main thread
        seen["asarray"] = type(asarray([1.0]))
        seen["exp"] = math.exp(0.0)
        release.set()

    def f(x):
        started.set()
        release.wait(60)
        return np.sum(np.zeros(3) + x)

    worker = threading.Thread(target=other_thread)
    worker.start()
    np.testing.assert_allclose(di.gradient(f, TAPE, X), np.ones(3))
    worker.join()
    assert seen == {"zeros": np.ndarray, "asarray": np.ndarray, "exp": 1.0}
    assert (np.zeros, np.asarray, math.exp, zeros, asarray, math_exp) == originals

    def fails(x):
        raise RuntimeError("f's own error")

    with pytest.raises(RuntimeError, match="f's own error"):
        di.gradient(fails, TAPE, X)
    assert (np.zeros, np.asarray, math.exp, zeros, asarray, math_exp) == originals
    assert type(np.zeros(2)) is np.ndarray and type(zeros(2)) is np.ndarray


def test_a_cache_keeps_its_meaning_and_a_buffer_leaves_no_trace():
    def f(x, buf):
        buf[...] = x * 2  # the Cache: scratch
        out = np.zeros_like(buf)
        out[0] = buf[0] * x[1]
        return out + buf

    cache = np.full(3, 7.0)
    expected = np.diag([2.0, 2.0, 2.0])
    expected[0] += [2 * X[1], 2 * X[0], 0.0]
    prep = di.prepare_jacobian(f, TAPE, X0, di.Cache(cache))
    for _ in range(2):
        np.testing.assert_allclose(prep.jacobian(X, di.Cache(cache)), expected)
    assert np.all(cache == 7.0)


def test_recordings_in_eight_threads_at_once():
    """Each thread records its own f with buffers, conversions and math at the same time; the results are
    those of the calls made one after another, and nothing stays patched."""
    from concurrent.futures import ThreadPoolExecutor

    barrier = threading.Barrier(8)

    def f(x, k):
        barrier.wait(60)  # all eight recordings in progress together (a deadlock would break it)
        y = zeros(3)
        y[:] = np.asarray(x) * k + math.exp(x[0])
        return np.sum(y**2)

    def grad(k: int) -> np.ndarray:
        return di.gradient(f, TAPE, X, di.Constant(float(k)))

    with ThreadPoolExecutor(8) as pool:
        got = list(pool.map(grad, range(8)))
    for k, g in enumerate(got):
        y = X * k + math.exp(X[0])
        expected = 2 * y * k
        expected[0] += np.sum(2 * y) * math.exp(X[0])
        np.testing.assert_allclose(g, expected, rtol=1e-13)
    assert type(np.zeros(2)) is np.ndarray and np.asarray is asarray and math.exp is math_exp
