"""`di.checkpoint` on every installed engine: the same derivatives as the function without it (gradient,
pullback, reverse Jacobian, hvp, Hessian; trees, has_aux, a Constant context, inside DifferentiateWith),
and the engine's own recomputation actually in use."""

from __future__ import annotations

import importlib.util
from typing import Any

import numpy as np
import pytest

import diface as di
from diface._engines import namespace_of

ENGINES = [
    ("jax", lambda: di.AutoJAX(), np.float32),
    ("torch", lambda: di.AutoTorch(), np.float64),
    ("tensorflow", lambda: di.AutoTensorFlow(), np.float64),
    ("mlx", lambda: di.AutoMLX(), np.float32),
    ("autograd", lambda: di.AutoAutograd(), np.float64),
    ("pytensor", lambda: di.AutoPyTensor(), np.float64),
]


def _installed(name: str) -> bool:
    return importlib.util.find_spec(name) is not None


CASES = [
    pytest.param(make, dtype, id=name, marks=pytest.mark.skipif(not _installed(name), reason=f"{name} not installed"))
    for name, make, dtype in ENGINES
]


def _functions(backend):
    xp = namespace_of(backend)

    def body(u):
        return xp.tanh(u) * u + xp.sin(u)

    g = di.checkpoint(body)
    return xp, body, g


def _close(a, b, dtype):
    tol = 2e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=tol, atol=tol)


@pytest.mark.parametrize(("make", "dtype"), CASES)
def test_derivatives_match_the_unbounded_function(make, dtype):
    backend = make()
    xp, body, g = _functions(backend)
    f, f0 = (lambda x: xp.sum(g(g(x)))), (lambda x: xp.sum(body(body(x))))
    v, v0 = (lambda x: g(g(x))), (lambda x: body(body(x)))
    x, x1 = np.array([0.3, -0.7, 1.1], dtype), np.array([0.9, 0.2, -0.4], dtype)
    t = (np.array([1.0, -2.0, 0.5], dtype),)
    reverse = type(backend)(mode="reverse") if backend.__class__ is not di.AutoPyTensor else backend
    preps = [
        (di.prepare_gradient(f, backend, x), lambda p, z: p.gradient(z), lambda z: di.gradient(f0, backend, z)),
        (
            di.prepare_pullback(v, backend, x, t),
            lambda p, z: p.pullback(z, t)[0],
            lambda z: di.pullback(v0, backend, z, t)[0],
        ),
        (di.prepare_jacobian(v, reverse, x), lambda p, z: p.jacobian(z), lambda z: di.jacobian(v0, reverse, z)),
        (di.prepare_hvp(f, backend, x, t), lambda p, z: p.hvp(z, t)[0], lambda z: di.hvp(f0, backend, z, t)[0]),
        (di.prepare_hessian(f, backend, x), lambda p, z: p.hessian(z), lambda z: di.hessian(f0, backend, z)),
    ]
    for prep, call, reference in preps:
        want = reference(x1)
        for _ in range(2):
            _close(call(prep, x1), want, dtype)


@pytest.mark.parametrize(("make", "dtype"), CASES)
def test_trees_has_aux_and_constants(make, dtype):
    backend = make()
    xp = namespace_of(backend)

    def body(u, scale):  # a tree in, a tree out, a keyword argument
        return {"a": xp.sin(u["p"]) * scale, "b": [u["q"] * u["q"]]}

    g = di.checkpoint(body)

    def build(h):
        def f(x, c):
            out = h({"p": x, "q": x * c}, scale=c)
            y = xp.sum(out["a"] * out["a"]) + xp.sum(out["b"][0] * x)
            return y, out["a"]

        return f

    x, x1 = np.array([0.5, 1.0, -0.3], dtype), np.array([-0.2, 0.4, 0.8], dtype)
    c = di.Constant(np.asarray(1.5, dtype))
    prep = di.prepare_gradient(build(g), backend, x, c, has_aux=True)
    want, want_aux = di.gradient(build(body), backend, x1, c, has_aux=True)
    for _ in range(2):
        grad, aux = prep.gradient(x1, c)
        _close(grad, want, dtype)
        _close(aux, want_aux, dtype)


@pytest.mark.parametrize(("make", "dtype"), CASES)
def test_inside_differentiate_with(make, dtype):
    backend = make()
    xp, body, g = _functions(backend)
    dw = di.DifferentiateWith(lambda x: xp.sum(g(g(x))), backend)
    x, x1 = np.array([0.3, -0.7], dtype), np.array([1.2, 0.1], dtype)
    prep = di.prepare_gradient(lambda x: dw(x) * 2.0, di.AutoAutograd(), x)
    want = 2.0 * np.asarray(di.gradient(lambda x: xp.sum(body(body(x))), backend, x1))
    for _ in range(2):
        _close(prep.gradient(x1), want, dtype)


def test_no_engine_and_forward_differences_call_fn_itself():
    calls = []

    def body(u):
        calls.append(1)
        return np.sin(u) * u

    g = di.checkpoint(body)
    assert g.__name__ == "body"
    x = np.array([0.4, -1.0])
    np.testing.assert_allclose(
        di.derivative(lambda s: np.sum(g(x * s)), di.AutoFiniteDiff(), 1.0),
        np.sum(np.cos(x) * x * x + np.sin(x) * x),
        rtol=1e-6,
    )
    with pytest.raises(di.ArgumentError, match=r"di\.checkpoint: fn must be a function"):
        di.checkpoint(np.ones(2))


@pytest.mark.skipif(not _installed("jax"), reason="jax not installed")
def test_jax_uses_its_checkpoint():
    import jax
    import jax.numpy as jnp

    g = di.checkpoint(lambda u: jnp.tanh(u) * u)
    jaxpr = str(jax.make_jaxpr(jax.grad(lambda x: jnp.sum(g(x))))(jnp.ones(3)))
    assert "remat" in jaxpr or "checkpoint" in jaxpr


@pytest.mark.skipif(not _installed("torch"), reason="torch not installed")
def test_torch_recomputes_in_backward_and_refuses_torch_func_grad():
    import torch

    calls = []

    def body(u):
        calls.append(1)
        return torch.tanh(u) * u

    g = di.checkpoint(body)
    x = torch.tensor([0.3, -0.7], dtype=torch.float64, requires_grad=True)
    y = torch.sum(g(x))
    assert len(calls) == 1
    (grad,) = torch.autograd.grad(y, x)
    assert len(calls) == 2  # the backward pass ran body again
    t = torch.tanh(x.detach())
    torch.testing.assert_close(grad, t + x.detach() * (1 - t * t))
    with pytest.raises(di.NotSupportedError, match=r"torch\.autograd"):
        torch.func.grad(lambda x: torch.sum(g(x)))(x.detach())


@pytest.mark.skipif(not _installed("mlx"), reason="mlx not installed")
def test_mlx_runs_the_function_as_it_is():
    """MLX cannot tell an array computed from x from a constant, so a recomputation could drop the
    derivative of one read through an object's attribute: the function runs once, its values kept."""
    import mlx.core as mx

    calls = []

    class Holder:
        c: Any = None

    holder = Holder()

    def body(u):
        calls.append(1)
        return mx.tanh(u) * holder.c

    g = di.checkpoint(body)

    def f(x):
        holder.c = mx.sin(x)
        return mx.sum(g(x))

    x = mx.array([0.3, -0.7])
    grad = mx.grad(f)(x)
    mx.eval(grad)
    assert len(calls) == 1
    expected = (1 - mx.tanh(x) ** 2) * mx.sin(x) + mx.tanh(x) * mx.cos(x)
    assert np.allclose(np.array(grad), np.array(expected), atol=1e-6)


@pytest.mark.parametrize(("make", "dtype"), CASES)
def test_a_closure_over_a_traced_value_is_right_or_refused(make, dtype):
    """A function reading a value computed from x that it is not given: JAX, torch and PyTensor (which makes
    it an input of the node) differentiate through it; where the engine's custom rules would drop its
    derivative (TensorFlow, autograd) the call raises; MLX runs the function as it is."""
    backend = make()
    xp = namespace_of(backend)

    def build(checked):
        def f(x):
            c = xp.sin(x)
            h = lambda u: xp.tanh(u) * c  # reads c, computed from x
            return xp.sum((di.checkpoint(h) if checked else h)(x))

        return f

    x = np.array([0.3, -0.7, 1.1], dtype)
    if type(backend).__name__ in ("AutoTensorFlow", "AutoAutograd"):
        with pytest.raises(di.NotSupportedError, match="as an argument"):
            di.gradient(build(True), backend, x)
    else:
        _close(di.gradient(build(True), backend, x), di.gradient(build(False), backend, x), dtype)
        _close(di.hvp(build(True), backend, x, (x,))[0], di.hvp(build(False), backend, x, (x,))[0], dtype)


@pytest.mark.skipif(not _installed("autograd"), reason="autograd not installed")
def test_autograd_recomputes_in_the_pullback():
    import autograd
    import autograd.numpy as anp

    calls = []

    def body(u):
        calls.append(1)
        return anp.tanh(u) * u

    g = di.checkpoint(body)
    autograd.grad(lambda x: anp.sum(g(x)))(np.array([0.3, -0.7]))
    assert len(calls) == 2


@pytest.mark.skipif(not _installed("tensorflow"), reason="tensorflow not installed")
def test_tensorflow_recomputes_in_the_pullback():
    import tensorflow as tf

    calls = []

    def body(u):
        calls.append(1)
        return tf.tanh(u) * u

    g = di.checkpoint(body)
    x = tf.constant([0.3, -0.7], tf.float64)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.reduce_sum(g(x))
    assert len(calls) == 2  # the run that looks for closures, then the forward pass
    tape.gradient(y, x)
    assert len(calls) == 3


@pytest.mark.parametrize(("make", "dtype"), CASES)
def test_sparse_jacobians_and_taylor_coefficients(make, dtype):
    """The sparsity tracers read through the engine's checkpoint (JAX's remat, TensorFlow's custom-gradient
    op), and Taylor coefficients nest forward mode through it."""
    backend = make()
    _, body, g = _functions(backend)
    v, v0 = (lambda x: g(g(x))), (lambda x: body(body(x)))
    x = np.array([0.3, -0.7, 1.1, 0.2], dtype)
    if type(backend).__name__ not in ("AutoMLX", "AutoPyTensor"):  # MLX has no sparsity tracer; PyTensor's is slow
        sparse = di.jacobian(v, di.AutoSparse(backend), x)
        _close(sparse.toarray() if hasattr(sparse, "toarray") else sparse, di.jacobian(v0, backend, x), dtype)
    t = (np.array([1.0, -2.0, 0.5, 0.1], dtype),)
    want = di.ravel(di.taylor(v0, backend, x, t, order=2))[0]
    _close(di.ravel(di.taylor(v, backend, x, t, order=2))[0], want, dtype)
