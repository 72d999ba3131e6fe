"""Hessian as Hessian-vector products over the input basis."""

from __future__ import annotations

from typing import Any

from .._problem import Kernel, Problem
from ._basis import BasisSweep

__all__ = ["derive_hessian"]


def derive_hessian(backend: Any, problem: Problem) -> Kernel:
    """`H` of shape `x.shape + x.shape`, column by column: batched `backend.prepare_hvp` over the
    basis of x, `max_batch_size` tangents per call (forward-over-reverse where the backend allows)."""
    ops, x = problem.ops, problem.x
    x_shape, x_dtype = problem.x_shape, problem.x_dtype
    dtype = ops.result_type(x_dtype, problem.y_spec[1])
    out_shape = x_shape + x_shape
    sweep = BasisSweep(
        ops, x_shape, x_dtype, x, backend.max_batch_size, lambda seeds: backend.prepare_hvp(problem, seeds)
    )

    def hessian_kernel(x: Any, extra: Any, cv: tuple, y: Any, full: bool) -> tuple:
        first, hess = sweep.run(x, cv, None, full, -1, out_shape, dtype)
        if not full:
            return None, None, hess
        gradient = first[1] if first is not None else ops.zeros(x_shape, dtype, x)
        return problem.evaluate(x, cv), gradient, hess

    return hessian_kernel
