"""Batched products on a linearization: pushforwards and pullbacks, at any point or at one point."""

from __future__ import annotations

from typing import Any

from .._kernel import Kernel, Result
from .._linearization import Linearizer
from .._problem import Problem
from ._per_thread import PerThread

__all__ = ["linearized_products", "same_point_products"]


def linearized_products(linearizer: Linearizer, problem: Problem, forward: bool) -> Kernel:
    """Each call linearizes f at its x once and applies J (`forward`: pushforwards) or its transpose
    to the whole batch of tangents at once."""
    ops = problem.ops

    def products(x: Any, tangents: tuple, cv: tuple, y: Any, full: bool) -> Result:
        lin = linearizer(x, cv, y)
        results = (lin.push if forward else lin.pull)(ops.stack(list(tangents)))
        return Result(lin.value, result=tuple(ops.unstack(results)))

    return Kernel(products)


def same_point_products(linearizer: Linearizer, problem: Problem, forward: bool) -> Kernel:
    """Products at the preparation's point: f is linearized there once (per thread, where the engine's
    linearizations cannot be shared); a call only applies it."""
    ops = problem.ops
    y = None if problem.y is None else ops.copy(problem.y)
    kept = PerThread(lambda: linearizer(problem.x, problem.context_values, None if y is None else ops.copy(y)))
    kept.get()

    def same_point(x: Any, tangents: tuple, cv: tuple, y: Any, full: bool) -> Result:
        lin = kept.get()
        results = (lin.push if forward else lin.pull)(ops.stack(list(tangents)))
        if y is not None:
            ops.copyto(y, lin.value)  # an in-place f leaves f(x) in y after every call
            value = y
        else:
            value = ops.copy(lin.value) if full else None
        return Result(value, result=tuple(ops.unstack(results)))

    return Kernel(same_point)
