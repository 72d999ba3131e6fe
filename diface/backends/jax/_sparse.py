"""Sparse Jacobians and Hessians (`AutoSparse(AutoJAX())`) as compiled programs: the plain call one dispatch.

The compressed products and the decompression are traced together into one XLA program, the plain
call's; the full variant runs it and a second program, f(x) (and its gradient) alone, which compiles
much faster than a second program of the products would. Forward products `J S` are a `vmap` of
`jvp`s over the seed columns (one per color), reverse products `Sᵀ J` a `vmap` of the `vjp` of one
forward pass, Hessian products `H S` a `vmap` of the linearized gradient (forward over reverse); the
nonzeros are then gathered out of the products with index arrays fixed at preparation. The index
arrays go to the device once and into the program as arguments (`_kernels.constants_kernel`): as
constants, XLA compiled them slowly. The seeds stay constants, so that XLA folds the linear part of
f's tangent along them. The plain call of a preparation given nothing but x runs the program and
wraps its output in a `BCOO` whose indices were put on the device once.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..._kernel import Kernel, Result
from ..._problem import Problem
from ..._sparse._plans import decompress
from ._kernels import constants_kernel
from ._transforms import bind

__all__ = ["sparse_hessian_kernel", "sparse_jacobian_kernel"]


def _seeds(seed: np.ndarray, shape: tuple, dtype: Any) -> np.ndarray:
    """A (size, c) NumPy seed matrix as c stacked tangents of `shape`, in `dtype`."""
    return np.ascontiguousarray(seed.T).reshape((seed.shape[1], *shape)).astype(dtype)


def _plan(coloring: Any) -> tuple[Any, tuple]:
    """The batch-first decompression plan, and its index arrays (in the order `_with_indices` reads
    them), to pass to the compiled program as arguments."""
    plan = coloring.plan().batch_first()
    arrays: list = []

    def keep(a: np.ndarray) -> np.ndarray:
        arrays.append(a)
        return a

    plan.map(keep)
    return plan, tuple(arrays)


def _with_indices(plan: Any, arrays: tuple) -> Any:
    """`plan` reading `arrays` (traced) in place of its own index arrays."""
    it = iter(arrays)
    return plan.map(lambda _: next(it))


def sparse_jacobian_kernel(problem: Problem, coloring: Any, jit: bool) -> Kernel:
    """Kernel `(x, extra, cv, y, full) -> (value or None, nonzeros)` for the coloring's products."""
    import jax
    import jax.numpy as jnp

    f, n_fwd, n_rev = problem.f, coloring.forward, coloring.reverse
    y_shape, y_dtype = problem.y_spec
    forward = _seeds(coloring.forward_seed(), problem.x_shape, problem.x_dtype) if n_fwd else None
    reverse = _seeds(coloring.reverse_seed(), y_shape, y_dtype) if n_rev else None
    plan, indices = _plan(coloring)
    dtype = problem.ops.result_type(problem.x_dtype, y_dtype)

    def run(x: Any, extra: Any, cv: tuple, indices: tuple) -> Result:
        fn = bind(f, cv)
        B = C = None
        if n_rev:
            y, vjp = jax.vjp(fn, x)
            C = jax.vmap(lambda s: vjp(s)[0])(jnp.asarray(reverse)).reshape(n_rev, -1)
        if n_fwd:
            y, B = jax.vmap(lambda s: jax.jvp(fn, (x,), (s,)), out_axes=(None, 0))(jnp.asarray(forward))
            B = B.reshape(n_fwd, -1)
        if not (n_fwd or n_rev):
            return Result(fn(x), result=jnp.zeros((0,), dtype))
        return Result(y, result=decompress(_with_indices(plan, indices), B, C, concat=jnp.concatenate))

    def plain(x: Any, cv: tuple, indices: tuple) -> Any:
        return run(x, None, cv, indices).result  # f(x) unused: XLA leaves out what only the value needs

    def rest(x: Any, cv: tuple) -> Result:
        return Result(bind(f, cv)(x))

    # the plain call runs the products alone: a program returning f(x) too evaluates f's primal, which
    # the tangents alone may not need (sin(x) beside cos(x) t: 1.25x slower at n = 10^4)
    return constants_kernel(problem, run, indices, jit, (plain, rest))


def sparse_hessian_kernel(problem: Problem, coloring: Any, jit: bool) -> Kernel:
    """The kernel of `Result(value, gradient, nonzeros)` (the first two None unless `full`) from the
    Hessian products of a star coloring, forward over reverse."""
    import jax
    import jax.numpy as jnp

    f, count = problem.f, coloring.forward
    seeds = _seeds(coloring.forward_seed(), problem.x_shape, problem.x_dtype) if count else None
    plan, indices = _plan(coloring)
    dtype = problem.ops.result_type(problem.x_dtype, problem.y_spec[1])

    def run(x: Any, extra: Any, cv: tuple, indices: tuple) -> Result:
        fn = bind(f, cv)
        if not count:
            value, gradient = jax.value_and_grad(fn)(x)
            return Result(value, gradient, jnp.zeros((0,), dtype))
        gradient, hvp = jax.linearize(jax.grad(fn), x)
        products = jax.vmap(hvp)(jnp.asarray(seeds)).reshape(count, -1)
        return Result(fn(x), gradient, decompress(_with_indices(plan, indices), products, concat=jnp.concatenate))

    def plain(x: Any, cv: tuple, indices: tuple) -> Any:
        return run(x, None, cv, indices).result  # the value and gradient unused: XLA leaves them out

    def rest(x: Any, cv: tuple) -> Result:
        value, gradient = jax.value_and_grad(bind(f, cv))(x)
        return Result(value, gradient)

    # the plain call runs the products alone, without the forward pass of f(x) (and the gradient)
    return constants_kernel(problem, run, indices, jit, (plain, rest))
