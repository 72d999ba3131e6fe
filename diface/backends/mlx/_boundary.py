"""Outer engine MLX (`DifferentiateWith`): `mx.custom_function`s for f, its pushforward and pullback, whose
`vjp` and `jvp` rules ask the inner backend (`dw.inner`) on host NumPy arrays.

The pullback is itself a custom function whose `jvp` is the inner hvp, so second order crosses the boundary
as forward over reverse (`jvp` of `grad`, what a plain `AutoMLX` Hessian is); reverse over reverse works the
same way through the pullback's `vjp` (H being symmetric in x). A forward-mode product has no derivative
here (`NotSupportedError`). Host callbacks need concrete arrays, so a function calling a `DifferentiateWith`
cannot be compiled or `vmap`ped over x: `AutoMLX` runs it uncompiled with its products one by one.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..._boundary import split_constants
from ..._errors import NotSupportedError
from ._ops import mx_dtype

__all__ = ["MlxBoundary"]


def _tuple(a: Any) -> tuple:
    return tuple(a) if isinstance(a, (list, tuple)) else (a,)


def call(dw: Any, x: Any, constants: tuple) -> Any:
    import mlx.core as mx

    inner = dw.inner
    arrays, rebuild = split_constants(constants)
    x = x if isinstance(x, mx.array) else mx.array(np.asarray(x), dtype=mx_dtype(np.asarray(x).dtype))
    arrays = [
        a if isinstance(a, mx.array) else mx.array(np.asarray(a), dtype=mx_dtype(np.asarray(a).dtype)) for a in arrays
    ]
    name = getattr(dw.f, "__name__", "f")

    def host(a: Any) -> np.ndarray:
        return np.array(a)

    def cs(arrs: tuple) -> tuple:
        return rebuild([host(a) for a in arrs])

    def back(a: np.ndarray, like: Any) -> Any:
        a = np.asarray(a)
        return mx.array(a, dtype=mx_dtype(a.dtype))

    def zeros(arrs: tuple) -> tuple:
        return tuple(mx.zeros_like(a) for a in arrs)

    @mx.custom_function
    def hvp(x: Any, g: Any, v: Any, *arrs: Any) -> Any:
        return back(inner.hvp(host(x), host(g), host(v), cs(arrs)), x)

    @hvp.vjp
    def _hvp_vjp(primals: Any, cotangent: Any, output: Any) -> Any:
        raise inner.third_order()

    @hvp.jvp
    def _hvp_jvp(primals: Any, tangents: Any) -> Any:
        raise inner.third_order()

    @mx.custom_function
    def pull(x: Any, g: Any, *arrs: Any) -> Any:
        return back(inner.pullback(host(x), host(g), cs(arrs)), x)

    @pull.jvp
    def _pull_jvp(primals: Any, tangents: Any) -> Any:
        x, g, *arrs = _tuple(primals)
        tx, tg = _tuple(tangents)[:2]
        # tangents of g enter linearly (a pullback), those of x through the inner hvp (MLX hands a 0-d zero
        # for an input it has no tangent of)
        terms: list[Any] = []
        if tx is not None:
            terms.append(hvp(x, g, mx.broadcast_to(tx, x.shape), *arrs))
        if tg is not None:
            terms.append(pull(x, mx.broadcast_to(tg, g.shape), *arrs))
        total = terms[0] if terms else mx.zeros_like(x)
        for term in terms[1:]:
            total = total + term
        return total

    @pull.vjp
    def _pull_vjp(primals: Any, cotangent: Any, output: Any) -> Any:
        x, g, *arrs = _tuple(primals)
        c = mx.broadcast_to(_tuple(cotangent)[0], x.shape)
        # d<c, pull(x, g)> / dx = H_g c (the Hessian of <g, f> is symmetric), / dg = J c
        return (hvp(x, g, c, *arrs), push(x, c, *arrs), *zeros(tuple(arrs)))

    @mx.custom_function
    def push(x: Any, t: Any, *arrs: Any) -> Any:
        return back(inner.pushforward(host(x), host(t), cs(arrs)), x)

    def _push_derivative(*args: Any) -> Any:
        raise NotSupportedError(
            f"DifferentiateWith({name}, ...): a forward-mode product does not cross the boundary again; take "
            "second order as forward over reverse (mx.jvp of mx.grad: a plain AutoMLX Hessian)"
        )

    push.jvp(_push_derivative)
    push.vjp(_push_derivative)

    @mx.custom_function
    def value(x: Any, *arrs: Any) -> Any:
        return back(inner.value(host(x), cs(arrs)), x)

    @value.vjp
    def _value_vjp(primals: Any, cotangent: Any, output: Any) -> Any:
        x, *arrs = _tuple(primals)
        c = _tuple(cotangent)[0]
        c = mx.broadcast_to(c, output.shape) if isinstance(output, mx.array) else c
        return (pull(x, c, *arrs), *zeros(tuple(arrs)))

    @value.jvp
    def _value_jvp(primals: Any, tangents: Any) -> Any:
        x, *arrs = _tuple(primals)
        return push(x, mx.broadcast_to(_tuple(tangents)[0], x.shape), *arrs)

    return value(x, *arrays)


class MlxBoundary:
    """MLX outside `DifferentiateWith` (a `diface._boundary.Boundary`)."""

    def owns(self, a: Any) -> bool:
        import mlx.core as mx

        return isinstance(a, mx.array)

    def call(self, dw: Any, x: Any, constants: tuple) -> Any:
        return call(dw, x, constants)

    def inner_pushforward(self, f: Any, x: np.ndarray, t: np.ndarray, constants: tuple) -> None:
        return None
