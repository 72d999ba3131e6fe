"""Second derivative as the outer derivative of the inner derivative."""

from __future__ import annotations

from typing import Any

from .._kernel import Kernel, Result
from .._problem import Problem

__all__ = ["derive_second_derivative"]


def derive_second_derivative(outer: Any, inner: Any, problem: Problem) -> Kernel:
    """`d2y/dx2` (shaped like y) for a scalar x: `outer` differentiates `x -> inner derivative(x)`."""
    outer = outer.as_outer_of(inner)
    ops = problem.ops
    y_shape, y_dtype = problem.y_spec
    derivative = inner.prepare_derivative(problem)

    def inner_derivative(x: Any, *cv: Any) -> Any:
        return derivative.result_of(x, None, cv)

    d_spec = (y_shape, ops.result_type(problem.x_dtype, y_dtype))
    outer_derivative = outer.prepare_derivative(problem.derived(inner_derivative, d_spec))

    def second_derivative(x: Any, extra: Any, cv: tuple, y: Any, full: bool) -> Result:
        d, _, d2 = outer_derivative.run(x, None, cv, None, full)
        return Result(problem.evaluate(x, cv) if full else None, d, d2)

    return Kernel(second_derivative)
