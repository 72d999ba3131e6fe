"""Jacobian (and so gradient and derivative) by sweeping the input or output basis.

A gradient is the Jacobian of a scalar output (shape `() + x.shape`) and a derivative the Jacobian
with respect to a scalar input (shape `y.shape + ()`), so all three are this one derivation: a reverse
sweep of a scalar output is a single pullback with seed 1, a forward sweep of a scalar input a single
pushforward with seed 1. Where the backend linearizes (`prepare_linearize`), a call runs f once and
applies the linearization to every chunk of the basis; otherwise each chunk is one batched
pushforward or pullback kernel call. The mode is the backend's, or chosen per problem for "auto"
(`diface._derive.mode`).
"""

from __future__ import annotations

from typing import Any

from .._kernel import Kernel, Result
from .._problem import Problem, size_of
from ._sweep import Basis, chunk_size, kernels_per_chunk, sweep_kernels, sweep_linearization
from .mode import choose_kernel, sweep_mode

__all__ = ["derive_jacobian", "sweep_mode"]


def derive_jacobian(backend: Any, problem: Problem) -> Kernel:
    """`J` of shape `y.shape + x.shape`: pushforwards of the input basis (columns) in forward mode,
    pullbacks of the output basis (rows) in reverse mode."""
    return choose_kernel(backend, problem, lambda mode: jacobian_in(backend, problem, mode))


def jacobian_in(backend: Any, problem: Problem, mode: str) -> Kernel:
    """The Jacobian kernel sweeping in `mode`."""
    ops, x = problem.ops, problem.x
    x_shape, x_dtype = problem.x_shape, problem.x_dtype
    y_shape, y_dtype = problem.y_spec
    n, m = size_of(x_shape), size_of(y_shape)
    dtype = ops.result_type(x_dtype, y_dtype)
    out_shape = y_shape + x_shape
    forward = mode == "forward"
    shape, space_dtype, size, product = (x_shape, x_dtype, n, m) if forward else (y_shape, y_dtype, m, n)
    basis = Basis(ops, shape, space_dtype, x, chunk_size(size, product, n * m, backend.max_batch_size), n * m)
    linearizer = backend.prepare_linearize(problem, mode)

    if linearizer is not None:

        def linearized_jacobian(x: Any, extra: Any, cv: tuple, y: Any, full: bool) -> Result:
            lin = linearizer(x, cv, y)
            return Result(lin.value, result=sweep_linearization(lin, forward, basis, out_shape, dtype, ops))

        return Kernel(linearized_jacobian)

    prepare = backend.prepare_pushforward if forward else backend.prepare_pullback
    kernels = kernels_per_chunk(basis, lambda seeds: prepare(problem, seeds))

    def jacobian(x: Any, extra: Any, cv: tuple, y: Any, full: bool) -> Result:
        first, jac = sweep_kernels(basis, kernels, forward, x, cv, y, full, out_shape, dtype, ops)
        if first is not None:
            return Result(first.value, result=jac)
        # empty input or output space: nothing to sweep, but the value (and y) are still owed
        value = problem.evaluate(x, cv, y) if (full or y is not None) else None
        return Result(value, result=jac)

    return Kernel(jacobian)
