"""Jacobian-inverse products (`inverse_pushforward`, `inverse_pullback`) and `jacobian_operator`, on every
engine: invertible maps of the kinds that use them (coupling layers, triangular maps, reversible blocks,
elementwise bijections, leapfrog steps), by each method, checked against a dense `np.linalg.solve`."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

import diface as di
from diface.testing import namespace_of

HAS_AUTOGRAD = importlib.util.find_spec("autograd") is not None
HAS_TORCH = importlib.util.find_spec("torch") is not None
HAS_JAX = importlib.util.find_spec("jax") is not None
HAS_SCIPY = importlib.util.find_spec("scipy") is not None

BACKENDS = [di.AutoFiniteDiff()]
BACKENDS += [di.AutoAutograd()] if HAS_AUTOGRAD else []
BACKENDS += [di.AutoTorch()] if HAS_TORCH else []
BACKENDS += [di.AutoJAX()] if HAS_JAX else []
BACKENDS += [di.AutoTape()]
BACKENDS += [di.AutoSparse(di.AutoTape())] if HAS_SCIPY else []


def _cat(xp, parts):
    return xp.cat(parts) if hasattr(xp, "cat") else xp.concatenate(parts)


# -- invertible maps, written once for every engine's array namespace `xp` -----------------------------
def coupling(xp, x):
    """RealNVP affine coupling: the second half scaled and shifted by functions of the first."""
    h = x.shape[0] // 2
    a, b = x[:h], x[h:]
    s = xp.tanh(0.5 * a + 0.2 * xp.sum(a))
    t = xp.sin(a) * 0.7
    return _cat(xp, [a, b * xp.exp(s) + t])


def triangular(xp, x):
    """A lower-bidiagonal (autoregressive) map with a positive diagonal."""
    return _cat(xp, [2.0 * x[:1], x[1:] * (1.5 + xp.tanh(x[:-1])) + x[:-1] ** 2])


def revnet(xp, x):
    """An additive reversible block (RevNet): y1 = x1 + F(x2), y2 = x2 + G(y1)."""
    h = x.shape[0] // 2
    x1, x2 = x[:h], x[h:]
    y1 = x1 + xp.tanh(0.7 * x2)
    y2 = x2 + 0.5 * xp.sin(y1)
    return _cat(xp, [y1, y2])


def elementwise(xp, x):
    """A strictly increasing elementwise bijection."""
    return xp.sinh(x) + 0.5 * x


def leapfrog(xp, x, h=0.3):
    """One leapfrog (velocity Verlet) step of a pendulum, (q, p) -> (q', p')."""
    n = x.shape[0] // 2
    q, p = x[:n], x[n:]
    p_half = p - 0.5 * h * xp.sin(q)
    q_new = q + h * p_half
    p_new = p_half - 0.5 * h * xp.sin(q_new)
    return _cat(xp, [q_new, p_new])


MAPS = [coupling, triangular, revnet, elementwise, leapfrog]
METHODS = ["dense", "krylov", "accumulate"]


def _f(fn, backend):
    xp = namespace_of(backend)
    return lambda x: fn(xp, x)


def _reference_jacobian(fn, x):
    return di.jacobian(lambda x: fn(np, x), di.AutoTape(), x)


def _tolerance(backend):
    return 1e-6 if isinstance(backend, di.AutoFiniteDiff) else 1e-9


def _prepare(prepare, *args, **kwargs):
    """A preparation, or a clean skip where the backend has no plan for method='accumulate'."""
    try:
        return prepare(*args, **kwargs)
    except di.NotSupportedError as e:
        if kwargs.get("method") == "accumulate":
            pytest.skip(f"no inverse-accumulation plan: {e}")
        raise


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("fn", MAPS, ids=lambda fn: fn.__name__)
@pytest.mark.parametrize("backend", BACKENDS, ids=repr)
def test_inverse_products(backend, fn, method):
    rng = np.random.default_rng(0)
    n = 8
    x0, x = rng.normal(size=n), rng.normal(size=n)
    v, w = rng.normal(size=n), rng.normal(size=n)
    f = _f(fn, backend)
    J = _reference_jacobian(fn, x)
    tol = _tolerance(backend)
    push = _prepare(di.prepare_inverse_pushforward, f, backend, x0, v, method=method)
    pull = _prepare(di.prepare_inverse_pullback, f, backend, x0, w, method=method)
    # "dense" factors a SciPy sparse Jacobian (AutoSparse, NumPy input here) by a sparse LU, and says so
    named = "sparse-lu" if method == "dense" and backend.sparse_results else method
    assert push.method == pull.method == named
    for _ in range(2):  # prepared at x0, used at x, twice
        dx = push.inverse_pushforward(x, v)
        dy = pull.inverse_pullback(x, w)
        np.testing.assert_allclose(J @ dx, v, rtol=tol, atol=tol)
        np.testing.assert_allclose(J.T @ dy, w, rtol=tol, atol=tol)
        np.testing.assert_allclose(dx, np.linalg.solve(J, v), rtol=100 * tol, atol=100 * tol)
        np.testing.assert_allclose(dy, np.linalg.solve(J.T, w), rtol=100 * tol, atol=100 * tol)
        assert np.dot(dx, w) == pytest.approx(np.dot(v, dy), rel=100 * tol)
    # the unprepared call and the value variant agree with the prepared one
    y, dx2 = di.value_and_inverse_pushforward(f, backend, x, v, method=method)
    np.testing.assert_allclose(y, fn(np, x), rtol=1e-12)
    np.testing.assert_allclose(dx2, dx, rtol=tol, atol=tol)


@pytest.mark.parametrize("backend", BACKENDS, ids=repr)
def test_auto_chooses_accumulate_where_there_is_a_plan(backend):
    x = np.linspace(0.1, 0.8, 6)
    f = _f(revnet, backend)
    try:
        di.prepare_inverse_pushforward(f, backend, x, x, method="accumulate")
        expected = "accumulate"
    except di.NotSupportedError as e:
        assert "AutoTape()" in str(e)  # the message says which backends have a plan
        expected = "dense"
    assert di.prepare_inverse_pushforward(f, backend, x, x).method == expected
    assert di.prepare_inverse_pullback_same_point(f, backend, x, x).method == expected


def test_auto_uses_krylov_for_large_n():
    n = 1200
    prep = di.prepare_inverse_pushforward(
        lambda x: 2.0 * x + 0.1 * np.sin(x), di.AutoFiniteDiff(), np.zeros(n), np.zeros(n)
    )
    assert prep.method == "krylov"
    dx = prep(np.zeros(n), np.ones(n))
    np.testing.assert_allclose(dx, np.full(n, 1 / 2.1), rtol=1e-6)


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("backend", BACKENDS, ids=repr)
def test_same_point_batched_and_out(backend, method):
    rng = np.random.default_rng(1)
    x = rng.normal(size=6)
    f = _f(coupling, backend)
    J = _reference_jacobian(coupling, x)
    tol = _tolerance(backend)
    ts = tuple(rng.normal(size=6) for _ in range(3))
    push = _prepare(di.prepare_inverse_pushforward_same_point, f, backend, x, ts, method=method)
    pull = _prepare(di.prepare_inverse_pullback_same_point, f, backend, x, ts, method=method)
    for _ in range(2):
        dxs = push(x, ts)
        assert isinstance(dxs, tuple) and len(dxs) == 3
        for dx, t in zip(dxs, ts):
            np.testing.assert_allclose(J @ dx, t, rtol=tol, atol=tol)
        bufs = tuple(np.zeros(6) for _ in ts)
        y, written = pull.value_and_inverse_pullback(x, ts, out=bufs)
        assert all(a is b for a, b in zip(written, bufs))
        np.testing.assert_allclose(y, coupling(np, x), rtol=1e-12)
        for dy, t in zip(bufs, ts):
            np.testing.assert_allclose(J.T @ dy, t, rtol=tol, atol=tol)
    with pytest.raises(di.PreparationMismatchError):
        push(x + 1.0, ts)  # a same-point preparation holds at its point only


def test_out_is_checked_before_anything_is_written():
    x = np.linspace(0.1, 0.6, 6)
    good, bad = np.full(6, 7.0), np.zeros(6, dtype=np.float32)
    with pytest.raises(di.ArgumentError):
        di.inverse_pushforward(np.sinh, di.AutoTape(), x, (x, x), out=(good, bad))
    assert np.all(good == 7.0)
    with pytest.raises(di.ShapeError):
        di.inverse_pushforward(np.sinh, di.AutoTape(), x, x, out=np.zeros(5))


@pytest.mark.parametrize("backend", BACKENDS, ids=repr)
def test_non_square_raises_shape_error(backend):
    f = lambda x: x[:3] * 2.0
    with pytest.raises(di.ShapeError, match="square"):
        di.inverse_pushforward(f, backend, np.ones(4), np.ones(3))
    with pytest.raises(di.ShapeError, match="square"):
        di.prepare_inverse_pullback(f, backend, np.ones(4), np.ones(4))


@pytest.mark.parametrize("method", ["dense", "accumulate"])
@pytest.mark.parametrize("backend", BACKENDS, ids=repr)
def test_singular_point_raises(backend, method):
    f = _f(lambda xp, x: x**3 + 0.0 * x, backend)
    x = np.array([1.0, 0.0, 2.0])  # f'(0) = 0
    prep = _prepare(di.prepare_inverse_pushforward, f, backend, np.ones(3), np.ones(3), method=method)
    assert prep(np.ones(3), np.ones(3)) == pytest.approx(np.full(3, 1 / 3))
    with pytest.raises(di.SingularError):
        prep(x, np.ones(3))
    with pytest.raises(di.SingularError):
        di.inverse_pullback(f, backend, x, np.ones(3), method=method)


def test_krylov_not_converging_raises():
    n = 30
    d = np.logspace(0, 8, n)  # condition number 1e8
    f = lambda x: d * x + 0.5 * np.roll(x, 1)
    with pytest.raises(di.ConvergenceError, match="maxiter=1") as info:
        di.inverse_pushforward(f, di.AutoTape(), np.zeros(n), np.ones(n), method="krylov", maxiter=1)
    assert "rtol" in str(info.value) and "method='dense'" in str(info.value)
    assert isinstance(info.value, ArithmeticError)


def test_settings_are_checked():
    x = np.ones(3)
    with pytest.raises(di.ArgumentError, match="unknown method"):
        di.inverse_pushforward(np.sinh, di.AutoTape(), x, x, method="lu")
    with pytest.raises(di.ArgumentError, match="rtol"):
        di.inverse_pullback(np.sinh, di.AutoTape(), x, x, method="krylov", rtol=0.0)
    with pytest.raises(di.ArgumentError, match="maxiter"):
        di.prepare_inverse_pushforward(np.sinh, di.AutoTape(), x, x, maxiter=0)
    prep = di.prepare_inverse_pushforward(np.sinh, di.AutoTape(), x, x, method="dense")
    with pytest.raises(di.PreparationMismatchError, match="method"):
        di.inverse_pushforward(np.sinh, di.AutoTape(), x, x, method="krylov", prep=prep)
    np.testing.assert_allclose(di.inverse_pushforward(np.sinh, di.AutoTape(), x, x, prep=prep), 1 / np.cosh(1.0))
    if HAS_TORCH:
        with pytest.raises(di.NotSupportedError, match="AutoTape"):
            di.inverse_pushforward(np.sinh, di.AutoTorch(), x, x, method="accumulate")


@pytest.mark.parametrize("method", ["dense", "krylov"])
def test_inplace_function(method):
    def f(y, x):
        y[:] = np.sinh(x) + x

    x, y = np.linspace(-1.0, 1.0, 5), np.zeros(5)
    value, dx = di.value_and_inverse_pushforward(f, di.AutoFiniteDiff(), x, np.ones(5), y=y, method=method)
    assert value is y
    np.testing.assert_allclose(y, np.sinh(x) + x)
    np.testing.assert_allclose(dx, 1 / (np.cosh(x) + 1), rtol=1e-7)


@pytest.mark.skipif(not HAS_SCIPY, reason="needs scipy")
@pytest.mark.parametrize("backend", BACKENDS, ids=repr)
def test_jacobian_operator_with_scipy(backend):
    from scipy.sparse.linalg import LinearOperator, eigs, gmres

    rng = np.random.default_rng(2)
    x = rng.normal(size=8)
    f = _f(leapfrog, backend)
    J = _reference_jacobian(leapfrog, x)
    tol = _tolerance(backend)
    A = di.jacobian_operator(f, backend, x)
    assert isinstance(A, LinearOperator) and A.shape == (8, 8) and A.dtype == np.float64
    v = rng.normal(size=8)
    np.testing.assert_allclose(A @ v, J @ v, rtol=tol, atol=tol)
    np.testing.assert_allclose(A.T @ v, J.T @ v, rtol=tol, atol=tol)
    np.testing.assert_allclose(A.matmat(np.eye(8)), J, rtol=tol, atol=tol)
    np.testing.assert_allclose(A.rmatmat(np.eye(8)[:, :3]), J.T[:, :3], rtol=tol, atol=tol)
    dx, info = gmres(A, v, rtol=100 * tol * tol, atol=0.0)
    assert info == 0
    np.testing.assert_allclose(J @ dx, v, rtol=1e-6, atol=1e-6)
    # a leapfrog step is symplectic: det J = 1, the product of the eigenvalues
    values = eigs(A, k=2, which="LM", return_eigenvectors=False)
    exact = np.linalg.eigvals(J)
    for lam in values:
        assert np.min(np.abs(exact - lam)) < 1e-5


@pytest.mark.skipif(not HAS_TORCH, reason="needs torch")
@pytest.mark.parametrize("method", ["dense", "krylov"])
def test_torch_results_stay_native(method):
    import torch

    x = torch.linspace(-1.0, 1.0, 6, dtype=torch.float64)
    t = torch.ones(6, dtype=torch.float64)
    f = lambda x: revnet(torch, x)
    J = torch.autograd.functional.jacobian(f, x)
    dx = di.inverse_pushforward(f, di.AutoTorch(), x, t, method=method)
    dy = di.inverse_pullback(f, di.AutoTorch(), x, t, method=method)
    assert isinstance(dx, torch.Tensor) and dx.dtype == torch.float64 and dx.device == x.device
    torch.testing.assert_close(J @ dx, t)
    torch.testing.assert_close(J.T @ dy, t)
    out = torch.zeros(6, dtype=torch.float64)
    assert di.inverse_pushforward(f, di.AutoTorch(), x, t, method=method, out=out) is out
    A = di.jacobian_operator(f, di.AutoTorch(), x)
    torch.testing.assert_close(A.matvec(t), J @ t)
    torch.testing.assert_close(A.rmatmat(torch.eye(6, dtype=torch.float64)), J.T)


@pytest.mark.skipif(not HAS_JAX, reason="needs jax")
@pytest.mark.parametrize("method", ["dense", "krylov"])
def test_jax_results_stay_native(method):
    import jax
    import jax.numpy as jnp

    jax.config.update("jax_enable_x64", True)
    x = jnp.linspace(-1.0, 1.0, 6)
    t = jnp.ones(6)
    f = lambda x: coupling(jnp, x)
    J = jax.jacobian(f)(x)
    prep = di.prepare_inverse_pushforward(f, di.AutoJAX(), x, t, method=method)
    for _ in range(2):
        dx = prep(x, t)
        assert isinstance(dx, jax.Array) and dx.dtype == jnp.float64
        np.testing.assert_allclose(J @ dx, t, rtol=1e-9, atol=1e-9)
    dy = di.inverse_pullback(f, di.AutoJAX(), x, t, method=method)
    np.testing.assert_allclose(J.T @ dy, t, rtol=1e-9, atol=1e-9)
    with pytest.raises(di.NotSupportedError, match="immutable"):
        di.inverse_pushforward(f, di.AutoJAX(), x, t, method=method, out=jnp.zeros(6))
    A = di.jacobian_operator(f, di.AutoJAX(), x)
    np.testing.assert_allclose(A.matmat(jnp.eye(6)), J, rtol=1e-12)
