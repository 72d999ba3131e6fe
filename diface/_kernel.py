"""`Kernel`: what a backend hands the core for one prepared operator, and `Result`: what it returns.

A kernel is a typed value, never a function with attributes: its `run` computes, and its optional
fields tell the call path what else it offers. Wrappers derive new kernels with `dataclasses.replace`
(`with_layout`, ...), never by mutating an engine's.

`run(x, tangents, context_values, y, full) -> Result`:

- `x`: native input; `tangents`: tuple of native tangents (pushforward, pullback, hvp, inverse products)
  or None; `context_values`: tuple of native context values; `y`: native output buffer of an in-place
  `f` (None otherwise); `full`: also compute the primal value (and the lower-order result).
- `Result(value, lower, result)`: `value` is f(x) (None where not asked for, `full=False`), `lower` the
  lower-order result of a second-order operator (the gradient of `hessian` and `hvp`, the derivative of
  `second_derivative`; None for first-order operators and where not asked for), `result` the
  derivative, or a tuple of results for a batch of tangents. Results are fresh arrays: they never
  alias a kernel's internal buffers, so a caller may keep them across calls. An in-place `f` leaves
  `f(x)` in `y` after every call.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol

__all__ = ["Kernel", "Result", "ResultLayout", "Run"]


class Result(NamedTuple):
    """What one kernel call returns (see the module docstring)."""

    value: Any = None
    lower: Any = None
    result: Any = None


#: `run(x, tangents, context_values, y, full) -> Result`
Run = Callable[[Any, Any, tuple, Any, bool], Result]


class ResultLayout(Protocol):
    """How a kernel's `result` (the nonzeros of a sparse Jacobian or Hessian) becomes what the user
    gets (`diface._sparse._layout.SparseLayout`)."""

    def build(self, ops: Any, data: Any, user_numpy: bool) -> Any: ...

    def write(self, ops: Any, buf: Any, data: Any, user_numpy: bool) -> Any: ...

    def check_out(self, name: str, buf: Any, user_numpy: bool, ops: Any, dtype: Any) -> None: ...

    def scipy_pattern(self) -> Any: ...

    @property
    def coloring(self) -> Any: ...


@dataclass(frozen=True)
class Kernel:
    """One prepared operator of one problem.

    Attributes:
        run: the computation (see the module docstring).
        result_dtype: the dtype every derivative in `run`'s results already has (not the value), where
            the kernel casts them itself; None: the call path casts.
        accepts_numpy: `run` (and `direct`) take NumPy arrays for x, tangents and contexts as they
            are, converting them themselves on the way in (a compiled program does, fast).
        direct: the plain operator's result from `(x, context_values)` alone, nothing around it (a
            compiled program): the call path's shortest route, for calls without tangents, `out=` or `y=`.
        direct_tangent: the plain operator's result from `(x, one tangent, context_values)` alone, nothing
            around it (a compiled program): for the operators that take tangents (pushforward, pullback,
            hvp), the call path's shortest route for a call with one tangent and no `out=` or `y=`; it
            takes NumPy arrays where `accepts_numpy` says `direct` does. The result is what the user gets
            for that one tangent (of the result dtype, not in a tuple). A wrapper that changes a kernel's
            results sets it to None, as it does `direct`.
        copy: makes an independent kernel that shares what is immutable (a recording, a compiled
            program); None: the call path prepares again.
        method: how an inverse product solves ("accumulate", "dense" or "krylov").
        layout: the result is the nonzeros of a sparse matrix laid out by this (`AutoSparse`).
        evaluations: what one call costs in evaluations of f, where the backend counts them
            (`AutoFiniteDiff`: an `EvaluationCount`).
        report: what the kernel reports about its calls (a `LaplacianReport`: Hutchinson's standard
            error), updated by each call; None where it has nothing to say.
        traceable: `run` may be traced into a larger program by the array library's `compile` (JAX: a
            jitted kernel inside `jax.jit`), so that the call path compiles the tree layer, the full
            variant and the auxiliary output into one program with it.
    """

    run: Run
    result_dtype: Any = None
    accepts_numpy: bool = False
    direct: Callable[[Any, tuple], Any] | None = None
    direct_tangent: Callable[[Any, Any, tuple], Any] | None = None
    copy: Callable[[], Kernel] | None = None
    method: str | None = None
    layout: ResultLayout | None = None
    evaluations: Any = None
    report: Any = None
    traceable: bool = False

    def replace(self, **changes: Any) -> Kernel:
        """This kernel with some fields changed (`dataclasses.replace`)."""
        return dataclasses.replace(self, **changes)

    def result_of(self, x: Any, tangents: Any, cv: tuple, y: Any = None) -> Any:
        """The plain result alone (`run(..., full=False).result`): what a derived function needs."""
        return self.run(x, tangents, cv, y, False).result
