"""Compiling AutoTensorFlow operators: one `tf.function` per operator and variant, traced at preparation
with an input signature fixed to the prepared spec, so that a prepared call never retraces.

Context values that are tensors, NumPy arrays, floats, complex numbers or `tf.nest` structures of them
are traced inputs (a new value runs the same graph). Python ints, bools and other objects are static:
each distinct value traces once (an int stays a Python int, as a size or an index needs; as a tensor it
would also promote float32 results to float64 under NumPy's rules). Static values must be hashable.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import numpy as np

from ..._errors import NotSupportedError
from ..._kernel import Kernel, Result
from ..._problem import Problem
from ._env import tf

__all__ = ["compiled", "is_traced", "make_kernel", "result_dtype"]

#: XLA (`jit_compile=True`): measured (python -m diface bench, 2-core CPU) faster for gradients (157 vs 209 us,
#: n=10) and hvp (229 vs 258 us), no faster for the pfor-vectorized Jacobians and Hessians; off, because
#: XLA cannot compile the host callbacks of DifferentiateWith and compiles again at every preparation
#: (see the docs page: a user option is the next step)
JIT_COMPILE = False
AUTOGRAPH = False


def result_dtype(problem: Problem) -> Any:
    """The dtype of every derivative a kernel returns (what the call path would cast them to)."""
    return problem.ops.result_type(problem.x_dtype, problem.y_spec[1])


def _cast(a: Any, dtype: Any) -> Any:
    if a is None:
        return None
    tf_ = tf()
    if isinstance(a, tuple):
        return tuple(_cast(v, dtype) for v in a)
    return a if a.dtype == dtype else tf_.cast(a, dtype)


def casting(run: Callable, dtype: Any) -> Callable:
    """`run(x, extra, cv) -> Result` with its derivatives (not the value) cast to `dtype`."""

    def run_cast(x: Any, extra: Any, cv: tuple) -> Result:
        r = run(x, extra, cv)
        return Result(r.value, _cast(r.lower, dtype), _cast(r.result, dtype))

    return run_cast


def is_traced(value: Any) -> bool:
    """Whether a context value becomes a traced input: tensors, arrays, floats and complex numbers, or a
    `tf.nest` structure of them (not bools, ints, strings or other objects)."""
    tf_ = tf()
    leaves = tf_.nest.flatten(value)
    return bool(leaves) and all(
        isinstance(leaf, (tf_.Tensor, tf_.Variable, np.ndarray, np.generic, float, complex))
        and not isinstance(leaf, (bool, np.bool_))
        for leaf in leaves
    )


def spec_of(value: Any, like: Any = None) -> Any:
    """The `tf.TensorSpec` (structure) of a traced value; a Python float takes the real precision of
    `like` (x's dtype, when floating), a Python complex the matching complex one."""
    tf_ = tf()

    def leaf(a: Any) -> Any:
        if isinstance(a, (tf_.Tensor, tf_.Variable)):
            return tf_.TensorSpec(a.shape, a.dtype)
        if isinstance(a, (np.ndarray, np.generic)):
            return tf_.TensorSpec(a.shape, tf_.as_dtype(a.dtype))
        real = like if like is not None and like.is_floating else tf_.float64
        if isinstance(a, complex):
            return tf_.TensorSpec((), tf_.complex64 if real == tf_.float32 else tf_.complex128)
        return tf_.TensorSpec((), real)

    return tf_.nest.map_structure(leaf, value)


def compiled(run: Callable, problem: Problem, extra: Any, jit: bool, now: bool = True) -> Callable:
    """`run(x, extra, cv)`, traced as a `tf.function` with the problem's input signature when `jit` (one
    graph per distinct tuple of static context values), else `run` itself (eager). `now`: the prepared
    spec's graph is traced here, at preparation; else on first use (a full variant many preparations
    never call)."""
    if not jit:
        return run
    cv = problem.context_values
    traced = tuple(i for i, v in enumerate(cv) if is_traced(v))
    static = tuple(i for i in range(len(cv)) if i not in traced)
    for i in static:
        _require_hashable(cv[i], i)
    functions = _Functions(run, problem, extra, traced, static)
    if now:
        functions.get(tuple(cv[i] for i in static))
    if not static and now:
        program = functions.get(())
        return lambda x, extra, cv: program(x, extra, tuple(cv[i] for i in traced))
    return lambda x, extra, cv: functions.get(tuple(cv[i] for i in static))(x, extra, tuple(cv[i] for i in traced))


class _Functions:
    """The `tf.function`s of one operator, one per tuple of static context values (each traced on first
    use)."""

    def __init__(self, run: Callable, problem: Problem, extra: Any, traced: tuple, static: tuple) -> None:
        tf_ = tf()
        cv = problem.context_values
        x_dtype = tf_.as_dtype(problem.x_dtype)
        self.run, self.traced, self.static = run, traced, static
        self.signature = [
            tf_.TensorSpec(problem.x_shape, x_dtype),
            None if extra is None else tuple(spec_of(e) for e in extra),
            tuple(spec_of(cv[i], x_dtype) for i in traced),
        ]
        self._made: dict[tuple, Callable] = {}
        self._lock = threading.Lock()

    def get(self, static_values: tuple) -> Callable:
        made = self._made.get(static_values)
        if made is not None:
            return made
        with self._lock:
            made = self._made.get(static_values)
            if made is None:
                made = self._made[static_values] = self._trace(static_values)
        return made

    def _trace(self, static_values: tuple) -> Callable:
        tf_ = tf()
        run, traced, static = self.run, self.traced, self.static
        n = len(traced) + len(static)

        def program(x: Any, extra: Any, traced_values: tuple) -> Any:
            values: list[Any] = [None] * n
            for i, v in zip(traced, traced_values, strict=True):
                values[i] = v
            for i, v in zip(static, static_values, strict=True):
                values[i] = v
            return run(x, extra, tuple(values))

        x_spec, extra_spec, cv_spec = self.signature
        if extra_spec is None:
            function = tf_.function(
                lambda x, cv: program(x, None, cv),
                input_signature=[x_spec, cv_spec],
                jit_compile=JIT_COMPILE,
                autograph=AUTOGRAPH,
            )
            function.get_concrete_function()  # traced now, at preparation
            return lambda x, extra, cv: function(x, cv)
        k = len(extra_spec)
        # flat positional tensors: TensorFlow binds them faster than nested tuples
        function = tf_.function(
            lambda x, *flat: program(x, flat[:k], flat[k:]),
            input_signature=[x_spec, *extra_spec, *cv_spec],
            jit_compile=JIT_COMPILE,
            autograph=AUTOGRAPH,
        )
        function.get_concrete_function()
        return lambda x, extra, cv: function(x, *extra, *cv)


def make_kernel(
    problem: Problem, program: Callable[[bool], Callable], extra: Any, jit: bool, per_tangent: bool = False
) -> Kernel:
    """The kernel running `program(full)(x, extra, cv) -> Result`: two programs (plain and full variant),
    traced now when `jit` (never for a single-use preparation). Without tangents and static contexts, the
    plain variant is also the kernel's `direct` path: one `tf.function` dispatch returning the result;
    `per_tangent` (the operator returns one result per tangent: pushforward, pullback, hvp) with one
    tangent, its `direct_tangent` alike. The full variant is traced on its first call: many preparations
    never make one (tracing costs 0.1-0.2 s)."""
    jit = jit and not problem.single_use
    dtype = result_dtype(problem)
    full = compiled(casting(program(True), dtype), problem, extra, jit, now=False)
    plain_run = casting(program(False), dtype)
    cv = problem.context_values
    if jit and all(is_traced(v) for v in cv):
        if extra is None:
            return _direct_kernel(plain_run, full, problem, dtype)
        if per_tangent and len(extra) == 1:
            return _direct_tangent_kernel(plain_run, full, problem, extra[0], dtype)
    plain = compiled(plain_run, problem, extra, jit)

    def run(x: Any, extra: Any, cv: tuple, y: Any, full_variant: bool) -> Result:
        return (full if full_variant else plain)(x, extra, cv)

    return Kernel(run, result_dtype=dtype, accepts_numpy=jit)


def _direct_kernel(plain: Callable, full: Callable, problem: Problem, dtype: Any) -> Kernel:
    """The hot path of operators without tangents: the plain variant as one `tf.function` of `x` and the
    context values returning the result alone."""
    tf_ = tf()
    x_dtype = tf_.as_dtype(problem.x_dtype)
    x_spec = tf_.TensorSpec(problem.x_shape, x_dtype)
    cv = problem.context_values
    if cv:
        signature = [x_spec, tuple(spec_of(v, x_dtype) for v in cv)]
        program = tf_.function(
            lambda x, cv: plain(x, None, cv).result,
            input_signature=signature,
            jit_compile=JIT_COMPILE,
            autograph=AUTOGRAPH,
        )
        direct = program
    else:
        program = tf_.function(
            lambda x: plain(x, None, ()).result, input_signature=[x_spec], jit_compile=JIT_COMPILE, autograph=AUTOGRAPH
        )
        direct = lambda x, cv: program(x)
    program.get_concrete_function()

    def run(x: Any, extra: Any, cv: tuple, y: Any, full_variant: bool) -> Result:
        return full(x, extra, cv) if full_variant else Result(result=direct(x, cv))

    return Kernel(run, result_dtype=dtype, accepts_numpy=True, direct=direct)


def _direct_tangent_kernel(plain: Callable, full: Callable, problem: Problem, tangent: Any, dtype: Any) -> Kernel:
    """The hot path of an operator with one tangent (pushforward, pullback, hvp): the plain variant as one
    `tf.function` of `x`, the tangent and the context values (flat positional tensors) returning the one
    result alone (the kernel's `direct_tangent`)."""
    tf_ = tf()
    x_dtype = tf_.as_dtype(problem.x_dtype)
    cv = problem.context_values
    signature = [tf_.TensorSpec(problem.x_shape, x_dtype), spec_of(tangent), *(spec_of(v, x_dtype) for v in cv)]
    program = tf_.function(
        lambda x, t, *cv: plain(x, (t,), cv).result[0],
        input_signature=signature,
        jit_compile=JIT_COMPILE,
        autograph=AUTOGRAPH,
    )
    program.get_concrete_function()
    if cv:
        one = lambda x, t, cv: program(x, t, *cv)
    else:
        one = lambda x, t, cv: program(x, t)

    def run(x: Any, extra: Any, cv: tuple, y: Any, full_variant: bool) -> Result:
        return full(x, extra, cv) if full_variant else Result(result=(one(x, extra[0], cv),))

    return Kernel(run, result_dtype=dtype, accepts_numpy=True, direct_tangent=one)


def _require_hashable(value: Any, index: int) -> None:
    try:
        hash(value)
    except TypeError:
        raise NotSupportedError(
            f"AutoTensorFlow(jit=True): context {index + 1} is a {type(value).__name__}, which is not a tensor, an "
            "array, a float or a tf.nest structure of them, so it is a static value of the traced tf.function; "
            "static values must be hashable. Make it hashable (a tuple, a frozen dataclass), pass its arrays as "
            "separate contexts, or use AutoTensorFlow(jit=False)"
        ) from None
