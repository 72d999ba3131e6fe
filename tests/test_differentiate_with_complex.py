"""DifferentiateWith with complex values: every outer engine by every inner backend, for a holomorphic, a
non-holomorphic, a real-to-complex and a complex-to-real inner function.

Each inner g is described by its Wirtinger derivatives A = ∂g, B = ∂̄g at the point, so that diface's
convention gives pushforward(t) = A·t + B·conj(t) and pullback(ty) = conj(A)·ty + B·conj(ty) (its real part
for a real x), and the gradient of the real loss L = Σ|g|² is the pullback of 2g. Outer engines are
compared against their *own* convention: diface backends and torch against these, JAX's and autograd's
VJPs and grads against the transposed one (vjp(ct) = conj(pullback(conj(ct)))), so DifferentiateWith is
invisible to them.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
from test_differentiate_with import _needs

import diface as di

C = 0.7 - 0.4j
Z = np.array([1.0 + 2.0j, 0.5 - 1.0j, -0.3 + 0.2j])
XR = np.array([0.3, -0.5, 0.8])
T_C = np.array([0.2 - 0.1j, -1.0 + 0.5j, 0.3 + 0.3j])
T_R = np.array([0.4, 1.0, -0.6])
KINDS = ("holomorphic", "nonholomorphic", "real_to_complex", "complex_to_real")
INNERS = ("fd", "autograd", "torch", "jax")
# outer: a diface backend (engine, mode), or the engine called directly
OUTERS = (
    "fd",
    "autograd-reverse",
    "autograd-forward",
    "torch-reverse",
    "torch-forward",
    "jax-reverse",
    "jax-forward",
    "jax-direct",
    "torch-direct",
    "autograd-direct",
)


def _ns(engine: str) -> Any:
    """The engine's array functions that the test functions use."""
    if engine == "torch":
        import torch

        return SimpleNamespace(sum=torch.sum, abs=torch.abs, conj=torch.conj, real=torch.real)
    if engine == "jax":
        import jax.numpy as jnp

        return jnp
    if engine == "autograd":
        import autograd.numpy as anp

        return anp
    return np


def _g(kind: str, engine: str) -> Any:
    """The inner function of `kind`, written for `engine`'s arrays."""
    ns = _ns(engine)
    if kind == "holomorphic":
        return lambda z: z**2 * C
    if kind == "nonholomorphic":
        return lambda z: z * ns.conj(z) + ns.conj(z)
    if kind == "real_to_complex":
        return lambda x: x**2 * C + 1j * x
    return lambda z: ns.real(z * ns.conj(z)) + ns.real(z * C)


def _point(kind: str) -> tuple[np.ndarray, np.ndarray]:
    """x and a tangent of x's dtype."""
    return (XR, T_R) if kind == "real_to_complex" else (Z, T_C)


def _wirtinger(kind: str, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A = ∂g and B = ∂̄g at x (for a real x: A = g', B = 0)."""
    if kind == "holomorphic":
        return 2 * C * x, np.zeros_like(x)
    if kind == "nonholomorphic":
        return np.conj(x), x + 1
    if kind == "real_to_complex":
        return 2 * C * x + 1j, np.zeros_like(x, dtype=complex)
    return np.conj(x) + C / 2, x + np.conj(C) / 2


def _expected(kind: str) -> SimpleNamespace:
    """g's value and diface's pushforward, pullback and the gradient of Σ|g|², analytically."""
    x, _ = _point(kind)
    a, b = _wirtinger(kind, x)
    y = _g(kind, "numpy")(x)

    def push(t: np.ndarray) -> np.ndarray:
        r = a * t + b * np.conj(t)
        return r.real if kind == "complex_to_real" else r

    def pull(ty: np.ndarray) -> np.ndarray:
        r = np.conj(a) * ty + b * np.conj(ty)
        return r.real if kind == "real_to_complex" else r

    return SimpleNamespace(y=y, push=push, pull=pull, grad=pull(2 * y))


def _outer_backend(outer: str) -> di.Backend:
    engine, _, mode = outer.partition("-")
    if engine == "fd":
        return di.AutoFiniteDiff()
    return {"autograd": di.AutoAutograd, "torch": di.AutoTorch, "jax": di.AutoJAX}[engine](mode=mode)


def _ty(kind: str) -> np.ndarray:
    return np.array([1.0, -0.5, 2.0]) if kind == "complex_to_real" else np.array([1j, 1.0 - 0.5j, -0.2 + 2j])


def _close(got: Any, want: np.ndarray, loose: bool, what: str) -> None:
    got = np.asarray(got)
    tol = {"rtol": 1e-5, "atol": 1e-6} if loose else {"rtol": 1e-10, "atol": 1e-12}
    np.testing.assert_allclose(got, want, **tol, err_msg=what)
    assert (got.dtype.kind == "c") == (want.dtype.kind == "c"), f"{what}: dtype {got.dtype}, want {want.dtype}"


def _check_backend(outer: str, dw: Any, kind: str, loose: bool) -> None:
    """A diface backend outside: the outer function computes in that engine's arrays."""
    engine = outer.partition("-")[0]
    ns = _ns("numpy" if engine == "fd" else engine)
    backend = _outer_backend(outer)
    x, t = _point(kind)
    want = _expected(kind)
    ty = _ty(kind)
    _close(di.gradient(lambda v: ns.sum(ns.abs(dw(v)) ** 2), backend, x), want.grad, loose, "gradient")
    _close(di.pushforward(lambda v: dw(v) * 2.0, backend, x, t), 2 * want.push(t), loose, "pushforward")
    _close(di.pullback(lambda v: dw(v) * 2.0, backend, x, ty), 2 * want.pull(ty), loose, "pullback")


def _check_jax(dw: Any, g: Any, kind: str, loose: bool) -> None:
    """jax.grad, jax.jvp, jax.vjp called directly: JAX's transposed convention, and the same results as
    with g itself (written in jax.numpy) in place of DifferentiateWith."""
    import jax
    import jax.numpy as jnp

    x, t = _point(kind)
    want = _expected(kind)
    ty = _ty(kind)
    xj = jnp.asarray(x)
    for h, what in ((dw, "through DifferentiateWith"), (g, "g alone")):
        loss = lambda v, h=h: jnp.sum(jnp.abs(h(v)) ** 2)
        _close(jax.grad(loss)(xj), np.conj(want.grad), loose, f"jax.grad {what}")
        y, jt = jax.jvp(h, (xj,), (jnp.asarray(t),))
        _close(y, want.y, False, f"jax.jvp value {what}")
        _close(jt, want.push(t), loose, f"jax.jvp {what}")
        _, vjp = jax.vjp(h, xj)
        (ct,) = vjp(jnp.asarray(ty))
        _close(ct, np.conj(want.pull(np.conj(ty))), loose, f"jax.vjp {what}")


def _check_torch(dw: Any, kind: str, loose: bool) -> None:
    """torch.autograd.grad and torch.func.jvp: torch's convention is diface's."""
    import torch

    x, t = _point(kind)
    want = _expected(kind)
    ty = _ty(kind)
    xt = torch.tensor(x, requires_grad=True)
    (gr,) = torch.autograd.grad((dw(xt).abs() ** 2).sum(), xt)
    _close(gr.numpy(), want.grad, loose, "torch.autograd.grad of Σ|g|²")
    (pb,) = torch.autograd.grad(dw(xt), xt, grad_outputs=torch.tensor(ty))
    _close(pb.numpy(), want.pull(ty), loose, "torch.autograd.grad with grad_outputs")
    _, jt = torch.func.jvp(dw, (torch.tensor(x),), (torch.tensor(t),))
    _close(jt.numpy(), want.push(t), loose, "torch.func.jvp")


def _check_autograd(dw: Any, kind: str, loose: bool) -> None:
    """autograd.grad and make_vjp: autograd's transposed convention, as JAX's."""
    import autograd
    import autograd.numpy as anp

    x, _ = _point(kind)
    want = _expected(kind)
    ty = _ty(kind)
    _close(autograd.grad(lambda v: anp.sum(anp.abs(dw(v)) ** 2))(x), np.conj(want.grad), loose, "autograd.grad")
    vjp, _ = autograd.make_vjp(dw)(x)
    _close(vjp(ty), np.conj(want.pull(np.conj(ty))), loose, "autograd.make_vjp")


@pytest.mark.parametrize("inner", INNERS)
@pytest.mark.parametrize("outer", OUTERS)
def test_outer_inner(outer: str, inner: str) -> None:
    engine = outer.partition("-")[0]
    _needs(engine, inner)
    loose = "fd" in (engine, inner)
    for kind in KINDS:
        dw = di.DifferentiateWith(_g(kind, "numpy" if inner == "fd" else inner), _inner_backend(inner))
        if outer == "jax-direct":
            _check_jax(dw, _g(kind, "jax"), kind, loose)
        elif outer == "torch-direct":
            _check_torch(dw, kind, loose)
        elif outer == "autograd-direct":
            _check_autograd(dw, kind, loose)
        else:
            _check_backend(outer, dw, kind, loose)


def _inner_backend(inner: str) -> di.Backend:
    return {
        "fd": di.AutoFiniteDiff(),
        "autograd": di.AutoAutograd(),
        "torch": di.AutoTorch(),
        "jax": di.AutoJAX(),
    }[inner]


def _hvp_reference(x: np.ndarray, v: np.ndarray) -> np.ndarray:
    """The hvp of Σ|z²·C|² (diface: the pushforward of the gradient map 2·conj(2Cz)·z²C), by its formula:
    the gradient is 4|C|²·|z|²·z, whose derivative along v is 4|C|²·(2·Re(conj(z)·v)·z + |z|²·v)."""
    return 4 * abs(C) ** 2 * (2 * np.real(np.conj(x) * v) * x + np.abs(x) ** 2 * v)


@pytest.mark.parametrize("inner", ["torch", "jax"])
@pytest.mark.parametrize("order", ["reverse-reverse", "forward-reverse", "autograd"])
@pytest.mark.parametrize("complex_x", [False, True], ids=["real", "complex"])
def test_second_order(order: str, inner: str, complex_x: bool) -> None:
    """hvp through the boundary (torch's reverse over reverse with torch inside too: forward AD gives no
    tangents inside torch's backward, so the boundary takes J·t by two reverse sweeps there)."""
    _needs("torch", "autograd", inner)
    dw = di.DifferentiateWith(_g("holomorphic", inner), _inner_backend(inner))
    x, v = (Z, T_C) if complex_x else (XR, T_R)
    if order == "autograd":
        import autograd.numpy as anp

        loss, backend = (lambda w: anp.sum(anp.abs(dw(w)) ** 2)), di.AutoAutograd()
    else:
        outer, inn = order.split("-")
        loss = lambda w: (dw(w).abs() ** 2).sum()
        backend = di.SecondOrder(di.AutoTorch(mode=outer), di.AutoTorch(mode=inn))
    np.testing.assert_allclose(di.hvp(loss, backend, x, v), _hvp_reference(x, v), rtol=1e-10)


@pytest.mark.parametrize("outer", ["torch", "jax", "autograd"])
def test_complex64_kept(outer: str) -> None:
    """complex64 in, complex64 cotangents out (and float32 for a real x) through every outer engine."""
    _needs(outer)
    dw = di.DifferentiateWith(lambda z: z**2 * np.complex64(C), di.AutoFiniteDiff())
    for x in (Z.astype(np.complex64), XR.astype(np.float32)):
        if outer == "torch":
            import torch

            xt = torch.tensor(x, requires_grad=True)
            (got,) = torch.autograd.grad((dw(xt).abs() ** 2).sum(), xt)
            got = got.numpy()
        elif outer == "jax":
            import jax
            import jax.numpy as jnp

            got = np.asarray(jax.grad(lambda w: jnp.sum(jnp.abs(dw(w)) ** 2))(jnp.asarray(x)))
        else:
            import autograd
            import autograd.numpy as anp

            got = autograd.grad(lambda w: anp.sum(anp.abs(dw(w)) ** 2))(x)
        assert got.dtype == x.dtype
        want = 2 * np.conj(2 * C * x) * (x**2 * C)
        want = want if x.dtype.kind == "c" else want.real
        want = want if outer == "torch" else np.conj(want)
        np.testing.assert_allclose(got, want, rtol=1e-3)


@pytest.mark.parametrize("mode", ["forward", "reverse"])
def test_tape_outer(mode: str) -> None:
    """AutoTape outside: its boundary keeps its adjoint convention (no conjugation)."""
    dw = di.DifferentiateWith(_g("holomorphic", "numpy"), di.AutoFiniteDiff())
    want = _expected("holomorphic")
    got = di.gradient(lambda v: np.sum(np.abs(dw(v)) ** 2), di.AutoTape(mode), Z)
    _close(got, want.grad, True, "AutoTape gradient")
