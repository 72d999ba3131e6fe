"""Each engine's own fastest call of an operator: what a prepared diface call is measured against.

`direct_call(engine, operator, f, x, v, numpy_in)` returns `(description, thunk)`: `f(xp, x)` is the
benchmark function written once, `x` the point (a NumPy array), `v` a tangent for hvp. With
`numpy_in`, the thunk takes NumPy input and gives NumPy output as a user of that engine would (the
conversions in and out are part of the call); otherwise it works on the engine's own arrays. Where
an engine has two idioms (`jacfwd`/`jacrev`, double backward/`jvp` of `grad`), the faster one on this
problem is kept. The tape, diface's own engine, is measured against autograd on the same NumPy code.
Engines registered with a `direct` function (`register_engine(..., direct="module:function")`) bring
their own: that function has `direct_call`'s signature less the engine's name.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

import numpy as np

from .._engines import engines
from ._timing import interleaved

__all__ = ["direct_call"]


def direct_call(
    engine: str, operator: str, f: Callable, x: np.ndarray, v: np.ndarray, numpy_in: bool
) -> tuple[str, Callable[[], Any]] | None:
    maker = _MAKERS.get(engine) or _registered(engine)
    return None if maker is None else maker(operator, f, x, v, numpy_in)


def _registered(engine: str) -> Callable | None:
    """The `direct` function an engine package registered with `register_engine` (imported now)."""
    registered = engines().get(engine)
    if registered is None or registered.direct is None:
        return None
    module, _, function = registered.direct.partition(":")
    return getattr(importlib.import_module(module), function)


def _fastest(candidates: dict[str, Callable[[], Any]]) -> tuple[str, Callable[[], Any]]:
    """The faster of an engine's idioms for the same result (a short interleaved timing)."""
    if len(candidates) == 1:
        return next(iter(candidates.items()))
    times = interleaved(candidates, rounds=3, min_time=0.005)
    name = min(times, key=times.__getitem__)
    return name, candidates[name]


def _finitediff(operator: str, f: Callable, x: np.ndarray, v: np.ndarray, numpy_in: bool) -> Any:
    from scipy.optimize import approx_fprime

    if operator not in ("gradient", "jacobian"):
        return None
    eps = float(np.sqrt(np.finfo(x.dtype).eps))
    return "scipy.optimize.approx_fprime", lambda: approx_fprime(x, lambda x: f(np, x), eps)


def _autograd(operator: str, f: Callable, x: np.ndarray, v: np.ndarray, numpy_in: bool) -> Any:
    import autograd
    import autograd.numpy as anp

    g = lambda x: f(anp, x)
    if operator == "hvp":
        hvp = autograd.hessian_vector_product(g)
        return "autograd.hessian_vector_product", lambda: hvp(x, v)
    make = {"gradient": autograd.grad, "jacobian": autograd.jacobian, "hessian": autograd.hessian}[operator]
    fn = make(g)
    return f"autograd.{make.__name__}", lambda: fn(x)


def _torch(operator: str, f: Callable, x: np.ndarray, v: np.ndarray, numpy_in: bool) -> Any:
    import torch

    g = lambda x: f(torch, x)
    tv = torch.from_numpy(v)

    def gradient(t: Any) -> Any:
        leaf = t.detach().requires_grad_(True)
        return torch.autograd.grad(g(leaf), leaf)[0]

    def double_backward(t: Any) -> Any:
        leaf = t.detach().requires_grad_(True)
        (grad,) = torch.autograd.grad(g(leaf), leaf, create_graph=True)
        return torch.autograd.grad(grad, leaf, tv)[0]

    jvp_of_grad = lambda t: torch.func.jvp(torch.func.grad(g), (t,), (tv,))[1]
    table: dict[str, dict[str, Callable[[Any], Any]]] = {
        "gradient": {"torch.autograd.grad": gradient},
        "hvp": {"torch.autograd.grad, twice": double_backward, "torch.func.jvp(torch.func.grad)": jvp_of_grad},
        "jacobian": {"torch.func.jacfwd": torch.func.jacfwd(g), "torch.func.jacrev": torch.func.jacrev(g)},
        "hessian": {"torch.func.hessian": torch.func.hessian(g)},
    }
    idioms = table[operator]
    tx = torch.from_numpy(x)

    def thunk(fn: Callable[[Any], Any]) -> Callable[[], Any]:
        if numpy_in:
            return lambda: fn(torch.from_numpy(x)).numpy()
        return lambda: fn(tx)

    return _fastest({name: thunk(fn) for name, fn in idioms.items()})


def _jax(operator: str, f: Callable, x: np.ndarray, v: np.ndarray, numpy_in: bool) -> Any:
    import jax
    import jax.numpy as jnp

    g = lambda x: f(jnp, x)
    idioms = {
        "gradient": {"jax.jit(jax.grad)": jax.grad(g)},
        "hvp": {"jax.jit(jax.jvp of jax.grad)": lambda x: jax.jvp(jax.grad(g), (x,), (jnp.asarray(v),))[1]},
        "jacobian": {"jax.jit(jax.jacfwd)": jax.jacfwd(g), "jax.jit(jax.jacrev)": jax.jacrev(g)},
        "hessian": {"jax.jit(jax.hessian)": jax.hessian(g)},
    }[operator]
    compiled = {name: jax.jit(fn) for name, fn in idioms.items()}
    jx = jnp.asarray(x)

    def thunk(fn: Callable[[Any], Any]) -> Callable[[], Any]:
        if numpy_in:
            return lambda: np.asarray(fn(x))
        return lambda: fn(jx).block_until_ready()

    return _fastest({name: thunk(fn) for name, fn in compiled.items()})


_MAKERS = {"finitediff": _finitediff, "autograd": _autograd, "tape": _autograd, "torch": _torch, "jax": _jax}


def direct_functions(engine: str, f: Callable) -> tuple[str, Callable, Callable] | None:
    """(description, gradient(x), hvp(x, p)) of the engine called directly, NumPy in and NumPy out, as an
    optimizer such as `scipy.optimize.minimize(method="trust-ncg")` calls them; None for engines with
    no second derivatives of their own."""
    if engine in ("autograd", "tape"):
        import autograd
        import autograd.numpy as anp

        g = lambda x: f(anp, x)
        return "autograd.grad, autograd.hessian_vector_product", autograd.grad(g), autograd.hessian_vector_product(g)
    if engine == "torch":
        import torch

        g = lambda x: f(torch, x)

        def gradient(x: np.ndarray) -> np.ndarray:
            leaf = torch.from_numpy(x).requires_grad_(True)
            return torch.autograd.grad(g(leaf), leaf)[0].numpy()

        def hvp(x: np.ndarray, p: np.ndarray) -> np.ndarray:
            leaf = torch.from_numpy(x).requires_grad_(True)
            (grad,) = torch.autograd.grad(g(leaf), leaf, create_graph=True)
            return torch.autograd.grad(grad, leaf, torch.from_numpy(p))[0].numpy()

        return "torch.autograd.grad (twice for hvp)", gradient, hvp
    if engine == "jax":
        import jax
        import jax.numpy as jnp

        g = lambda x: f(jnp, x)
        grad = jax.jit(jax.grad(g))
        hvp = jax.jit(lambda x, p: jax.jvp(jax.grad(g), (x,), (p,))[1])
        return (
            "jax.jit(jax.grad), jax.jit(jvp of grad)",
            (lambda x: np.asarray(grad(x))),
            (lambda x, p: np.asarray(hvp(x, p))),
        )
    return None
