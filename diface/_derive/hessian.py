"""Hessian as Hessian-vector products over the input basis, without a linearization to sweep."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .._kernel import Kernel, Result
from .._problem import Problem, size_of
from ._sweep import Basis, chunk_size, kernels_per_chunk, sweep_kernels

__all__ = ["derive_hessian"]


def derive_hessian(max_batch: int, problem: Problem, prepare_hvp: Callable[[tuple], Kernel]) -> Kernel:
    """`H` of shape `x.shape + x.shape`, column by column: `prepare_hvp(tangents)` kernels over the
    basis of x, at most `max_batch` tangents per call (each call computes the gradient again; engines
    with a linearization sweep it instead, see `SecondOrderPlan.hessian`)."""
    ops, x = problem.ops, problem.x
    x_shape, x_dtype = problem.x_shape, problem.x_dtype
    n = size_of(x_shape)
    dtype = ops.result_type(x_dtype, problem.y_spec[1])
    out_shape = x_shape + x_shape
    basis = Basis(ops, x_shape, x_dtype, x, chunk_size(n, n, n * n, max_batch), n * n)
    kernels = kernels_per_chunk(basis, prepare_hvp)

    def hessian(x: Any, extra: Any, cv: tuple, y: Any, full: bool) -> Result:
        first, hess = sweep_kernels(basis, kernels, True, x, cv, None, full, out_shape, dtype, ops)
        if not full:
            return Result(result=hess)
        gradient = first.lower if first is not None else ops.zeros(x_shape, dtype, x)
        return Result(problem.evaluate(x, cv), gradient, hess)

    return Kernel(hessian)
