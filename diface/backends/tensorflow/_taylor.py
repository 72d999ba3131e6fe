"""Taylor coefficients and exact Laplacians in TensorFlow: `order` nested `ForwardAccumulator`s along
the same direction, inside the operator's one `tf.function` (traced at preparation).

Each accumulator records the tangents of every operation run inside it, the inner accumulators'
tangent computations included, so with k accumulators around f the innermost one's `jvp(y)` is the
first derivative along v, the next one's `jvp` of that the second, and so on. Like any nesting of
first-order forward mode this costs about 2ᵏ evaluations of f (there is no truncated-polynomial
arithmetic in TensorFlow), so it is for the small orders Taylor coefficients are asked for; what it
saves over the core's derivation is the per-level kernel calls: the whole series of every direction is
one graph dispatch. Directions are batched by `tf.vectorized_map` (a loop, unrolled in the graph, for
up to `LOOP_UP_TO` of them, as the pushforwards do).

Only up to order `NATIVE_TAYLOR_ORDER` (3; the package's `__init__` says why): TensorFlow computes an
accumulator's tangents by transposing backward functions, so tracing grows about threefold per level,
and from four levels on it fails inside TensorFlow for operations that are function calls (NumPy
behavior's `**` and `/`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..._kernel import Kernel, Result
from ..._problem import Problem, size_of
from ._env import tf
from ._kernels import make_kernel
from ._transforms import LOOP_UP_TO, _zero, basis, bind

__all__ = ["laplacian_kernel", "series", "taylor_kernel"]


def series(fn: Callable, x: Any, v: Any, order: int) -> tuple:
    """`(fn(x), (d₁, ..., d_order))` along `v`: `order` nested accumulators (see the module docstring)."""
    tf_ = tf()
    v = tf_.cast(v, x.dtype)
    accumulators = [tf_.autodiff.ForwardAccumulator(x, v) for _ in range(order)]
    for acc in accumulators:  # outermost first
        acc.__enter__()
    try:
        y = fn(x)
    finally:
        # innermost out: each accumulator leaves before the next outer one
        for acc in reversed(accumulators):
            acc.__exit__(None, None, None)
    coefficients = []
    d = y
    for acc in reversed(accumulators):  # the innermost gives d₁, the outermost d_order
        d = acc.jvp(d, unconnected_gradients=_zero())
        coefficients.append(d)
    return y, tuple(coefficients)


def _batched(fn: Callable, x: Any, stacked: Any, order: int) -> tuple:
    """`(fn(x), coefficients)` along each row of `stacked` (`(B, *x.shape)`): each coefficient stacked
    `(B, *y.shape)`."""
    tf_ = tf()
    b = int(stacked.shape[0])
    if b <= LOOP_UP_TO:
        rows = [series(fn, x, stacked[i], order) for i in range(b)]
        return rows[0][0], tuple(tf_.stack([r[1][j] for r in rows]) for j in range(order))
    y = fn(x)
    return y, tf_.vectorized_map(lambda v: series(fn, x, v, order)[1], stacked)


def taylor_kernel(problem: Problem, tangents: tuple, order: int, jit: bool) -> Kernel:
    """The series of every tangent, one traced program (both variants)."""
    f = problem.f

    def program(full: bool) -> Callable:
        def run(x: Any, extra: tuple, cv: tuple) -> Result:
            fn = bind(f, cv)
            if len(extra) == 1:
                y, coefficients = series(fn, x, extra[0], order)
                return Result(y if full else None, result=(coefficients,))
            y, stacked = _batched(fn, x, tf().stack(extra), order)
            b = len(extra)
            per_order = [tf().unstack(s, num=b) for s in stacked]
            return Result(y if full else None, result=tuple(tuple(c[i] for c in per_order) for i in range(b)))

        return run

    return make_kernel(problem, program, tangents, jit)


def laplacian_kernel(problem: Problem, jit: bool) -> Kernel:
    """Σᵢ d²/dt² f(x + t·eᵢ) over the basis of x, vectorized; the full variant also returns the
    Jacobian, from the first coefficients."""
    f = problem.f
    x_shape, y_shape = problem.x_shape, problem.y_spec[0]
    n = size_of(x_shape)

    def program(full: bool) -> Callable:
        def run(x: Any, extra: Any, cv: tuple) -> Result:
            tf_ = tf()
            y, (firsts, seconds) = _batched(bind(f, cv), x, basis(x_shape, x.dtype), 2)
            lap = tf_.reduce_sum(seconds, axis=0)
            if not full:
                return Result(result=lap)
            jac = tf_.reshape(tf_.transpose(tf_.reshape(firsts, (n, -1))), y_shape + x_shape)
            return Result(y, jac, lap)

        return run

    return make_kernel(problem, program, None, jit)
