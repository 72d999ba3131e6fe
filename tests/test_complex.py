"""Complex inputs and outputs (docs/complex.md): one convention on every engine.

Each function has hand-written Wirtinger derivatives. Every engine and mode answers every operator with
the same numbers: pushforward ∂f·t + ∂̄f·conj(t), pullback conj(∂f)·ty + ∂̄f·conj(ty), gradient 2∂̄f, the
complex derivative for holomorphic f and a `NotSupportedError` for the others. Preparations are made at
one point and called at another, twice. The kit's many-scenario runs are in tests/test_complex_scenarios.py.
"""

from __future__ import annotations

import numpy as np
import pytest

import diface as di
from conftest import HAS_AUTOGRAD, HAS_JAX, HAS_TORCH

FD = di.AutoFiniteDiff
C = 0.4 - 0.7j
D = 0.3 + 0.2j
W = np.array([1.0, 2.0, 0.5])
Z0 = np.array([0.3 + 0.1j, -0.5 + 0.8j, 1.1 - 0.4j])  # preparation point
Z = np.array([1.0 + 2.0j, 0.5 - 1.0j, -0.3 + 0.1j])
T = (np.array([1j, 0.5, -1.0 + 1.0j]), np.array([0.2 - 0.3j, -1.0j, 0.7]))


def _backends() -> list:
    backends = [FD(), FD("forward"), di.AutoTape("forward"), di.AutoTape("reverse")]
    if HAS_AUTOGRAD:
        backends += [di.AutoAutograd("forward"), di.AutoAutograd("reverse")]
    if HAS_TORCH:
        backends += [di.AutoTorch("forward"), di.AutoTorch("reverse")]
    if HAS_JAX:
        backends += [di.AutoJAX("forward"), di.AutoJAX("reverse")]
    return backends


BACKENDS = _backends()


def xp_of(backend: object) -> object:
    """The array namespace f is written with on `backend`."""
    name = type(backend).__name__
    if name == "SecondOrder":
        return xp_of(backend.inner)  # type: ignore[attr-defined]
    if name == "AutoAutograd":
        import autograd.numpy as anp

        return anp
    if name == "AutoTorch":
        import torch

        return torch
    if name == "AutoJAX":
        import jax.numpy as jnp

        return jnp
    return np


def tol(backend: object) -> dict:
    return {"rtol": 1e-6, "atol": 1e-6} if "FiniteDiff" in repr(backend) else {"rtol": 1e-10, "atol": 1e-12}


# -- the functions and their Wirtinger derivatives ------------------------------------------------------------
def holo(xp, z):  # exp(z) z + c z^2: holomorphic
    return xp.exp(z) * z + C * z**2


def holo_d(z):
    return np.exp(z) * (1 + z) + 2 * C * z


def holo_dd(z):
    return np.exp(z) * (2 + z) + 2 * C


def loss(xp, z):  # sum w |z - c|^2 + Re sum conj(d) z^2: real f of complex z
    u = z - C
    return xp.sum(xp.asarray(W) * xp.real(u * xp.conj(u))) + xp.real(xp.sum(D.conjugate() * z**2))


def loss_grad(z):  # 2 ∂̄L
    return 2 * W * (z - C) + 2 * D * np.conj(z)


def loss_hvp(t):  # the pushforward of the gradient map
    return 2 * W * t + 2 * D * np.conj(t)


def nonholo(xp, z):  # conj(z) z + conj(z): ∂ = conj(z), ∂̄ = z + 1
    return xp.conj(z) * z + xp.conj(z)


def rtoc(xp, t):  # e^{it} t: real t, complex output
    return xp.exp(1j * t) * t


def rtoc_d(t):
    return 1j * np.exp(1j * t) * t + np.exp(1j * t)


def bind(fn, backend):
    xp = xp_of(backend)
    return lambda v: fn(xp, v)


def _fix_loss_weights(backend):
    """`loss` makes its weights with the namespace's asarray, of x's precision."""
    return bind(loss, backend)


# -- every engine, every operator ----------------------------------------------------------------------------
@pytest.mark.parametrize("backend", BACKENDS, ids=repr)
def test_holomorphic(backend):
    f, kw = bind(holo, backend), tol(backend)
    prep = di.prepare_jacobian(f, backend, Z0)
    for _ in range(2):
        np.testing.assert_allclose(prep.jacobian(Z), np.diag(holo_d(Z)), **kw)
    y, jac = di.value_and_jacobian(f, backend, Z)
    np.testing.assert_allclose(y, holo(np, Z), **kw)
    np.testing.assert_allclose(jac, np.diag(holo_d(Z)), **kw)
    push = di.prepare_pushforward(f, backend, Z0, T)
    pull = di.prepare_pullback(f, backend, Z0, T)
    for _ in range(2):
        for got, t in zip(push.pushforward(Z, T), T):
            np.testing.assert_allclose(got, holo_d(Z) * t, **kw)
        for got, t in zip(pull.pullback(Z, T), T):
            np.testing.assert_allclose(got, np.conj(holo_d(Z)) * t, **kw)
    z = 0.4 - 0.9j
    np.testing.assert_allclose(di.derivative(f, backend, z), holo_d(z), **kw)
    if "FiniteDiff" not in repr(backend):
        _, d1, d2 = di.value_derivative_and_second_derivative(f, backend, z)
        np.testing.assert_allclose((d1, d2), (holo_d(z), holo_dd(z)), rtol=1e-9)


@pytest.mark.parametrize("backend", BACKENDS, ids=repr)
def test_real_function_of_complex_input(backend):
    f, kw = bind(loss, backend), tol(backend)
    prep = di.prepare_gradient(f, backend, Z0)
    for _ in range(2):
        g = prep.gradient(Z)
        assert g.dtype == np.complex128
        np.testing.assert_allclose(g, loss_grad(Z), **kw)
    np.testing.assert_allclose(di.pullback(f, backend, Z, 1.0), loss_grad(Z), **kw)
    if "FiniteDiff" not in repr(backend):
        hvp = di.prepare_hvp(f, backend, Z0, T)
        for _ in range(2):
            for got, t in zip(hvp.hvp(Z, T), T):
                np.testing.assert_allclose(got, loss_hvp(t), rtol=1e-9, atol=1e-12)
    with pytest.raises(di.NotSupportedError, match=r"di\.hvp.*di\.realify"):
        di.hessian(f, backend, Z)
    with pytest.raises(di.NotSupportedError, match="not holomorphic"):
        di.jacobian(f, backend, Z)


@pytest.mark.parametrize("backend", BACKENDS, ids=repr)
def test_non_holomorphic(backend):
    f, kw = bind(nonholo, backend), tol(backend)
    d, dbar = np.conj(Z), Z + 1
    for got, t in zip(di.pushforward(f, backend, Z, T), T):
        np.testing.assert_allclose(got, d * t + dbar * np.conj(t), **kw)
    for got, t in zip(di.pullback(f, backend, Z, T), T):
        np.testing.assert_allclose(got, np.conj(d) * t + dbar * np.conj(t), **kw)
    with pytest.raises(di.NotSupportedError, match=r"pushforward.*pullback.*realify"):
        di.prepare_jacobian(f, backend, Z)
    with pytest.raises(di.NotSupportedError, match="not holomorphic"):
        di.derivative(f, backend, 0.5 + 0.5j)
    with pytest.raises(di.ShapeError, match="complex-valued f has no gradient"):
        di.gradient(lambda v: f(v)[0], backend, Z)


@pytest.mark.parametrize("backend", BACKENDS, ids=repr)
def test_real_input_complex_output(backend):
    f, kw = bind(rtoc, backend), tol(backend)
    x0, x = np.array([0.1, 0.2, 0.3]), np.array([0.3, -0.7, 1.2])
    prep = di.prepare_jacobian(f, backend, x0)
    for _ in range(2):
        np.testing.assert_allclose(prep.jacobian(x), np.diag(rtoc_d(x)), **kw)
    ty = np.array([1j, 1.0, 1 - 2j])
    got = di.pullback(f, backend, x, ty)
    assert got.dtype == np.float64  # the adjoint into a real space is real
    np.testing.assert_allclose(got, np.real(np.conj(rtoc_d(x)) * ty), **kw)
    np.testing.assert_allclose(di.derivative(f, backend, 0.3), rtoc_d(0.3), **kw)


# -- the variants, on one numeric and one exact engine ----------------------------------------------------------
VARIANT_BACKENDS = [FD(), di.AutoTorch()] if HAS_TORCH else [FD()]


@pytest.mark.parametrize("backend", VARIANT_BACKENDS, ids=repr)
def test_out_buffers_and_inplace(backend):
    f, kw = bind(holo, backend), tol(backend)
    out = np.empty((3, 3), np.complex128)
    assert di.jacobian(f, backend, Z, out=out) is out
    np.testing.assert_allclose(out, np.diag(holo_d(Z)), **kw)
    g = np.empty(3, np.complex128)
    di.gradient(bind(loss, backend), backend, Z, out=g)
    np.testing.assert_allclose(g, loss_grad(Z), **kw)
    with pytest.raises(di.ArgumentError, match="dtype"):
        di.gradient(bind(loss, backend), backend, Z, out=np.empty(3))
    if backend.supports_inplace:

        def fi(y, v):
            y[...] = v**2

        y = np.zeros(3, np.complex128)
        jac = di.jacobian(fi, backend, Z, y=y)
        np.testing.assert_allclose(y, Z**2)
        np.testing.assert_allclose(jac, np.diag(2 * Z), **kw)
        np.testing.assert_allclose(di.pullback(fi, backend, Z, T[0], y=y), np.conj(2 * Z) * T[0], **kw)
        y0 = np.zeros((), np.complex128)  # a 0-d complex output is written through a view too
        value, d = di.value_and_derivative(lambda y, t: fi(y, t * (1 + 1j)), backend, 0.5, y=y0)
        assert value is y0
        np.testing.assert_allclose((y0, d), (0.25j * 2, 2j), **kw)


@pytest.mark.parametrize("backend", VARIANT_BACKENDS, ids=repr)
def test_trees_with_complex_leaves(backend):
    kw = tol(backend)
    xp = xp_of(backend)
    tree = {"z": Z, "w": np.array([0.3, -0.2])}

    def f(t):
        return {"o": t["z"] ** 2 * t["w"][0], "r": t["w"] * 2.0}

    def real_loss(t):
        return xp.sum(xp.real(t["z"] * xp.conj(t["z"]))) * t["w"][0] + t["w"][1] ** 2

    jac = di.jacobian(f, backend, tree)
    np.testing.assert_allclose(jac["o"]["z"], np.diag(2 * Z * 0.3), **kw)
    np.testing.assert_allclose(jac["o"]["w"][:, 0], Z**2, **kw)
    assert jac["r"]["w"].dtype == np.float64  # a real block of real leaves stays real
    g = di.prepare_gradient(real_loss, backend, {"z": Z0, "w": np.array([1.0, 1.0])})
    for _ in range(2):
        got = g.gradient(tree)
        np.testing.assert_allclose(got["z"], 2 * 0.3 * Z, **kw)
        np.testing.assert_allclose(got["w"], [np.sum(np.abs(Z) ** 2), -0.4], **kw)


def test_complex64_stays_complex64():
    z = Z.astype(np.complex64)
    b = di.AutoTorch() if HAS_TORCH else FD()
    xp = xp_of(b)
    assert di.gradient(lambda v: xp.sum(xp.real(v * xp.conj(v))), b, z).dtype == np.complex64
    assert di.jacobian(bind(holo, b), b, z).dtype == np.complex64
    assert di.pushforward(bind(holo, b), b, z, T[0].astype(np.complex64)).dtype == np.complex64


def test_strict_check_names_the_dtype():
    prep = di.prepare_gradient(bind(loss, FD()), FD(), Z0)
    with pytest.raises(di.PreparationMismatchError, match="complex128"):
        prep.gradient(Z.real.copy())


@pytest.mark.parametrize("method", ["dense", "krylov"])
def test_inverse_products(method):
    a = np.array([[2 + 1j, 0.5, 0], [0.1j, 3, 1], [0, 1 - 1j, 4]])

    def f(v):
        return a @ v + 0.1 * v**2

    jac = a + np.diag(0.2 * Z)
    got = di.inverse_pushforward(f, FD(), Z, T[0], method=method)
    np.testing.assert_allclose(jac @ got, T[0], atol=1e-6)
    got = di.inverse_pullback(f, FD(), Z, T[0], method=method)  # the adjoint's inverse: Jᴴ w = t
    np.testing.assert_allclose(jac.conj().T @ got, T[0], atol=1e-6)


def test_same_point_and_second_order():
    b = di.SecondOrder(FD(), di.AutoTorch()) if HAS_TORCH else di.SecondOrder(FD(), FD())
    f = bind(loss, b)
    prep = di.prepare_hvp_same_point(f, b, Z, T)
    for _ in range(2):
        for got, t in zip(prep.hvp(Z, T), T):
            np.testing.assert_allclose(got, loss_hvp(t), rtol=1e-6, atol=1e-6)
    push = di.prepare_pushforward_same_point(bind(holo, b), b, Z, T)
    for got, t in zip(push.pushforward(Z, T), T):
        np.testing.assert_allclose(got, holo_d(Z) * t, rtol=1e-10)


def test_jacobian_operator():
    from scipy.sparse.linalg import gmres

    a = np.array([[2 + 1j, 0.5, 0], [0.1j, 3, 1], [0, 1 - 1j, 4]])
    op = di.jacobian_operator(lambda v: a @ v + 0.1 * v**2, FD(), Z)
    jac = a + np.diag(0.2 * Z)
    assert op.dtype == np.complex128
    np.testing.assert_allclose(op @ T[0], jac @ T[0], atol=1e-7)
    np.testing.assert_allclose(op.H @ T[0], jac.conj().T @ T[0], atol=1e-7)
    sol, info = gmres(op, T[0], rtol=1e-12)
    assert info == 0
    np.testing.assert_allclose(jac @ sol, T[0], atol=1e-6)
    x = np.array([0.3, 0.7])  # real x, complex output: J is complex, products act on real and imaginary parts
    op = di.jacobian_operator(lambda s: np.exp(1j * s) * s, FD(), x)
    jac = np.diag(rtoc_d(x))
    w = np.array([1 + 1j, -2j])
    np.testing.assert_allclose(op @ w, jac @ w, atol=1e-7)
    np.testing.assert_allclose(op.H @ w, jac.conj().T @ w, atol=1e-7)
    with pytest.raises(di.NotSupportedError, match="not holomorphic"):
        di.jacobian_operator(np.conj, FD(), Z)


def test_realify_gives_the_real_hessian():
    b = di.AutoTorch() if HAS_TORCH else di.SecondOrder(FD(), FD())
    f = bind(loss, b)
    pairs = np.stack([Z.real, Z.imag], axis=-1)
    hess = di.hessian(di.realify(f), b, pairs).reshape(6, 6)
    # the real Hessian applied to t's pairs is the pairs of the hvp
    for t in T:
        tp = np.stack([t.real, t.imag], axis=-1).reshape(6)
        want = loss_hvp(t)
        np.testing.assert_allclose(
            (hess @ tp).reshape(3, 2), np.stack([want.real, want.imag], -1), rtol=1e-6, atol=1e-6
        )
    # the complex derivative from realify's Jacobian (holomorphic f)
    jac = di.jacobian(di.realify(bind(holo, b)), b, pairs)  # (3, 2, 3, 2)
    np.testing.assert_allclose(jac[:, 0, :, 0] + 1j * jac[:, 1, :, 0], np.diag(holo_d(Z)), rtol=1e-6, atol=1e-8)


def test_complex_step_refuses_complex_inputs():
    with pytest.raises(di.NotSupportedError, match=r"method='complex'"):
        di.gradient(bind(loss, FD()), FD("complex"), Z)
    with pytest.raises(di.NotSupportedError, match=r"method='complex'"):
        di.jacobian(lambda t: np.exp(1j * t), FD("complex"), np.array([0.1, 0.2]))


def test_sparse_pattern_is_the_complex_one():
    """A sparse complex Jacobian's pattern has one row per complex output (the pairs' rows combined)."""
    z = np.array([1 + 2j, 0.5 - 1j, -0.3 + 0.1j, 0.2j])
    prep = di.prepare_jacobian(lambda v: v[1:] * v[:-1], di.AutoSparse(di.AutoTape()), z)
    assert prep.sparsity_pattern.shape == (3, 4)
    np.testing.assert_array_equal(prep.sparsity_pattern.toarray(), np.eye(3, 4) + np.eye(3, 4, 1))
    w = np.append(Z0, 0.5j)
    want = np.zeros((3, 4), complex)
    want[np.arange(3), np.arange(3)] = w[1:]  # d(v[i+1] v[i])/dv[i]
    want[np.arange(3), np.arange(1, 4)] = w[:-1]
    for _ in range(2):
        np.testing.assert_allclose(prep.jacobian(w).toarray(), want, atol=1e-14)
