"""DifferentiateWith: every outer engine differentiating a function that calls f through another inner engine."""

from __future__ import annotations

import numpy as np
import pytest

import diface as di
from diface.testing import engines

X = np.array([0.3, -0.5, 0.8])
TY = np.array([1.0, 2.0, -1.0])

#: every engine diface ships, by its command-line name ("finitediff" included): a new engine's package joins
#: the matrix by registering itself, as outer and as inner
ENGINES = sorted(name for name, e in engines().items() if e.backend.__module__.startswith("diface."))
HAVE = {name: engines()[name].backend().is_available() for name in ENGINES}


def _xp(engine: str):
    """The module f is written with for the engine (`numpy`, `torch`, `jax.numpy`, ...)."""
    return engines()[engine].module()


def _inner_f(engine: str):
    """sin(x) * x + c, written for the engine's arrays."""
    xp = _xp(engine)
    return lambda x, c=0.0: xp.sin(x) * x + c


def _backend(engine: str) -> di.Backend:
    return engines()[engine].backend()


def _needs(*engines_: str) -> None:
    for e in engines_:
        if e in HAVE and not HAVE[e]:
            pytest.skip(f"{e} is not installed")
    for e in engines_:
        engines()[e].configure_for_float64()


def _outer_sum(outer: str, g):
    """A function for the outer engine's arrays calling g."""
    xp = _xp(outer)
    return lambda x: xp.sum(g(x) ** 2)


def _tol(outer: str, inner: str) -> dict:
    # an engine accurate to eps ** a (Backend.accuracy_exponent: MLX's float64 sin is float32-accurate) widens it
    a = min((float(_backend(e).accuracy_exponent) for e in (outer, inner) if e != "finitediff"), default=1.0)
    if "finitediff" in (outer, inner):  # differences of values accurate to eps ** a, over a step for float64
        return {"rtol": 1e-4, "atol": 1e-5} if a == 1 else {"rtol": 1e-2, "atol": 1e-3}
    tol = 300 * float(np.finfo(np.float64).eps) ** a
    return {"rtol": max(1e-10, tol), "atol": max(1e-12, tol)}


@pytest.mark.parametrize("inner", ENGINES)
@pytest.mark.parametrize("outer", ENGINES)
def test_pairs(outer: str, inner: str) -> None:
    _needs(outer, inner)
    g = di.DifferentiateWith(_inner_f(inner), _backend(inner))
    y = np.sin(X) * X
    jac = np.diag(np.cos(X) * X + np.sin(X))
    tol = _tol(outer, inner)
    back = _backend(outer)
    grad = di.gradient(_outer_sum(outer, g), back, X)
    np.testing.assert_allclose(np.asarray(grad), 2 * y @ jac, **tol)
    np.testing.assert_allclose(np.asarray(di.pushforward(g, back, X, TY)), jac @ TY, **tol)
    np.testing.assert_allclose(np.asarray(di.pullback(g, back, X, TY)), TY @ jac, **tol)


#: outer engines that differentiate twice through the boundary (JAX does not: see the last test)
SECOND_ORDER_OUTER = [e for e in ENGINES if e not in ("finitediff", "jax")]


@pytest.mark.parametrize("inner", [e for e in ENGINES if e != "finitediff"])
@pytest.mark.parametrize("outer", SECOND_ORDER_OUTER)
def test_hvp_through_the_boundary(outer: str, inner: str) -> None:
    _needs(outer, inner)
    g = di.DifferentiateWith(_inner_f(inner), _backend(inner))
    h = lambda x: _xp(outer).sum(g(x))
    hess = di.hessian(h, _backend(outer), X)
    rtol = max(1e-8, _tol(outer, inner)["rtol"])
    np.testing.assert_allclose(np.asarray(hess), np.diag(2 * np.cos(X) - X * np.sin(X)), rtol=rtol)


def test_outer_engines_called_directly() -> None:
    _needs("torch", "jax", "autograd")
    import autograd
    import autograd.numpy as anp
    import jax
    import jax.numpy as jnp
    import torch

    want = 2 * (np.sin(X) * X) * (np.cos(X) * X + np.sin(X))
    g = di.DifferentiateWith(_inner_f("jax"), di.AutoJAX())
    xt = torch.tensor(X, requires_grad=True)
    (gt,) = torch.autograd.grad((g(xt) ** 2).sum(), xt)
    np.testing.assert_allclose(gt.numpy(), want, rtol=1e-10)
    gt = di.DifferentiateWith(_inner_f("torch"), di.AutoTorch())
    np.testing.assert_allclose(jax.grad(lambda x: jnp.sum(gt(x) ** 2))(jnp.asarray(X)), want, rtol=1e-10)
    np.testing.assert_allclose(jax.jit(jax.grad(lambda x: jnp.sum(gt(x) ** 2)))(jnp.asarray(X)), want, rtol=1e-10)
    jac = np.diag(np.cos(X) * X + np.sin(X))
    np.testing.assert_allclose(jax.jacfwd(gt)(jnp.asarray(X)), jac, rtol=1e-10)
    np.testing.assert_allclose(jax.jacrev(gt)(jnp.asarray(X)), jac, rtol=1e-10)
    np.testing.assert_allclose(torch.func.jacrev(g)(torch.tensor(X)).numpy(), jac, rtol=1e-10)
    np.testing.assert_allclose(autograd.grad(lambda x: anp.sum(g(x) ** 2))(X), want, rtol=1e-10)


def test_constants_pass_through() -> None:
    _needs("torch", "jax")
    import torch

    g = di.DifferentiateWith(_inner_f("jax"), di.AutoJAX())
    c = np.array([1.0, 2.0, 3.0])
    grad = di.gradient(lambda x: (g(x, torch.tensor(c)) ** 2).sum(), di.AutoTorch(), X)
    y = np.sin(X) * X + c
    np.testing.assert_allclose(grad, 2 * y * (np.cos(X) * X + np.sin(X)), rtol=1e-10)
    grad = di.gradient(lambda x: np.sum(g(x, c) ** 2), di.AutoTape(), X)
    np.testing.assert_allclose(grad, 2 * y * (np.cos(X) * X + np.sin(X)), rtol=1e-10)


def test_training_loop_through_a_jax_layer() -> None:
    _needs("torch", "jax")
    import jax.numpy as jnp
    import torch

    def run(layer) -> list:
        torch.manual_seed(0)
        model = torch.nn.Linear(3, 3).double()
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        data, target = torch.randn(4, 3, dtype=torch.float64), torch.randn(4, 3, dtype=torch.float64)
        losses = []
        for _ in range(5):
            opt.zero_grad()
            loss = ((layer(model(data)) - target) ** 2).mean()
            loss.backward()
            opt.step()
            losses.append(loss.item())
        return losses

    jax_layer = di.DifferentiateWith(lambda h: jnp.tanh(h) * 2.0, di.AutoJAX())
    np.testing.assert_allclose(run(jax_layer), run(lambda h: torch.tanh(h) * 2.0), rtol=1e-10)


def test_third_order_and_unsupported_second_order_raise() -> None:
    _needs("autograd")
    import autograd

    g = di.DifferentiateWith(_inner_f("tape"), di.AutoTape())
    third = autograd.grad(autograd.grad(autograd.grad(lambda x: g(x).sum())))
    with pytest.raises(di.NotSupportedError, match="order 3"):
        third(0.3 * np.ones(()))


def test_dtype_errors() -> None:
    _needs("torch")
    import torch

    g = di.DifferentiateWith(_inner_f("tape"), di.AutoTape())
    with pytest.raises(di.ArgumentError, match="floating-point"):
        g(torch.tensor([1, 2]))
    with pytest.raises(di.ArgumentError, match="floating-point"):
        g(np.array([1, 2]))
    with pytest.raises(di.ArgumentError, match="diface backend"):
        di.DifferentiateWith(np.sin, "jax")  # type: ignore[arg-type]


def test_non_contiguous_and_read_only_inputs() -> None:
    _needs("torch")
    import torch

    g = di.DifferentiateWith(_inner_f("torch"), di.AutoTorch())
    x = np.array(X)
    x.flags.writeable = False
    np.testing.assert_allclose(g(x), np.sin(X) * X)
    xt = torch.tensor(np.stack([X, X]), requires_grad=True).T[:, 0]  # a strided view
    (grad,) = torch.autograd.grad(g(xt).sum(), xt)
    np.testing.assert_allclose(grad.numpy(), np.cos(X) * X + np.sin(X), rtol=1e-10)


def test_jax_outside_says_second_order_does_not_cross():
    """JAX differentiating twice through the boundary (jax.hessian, jacrev of grad, jvp of grad) raises a
    clear NotSupportedError; first order, jit and vmap still work."""
    jax = pytest.importorskip("jax")
    jnp = pytest.importorskip("jax.numpy")
    jax.config.update("jax_enable_x64", True)
    inner = di.DifferentiateWith(lambda x: np.sin(x) * x, di.AutoTape())
    g = lambda x: jnp.sum(inner(x) ** 2)
    x = jnp.linspace(0.1, 1.0, 3)
    xs = np.asarray(x)
    expected = 2 * np.sin(xs) * xs * (np.cos(xs) * xs + np.sin(xs))
    assert np.allclose(jax.grad(g)(x), expected) and np.allclose(jax.jit(jax.grad(g))(x), expected)
    assert np.allclose(jax.vmap(jax.grad(g))(jnp.stack([x, x]))[1], expected)
    for second in (jax.hessian(g), jax.jacrev(jax.grad(g)), lambda x: jax.jvp(jax.grad(g), (x,), (x,))[1]):
        with pytest.raises(di.NotSupportedError, match="twice"):
            second(x)
