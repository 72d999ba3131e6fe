"""Sparse Jacobians and Hessians (`AutoSparse(AutoJAX())`) as one compiled program each.

The compressed products and the decompression are traced together into one XLA program per
preparation: forward products `J S` are a `vmap` of `jvp`s over the seed columns (one per color),
reverse products `Sᵀ J` a `vmap` of the `vjp` of one forward pass, Hessian products `H S` a `vmap` of
the linearized gradient (forward over reverse); the nonzeros are then gathered out of the products
with index arrays fixed at preparation, which XLA keeps on the device as constants. The plain call
of a preparation given nothing but x runs the program and wraps its output in a `BCOO` whose indices
were put on the device once.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..._kernel import Kernel, Result
from ..._problem import Problem
from ..._sparse._plans import decompress
from ._compile import make_kernel
from ._transforms import bind

__all__ = ["sparse_hessian_kernel", "sparse_jacobian_kernel"]


def _seeds(seed: np.ndarray, shape: tuple, dtype: Any) -> np.ndarray:
    """A (size, c) NumPy seed matrix as c stacked tangents of `shape`, in `dtype`."""
    return np.ascontiguousarray(seed.T).reshape((seed.shape[1], *shape)).astype(dtype)


def _plan(coloring: Any) -> Any:
    return coloring.plan().batch_first()


def sparse_jacobian_kernel(problem: Problem, coloring: Any, jit: bool) -> Kernel:
    """Kernel `(x, extra, cv, y, full) -> (value or None, nonzeros)` for the coloring's products."""
    import jax
    import jax.numpy as jnp

    f, n_fwd, n_rev = problem.f, coloring.forward, coloring.reverse
    y_shape, y_dtype = problem.y_spec
    forward = _seeds(coloring.forward_seed(), problem.x_shape, problem.x_dtype) if n_fwd else None
    reverse = _seeds(coloring.reverse_seed(), y_shape, y_dtype) if n_rev else None
    plan = _plan(coloring)
    dtype = problem.ops.result_type(problem.x_dtype, y_dtype)

    def program(full: bool) -> Callable:
        def run(x: Any, extra: Any, cv: tuple) -> Result:
            fn = bind(f, cv)
            B = C = None
            if n_rev:
                y, vjp = jax.vjp(fn, x)
                C = jax.vmap(lambda s: vjp(s)[0])(jnp.asarray(reverse)).reshape(n_rev, -1)
            if n_fwd:
                y, B = jax.vmap(lambda s: jax.jvp(fn, (x,), (s,)), out_axes=(None, 0))(jnp.asarray(forward))
                B = B.reshape(n_fwd, -1)
            if not (n_fwd or n_rev):
                return Result(fn(x) if full else None, result=jnp.zeros((0,), dtype))
            return Result(y if full else None, result=decompress(plan, B, C, concat=jnp.concatenate))

        return run

    return make_kernel(problem, program, None, jit)


def sparse_hessian_kernel(problem: Problem, coloring: Any, jit: bool) -> Kernel:
    """The kernel of `Result(value, gradient, nonzeros)` (the first two None unless `full`) from the
    Hessian products of a star coloring, forward over reverse."""
    import jax
    import jax.numpy as jnp

    f, count = problem.f, coloring.forward
    seeds = _seeds(coloring.forward_seed(), problem.x_shape, problem.x_dtype) if count else None
    plan = _plan(coloring)
    dtype = problem.ops.result_type(problem.x_dtype, problem.y_spec[1])

    def program(full: bool) -> Callable:
        def run(x: Any, extra: Any, cv: tuple) -> Result:
            fn = bind(f, cv)
            if not count:
                data = jnp.zeros((0,), dtype)
                if not full:
                    return Result(result=data)
                value, gradient = jax.value_and_grad(fn)(x)
                return Result(value, gradient, data)
            gradient, hvp = jax.linearize(jax.grad(fn), x)
            products = jax.vmap(hvp)(jnp.asarray(seeds)).reshape(count, -1)
            data = decompress(plan, products, concat=jnp.concatenate)
            return Result(fn(x), gradient, data) if full else Result(result=data)

        return run

    return make_kernel(problem, program, None, jit)
