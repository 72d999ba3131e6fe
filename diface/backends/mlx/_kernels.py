"""Compiling AutoMLX operators: one `mx.compile`d program per variant, made (and traced) at preparation.

A program is `run(x, extra, cv) -> Result`. Context values that are arrays, floats, or trees of them are
inputs of the compiled function (a float becomes a 0-d array of x's precision), so a new `Constant`
value does not compile again; the others (ints, bools, strings, objects) are closed over, one compiled
program per distinct value (they must be hashable). MLX traces a compiled function on its first two
calls, so preparation calls each program twice: prepared calls only run it. Where f cannot be compiled
(it evaluates arrays itself: `.item()`, a branch on a value, NumPy inside) the kernel runs uncompiled.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any

import numpy as np

from ..._errors import NotSupportedError
from ..._kernel import Kernel, Result
from ..._problem import Problem
from ._lock import MLX_LOCK, locked, on_mlx_thread
from ._ops import mx_dtype
from ._transforms import looping

__all__ = ["make_kernel", "native", "result_dtype"]

_MX_DTYPES: dict[Any, Any] = {}


def native(a: Any) -> Any:
    """A NumPy array (or scalar, or a Python float: float64) as an MLX array of the same dtype; anything else
    as it is."""
    if isinstance(a, (float, complex)):
        a = np.asarray(a)
    if isinstance(a, (np.ndarray, np.generic)):
        dtype = _MX_DTYPES.get(a.dtype)
        if dtype is None:
            dtype = _MX_DTYPES[a.dtype] = mx_dtype(a.dtype)
        import mlx.core as mx

        contiguous: Any = a if a.flags.c_contiguous else np.array(a, order="C")  # MLX takes no negative strides
        return mx.array(contiguous, dtype=dtype)
    return a


def _natives(values: Any) -> Any:
    return None if values is None else tuple(native(v) for v in values)


def result_dtype(problem: Problem) -> Any:
    """The dtype of every derivative a kernel returns."""
    return problem.ops.result_type(problem.x_dtype, problem.y_spec[1])


def _cast(a: Any, dtype: Any) -> Any:
    if a is None:
        return None
    if isinstance(a, tuple):
        return tuple(_cast(v, dtype) for v in a)
    return a if a.dtype == dtype else a.astype(dtype)


def casting(run: Callable, dtype: Any) -> Callable:
    """`run(x, extra, cv) -> Result` with its derivatives (not the value) cast to `dtype`."""

    def run_cast(x: Any, extra: Any, cv: tuple) -> Result:
        r = run(x, extra, cv)
        return Result(r.value, _cast(r.lower, dtype), _cast(r.result, dtype))

    return run_cast


# -- contexts: compiled-function inputs, or closed over -------------------------------------------------
_TRACED = object()


def _traced(v: Any, dtype: Any) -> Any:
    """`v` as an input of the compiled function (floats as 0-d arrays of `dtype`), or `_TRACED`'s
    opposite, None, where it must be closed over."""
    import mlx.core as mx

    if isinstance(v, mx.array):
        return v
    if isinstance(v, (np.ndarray, np.floating)) and v.dtype.kind in "fc":
        return native(v)
    if isinstance(v, float):
        return mx.array(v, dtype=dtype)
    if isinstance(v, (list, tuple)) and v:
        leaves = [_traced(e, dtype) for e in v]
        return None if any(e is None for e in leaves) else type(v)(leaves) if type(v) in (list, tuple) else None
    if isinstance(v, dict) and v and all(isinstance(k, str) for k in v):
        items = {k: _traced(e, dtype) for k, e in v.items()}
        return None if any(e is None for e in items.values()) else items
    return None


class Contexts:
    """Which context values are compiled-function inputs and which are closed over (found at preparation
    from the prepared values: a value of the same kind later takes the same way)."""

    def __init__(self, problem: Problem) -> None:
        import mlx.core as mx

        dtype = mx_dtype(problem.x_dtype)
        self.dtype = dtype if dtype in (mx.float32, mx.float64, mx.float16, mx.bfloat16) else mx.float32
        traced = [_traced(v, self.dtype) is not None for v in problem.context_values]
        self.traced = tuple(i for i, t in enumerate(traced) if t)
        self.static = tuple(i for i, t in enumerate(traced) if not t)
        self.n = len(traced)

    def split(self, cv: tuple) -> tuple[tuple, tuple]:
        traced = tuple(_traced(cv[i], self.dtype) for i in self.traced)
        if any(t is None for t in traced):
            bad = next(i for i, t in zip(self.traced, traced, strict=True) if t is None)
            raise NotSupportedError(
                f"AutoMLX(compile=True): context {bad + 1} was an array or a number at preparation and is now a "
                f"{type(cv[bad]).__name__}; prepare again for it"
            )
        return traced, tuple(cv[i] for i in self.static)

    def merge(self, traced: tuple, static: tuple) -> tuple:
        values: list = [None] * self.n
        for i, v in zip(self.traced, traced, strict=True):
            values[i] = v
        for i, v in zip(self.static, static, strict=True):
            values[i] = v
        return tuple(values)


def _key(static: tuple) -> Any:
    try:
        hash(static)
    except TypeError:
        raise NotSupportedError(
            "AutoMLX(compile=True): a context that is not an array, a number or a tree of them is closed over by "
            "the compiled function, one compilation per value, so it must be hashable; make it hashable (a tuple, "
            "a frozen dataclass), pass its arrays as separate contexts, or use AutoMLX(compile=False)"
        ) from None
    return tuple((type(v), v) for v in static)


#: every function handed to `mx.compile`, kept for the life of the process: MLX caches compiled graphs by
#: the id of the function, and a new function at a freed one's address was measured to get the freed one's
#: graph (a Jacobian of the wrong shape, once in a few runs of the kit). Each is a small trampoline holding
#: its program weakly, so what the program closes over (f, the point, the basis) is freed with it.
_TRAMPOLINES: list = []


def _unique(fn: Callable) -> Callable:
    """A function calling `fn` (held weakly) whose id no other function will ever have."""
    ref = weakref.ref(fn)

    def trampoline(*args: Any) -> Any:
        target = ref()
        assert target is not None  # the program holds `fn` while its compiled function lives
        return target(*args)

    with MLX_LOCK:
        _TRAMPOLINES.append(trampoline)
    return trampoline


class Program:
    """`run(x, extra, cv)` compiled: one `mx.compile` per value of the closed-over contexts."""

    def __init__(self, run: Callable, contexts: Contexts) -> None:
        self.run, self.contexts = run, contexts
        self.programs: dict[Any, Callable] = {}
        self.keep: list = []  # the functions the compiled ones call (through `_unique`)

    def compiled(self, static: tuple) -> Callable:
        key = _key(static)
        program = self.programs.get(key)
        if program is None:
            import mlx.core as mx

            run, merge = self.run, self.contexts.merge

            def traced_run(x: Any, extra: Any, traced: tuple) -> tuple:
                return tuple(run(x, extra, merge(traced, static)))

            program = mx.compile(_unique(traced_run))
            self.programs[key] = program
            self.keep.append(traced_run)
        return program

    def __call__(self, x: Any, extra: Any, cv: tuple) -> Result:
        traced, static = self.contexts.split(cv)
        return Result(*self.compiled(static)(x, extra, traced))

    def warm(self, x: Any, extra: Any, cv: tuple) -> None:
        """Trace now (MLX traces a compiled function on its first two calls)."""
        import mlx.core as mx

        for _ in range(2):
            mx.eval([a for a in self(x, extra, cv) if a is not None])


def _transformation_error(e: Exception) -> bool:
    """`e` is MLX refusing to evaluate an array while it traces (compile, vmap): f evaluates arrays."""
    return not isinstance(e, NotSupportedError) and "[eval]" in str(e) and "transformations" in str(e)


def _compiles(program: Program, problem: Problem, extra: Any) -> bool:
    """Whether `program` compiles for the problem (f may evaluate arrays, which a compiled MLX function
    cannot); raises what f itself raises otherwise."""
    try:
        program.warm(problem.x, extra, problem.context_values)
        return True
    except Exception as e:
        if _transformation_error(e):
            return False
        raise


class Uncompiled:
    """`run(x, extra, cv)` as it is: batches by `mx.vmap`, or, once f turned out to evaluate arrays (which
    `vmap` cannot trace), by loops of single products from then on."""

    def __init__(self, run: Callable) -> None:
        self.run = run
        self.loop = False

    def __call__(self, x: Any, extra: Any, cv: tuple) -> Result:
        if not self.loop:
            try:
                return self.run(x, extra, cv)
            except Exception as e:
                if not _transformation_error(e):
                    raise
                self.loop = True
        with looping():
            return self.run(x, extra, cv)


def make_kernel(problem: Problem, program: Callable[[bool], Callable], extra: Any, compile: bool) -> Kernel:
    """The kernel running `program(full)(x, extra, cv) -> Result`, compiled now when `compile` (never for a
    single-use preparation), holding the MLX lock and returning evaluated arrays."""
    compile = compile and not problem.single_use
    dtype = result_dtype(problem)
    plain_run, full_run = casting(program(False), dtype), casting(program(True), dtype)
    if compile:

        def compile_now() -> tuple:
            contexts = Contexts(problem)
            plain, full = Program(plain_run, contexts), Program(full_run, contexts)
            return plain, full, _compiles(plain, problem, extra) and _compiles(full, problem, extra)

        plain, full, compile = on_mlx_thread(compile_now)  # traced where it will run (see `_lock`)
    if not compile:
        plain, full = Uncompiled(plain_run), Uncompiled(full_run)

    def run(x: Any, extra: Any, cv: tuple, y: Any, full_variant: bool) -> Result:
        return (full if full_variant else plain)(native(x), _natives(extra), _natives(cv))

    direct = None
    if compile and extra is None:
        plain_program = plain

        def direct(x: Any, cv: tuple) -> Any:
            return plain_program(native(x), None, _natives(cv)).result

    return locked(Kernel(run, result_dtype=dtype, accepts_numpy=True, direct=direct))


def _missing_rule(e: Exception) -> bool:
    """`e` is MLX lacking a forward-mode rule (`[scatter] JVP not yet implemented`: the gradient of an
    indexing operation, differentiated forward)."""
    return isinstance(e, RuntimeError) and "JVP" in str(e) and "not" in str(e) and "implemented" in str(e)


def forward_or_reverse(build: Callable[[str], Kernel], mode: str) -> Kernel:
    """`build(mode)`; where `mode` is "forward" and MLX has no JVP rule for an operation of f (found while
    preparing, or on the first call of an uncompiled kernel), `build("reverse")` instead: the same result
    from `vjp`s (for a Hessian, reverse over reverse, H being symmetric)."""
    if mode != "forward":
        return build(mode)
    try:
        primary = build("forward")
    except Exception as e:
        if not _missing_rule(e):
            raise
        return build("reverse")
    chosen: list[Kernel] = [primary]

    def run(x: Any, extra: Any, cv: tuple, y: Any, full: bool) -> Result:
        kernel = chosen[0]
        try:
            return kernel.run(x, extra, cv, y, full)
        except Exception as e:
            if kernel is not primary or not _missing_rule(e):
                raise
        with MLX_LOCK:
            if chosen[0] is primary:
                chosen[0] = build("reverse")
        return chosen[0].run(x, extra, cv, y, full)

    if primary.direct is not None:  # compiled and traced at preparation: it has every rule it needs
        return primary
    return primary.replace(run=run, direct_tangent=None)  # every call may need the fallback
