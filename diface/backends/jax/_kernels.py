"""Compiling AutoJAX operators: whole programs per preparation, with a direct path for x alone.

Every program is jitted with `keep_unused=True`: JAX drops the arguments a program does not read, and a
program that reads none of its arrays (the Hessian of a quadratic, the Jacobian of a linear map, a
Laplacian that does not depend on x) would then run on the default device and return its result there,
not on the device of x (measured with two CPU devices: tests/test_device_placement.py)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..._errors import NotSupportedError
from ..._kernel import Kernel, Result
from ..._problem import Problem

__all__ = [
    "cast",
    "casting",
    "compiled",
    "constants_kernel",
    "is_traceable",
    "linear_kernel",
    "make_kernel",
    "one_program_kernel",
    "direct_kernel",
    "direct_tangent_kernel",
    "result_dtype",
]


def make_kernel(
    problem: Problem, program: Callable[[bool], Callable], extra: Any, jit: bool, per_tangent: bool = False
) -> Kernel:
    """The kernel running `program(full)(x, extra, cv) -> Result`: two programs (plain and full variant),
    compiled now when `jit` (never for a single-use preparation). `per_tangent`: the operator returns
    one result per tangent (pushforward, pullback, hvp), so that with one tangent the plain variant is
    compiled as the kernel's `direct_tangent`."""
    jit = jit and not problem.single_use
    dtype = result_dtype(problem)
    full = compiled(casting(program(True), dtype), problem, extra, jit)
    plain_run = casting(program(False), dtype)
    if jit and all(is_traceable(v) for v in problem.context_values):
        if extra is None:
            return direct_kernel(plain_run, full, problem, dtype)
        if per_tangent and len(extra) == 1:
            return direct_tangent_kernel(plain_run, full, problem, extra[0], dtype)
    plain = compiled(plain_run, problem, extra, jit)

    def run(x: Any, extra: Any, cv: tuple, y: Any, full_variant: bool) -> Result:
        return (full if full_variant else plain)(x, extra, cv)

    # a compiled program converts NumPy arguments itself, fast; with no static context values it may be
    # traced into a larger program
    traceable = jit and all(is_traceable(v) for v in problem.context_values)
    return Kernel(run, result_dtype=dtype, accepts_numpy=jit, traceable=traceable)


def constants_kernel(
    problem: Problem,
    full_run: Callable,
    constants: Any,
    jit: bool,
    parts: tuple[Callable, Callable] | None = None,
) -> Kernel:
    """`one_program_kernel` for a `full_run(x, extra, cv, constants) -> Result` that reads large index
    arrays fixed at preparation (`constants`, a pytree of NumPy arrays). They go to x's device once and
    into the compiled program as arguments: baked in as constants, XLA spends seconds on them at a
    million nonzeros and the gathers run no faster. (Seeds, by contrast, are better left as constants:
    XLA folds the linear part of f's tangent along them, and calls run twice as fast.)

    `parts`, `(plain(x, cv, constants) -> result, rest(x, cv) -> Result(value, lower))`, where given,
    split `full_run` in two programs, used wherever they compile as functions of x and the context values
    alone (jitted, no static context values): the plain call runs the first alone, the full variant both.
    A program that returns f(x) beside the derivative evaluates f's primal, which a program of the
    derivative alone drops wherever the tangents do not need it (`sin(x)` beside `cos(x) * t`: a sparse
    Jacobian 1.25x slower); and the second program, f (and its gradient) alone, compiles in a fraction of
    the time the products take (a tenth at 10^6 unknowns)."""
    import jax

    on_device = jax.tree_util.tree_map(lambda a: problem.ops.asarray(a, like=problem.x), constants)
    jit = jit and not problem.single_use
    if parts is not None and jit and all(is_traceable(v) for v in problem.context_values):
        return _two_program_kernel(problem, parts, on_device)

    def split(x: Any, extra: Any, cv: tuple) -> Result:
        return full_run(x, extra[0], cv, extra[1])

    inner = one_program_kernel(problem, split, (None, on_device), jit)

    def run(x: Any, extra: Any, cv: tuple, y: Any, full: bool) -> Result:
        return inner.run(x, (extra, on_device), cv, y, full)

    direct = None
    if inner.traceable:  # compiled, with no static context values: the plain call, nothing around it

        def direct(x: Any, cv: tuple) -> Any:
            return inner.run(x, (None, on_device), cv, None, False).result

    return inner.replace(run=run, direct=direct)


def _two_program_kernel(problem: Problem, parts: tuple[Callable, Callable], constants: Any) -> Kernel:
    """The kernel of `constants_kernel`'s `parts`: the plain program (the kernel's direct one) and the
    rest of the full variant, each compiled now."""
    import jax

    plain, rest = parts
    dtype = result_dtype(problem)
    plain_program = jax.jit(lambda x, cv, constants: cast(plain(x, cv, constants), dtype))
    rest_program = jax.jit(lambda x, cv: _cast_lower(rest(x, cv), dtype))
    x, cv = problem.x, problem.context_values
    plain_program.lower(x, cv, constants).compile()
    rest_program.lower(x, cv).compile()

    def direct(x: Any, cv: tuple) -> Any:
        return plain_program(x, cv, constants)

    def run(x: Any, extra: Any, cv: tuple, y: Any, full: bool) -> Result:
        result = plain_program(x, cv, constants)
        if not full:
            return Result(result=result)
        value, lower, _ = rest_program(x, cv)
        return Result(value, lower, result)

    return Kernel(run, result_dtype=dtype, accepts_numpy=True, direct=direct, traceable=True)


def _cast_lower(r: Result, dtype: Any) -> Result:
    return Result(r.value, cast(r.lower, dtype))


def one_program_kernel(problem: Problem, full_run: Callable, extra: Any, jit: bool) -> Kernel:
    """The kernel of `full_run(x, extra, cv) -> Result` alone, for operators whose full variant costs
    nothing more than the plain one: compiled once (when `jit`, never for a single-use preparation), the
    plain variant keeping its result."""
    jit = jit and not problem.single_use
    dtype = result_dtype(problem)
    program = compiled(casting(full_run, dtype), problem, extra, jit)

    def run(x: Any, extra: Any, cv: tuple, y: Any, full: bool) -> Result:
        r = program(x, extra, cv)
        return r if full else Result(result=r.result)

    traceable = jit and all(is_traceable(v) for v in problem.context_values)
    return Kernel(run, result_dtype=dtype, accepts_numpy=jit, traceable=traceable)


def direct_kernel(plain: Callable, full: Callable, problem: Problem, dtype: Any) -> Kernel:
    """The hot path of operators without tangents (gradient, jacobian, hessian, ...): the plain variant
    compiled as a function of `x` and the context values returning the result alone, the fewest
    arguments and outputs for JAX's dispatch to handle."""
    import jax

    program = jax.jit(lambda x, cv: plain(x, None, cv).result, keep_unused=True)
    program.lower(problem.x, problem.context_values).compile()

    def run(x: Any, extra: Any, cv: tuple, y: Any, full_variant: bool) -> Result:
        return full(x, extra, cv) if full_variant else Result(result=program(x, cv))

    # the prepared plain call: one compiled dispatch, nothing around it
    return Kernel(run, result_dtype=dtype, accepts_numpy=True, direct=program, traceable=True)


def direct_tangent_kernel(plain: Callable, full: Callable, problem: Problem, tangent: Any, dtype: Any) -> Kernel:
    """The hot path of an operator with one tangent (pushforward, pullback, hvp): the plain variant
    compiled as a function of `x`, the tangent and the context values returning the one result alone,
    the fewest arguments and outputs for JAX's dispatch to handle (the kernel's `direct_tangent`)."""
    import jax

    program = jax.jit(lambda x, t, cv: plain(x, (t,), cv).result[0])
    program.lower(problem.x, tangent, problem.context_values).compile()

    def run(x: Any, extra: Any, cv: tuple, y: Any, full_variant: bool) -> Result:
        return full(x, extra, cv) if full_variant else Result(result=(program(x, extra[0], cv),))

    return Kernel(run, result_dtype=dtype, accepts_numpy=True, direct_tangent=program, traceable=True)


def linear_kernel(problem: Problem, values: Result, linear: Any, apply: Callable, extra: tuple, jit: bool) -> Kernel:
    """A same-point kernel: `apply(linear, tangents)`, where `linear` is a linearization (or a `vjp`)
    kept from the point; `values` (the primal value and the lower-order result), computed at the point,
    complete the full variant."""
    dtype = result_dtype(problem)
    program = lambda linear, extra: cast(apply(linear, extra), dtype)
    if jit:
        import jax

        program = jax.jit(program, keep_unused=True)
        program.lower(linear, extra).compile()
    values = values._replace(lower=cast(values.lower, dtype))

    def same_point(x: Any, extra: tuple, cv: tuple, y: Any, full: bool) -> Result:
        result = program(linear, extra)
        return values._replace(result=result) if full else Result(result=result)

    return Kernel(same_point, result_dtype=dtype, accepts_numpy=jit)


def result_dtype(problem: Problem) -> Any:
    """The dtype of every derivative a kernel returns (what the call path would cast them to)."""
    return problem.ops.result_type(problem.x_dtype, problem.y_spec[1])


def cast(results: Any, dtype: Any) -> Any:
    """Every array in `results` (a pytree; None entries stay None) as `dtype`."""
    import jax

    return jax.tree_util.tree_map(lambda a: a.astype(dtype), results)


def casting(run: Callable, dtype: Any) -> Callable:
    """`run(x, extra, cv) -> Result` with its derivatives (not the value) cast to `dtype`."""

    def run_cast(x: Any, extra: Any, cv: tuple) -> Result:
        r = run(x, extra, cv)
        return Result(r.value, cast(r.lower, dtype), cast(r.result, dtype))

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
        program = jax.jit(run, keep_unused=True)
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

    program = jax.jit(split, static_argnums=3, keep_unused=True)

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
