"""Compiling AutoJAX operators: whole programs per preparation, with a direct path for x alone."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..._errors import NotSupportedError
from ..._problem import Kernel, Problem

__all__ = [
    "cast",
    "casting",
    "compiled",
    "is_traceable",
    "linear_kernel",
    "make_kernel",
    "result_dtype",
    "x_only_kernel",
]


def make_kernel(
    problem: Problem, program: Callable[[bool], Callable], extra: Any, jit: bool, entries: int = 2
) -> Kernel:
    """The kernel running `program(full)(x, extra, cv)`, which returns `entries` results: two programs
    (plain and full variant), compiled now when `jit` (never for a single-use preparation)."""
    jit = jit and not problem.single_use
    dtype = result_dtype(problem)
    full = compiled(casting(program(True), dtype), problem, extra, jit)
    plain_run = casting(program(False), dtype)
    if jit and extra is None and not problem.contexts:
        return x_only_kernel(plain_run, full, problem, entries, dtype)
    plain = compiled(plain_run, problem, extra, jit)

    def kernel(x: Any, extra: Any, cv: tuple, y: Any, full_variant: bool) -> tuple:
        return (full if full_variant else plain)(x, extra, cv)

    kernel.result_dtype = dtype
    kernel.accepts_numpy = jit  # a compiled program converts NumPy arguments itself, fast
    return kernel


def x_only_kernel(plain: Callable, full: Callable, problem: Problem, entries: int, dtype: Any) -> Kernel:
    """The hot path of operators without tangents or contexts (gradient, jacobian, hessian, ...): the
    plain variant compiled as a function of `x` alone returning the result alone, the fewest
    arguments and outputs for JAX's dispatch to handle."""
    import jax

    program = jax.jit(lambda x: plain(x, None, ())[-1])
    program.lower(problem.x).compile()
    if entries == 2:

        def first_order_kernel(x: Any, extra: Any, cv: tuple, y: Any, full_variant: bool) -> tuple:
            return full(x, extra, cv) if full_variant else (None, program(x))

        kernel = first_order_kernel
    else:

        def second_order_kernel(x: Any, extra: Any, cv: tuple, y: Any, full_variant: bool) -> tuple:
            return full(x, extra, cv) if full_variant else (None, None, program(x))

        kernel = second_order_kernel
    kernel.result_dtype = dtype
    kernel.accepts_numpy = True
    kernel.x_only = program  # the prepared plain call: one compiled dispatch, nothing around it
    return kernel


def linear_kernel(problem: Problem, values: tuple, linear: Any, apply: Callable, extra: tuple, jit: bool) -> Kernel:
    """A same-point kernel: `apply(linear, tangents)`, where `linear` is a linearization (or a `vjp`)
    kept from the point; `values`, computed at the point, complete the full variant (the primal
    value first, then lower-order results)."""
    dtype = result_dtype(problem)
    program = lambda linear, extra: cast(apply(linear, extra), dtype)
    if jit:
        import jax

        program = jax.jit(program)
        program.lower(linear, extra).compile()
    values = (values[0], *cast(values[1:], dtype))
    nothing = (None,) * len(values)

    def same_point_kernel(x: Any, extra: tuple, cv: tuple, y: Any, full: bool) -> tuple:
        return (*(values if full else nothing), program(linear, extra))

    same_point_kernel.result_dtype = dtype
    same_point_kernel.accepts_numpy = jit
    return same_point_kernel


def result_dtype(problem: Problem) -> Any:
    """The dtype of every derivative a kernel returns (what the call path would cast them to)."""
    return problem.ops.result_type(problem.x_dtype, problem.y_spec[1])


def cast(results: Any, dtype: Any) -> Any:
    """Every array in `results` (a pytree; None entries stay None) as `dtype`."""
    import jax

    return jax.tree_util.tree_map(lambda a: a.astype(dtype), results)


def casting(run: Callable, dtype: Any) -> Callable:
    """`run(x, extra, cv) -> (value, *results)` with its results (not the value) cast to `dtype`."""

    def run_cast(x: Any, extra: Any, cv: tuple) -> tuple:
        value, *results = run(x, extra, cv)
        return (value, *cast(tuple(results), dtype))

    return run_cast


def compiled(run: Callable, problem: Problem, extra: Any, jit: bool) -> Callable:
    """`run(x, extra, cv)`, compiled now for the problem's shapes when `jit`, else as it is.

    Context values that are arrays, numbers or pytrees of them are traced arguments; the others
    (Python bools, strings, arbitrary objects) are static: each distinct value compiles once.
    """
    if not jit:
        return run
    import jax

    cv = problem.context_values
    static = tuple(i for i, v in enumerate(cv) if not is_traceable(v))
    if not static:
        program = jax.jit(run)
        program.lower(problem.x, extra, cv).compile()
        return program
    for i in static:
        _require_hashable(cv[i], i)
    traced = tuple(i for i in range(len(cv)) if i not in static)
    order = sorted(range(len(cv)), key=lambda i: (i in static, i))  # traced first, then static
    position = tuple(order.index(i) for i in range(len(cv)))

    def split(x: Any, extra: Any, traced_values: tuple, static_values: tuple) -> Any:
        values = (*traced_values, *static_values)
        return run(x, extra, tuple(values[p] for p in position))

    program = jax.jit(split, static_argnums=3)

    def call(x: Any, extra: Any, cv: tuple) -> Any:
        return program(x, extra, tuple(cv[i] for i in traced), tuple(cv[i] for i in static))

    program.lower(problem.x, extra, tuple(cv[i] for i in traced), tuple(cv[i] for i in static)).compile()
    return call


def is_traceable(value: Any) -> bool:
    """Whether `jit` can trace `value`: an array, a number (not a bool), or a pytree of them."""
    import jax

    leaves = jax.tree_util.tree_leaves(value)
    return all(
        isinstance(leaf, (jax.Array, np.ndarray, np.generic, int, float, complex))
        and not isinstance(leaf, (bool, np.bool_))
        for leaf in leaves
    )


def _require_hashable(value: Any, index: int) -> None:
    try:
        hash(value)
    except TypeError:
        raise NotSupportedError(
            f"AutoJAX(jit=True): context {index + 1} is a {type(value).__name__}, which JAX cannot trace (not an "
            "array, a number or a pytree of them), so it becomes a static argument of the compiled function; "
            "static arguments must be hashable. Make it hashable (a tuple, a frozen dataclass), pass its arrays "
            "as separate contexts, or use AutoJAX(jit=False)"
        ) from None
