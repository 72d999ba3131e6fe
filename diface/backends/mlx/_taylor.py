"""Taylor coefficients and exact Laplacians in MLX: `order` nested `mx.jvp`s along the same direction,
batched over directions by `mx.vmap`, compiled at preparation (`make_kernel`).

Level j is a function returning `[f(x), d₁, ..., dⱼ]`; level j+1 is its `jvp` along v, whose primal
outputs are level j's and whose last tangent is dⱼ₊₁. Like any nesting of first-order forward mode this
costs about 2ᵏ evaluations of f, so it is for small orders; it is one compiled program for the whole
series of every direction.

The core's derivation (nested pushforward kernels) cannot work here: a kernel returns evaluated arrays
(`_lock.evaluated`), and `mx.eval` inside an `mx.jvp` trace makes the traced array a constant, so every
coefficient past the first came out zero (measured, MLX 0.32). Hence both kernels here are used whether
or not the engine compiles.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..._kernel import Kernel, Result
from ..._problem import Problem, size_of
from ._kernels import make_kernel
from ._lock import MLX_LOCK
from ._ops import mx_dtype
from ._transforms import Basis, _map, bind

__all__ = ["COMPILE_UP_TO", "laplacian_kernel", "series", "taylor_kernel"]

#: the highest order whose program is `mx.compile`d (MLX 0.32, a tanh MLP of 8 inputs, measured): compiling
#: nested `jvp`s grows steeply with the depth (order 6: 9 s, for calls of 0.4 ms instead of 2.1 ms
#: uncompiled), so higher orders run uncompiled, still one nested `jvp` under one `vmap`
COMPILE_UP_TO = 4


def series(fn: Callable, x: Any, v: Any, order: int) -> list:
    """`[fn(x), d₁, ..., d_order]` along `v` (see the module docstring)."""
    import mlx.core as mx

    v = v.astype(x.dtype) if v.dtype != x.dtype else v

    def level(j: int) -> Callable:
        if j == 0:
            return lambda z: [fn(z)]
        inner = level(j - 1)

        def outer(z: Any) -> list:
            primals, tangents = mx.jvp(inner, [z], [v])
            return [*primals, tangents[-1]]

        return outer

    return level(order)(x)


def taylor_kernel(problem: Problem, tangents: tuple, order: int, compile: bool) -> Kernel:
    """The series of every tangent: one `series`, or a `vmap` of them over the stacked tangents."""
    f = problem.f

    def program(full: bool) -> Callable:
        def run(x: Any, extra: tuple, cv: tuple) -> Result:
            import mlx.core as mx

            fn = bind(f, cv)
            b = len(extra)
            if b == 1:
                out = series(fn, x, extra[0], order)
                return Result(out[0] if full else None, result=(tuple(out[1:]),))
            stacked = _map(lambda v: mx.stack(series(fn, x, v, order)[1:]), mx.stack(list(extra)))
            # (b, order, *y_shape)
            result = tuple(tuple(stacked[i, j] for j in range(order)) for i in range(b))
            return Result(fn(x) if full else None, result=result)

        return run

    return make_kernel(problem, program, tangents, compile and order <= COMPILE_UP_TO)


def laplacian_kernel(problem: Problem, compile: bool) -> Kernel:
    """Σᵢ d²/dt² f(x + t·eᵢ) over the basis of x (a `vmap`), summed; the full variant also returns the
    Jacobian from the first coefficients."""
    f = problem.f
    x_shape = problem.x_shape
    with MLX_LOCK:
        y_shape = problem.y_spec[0]
        basis = Basis(x_shape, mx_dtype(problem.x_dtype))
    n, m = size_of(x_shape), size_of(y_shape)

    def program(full: bool) -> Callable:
        def run(x: Any, extra: Any, cv: tuple) -> Result:
            import mlx.core as mx

            fn = bind(f, cv)
            if x_shape == ():
                y, d1, d2 = series(fn, x, basis.vectors, 2)
                return Result(y if full else None, d1 if full else None, d2)
            both = _map(lambda v: mx.stack(series(fn, x, v, 2)[1:]), basis.vectors)  # (n, 2, *y_shape)
            lap = mx.sum(both[:, 1], axis=0)
            if not full:
                return Result(result=lap)
            jac = mx.moveaxis(both[:, 0].reshape((n, m)), 0, -1).reshape(y_shape + x_shape)
            return Result(fn(x), jac, lap)

        return run

    return make_kernel(problem, program, None, compile)
